"""C1 a rigid-body simulator stepped in Python on the training thread between SAC updates:
continuous-control reinforcement learning for a robot arm with Soft Actor-Critic (Haarnoja et
al. 2018) written as CleanRL's sac_continuous_action.py writes it (twin Q critics and their
Polyak-averaged targets, a tanh-Gaussian actor, learned temperature, one gradient step per
vector-environment step), with the wider critics of BRO / SimBa-style scaled SAC (Nauman et al.
2024): critics 3 x 1,024 (ReLU, LayerNorm), actor 2 x 512, batch 1,024 transitions from a
replay buffer of 200,000 held on the GPU, bf16 autocast, fused Adam, losses read every 50
steps. The environments are 16 copies of a hand-written three-link planar arm with gravity
(a Reacher-like task with a target to reach: 13-d observation, 3 joint torques, reward minus
the fingertip's distance minus the control cost, 50-step episodes, frame skip 5 at dt 0.01,
semi-implicit Euler), exposing the gymnasium API (reset / step, written here: no gymnasium on
the GPU machine) and stepped by a SyncVectorEnv-style Python loop. Each physics substep of one
arm builds the joint-space mass matrix link by link (each link's COM Jacobian, m J^T J + I
Jw^T Jw), the gravity torques and the damping in small NumPy operations and solves M qdd = tau
with np.linalg.solve: ~40-60 small NumPy calls a substep, 5 substeps, 16 arms.

Planted: the simulator runs on the training thread between the GPU's work: act (policy forward,
actions read back), then 16 x 5 substeps of Python/NumPy physics (measured on the CPU-only test
machine, two cores at a load of ~7: 23 ms for the 16 arms, 1.4 ms an arm step; the batched
version 0.95 ms), then the transitions go into the buffer and one SAC update is launched.
Estimated (not measured) on the GPU machine, its cores unloaded: 0.3-0.5 ms an arm step, the
16 arms ~5-8 ms with no CUDA work issued; the update ~330 eager operations, ~2-2.5 ms of host
issue against <1 ms of GPU work; plain ~7.5-11 ms a step, the simulator ~60-80% of it.

--fix: gpuwhy's C1 advice for host work on the training thread (vectorize it, as
c1_torch_rl_python_env's fix does): the same three-link dynamics for all 16 arms in batched
NumPy calls (one einsum-built mass matrix for all, one batched np.linalg.solve), the same
substeps, rewards and resets (checked equal to the per-arm physics to 1e-14); agent, update and
buffer unchanged. Expected ~2.8-3.5 ms a step (then bound by the update's host issue), about
2.5-3.5x.

Written blind for the yankee batch.
"""
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

import cc

LINKS, DT, FRAME_SKIP, EP_LEN = 3, 0.01, 5, 50
LEN = np.array([0.35, 0.30, 0.20])
MASS = np.array([1.2, 0.9, 0.5])
INERTIA = MASS * LEN ** 2 / 12
DAMP, GRAV, TORQUE = 0.5, 9.81, 6.0
OBS, ACT = 13, 3


class ArmEnv:
    """One three-link planar arm, gymnasium-style reset/step, physics link by link."""

    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)
        self.reset()

    def reset(self):
        self.q = self.rng.uniform(-0.3, 0.3, LINKS)
        self.qd = np.zeros(LINKS)
        r = self.rng.uniform(0.3, 0.8)
        a = self.rng.uniform(-math.pi, math.pi)
        self.target = np.array([r * math.cos(a), r * math.sin(a)])
        self.t = 0
        return self._obs()

    def _tip(self):
        ang = np.cumsum(self.q)
        return np.array([np.sum(LEN * np.cos(ang)), np.sum(LEN * np.sin(ang))])

    def _obs(self):
        return np.concatenate([np.cos(self.q), np.sin(self.q), self.qd, self.target, self._tip() - self.target])

    def _substep(self, tau):
        ang = np.cumsum(self.q)
        M = np.zeros((LINKS, LINKS))
        g = np.zeros(LINKS)
        for i in range(LINKS):            # each link's centre-of-mass Jacobian
            J = np.zeros((2, LINKS))
            for j in range(i + 1):
                # the COM of link i moves with joint j through the links j..i
                r = np.sum(LEN[j:i] * np.stack([np.cos(ang[j:i]), np.sin(ang[j:i])]), axis=1) \
                    + 0.5 * LEN[i] * np.array([math.cos(ang[i]), math.sin(ang[i])])
                J[:, j] = [-r[1], r[0]]
            Jw = np.zeros(LINKS)
            Jw[:i + 1] = 1.0
            M += MASS[i] * J.T @ J + INERTIA[i] * np.outer(Jw, Jw)
            g += MASS[i] * GRAV * J[1]
        qdd = np.linalg.solve(M, tau - DAMP * self.qd - g)
        self.qd = np.clip(self.qd + DT * qdd, -20, 20)
        self.q = self.q + DT * self.qd

    def step(self, action):
        a = np.clip(action, -1, 1)
        for _ in range(FRAME_SKIP):
            self._substep(TORQUE * a)
        dist = float(np.linalg.norm(self._tip() - self.target))
        reward = -dist - 0.1 * float(np.sum(a * a))
        self.t += 1
        trunc = self.t >= EP_LEN
        obs = self._obs()
        if trunc:
            obs = self.reset()  # autoreset, as SyncVectorEnv does
        return obs, reward, False, trunc, {}


class SyncVectorEnv:
    def __init__(self, n, seed):
        self.envs = [ArmEnv(seed + k) for k in range(n)]

    def reset(self):
        return np.stack([e.reset() for e in self.envs])

    def step(self, actions):
        out = [e.step(a) for e, a in zip(self.envs, actions)]  # gpuwhy: plants C1 (16 arms x 5 substeps of Python/NumPy physics on the training thread)
        obs, rew, term, trunc, _ = zip(*out)
        return np.stack(obs), np.array(rew), np.array(term), np.array(trunc), {}


class BatchedArmEnv:
    """The same arms and physics, vectorized over the environments (the --fix)."""

    def __init__(self, n, seed):
        self.n = n
        self.rng = np.random.default_rng(seed)
        self.q, self.qd = np.zeros((n, LINKS)), np.zeros((n, LINKS))
        self.target, self.t = np.zeros((n, 2)), np.zeros(n, np.int64)
        # lower-triangular masks: link i's COM depends on joints j <= i through links j..i-1
        self.tri = np.tril(np.ones((LINKS, LINKS)), -1)          # [i, k]: link k < i
        self.jle = np.tril(np.ones((LINKS, LINKS)))              # [i, j]: j <= i

    def _reset(self, m):
        k = int(m.sum())
        if k == 0:
            return
        self.q[m] = self.rng.uniform(-0.3, 0.3, (k, LINKS))
        self.qd[m] = 0
        r, a = self.rng.uniform(0.3, 0.8, k), self.rng.uniform(-math.pi, math.pi, k)
        self.target[m] = np.stack([r * np.cos(a), r * np.sin(a)], 1)
        self.t[m] = 0

    def reset(self):
        self._reset(np.ones(self.n, bool))
        return self._obs()

    def _tip(self):
        ang = np.cumsum(self.q, 1)
        return np.stack([(LEN * np.cos(ang)).sum(1), (LEN * np.sin(ang)).sum(1)], 1)

    def _obs(self):
        return np.concatenate([np.cos(self.q), np.sin(self.q), self.qd, self.target, self._tip() - self.target], 1)

    def _substep(self, tau):
        ang = np.cumsum(self.q, 1)                                # (n, L)
        seg = np.stack([np.cos(ang), np.sin(ang)], -1) * LEN[:, None]   # (n, L, 2) full links
        half = 0.5 * seg                                          # (n, L, 2) half links
        # r[n, i, j] = sum_{j<=k<i} seg[k] + half[i], for j <= i
        ks = np.arange(LINKS)
        sel = (ks[None, None, :] >= ks[None, :, None]) & (ks[None, None, :] < ks[:, None, None])  # [i, j, k]
        r = np.einsum("ijk,nkc->nijc", sel.astype(float), seg) + half[:, :, None, :]
        r = r * self.jle[None, :, :, None]
        J = np.stack([-r[..., 1], r[..., 0]], -2)                 # (n, i, 2, j)
        M = np.einsum("i,nicj,nick->njk", MASS, J, J) + np.einsum("i,ij,ik->jk", INERTIA, self.jle, self.jle)[None]
        g = GRAV * np.einsum("i,nij->nj", MASS, J[:, :, 1, :])
        qdd = np.linalg.solve(M, (tau - DAMP * self.qd - g)[..., None])[..., 0]
        self.qd = np.clip(self.qd + DT * qdd, -20, 20)
        self.q = self.q + DT * self.qd

    def step(self, actions):
        a = np.clip(actions, -1, 1)
        for _ in range(FRAME_SKIP):
            self._substep(TORQUE * a)
        rew = -np.linalg.norm(self._tip() - self.target, axis=1) - 0.1 * np.sum(a * a, 1)
        self.t += 1
        trunc = self.t >= EP_LEN
        self._reset(trunc)
        return self._obs(), rew, np.zeros(self.n, bool), trunc, {}


def mlp(i, h, o, depth):
    layers = []
    for _ in range(depth):
        layers += [nn.Linear(i, h), nn.LayerNorm(h), nn.ReLU()]
        i = h
    return nn.Sequential(*layers, nn.Linear(i, o))


class QNet(nn.Module):
    def __init__(self, h, depth):
        super().__init__()
        self.q = mlp(OBS + ACT, h, 1, depth)

    def forward(self, o, a):
        return self.q(torch.cat([o, a], -1)).squeeze(-1)


class Actor(nn.Module):
    def __init__(self, h):
        super().__init__()
        self.body = mlp(OBS, h, 2 * ACT, 2)

    def forward(self, o):
        mu, log_std = self.body(o).float().chunk(2, -1)
        log_std = -5 + 3.5 * (torch.tanh(log_std) + 1)        # CleanRL's LOG_STD_MIN/MAX squashing
        std = log_std.exp()
        x = mu + std * torch.randn_like(mu)
        y = torch.tanh(x)
        logp = (-0.5 * ((x - mu) / std) ** 2 - log_std - 0.5 * math.log(2 * math.pi)).sum(-1)
        logp = logp - torch.log(1 - y * y + 1e-6).sum(-1)
        return y, logp


def main():
    args = cc.parser(__doc__, warmup=20).parse_args()
    dev = cc.torch_device(args)
    gpu = dev.type == "cuda"
    if args.smoke:
        n_env, hc, ha, depth, batch, cap = 4, 32, 32, 2, 32, 2_000
    else:
        n_env, hc, ha, depth, batch, cap = 16, 1024, 512, 3, 1024, 200_000
    envs = BatchedArmEnv(n_env, 0) if args.fix else SyncVectorEnv(n_env, 0)
    torch.manual_seed(0)
    actor = Actor(ha).to(dev)
    q1, q2 = QNet(hc, depth).to(dev), QNet(hc, depth).to(dev)
    q1_t, q2_t = QNet(hc, depth).to(dev), QNet(hc, depth).to(dev)
    q1_t.load_state_dict(q1.state_dict())
    q2_t.load_state_dict(q2.state_dict())
    qparams = list(q1.parameters()) + list(q2.parameters())
    tparams = list(q1_t.parameters()) + list(q2_t.parameters())
    q_opt = torch.optim.Adam(qparams, lr=3e-4, fused=gpu)
    a_opt = torch.optim.Adam(actor.parameters(), lr=3e-4, fused=gpu)
    log_alpha = torch.zeros(1, device=dev, requires_grad=True)
    al_opt = torch.optim.Adam([log_alpha], lr=3e-4)
    target_ent = -float(ACT)
    gamma, tau_p = 0.99, 0.005
    amp = torch.autocast(dev.type, dtype=torch.bfloat16, enabled=gpu)

    # replay buffer on the GPU, pre-filled with random-action transitions of the same arms
    buf = {k: torch.zeros((cap, w), device=dev) for k, w in (("o", OBS), ("a", ACT), ("o2", OBS))}
    buf["r"], buf["d"] = torch.zeros(cap, device=dev), torch.zeros(cap, device=dev)
    st = {"ptr": 0, "size": 0, "obs": envs.reset(), "env_steps": 0, "episodes": 0,
          "acc": torch.zeros(2, device=dev), "losses": None, "reads": 0}

    def add(o, a, r, o2, d):
        n = o.shape[0]
        idx = (torch.arange(n, device=dev) + st["ptr"]) % cap
        for k, v in (("o", o), ("a", a), ("r", r), ("o2", o2), ("d", d)):
            buf[k][idx] = torch.as_tensor(np.asarray(v, np.float32), device=dev)
        st["ptr"] = (st["ptr"] + n) % cap
        st["size"] = min(st["size"] + n, cap)

    rng = np.random.default_rng(1)
    prefill = 64 if args.smoke else 4_096
    for _ in range(prefill // n_env):
        a = rng.uniform(-1, 1, (n_env, ACT))
        o2, r, term, trunc, _ = envs.step(a)
        add(st["obs"], a, r, o2, term)
        st["obs"] = o2

    def update():
        idx = torch.randint(0, st["size"], (batch,), device=dev)
        o, a, r, o2, d = buf["o"][idx], buf["a"][idx], buf["r"][idx], buf["o2"][idx], buf["d"][idx]
        alpha = log_alpha.exp().detach()
        with torch.no_grad(), amp:
            a2, logp2 = actor(o2)
            qt = torch.min(q1_t(o2, a2), q2_t(o2, a2)).float() - alpha * logp2
            y = r + gamma * (1 - d) * qt
        with amp:
            ql = F.mse_loss(q1(o, a).float(), y) + F.mse_loss(q2(o, a).float(), y)
        q_opt.zero_grad(set_to_none=True)
        ql.backward()
        q_opt.step()
        with amp:
            pa, logp = actor(o)
            qpi = torch.min(q1(o, pa), q2(o, pa)).float()
        al = (alpha * logp - qpi).mean()
        a_opt.zero_grad(set_to_none=True)
        al.backward()
        a_opt.step()
        alpha_loss = (-log_alpha.exp() * (logp.detach() + target_ent)).mean()
        al_opt.zero_grad(set_to_none=True)
        alpha_loss.backward()
        al_opt.step()
        with torch.no_grad():
            torch._foreach_lerp_(tparams, qparams, tau_p)
        return torch.stack([ql.detach(), al.detach()])

    def step(i):
        with torch.no_grad(), amp:
            act, _ = actor(torch.as_tensor(st["obs"], dtype=torch.float32, device=dev))
        act = act.float().cpu().numpy()                      # actions back to the host
        o2, r, term, trunc, _ = envs.step(act)
        add(st["obs"], act, r, o2, term)
        st["obs"] = o2
        st["env_steps"] += n_env
        st["episodes"] += int(np.sum(trunc))
        st["acc"] += update()
        if i % 50 == 49:
            st["losses"] = (st["acc"] / 50).tolist()
            st["acc"].zero_()
            st["reads"] += 1

    cc.run("c1_torch_sac_numpy_arm_sim_main", args, step, n_env,
           extra=lambda: {"envs": n_env, "vectorized_env": bool(args.fix), "substeps_per_step": n_env * FRAME_SKIP,
                          "env_steps": st["env_steps"], "episodes": st["episodes"], "updates_per_step": 1,
                          "batch": batch, "losses": st["losses"], "loss_reads": st["reads"]})


if __name__ == "__main__":
    main()
