"""C4 launch-bound (JAX, environment stepped eagerly): PPO for a planar quadrotor learning to
hover, in plain JAX + optax with the environments written in jax.numpy as gymnax / PureJaxRL
users write them (a functional `step(state, action, key)`, batched over 4,096 copies,
auto-reset with jnp.where), but with only the agent jitted: the rollout loop calls
`env.step` from Python without jax.jit, so every primitive of the dynamics (an RK4 step of
the 2-D rigid-body equations with Crazyflie-like mass, arm and inertia, 50 Hz control), of the
reward, of the termination tests, of the auto-reset's random initial states and of the
episode bookkeeping is dispatched on its own: ~230 XLA programs an environment step, each a
kernel of a few microseconds over 4,096 elements.

One iteration is one PPO iteration: a rollout of 32 steps of the 4,096 environments (131,072
transitions; the agent's jitted `act` once a step), then one jitted update (GAE 0.99 / 0.95
by jax.lax.scan in reverse, 4 epochs of 4 minibatches of 32,768 transitions, clipped
surrogate 0.2, clipped value loss, entropy 0.0, global-norm clipping 0.5, Adam 3e-4): actor
and critic MLPs of two tanh layers of 256 (CleanRL's ppo_continuous_action shapes), a
state-independent log-std. Episode returns are summed on the device and read every 10
iterations.

--fix: gpuwhy's C4 advice (fuse the small kernels into one compiled program): the
environment's step wrapped in jax.jit (state donated), as gymnax's examples do; dynamics,
reward, resets, agent, rollout length and update unchanged.

Written blind for the uniform batch.
"""
import math
from typing import NamedTuple

import numpy as np

import cc  # before jax: cc sets JAX's compilation cache directory
import jax
import jax.numpy as jnp
import jaxlm
import optax

# a Crazyflie 2.x in the vertical x-z plane (safe-control-gym's 2-D quadrotor parameters)
MASS, ARM, INERTIA, GRAVITY, DRAG = 0.027, 0.0397, 1.4e-5, 9.81, 0.05
DT = 0.02                      # 50 Hz control, one RK4 step
MAX_T = 500                    # truncation: 10 s episodes
GOAL_X, GOAL_Z = 0.0, 1.0
OBS_DIM, ACT_DIM = 7, 2


class EnvState(NamedTuple):
    """One field an array over the batch of environments (gymnax's EnvState, batched)."""
    x: jax.Array
    z: jax.Array
    theta: jax.Array
    vx: jax.Array
    vz: jax.Array
    omega: jax.Array
    time: jax.Array
    ret: jax.Array            # return of the running episode
    done_ret: jax.Array       # sum of the returns of finished episodes
    done_n: jax.Array


class QuadrotorHover:
    """2-D quadrotor hover task, batched: x, z, pitch theta and their rates."""

    hover = MASS * GRAVITY / 2.0                  # thrust of one rotor at hover
    init_lo = (-1.0, 0.5, -0.3, -0.5, -0.5, -0.5)  # initial x, z, theta, vx, vz, omega
    init_hi = (1.0, 1.5, 0.3, 0.5, 0.5, 0.5)

    def dynamics(self, q, t1, t2):
        x, z, th, vx, vz, om = q
        total = t1 + t2
        ax = -total * jnp.sin(th) / MASS - DRAG * vx
        az = total * jnp.cos(th) / MASS - GRAVITY - DRAG * vz
        dom = (t2 - t1) * (ARM / INERTIA)
        return vx, vz, om, ax, az, dom

    def rk4(self, q, t1, t2):
        shift = lambda q, k, h: tuple(a + h * b for a, b in zip(q, k))             # noqa: E731
        k1 = self.dynamics(q, t1, t2)
        k2 = self.dynamics(shift(q, k1, 0.5 * DT), t1, t2)
        k3 = self.dynamics(shift(q, k2, 0.5 * DT), t1, t2)
        k4 = self.dynamics(shift(q, k3, DT), t1, t2)
        return tuple(a + DT / 6.0 * (b1 + 2.0 * b2 + 2.0 * b3 + b4) for a, b1, b2, b3, b4 in zip(q, k1, k2, k3, k4))

    def sample_init(self, key, n):
        ks = jax.random.split(key, 6)
        return tuple(jax.random.uniform(k, (n,), minval=lo, maxval=hi)
                     for k, lo, hi in zip(ks, self.init_lo, self.init_hi))

    def observe(self, q):
        x, z, th, vx, vz, om = q
        return jnp.stack([x - GOAL_X, z - GOAL_Z, jnp.sin(th), jnp.cos(th), vx, vz, om], axis=-1)

    def reset(self, key, n):
        q = self.sample_init(key, n)
        zero = jnp.zeros((n,))
        return EnvState(*q, jnp.zeros((n,), jnp.int32), zero, jnp.zeros(()), jnp.zeros(())), self.observe(q)

    def step(self, state, action, key):
        a = jnp.clip(action, -1.0, 1.0)
        t1 = self.hover * (1.0 + a[:, 0])
        t2 = self.hover * (1.0 + a[:, 1])
        q = self.rk4(state[:6], t1, t2)
        x, z, th, vx, vz, om = q
        dist2 = (x - GOAL_X) ** 2 + (z - GOAL_Z) ** 2
        reward = jnp.exp(-dist2 / 0.25) - 0.1 * th ** 2 - 0.01 * om ** 2 - 0.02 * jnp.sum(a * a, axis=-1)
        crashed = (z < 0.0) | (z > 3.0) | (jnp.abs(x) > 3.0) | (jnp.abs(th) > 1.2)
        time = state.time + 1
        done = crashed | (time >= MAX_T)
        reward = jnp.where(crashed, reward - 10.0, reward)
        ret = state.ret + reward
        done_ret = state.done_ret + jnp.sum(jnp.where(done, ret, 0.0))
        done_n = state.done_n + jnp.sum(done)
        q = tuple(jnp.where(done, b, c) for b, c in zip(self.sample_init(key, x.shape[0]), q))   # auto-reset
        state = EnvState(*q, jnp.where(done, 0, time), jnp.where(done, 0.0, ret), done_ret, done_n)
        return state, self.observe(q), reward, done


def init_agent(key, hidden):
    def dense(k, a, b, scale):
        w = jax.nn.initializers.orthogonal(scale)(k, (a, b))
        return {"w": w, "b": jnp.zeros((b,))}
    ks = jax.random.split(key, 6)
    r2 = math.sqrt(2.0)
    actor = [dense(ks[0], OBS_DIM, hidden, r2), dense(ks[1], hidden, hidden, r2), dense(ks[2], hidden, ACT_DIM, 0.01)]
    critic = [dense(ks[3], OBS_DIM, hidden, r2), dense(ks[4], hidden, hidden, r2), dense(ks[5], hidden, 1, 1.0)]
    return {"actor": actor, "critic": critic, "log_std": jnp.full((ACT_DIM,), -0.5)}


def mlp(layers, x):
    for l in layers[:-1]:
        x = jnp.tanh(x @ l["w"] + l["b"])
    return x @ layers[-1]["w"] + layers[-1]["b"]


def log_prob(mean, log_std, a):
    return jnp.sum(-0.5 * ((a - mean) / jnp.exp(log_std)) ** 2 - log_std - 0.5 * math.log(2 * math.pi), -1)


def main():
    args = cc.parser(__doc__, warmup=3).parse_args()
    dev = jaxlm.device(args)
    if args.smoke:
        n_envs, n_steps, hidden, epochs, n_mb = 64, 8, 32, 2, 2
    else:
        n_envs, n_steps, hidden, epochs, n_mb = 4096, 32, 256, 4, 4
    gamma, lam, clip, vclip, max_norm = 0.99, 0.95, 0.2, 0.2, 0.5
    tx = optax.chain(optax.clip_by_global_norm(max_norm), optax.adam(3e-4, eps=1e-5))

    @jax.jit
    def act(params, obs, key):
        mean = mlp(params["actor"], obs)
        a = mean + jnp.exp(params["log_std"]) * jax.random.normal(key, mean.shape)
        return a, log_prob(mean, params["log_std"], a), mlp(params["critic"], obs)[:, 0]

    def ppo_loss(params, mb):
        mean = mlp(params["actor"], mb["obs"])
        lp = log_prob(mean, params["log_std"], mb["act"])
        ratio = jnp.exp(lp - mb["logp"])
        adv = (mb["adv"] - mb["adv"].mean()) / (mb["adv"].std() + 1e-8)
        pg = jnp.maximum(-adv * ratio, -adv * jnp.clip(ratio, 1 - clip, 1 + clip)).mean()
        v = mlp(params["critic"], mb["obs"])[:, 0]
        v_clipped = mb["val"] + jnp.clip(v - mb["val"], -vclip, vclip)
        vl = 0.5 * jnp.maximum((v - mb["ret"]) ** 2, (v_clipped - mb["ret"]) ** 2).mean()
        return pg + 0.5 * vl

    def update(params, opt_state, traj, last_val, key):
        def gae(carry, t):
            nxt_adv, nxt_val = carry
            nonterm = 1.0 - t["done"]
            delta = t["rew"] + gamma * nxt_val * nonterm - t["val"]
            adv = delta + gamma * lam * nonterm * nxt_adv
            return (adv, t["val"]), adv
        _, adv = jax.lax.scan(gae, (jnp.zeros_like(last_val), last_val),
                              {"done": traj["done"], "rew": traj["rew"], "val": traj["val"]}, reverse=True)
        flat = {"obs": traj["obs"].reshape(-1, OBS_DIM), "act": traj["act"].reshape(-1, ACT_DIM),
                "logp": traj["logp"].reshape(-1), "val": traj["val"].reshape(-1),
                "adv": adv.reshape(-1), "ret": (adv + traj["val"]).reshape(-1)}
        n = flat["adv"].shape[0]

        def epoch(carry, k):
            perm = jax.random.permutation(k, n).reshape(n_mb, -1)

            def minibatch(carry, idx):
                p, o = carry
                loss, g = jax.value_and_grad(ppo_loss)(p, jax.tree_util.tree_map(lambda a: a[idx], flat))
                u, o = tx.update(g, o, p)
                return (optax.apply_updates(p, u), o), loss
            return jax.lax.scan(minibatch, carry, perm)

        (params, opt_state), losses = jax.lax.scan(epoch, (params, opt_state), jax.random.split(key, epochs))
        return params, opt_state, losses.mean()

    update = jax.jit(update, donate_argnums=(0, 1))

    with jax.default_device(dev):
        env = QuadrotorHover()
        key = jax.random.PRNGKey(0)
        key, k_env, k_agent = jax.random.split(key, 3)
        params = init_agent(k_agent, hidden)
        opt_state = tx.init(params)
        env_state, obs = env.reset(k_env, n_envs)
    if args.fix:
        env_step = jax.jit(env.step, donate_argnums=0)
    else:
        env_step = env.step  # gpuwhy: plants C4 (the environment stepped op by op: ~230 dispatches of tiny kernels a step)
    st = {"params": params, "opt": opt_state, "env": env_state, "obs": obs, "key": key,
          "ret": None, "reads": 0, "loss": None}

    def step(i):
        with jax.default_device(dev):
            traj = {"obs": [], "act": [], "logp": [], "val": [], "rew": [], "done": []}
            for _ in range(n_steps):
                st["key"], k_act, k_env = jax.random.split(st["key"], 3)
                a, lp, v = act(st["params"], st["obs"], k_act)
                traj["obs"].append(st["obs"])
                st["env"], st["obs"], r, d = env_step(st["env"], a, k_env)
                for name, val in (("act", a), ("logp", lp), ("val", v), ("rew", r), ("done", d)):
                    traj[name].append(val)
            _, _, last_val = act(st["params"], st["obs"], k_act)
            traj = {k: jnp.stack(v) for k, v in traj.items()}
            traj["done"] = traj["done"].astype(jnp.float32)
            st["key"], k_upd = jax.random.split(st["key"])
            st["params"], st["opt"], loss = update(st["params"], st["opt"], traj, last_val, k_upd)
        if i % 10 == 9:
            n_done = float(st["env"].done_n)
            st["ret"] = round(float(st["env"].done_ret) / max(n_done, 1.0), 3)
            st["loss"] = round(float(loss), 5)
            st["reads"] += 1
        return loss

    cc.run("c4_jax_eager_quadrotor_env_ppo", args, step, n_envs * n_steps,
           extra=lambda: {"envs": n_envs, "rollout_steps": n_steps, "env_steps_per_iteration": n_steps,
                          "env_step": "jax.jit" if args.fix else "eager", "mean_episode_return": st["ret"],
                          "loss": st["loss"], "return_reads": st["reads"],
                          "backend": jax.default_backend(), "numpy": np.__version__})


if __name__ == "__main__":
    main()
