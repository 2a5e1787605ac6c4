"""C4 launch-bound (a PPO update of small MLPs in many minibatches, eager PyTorch): proximal
policy optimization for continuous control in the style of CleanRL's ppo_continuous_action,
with the environments on the GPU as Isaac Gym / Brax users run them: 2,048 copies of a
two-link planar reacher (MuJoCo Reacher's arm, 50-step episodes, frame skip 2, reward minus
the fingertip's distance to the target minus the control cost, automatic resets), stepped as
batched torch tensors. The agent is CleanRL's: separate actor and critic MLPs of two tanh
layers of 256 (orthogonal initialization), a state-independent log-std, Gaussian actions,
GAE (gamma 0.99, lambda 0.95), the clipped surrogate (0.2), the clipped value loss, entropy
bonus 0, gradient clipping at 0.5 and Adam (lr 3e-4, eps 1e-5). Each iteration collects 32
steps of the 2,048 environments (65,536 transitions) and then runs 4 epochs of 32 minibatches
of 2,048 transitions: 128 optimizer steps an iteration. The iteration's statistics (losses,
approximate KL, clip fraction, mean return) stay on the GPU and are read once an iteration.

Each minibatch update is about 200 kernel launches (indexing, two MLP forwards, the Gaussian
log-probability, the PPO and value losses, their backward, clip_grad_norm_'s foreach norms
and Adam's foreach passes) over 2,048 x 256 activations: a few microseconds of GPU work each,
less than the host's time to issue them, so the host's launches set the pace and the GPU
idles between kernels.

--fix: gpuwhy's C4 advice (CUDA graphs): the minibatch update (forward, backward, clipping
and Adam with capturable=True) is captured once in a torch.cuda.CUDAGraph after three warm-up
updates on a side stream, as PyTorch's whole-network capture example does, and replayed with
the minibatch's indices copied into a static buffer; the rollout (policy and environment
steps, GAE) is captured the same way. Model, environment, hyperparameters and the sampled
data unchanged. With --device cpu the fix runs eagerly (no CUDA graphs on the CPU); the JSON
line's cuda_graphs says which ran.

Written blind for the romeo batch.
"""
import math

import torch
import torch.nn as nn

import cc


class ReacherVec:
    """Batched two-link reacher on the GPU; every state tensor is updated in place (the
    rollout can be captured in a CUDA graph)."""

    L1, L2, DT, SKIP, HORIZON = 0.1, 0.11, 0.01, 2, 50

    def __init__(self, n, dev):
        self.n = n
        self.q = torch.zeros(n, 2, device=dev)
        self.dq = torch.zeros(n, 2, device=dev)
        self.target = torch.zeros(n, 2, device=dev)
        self.t = torch.zeros(n, device=dev)
        self.obs = torch.zeros(n, 11, device=dev)
        self.reward = torch.zeros(n, device=dev)
        self.done = torch.zeros(n, device=dev)
        self.ret = torch.zeros(n, device=dev)
        self.last_ret = torch.zeros(n, device=dev)
        self.inv_inertia = torch.tensor([1.0, 1.0 / 0.6], device=dev)
        self._reset(torch.ones(n, device=dev, dtype=torch.bool))
        self._observe()

    def tip(self):
        a1, a12 = self.q[:, 0], self.q[:, 0] + self.q[:, 1]
        return torch.stack([self.L1 * torch.cos(a1) + self.L2 * torch.cos(a12),
                            self.L1 * torch.sin(a1) + self.L2 * torch.sin(a12)], 1)

    def _reset(self, mask):
        m = mask[:, None]
        self.q.copy_(torch.where(m, (torch.rand_like(self.q) - 0.5) * 0.2, self.q))
        self.dq.copy_(torch.where(m, (torch.rand_like(self.dq) - 0.5) * 0.01, self.dq))
        r = 0.2 * torch.sqrt(torch.rand_like(self.t))
        th = 2 * math.pi * torch.rand_like(self.t)
        self.target.copy_(torch.where(m, torch.stack([r * torch.cos(th), r * torch.sin(th)], 1), self.target))
        self.t.masked_fill_(mask, 0.0)

    def _observe(self):
        self.obs.copy_(torch.cat([torch.cos(self.q), torch.sin(self.q), self.target, self.dq,
                                  self.tip() - self.target, (self.t / self.HORIZON)[:, None]], 1))

    def step(self, action):
        a = action.clamp(-1, 1)
        for _ in range(self.SKIP):                     # MuJoCo's frame skip
            ddq = (200.0 * a - 1.0 * self.dq) * self.inv_inertia
            self.dq.add_(self.DT * ddq).clamp_(-20, 20)
            self.q.add_(self.DT * self.dq)
        dist = (self.tip() - self.target).norm(dim=1)
        self.reward.copy_(-dist - (a * a).sum(1))
        self.t.add_(1.0)
        self.ret.add_(self.reward)
        done = self.t >= self.HORIZON
        self.done.copy_(done.float())
        self.last_ret.copy_(torch.where(done, self.ret, self.last_ret))
        self.ret.masked_fill_(done, 0.0)
        self._reset(done)
        self._observe()


def layer_init(layer, std=math.sqrt(2), bias=0.0):
    nn.init.orthogonal_(layer.weight, std)
    nn.init.constant_(layer.bias, bias)
    return layer


class Agent(nn.Module):
    def __init__(self, obs_dim, act_dim, hidden):
        super().__init__()
        self.critic = nn.Sequential(layer_init(nn.Linear(obs_dim, hidden)), nn.Tanh(),
                                    layer_init(nn.Linear(hidden, hidden)), nn.Tanh(),
                                    layer_init(nn.Linear(hidden, 1), std=1.0))
        self.actor_mean = nn.Sequential(layer_init(nn.Linear(obs_dim, hidden)), nn.Tanh(),
                                        layer_init(nn.Linear(hidden, hidden)), nn.Tanh(),
                                        layer_init(nn.Linear(hidden, act_dim), std=0.01))
        self.actor_logstd = nn.Parameter(torch.zeros(1, act_dim))

    def value(self, x):
        return self.critic(x).squeeze(-1)

    def dist(self, x):
        mean = self.actor_mean(x)
        return mean, self.actor_logstd.expand_as(mean)


def gaussian_logprob(a, mean, logstd):
    return (-((a - mean) ** 2) / (2 * torch.exp(2 * logstd)) - logstd - 0.5 * math.log(2 * math.pi)).sum(-1)


def main():
    args = cc.parser(__doc__, warmup=10).parse_args()
    dev = cc.torch_device(args)
    gpu = dev.type == "cuda"
    if args.smoke:
        n_envs, n_steps, hidden, epochs, n_mb = 64, 8, 32, 2, 4
    else:
        n_envs, n_steps, hidden, epochs, n_mb = 2048, 32, 256, 4, 32
    obs_dim, act_dim = 11, 2
    gamma, lam, clip, vf_coef, ent_coef, max_gn = 0.99, 0.95, 0.2, 0.5, 0.0, 0.5
    batch = n_envs * n_steps
    mb_size = batch // n_mb
    upd_per_iter = epochs * n_mb
    graphs = bool(args.fix and gpu)

    torch.manual_seed(0)
    env = ReacherVec(n_envs, dev)
    agent = Agent(obs_dim, act_dim, hidden).to(dev)
    # capturable=True keeps Adam's step counts on the GPU (needed inside a CUDA graph)
    opt = torch.optim.Adam(agent.parameters(), lr=3e-4, eps=1e-5, capturable=graphs)

    # rollout storage (static: written in place)
    obs_b = torch.zeros(n_steps, n_envs, obs_dim, device=dev)
    act_b = torch.zeros(n_steps, n_envs, act_dim, device=dev)
    logp_b = torch.zeros(n_steps, n_envs, device=dev)
    rew_b = torch.zeros(n_steps, n_envs, device=dev)
    done_b = torch.zeros(n_steps, n_envs, device=dev)
    val_b = torch.zeros(n_steps, n_envs, device=dev)
    adv_b = torch.zeros(n_steps, n_envs, device=dev)
    ret_b = torch.zeros(n_steps, n_envs, device=dev)
    next_done = torch.zeros(n_envs, device=dev)
    b_obs, b_act, b_logp = obs_b.view(batch, obs_dim), act_b.view(batch, act_dim), logp_b.view(batch)
    b_adv, b_ret, b_val = adv_b.view(batch), ret_b.view(batch), val_b.view(batch)
    mb_idx = torch.zeros(mb_size, dtype=torch.long, device=dev)
    perm = torch.zeros(batch, dtype=torch.long, device=dev)
    stats = torch.zeros(6, device=dev)      # pg loss, v loss, entropy, approx kl, clip fraction, updates

    @torch.no_grad()
    def collect():
        """CleanRL's rollout and GAE, every write in place."""
        for s in range(n_steps):
            obs_b[s].copy_(env.obs)
            done_b[s].copy_(next_done)
            mean, logstd = agent.dist(env.obs)
            a = mean + torch.exp(logstd) * torch.randn_like(mean)
            act_b[s].copy_(a)
            logp_b[s].copy_(gaussian_logprob(a, mean, logstd))
            val_b[s].copy_(agent.value(env.obs))
            env.step(a)
            rew_b[s].copy_(env.reward)
            next_done.copy_(env.done)
        next_value = agent.value(env.obs)
        lastgaelam = torch.zeros(n_envs, device=dev)
        for s in reversed(range(n_steps)):
            if s == n_steps - 1:
                nonterminal, nextvalues = 1.0 - next_done, next_value
            else:
                nonterminal, nextvalues = 1.0 - done_b[s + 1], val_b[s + 1]
            delta = rew_b[s] + gamma * nextvalues * nonterminal - val_b[s]
            lastgaelam = delta + gamma * lam * nonterminal * lastgaelam
            adv_b[s].copy_(lastgaelam)
        ret_b.copy_(adv_b + val_b)

    def update():
        """One minibatch of CleanRL's PPO update (the indices in mb_idx)."""
        obs, act = b_obs[mb_idx], b_act[mb_idx]
        mean, logstd = agent.dist(obs)
        newlogp = gaussian_logprob(act, mean, logstd)
        entropy = (logstd + 0.5 + 0.5 * math.log(2 * math.pi)).sum(-1)
        newvalue = agent.value(obs)
        logratio = newlogp - b_logp[mb_idx]
        ratio = logratio.exp()
        with torch.no_grad():
            approx_kl = ((ratio - 1) - logratio).mean()
            clipfrac = ((ratio - 1.0).abs() > clip).float().mean()
        mb_adv = b_adv[mb_idx]
        mb_adv = (mb_adv - mb_adv.mean()) / (mb_adv.std() + 1e-8)
        pg_loss = torch.max(-mb_adv * ratio, -mb_adv * torch.clamp(ratio, 1 - clip, 1 + clip)).mean()
        mb_ret, mb_val = b_ret[mb_idx], b_val[mb_idx]
        v_unclipped = (newvalue - mb_ret) ** 2
        v_clipped = mb_val + torch.clamp(newvalue - mb_val, -clip, clip)
        v_loss = 0.5 * torch.max(v_unclipped, (v_clipped - mb_ret) ** 2).mean()
        ent = entropy.mean()
        loss = pg_loss - ent_coef * ent + v_loss * vf_coef
        opt.zero_grad(set_to_none=not graphs)
        loss.backward()
        nn.utils.clip_grad_norm_(agent.parameters(), max_gn, foreach=gpu)
        opt.step()
        with torch.no_grad():
            stats.add_(torch.stack([pg_loss.detach(), v_loss.detach(), ent.detach(), approx_kl, clipfrac,
                                    torch.ones((), device=dev)]))

    st = {"g_update": None, "g_collect": None, "side": torch.cuda.Stream() if graphs else None,
          "warm": 0, "log": None, "iters": 0, "cuda_graphs": graphs}

    def capture(fn):
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            fn()
        return g

    def run_collect():
        if not st["cuda_graphs"]:
            collect()
            return
        if st["g_collect"] is None:      # warm up on a side stream, capture, then replay
            st["side"].wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(st["side"]):
                collect()
            torch.cuda.current_stream().wait_stream(st["side"])
            st["g_collect"] = capture(collect)
        st["g_collect"].replay()

    def run_update():
        if not st["cuda_graphs"]:
            update()  # gpuwhy: plants C4 (~200 small kernels a minibatch update, launched eagerly one by one)
            return
        if st["g_update"] is None:
            if st["warm"] < 3:           # PyTorch's recipe: a few iterations on a side stream first
                st["side"].wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(st["side"]):
                    update()
                torch.cuda.current_stream().wait_stream(st["side"])
                st["warm"] += 1
                return
            opt.zero_grad(set_to_none=True)     # .grad allocated from the graph's pool
            st["g_update"] = capture(update)
        st["g_update"].replay()

    def step(i):
        k = i % upd_per_iter
        if k == 0:
            if i > 0:                     # the finished iteration's statistics: one read
                s = (stats / stats[5].clamp(min=1)).tolist()
                st["log"] = {"pg_loss": s[0], "v_loss": s[1], "entropy": s[2], "approx_kl": s[3],
                             "clipfrac": s[4], "episode_return": float(env.last_ret.mean())}
                stats.zero_()
            run_collect()
            st["iters"] += 1
        if k % n_mb == 0:                 # a new order of the batch each epoch
            perm.copy_(torch.randperm(batch, device=dev))
        j = k % n_mb
        mb_idx.copy_(perm[j * mb_size:(j + 1) * mb_size])
        run_update()

    cc.run("c4_torch_ppo_gpu_env_minibatch", args, step, mb_size,
           extra=lambda: {"envs": n_envs, "rollout_steps": n_steps, "minibatch": mb_size,
                          "updates_per_iteration": upd_per_iter, "iterations": st["iters"],
                          "cuda_graphs": st["cuda_graphs"], "stats": st["log"]})


if __name__ == "__main__":
    main()
