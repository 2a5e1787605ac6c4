"""C1 environment stepping on the training thread (RL): DQN on 64 copies of a 2D navigation
environment written in numpy with the gymnasium API (reset/step -> obs, reward, terminated,
truncated, info; 16 lidar rays against 8 circular obstacles), stepped one by one in Python by
a SyncVectorEnv-style loop. Each iteration: the Q-network (MLP 3x2048, bf16 autocast) picks
the 64 actions on the GPU, they are read back (.cpu()), the 64 environments step on the CPU
(about 60 us each), the transitions go to a replay buffer on the GPU, and one DQN update on
a batch of 8192 runs. The GPU waits while Python steps the environments: the next input
(the observations) is being made, after a read of the previous result, so this is input
preparation (C1), as gpuwhy books input code after a synchronization.

--fix: the same dynamics stepped for all 64 environments at once (one vectorized numpy call
on arrays with a leading environment axis, as gymnasium's vector environments do):
gpuwhy's C1 advice, make each sample cheaper.
"""
import numpy as np
import torch
import torch.nn.functional as F

import cc

RAYS, OBSTACLES, ACTIONS, MAX_T = 16, 8, 9, 200
ANG = np.linspace(0, 2 * np.pi, RAYS, endpoint=False)
DIRS = np.stack([np.cos(ANG), np.sin(ANG)], 1)  # (R, 2)
MOVES = np.array([[np.cos(a), np.sin(a)] for a in np.linspace(0, 2 * np.pi, 8, endpoint=False)] + [[0.0, 0.0]])


def physics(pos, vel, goal, obst, action):
    """One step for a batch of environments (leading axis E): returns pos, vel, obs, reward, hit."""
    vel = 0.9 * vel + 0.05 * MOVES[action]
    pos = np.clip(pos + vel, -1.0, 1.0)
    rel = obst[:, :, :2] - pos[:, None, :]                      # (E, O, 2)
    proj = np.einsum("eoc,rc->ero", rel, DIRS)                  # (E, R, O) distance along each ray
    perp2 = (rel ** 2).sum(-1)[:, None, :] - proj ** 2
    r2 = obst[:, None, :, 2] ** 2
    hitd = np.where((proj > 0) & (perp2 < r2), proj - np.sqrt(np.maximum(r2 - perp2, 0)), 2.0)
    lidar = hitd.min(-1)                                        # (E, R)
    dist = np.linalg.norm(goal - pos, axis=-1)
    hit = (np.linalg.norm(rel, axis=-1) < obst[:, :, 2]).any(-1)
    reward = -dist - 1.0 * hit
    obs = np.concatenate([pos, vel, goal - pos, lidar], -1).astype(np.float32)
    return pos, vel, obs, reward, hit


class NavEnv:
    """One environment, gymnasium style."""

    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)

    def reset(self):
        self.pos = self.rng.uniform(-1, 1, (1, 2))
        self.vel = np.zeros((1, 2))
        self.goal = self.rng.uniform(-1, 1, (1, 2))
        self.obst = np.concatenate([self.rng.uniform(-1, 1, (1, OBSTACLES, 2)), self.rng.uniform(0.05, 0.2, (1, OBSTACLES, 1))], -1)
        self.t = 0
        _, _, obs, _, _ = physics(self.pos, self.vel, self.goal, self.obst, np.array([8]))
        return obs[0], {}

    def step(self, action):
        self.pos, self.vel, obs, reward, hit = physics(self.pos, self.vel, self.goal, self.obst, np.array([action]))
        self.t += 1
        terminated = bool(np.linalg.norm(self.goal - self.pos) < 0.05)
        return obs[0], float(reward[0]), terminated, self.t >= MAX_T, {"hit": bool(hit[0])}


class SyncVectorEnv:
    """The environments stepped one after the other (gymnasium's SyncVectorEnv pattern)."""

    def __init__(self, n):
        self.envs = [NavEnv(k) for k in range(n)]

    def reset(self):
        return np.stack([e.reset()[0] for e in self.envs])

    def step(self, actions):
        obs, rew, done = [], [], []
        for env, a in zip(self.envs, actions):
            o, r, term, trunc, _ = env.step(int(a))
            if term or trunc:
                o, _ = env.reset()
            obs.append(o), rew.append(r), done.append(term)
        return np.stack(obs), np.array(rew, np.float32), np.array(done, np.float32)


class BatchedEnv:
    """--fix: the same environments as arrays with a leading environment axis."""

    def __init__(self, n):
        self.n, self.rng = n, np.random.default_rng(0)

    def _new(self, m):
        return (self.rng.uniform(-1, 1, (m, 2)), np.zeros((m, 2)), self.rng.uniform(-1, 1, (m, 2)),
                np.concatenate([self.rng.uniform(-1, 1, (m, OBSTACLES, 2)), self.rng.uniform(0.05, 0.2, (m, OBSTACLES, 1))], -1))

    def reset(self):
        self.pos, self.vel, self.goal, self.obst = self._new(self.n)
        self.t = np.zeros(self.n, np.int64)
        return physics(self.pos, self.vel, self.goal, self.obst, np.full(self.n, 8))[2]

    def step(self, actions):
        self.pos, self.vel, obs, reward, _ = physics(self.pos, self.vel, self.goal, self.obst, actions)
        self.t += 1
        term = np.linalg.norm(self.goal - self.pos, axis=-1) < 0.05
        end = term | (self.t >= MAX_T)
        if end.any():
            k = np.flatnonzero(end)
            self.pos[k], self.vel[k], self.goal[k], self.obst[k] = self._new(len(k))
            self.t[k] = 0
            obs[k] = physics(self.pos[k], self.vel[k], self.goal[k], self.obst[k], np.full(len(k), 8))[2]
        return obs, reward.astype(np.float32), term.astype(np.float32)


def main():
    args = cc.parser(__doc__).parse_args()
    dev = cc.torch_device(args)
    n_envs, hidden, batch, capacity = (8, 64, 64, 1024) if args.smoke else (64, 2048, 8192, 200_000)
    obs_dim = 6 + RAYS
    mlp = lambda: torch.nn.Sequential(torch.nn.Linear(obs_dim, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, hidden),
                                      torch.nn.ReLU(), torch.nn.Linear(hidden, hidden), torch.nn.ReLU(),
                                      torch.nn.Linear(hidden, ACTIONS)).to(dev)
    q, target = mlp(), mlp()
    target.load_state_dict(q.state_dict())
    opt = torch.optim.Adam(q.parameters(), lr=1e-4, fused=dev.type == "cuda")
    envs = BatchedEnv(n_envs) if args.fix else SyncVectorEnv(n_envs)
    obs = torch.from_numpy(envs.reset()).to(dev)
    buf = {"o": torch.zeros(capacity, obs_dim, device=dev), "a": torch.zeros(capacity, dtype=torch.int64, device=dev),
           "r": torch.zeros(capacity, device=dev), "d": torch.zeros(capacity, device=dev),
           "o2": torch.zeros(capacity, obs_dim, device=dev)}
    g = torch.Generator(device=dev).manual_seed(0)
    # the buffer starts full of random-policy transitions (a warm-up phase before learning)
    buf["o"].normal_(generator=g), buf["o2"].normal_(generator=g), buf["a"].random_(0, ACTIONS, generator=g)
    slot = 0

    def step(i):
        nonlocal obs, slot
        with torch.no_grad(), torch.autocast(dev.type, dtype=torch.bfloat16):
            greedy = q(obs).argmax(1)
        explore = torch.rand(n_envs, device=dev, generator=g) < 0.1
        actions = torch.where(explore, torch.randint(0, ACTIONS, (n_envs,), device=dev, generator=g), greedy)
        o2, r, d = envs.step(actions.cpu().numpy())  # gpuwhy: plants C1 (64 environments stepped in Python)
        o2, r, d = (torch.from_numpy(t).to(dev, non_blocking=True) for t in (o2, r, d))
        k = torch.arange(slot, slot + n_envs, device=dev) % capacity
        for name, val in (("o", obs), ("a", actions), ("r", r), ("d", d), ("o2", o2)):
            buf[name].index_copy_(0, k, val)
        slot, obs = (slot + n_envs) % capacity, o2
        # one DQN update (double-DQN target)
        idx = torch.randint(0, capacity, (batch,), device=dev, generator=g)
        with torch.autocast(dev.type, dtype=torch.bfloat16):
            with torch.no_grad():
                a2 = q(buf["o2"][idx]).argmax(1, keepdim=True)
                y = buf["r"][idx] + 0.99 * (1 - buf["d"][idx]) * target(buf["o2"][idx]).gather(1, a2).squeeze(1).float()
            qa = q(buf["o"][idx]).gather(1, buf["a"][idx, None]).squeeze(1).float()
        loss = F.smooth_l1_loss(qa, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if i % 500 == 0:
            with torch.no_grad():
                torch._foreach_copy_(list(target.parameters()), list(q.parameters()))

    cc.run("c1_torch_rl_python_env", args, step, n_envs)


if __name__ == "__main__":
    main()
