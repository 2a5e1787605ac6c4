"""C7 CPU oversubscription (Ape-X-style actor processes, one per core, each with torch's default
intra-op threads, beside the GPU learner): off-policy continuous control in plain PyTorch, a
soft actor-critic learner on the GPU fed by CPU actors, the single-machine layout of Ape-X /
distributed SAC. The actors are multiprocessing processes forked before CUDA starts, one per
core of the job's affinity (NUM_ACTORS = len(os.sched_getaffinity(0))); each steps a batch of
1,024 environments of a vectorized simulator written in torch on the CPU (64-d state, 8-d
actions, a nonlinear dynamics map, quadratic costs, episodes of 1,000 steps), chooses actions
with its CPU copy of the learner's policy (64-256-256-16, tanh-Gaussian) and writes the
transitions into its slice of a 262,144-row replay buffer in shared memory, as fast as it can;
it picks up the learner's weights from shared memory, published every 250 learner steps. The
learner samples 8,192 transitions a step from the buffer (numpy gathers into pinned buffers,
non_blocking copies) and runs one SAC update: twin Q critics and their targets of three
2,048-wide hidden layers, the policy of two 256-wide layers, the entropy temperature learned,
bf16 autocast, fused Adam, Polyak averaging with torch._foreach_lerp_; the losses are summed on
the GPU and read every 50 steps.

The actors keep torch's default intra-op threads, one OpenMP thread per core: every GEMM and
every elementwise op over their 1,024 x 256 activations wakes a team of 16 threads in each of
16 processes, about 256 threads that spin at their barriers on 16 cores. The learner's thread,
which launches the GPU's work, is runnable but gets a slice of a core among them, so its
~450 launches and its sampling take several times longer than the GPU needs for the update.

--fix: gpuwhy's C7 advice (bound the thread pools and leave cores to the thread that feeds
the GPU): torch.set_num_threads(1) in each actor and two cores left free (NUM_ACTORS = cores -
2, 14 on 16 cores); environments, policy, buffer, learner and batch unchanged. (The actors'
experience rate is not measured; the learner's steps are the job's iterations.)

Written blind for the echo batch.
"""
import ctypes
import math
import mmap
import multiprocessing as mp
import os
import signal
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

import cc

OBS, ACT = 64, 8
CAPACITY = 262_144
PUBLISH_EVERY = 250


def die_with_parent(parent):
    """The kernel kills this process when the job that forked it ends, however it ends."""
    PR_SET_PDEATHSIG = 1
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:
        os._exit(1)


def shared(shape, dtype):
    """A numpy array in an anonymous shared mapping: forked processes see the same memory."""
    n = int(np.prod(shape)) * np.dtype(dtype).itemsize
    return np.frombuffer(mmap.mmap(-1, n), dtype=dtype, count=int(np.prod(shape))).reshape(shape)


class Policy(nn.Module):
    def __init__(self, hidden, layers=2):
        super().__init__()
        dims = [OBS] + [hidden] * layers
        self.body = nn.Sequential(*[m for a, b in zip(dims, dims[1:]) for m in (nn.Linear(a, b), nn.ReLU())])
        self.out = nn.Linear(hidden, 2 * ACT)

    def forward(self, obs):
        mu, log_std = self.out(self.body(obs)).chunk(2, -1)
        return mu, log_std.clamp(-5, 2)

    def sample(self, obs):
        """Reparameterized tanh-Gaussian action and its log-probability."""
        mu, log_std = self(obs)
        std = log_std.exp()
        u = mu + std * torch.randn_like(mu)
        a = torch.tanh(u)
        logp = (-0.5 * ((u - mu) / std) ** 2 - log_std - 0.5 * math.log(2 * math.pi)).sum(-1)
        logp = logp - (2 * (math.log(2) - u - F.softplus(-2 * u))).sum(-1)
        return a, logp


class QNet(nn.Module):
    def __init__(self, hidden, layers=3):
        super().__init__()
        dims = [OBS + ACT] + [hidden] * layers
        self.net = nn.Sequential(*[m for a, b in zip(dims, dims[1:]) for m in (nn.Linear(a, b), nn.ReLU())],
                                 nn.Linear(hidden, 1))

    def forward(self, obs, act):
        return self.net(torch.cat([obs, act], -1)).squeeze(-1)


def actor_loop(rank, threads, parent, start, stop, buf, written, flat, envs, pi_hidden, rows):
    """One actor: a batch of environments stepped on the CPU, transitions into its buffer slice."""
    die_with_parent(parent)
    if threads:
        torch.set_num_threads(threads)
    policy = Policy(pi_hidden)
    off = 0
    with torch.no_grad():
        for p in policy.parameters():  # the parameters are views of the learner's published weights
            p.data = torch.from_numpy(flat[off:off + p.numel()]).view_as(p)
            off += p.numel()
    g = torch.Generator().manual_seed(1000 + rank)
    dyn = torch.Generator().manual_seed(7)  # the same simulator in every actor
    A = torch.randn(OBS, OBS, generator=dyn) / math.sqrt(OBS)
    B = torch.randn(ACT, OBS, generator=dyn) / math.sqrt(ACT)
    s = torch.randn(envs, OBS, generator=g)
    t = torch.zeros(envs, dtype=torch.int64)
    base, ptr = rank * rows, 0
    obs, act, rew, nxt, done = (torch.from_numpy(a) for a in buf)
    start.wait()
    with torch.no_grad():
        while not stop.is_set():
            mu, log_std = policy(s)
            a = torch.tanh(mu + log_std.exp() * torch.randn(envs, ACT, generator=g))
            s2 = torch.tanh(s @ A + a @ B) + 0.05 * torch.randn(envs, OBS, generator=g)
            r = -(s2 - 0.5).pow(2).mean(1) - 0.01 * a.pow(2).sum(1)
            t += 1
            d = t >= 1000
            sl = slice(base + ptr, base + ptr + envs)
            obs[sl], act[sl], rew[sl], nxt[sl], done[sl] = s, a, r, s2, d.float()
            ptr = (ptr + envs) % rows
            written[rank] += envs
            s = torch.where(d[:, None], torch.randn(envs, OBS, generator=g), s2)
            t = torch.where(d, 0, t)


def main():
    args = cc.parser(__doc__).parse_args()
    cores = len(os.sched_getaffinity(0))
    if args.fix:
        n_actors, threads = max(1, cores - 2), 1
    else:
        n_actors, threads = cores, 0  # gpuwhy: plants C7 (one actor per core, each with torch's default intra-op threads: 16 x 16 on 16 cores)
    envs, pi_hidden, hidden, batch = (64, 64, 64, 256) if args.smoke else (1024, 256, 2048, 8192)
    capacity = 16_384 if args.smoke else CAPACITY
    rows = capacity // n_actors // envs * envs  # each actor's slice, whole env batches
    # the replay buffer and the published policy weights in shared memory, made before any
    # thread pool, model or CUDA context exists, so that the actors fork from a clean process
    buf = (shared((capacity, OBS), np.float32), shared((capacity, ACT), np.float32), shared((capacity,), np.float32),
           shared((capacity, OBS), np.float32), shared((capacity,), np.float32))
    written = shared((n_actors,), np.int64)
    torch.manual_seed(0)
    cpu_policy = Policy(pi_hidden)
    flat = shared((sum(p.numel() for p in cpu_policy.parameters()),), np.float32)
    ctx = mp.get_context("fork")
    start, stop = ctx.Event(), ctx.Event()
    actors = [ctx.Process(target=actor_loop, daemon=True,
                          args=(r, threads, os.getpid(), start, stop, buf, written, flat, envs, pi_hidden, rows))
              for r in range(n_actors)]
    for p in actors:
        p.start()

    dev = cc.torch_device(args)
    pol = Policy(pi_hidden).to(dev)
    pol.load_state_dict(cpu_policy.state_dict())
    q1, q2 = QNet(hidden).to(dev), QNet(hidden).to(dev)
    q1_t, q2_t = QNet(hidden).to(dev), QNet(hidden).to(dev)
    q1_t.load_state_dict(q1.state_dict())
    q2_t.load_state_dict(q2.state_dict())
    log_alpha = torch.zeros((), device=dev, requires_grad=True)
    fused = dev.type == "cuda"
    q_opt = torch.optim.Adam(list(q1.parameters()) + list(q2.parameters()), lr=3e-4, fused=fused)
    pi_opt = torch.optim.Adam(pol.parameters(), lr=3e-4, fused=fused)
    a_opt = torch.optim.Adam([log_alpha], lr=3e-4)
    tgt_params = list(q1_t.parameters()) + list(q2_t.parameters())
    src_params = list(q1.parameters()) + list(q2.parameters())
    gamma, tau, target_entropy = 0.99, 0.005, -float(ACT)

    def publish():
        """The actors' policy weights to shared memory (a device-to-host copy, every 250 steps)."""
        torch.from_numpy(flat).copy_(torch.cat([p.detach().float().flatten() for p in pol.parameters()]).cpu())

    publish()
    start.set()  # the actors start once the first weights are published
    while int(written.min()) < envs:  # every actor has written a batch (before the timed part)
        time.sleep(0.01)

    pin = dev.type == "cuda"
    width = 2 * OBS + ACT + 2
    stage = [torch.empty(batch, width, pin_memory=pin) for _ in range(2)]
    ready = [None, None]
    rng = np.random.default_rng(0)
    acc = torch.zeros(2, device=dev)
    log = {"losses": None, "reads": 0}

    def sample(k):
        """batch transitions gathered by numpy into pinned buffer k (two, used in turn)."""
        if ready[k] is not None:
            ready[k].synchronize()  # the copy that last read this buffer is done
        filled = np.minimum(written, rows)
        who = rng.integers(0, n_actors, batch)
        idx = who * rows + (rng.random(batch) * filled[who]).astype(np.int64)
        out = stage[k].numpy()
        np.take(buf[0], idx, axis=0, out=out[:, :OBS])
        np.take(buf[1], idx, axis=0, out=out[:, OBS:OBS + ACT])
        np.take(buf[3], idx, axis=0, out=out[:, OBS + ACT:2 * OBS + ACT])
        np.take(buf[2], idx, out=out[:, -2])
        np.take(buf[4], idx, out=out[:, -1])
        x = stage[k].to(dev, non_blocking=True)
        if pin:
            ready[k] = torch.cuda.Event()
            ready[k].record()
        return x.split([OBS, ACT, OBS, 1, 1], 1)

    def step(i):
        o, a, o2, r, d = sample(i % 2)
        r, d = r.squeeze(1), d.squeeze(1)
        alpha = log_alpha.detach().exp()
        with torch.autocast(dev.type, dtype=torch.bfloat16):
            with torch.no_grad():
                a2, logp2 = pol.sample(o2)
                qt = torch.min(q1_t(o2, a2), q2_t(o2, a2)).float() - alpha * logp2.float()
                y = r + gamma * (1 - d) * qt
            q_loss = F.mse_loss(q1(o, a).float(), y) + F.mse_loss(q2(o, a).float(), y)
        q_opt.zero_grad(set_to_none=True)
        q_loss.backward()
        q_opt.step()
        with torch.autocast(dev.type, dtype=torch.bfloat16):
            a_pi, logp = pol.sample(o)
            q_pi = torch.min(q1(o, a_pi), q2(o, a_pi)).float()
            pi_loss = (alpha * logp.float() - q_pi).mean()
        pi_opt.zero_grad(set_to_none=True)
        pi_loss.backward()
        pi_opt.step()
        a_loss = -(log_alpha * (logp.detach().float() + target_entropy)).mean()
        a_opt.zero_grad(set_to_none=True)
        a_loss.backward()
        a_opt.step()
        with torch.no_grad():
            torch._foreach_lerp_(tgt_params, src_params, tau)
        acc.add_(torch.stack([q_loss.detach(), pi_loss.detach()]))
        if i % 50 == 49:
            log["losses"] = (acc / 50).tolist()
            log["reads"] += 1
            acc.zero_()
        if i % PUBLISH_EVERY == PUBLISH_EVERY - 1:
            publish()

    try:
        cc.run("c7_torch_apex_actor_threads", args, step, batch,
               extra=lambda: {"actors": n_actors, "cores": cores,
                              "threads_per_actor": threads or torch.get_num_threads(),
                              "transitions_written": int(written.sum()), "loss_reads": log["reads"]})
    finally:
        stop.set()  # each actor ends after its current iteration; those still running after 3 s are killed
        deadline = time.monotonic() + 3
        for p in actors:
            p.join(timeout=max(0.0, deadline - time.monotonic()))
        for p in actors:
            if p.is_alive():
                p.kill()
                p.join(timeout=1)


if __name__ == "__main__":
    main()
