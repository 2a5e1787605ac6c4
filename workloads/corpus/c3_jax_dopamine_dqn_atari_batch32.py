"""C3 batch too small for the GPU (an offline Atari DQN learner at Dopamine's batch of 32): the
learner of a DQN agent in the layout of Dopamine's JAX agents (dopamine/jax/agents/dqn), trained
offline from a fixed replay of logged Atari frames as the DQN Replay Dataset studies do, in plain
JAX + optax: the Nature DQN network (conv 32 8x8 stride 4, conv 64 4x4 stride 2, conv 64 3x3
stride 1, dense 512, 18 action values; 1.69 M parameters, float32 as Dopamine keeps it) on
stacks of 4 greyscale 84 x 84 frames, the Huber loss on the one-step target r + 0.99 (1 - done)
max_a Q_target(s', a), Adam with Dopamine's settings (lr 6.25e-5, eps 1.5e-4), the target
network set to the online parameters every 8,000 updates (a reference, no copy), one jitted
train step (sampling, both networks, the gradient and the update in one call). The replay is
held on the GPU: 50,000 uint8 frames (353 MB, smooth blobs over a playfield, made at start) with
their actions, rewards and terminal flags; a transition's states are the 4 frames up to its index
and the 4 after it, gathered inside the step. The loss stays on the device and is read every
1,000 updates.

The batch is 32 transitions, Dopamine's and the Nature paper's batch_size: each of the step's
~40-60 XLA kernels (three convolutions forward on the states and on the next states, their
gradients, the dense layers, the loss and Adam's fused update) runs over 32 images, the first
convolution's output 32 x 20 x 20 x 32 and the dense layer a 32 x 3,136 x 512 product, a few
thread blocks each on a GPU of 132 SMs; the step is 68.6 MFLOP a transition (XLA's cost analysis
of the loss gradient on the CPU), 2.2 GFLOP in all: ~0.2-0.4 ms of tiny kernels against ~0.1 ms
of host time a step, estimated.

--fix: gpuwhy's C3 advice (raise the batch size): 1,024 transitions a step (cc.fix_batch(1024);
GW_FIX_BATCH times another size), the learning rate scaled by the square root of the batch ratio;
network, replay, loss and optimizer unchanged; the throughput is per transition.

Written blind for the victor batch.
"""
import math

import numpy as np

import cc  # before jax: cc sets JAX's compilation cache directory
import jax
import jax.numpy as jnp
import jaxlm
import optax

STACK = 4
GAMMA = 0.99
TARGET_UPDATE = 8000


def variance_scaling(key, shape, fan_in):
    """Dopamine's initializer: variance_scaling(1/3, fan_in, uniform)."""
    lim = math.sqrt(3.0 * (1.0 / 3.0) / fan_in)
    return jax.random.uniform(key, shape, jnp.float32, -lim, lim)


def init(key, n_actions, size):
    ks = jax.random.split(key, 5)
    s1 = (size - 8) // 4 + 1
    s2 = (s1 - 4) // 2 + 1
    s3 = s2 - 2
    flat = s3 * s3 * 64
    return {"c1": {"w": variance_scaling(ks[0], (8, 8, STACK, 32), 8 * 8 * STACK), "b": jnp.zeros((32,))},
            "c2": {"w": variance_scaling(ks[1], (4, 4, 32, 64), 4 * 4 * 32), "b": jnp.zeros((64,))},
            "c3": {"w": variance_scaling(ks[2], (3, 3, 64, 64), 3 * 3 * 64), "b": jnp.zeros((64,))},
            "d1": {"w": variance_scaling(ks[3], (flat, 512), flat), "b": jnp.zeros((512,))},
            "q": {"w": variance_scaling(ks[4], (512, n_actions), 512), "b": jnp.zeros((n_actions,))}}


def conv(x, p, stride):
    y = jax.lax.conv_general_dilated(x, p["w"], (stride, stride), "VALID",
                                     dimension_numbers=("NHWC", "HWIO", "NHWC"))
    return jax.nn.relu(y + p["b"])


def q_values(p, frames):
    """NatureDQNNetwork: uint8 (B, 84, 84, 4) -> (B, actions)."""
    x = frames.astype(jnp.float32) / 255.0
    x = conv(x, p["c1"], 4)
    x = conv(x, p["c2"], 2)
    x = conv(x, p["c3"], 1)
    x = x.reshape(x.shape[0], -1)
    x = jax.nn.relu(x @ p["d1"]["w"] + p["d1"]["b"])
    return x @ p["q"]["w"] + p["q"]["b"]


def make_replay(key, n, size, n_actions):
    """n logged frames: a few moving blobs (sprites) over a dim playfield, as uint8 greyscale, with
    actions, clipped rewards and ~1% terminal flags."""
    yy, xx = jnp.meshgrid(jnp.arange(size, dtype=jnp.float32), jnp.arange(size, dtype=jnp.float32), indexing="ij")

    @jax.jit
    def chunk(k, t0):
        m = 1024
        k1, k2 = jax.random.split(k)
        t = (t0 + jnp.arange(m, dtype=jnp.float32))[:, None]
        base = jax.random.uniform(k1, (6, 2), minval=8, maxval=size - 8)
        vel = jax.random.uniform(k2, (6, 2), minval=-0.7, maxval=0.7)
        cy = (base[None, :, 0] + vel[None, :, 0] * t) % size
        cx = (base[None, :, 1] + vel[None, :, 1] * t) % size
        d2 = (yy[None, None] - cy[..., None, None]) ** 2 + (xx[None, None] - cx[..., None, None]) ** 2
        img = 40.0 + 180.0 * jnp.exp(-d2 / 12.0).max(1)
        img = img + 30.0 * (yy > size - 10)[None]                    # the score bar / floor
        return jnp.clip(img, 0, 255).astype(jnp.uint8)

    ks = jax.random.split(key, -(-n // 1024) + 3)
    frames = jnp.concatenate([chunk(ks[i], float(i * 1024)) for i in range(-(-n // 1024))])[:n]
    actions = jax.random.randint(ks[-3], (n,), 0, n_actions)
    rewards = jnp.clip(jax.random.normal(ks[-2], (n,)) * 0.3, -1.0, 1.0)
    terminals = jax.random.bernoulli(ks[-1], 0.01, (n,))
    return frames, actions, rewards, terminals


def main():
    args = cc.parser(__doc__, warmup=5).parse_args()
    dev = jaxlm.device(args)
    n_actions = 18
    size, n_frames = (84, 4096) if args.smoke else (84, 50_000)
    batch = cc.fix_batch(128 if args.smoke else 1024) if args.fix else 32  # gpuwhy: plants C3 (Dopamine's batch_size of 32 transitions: every kernel of the jitted step over 32 images, a few thread blocks on 132 SMs)
    lr = 6.25e-5 * math.sqrt(batch / 32)
    tx = optax.adam(lr, eps=1.5e-4)

    def train_step(online, target, opt_state, key, frames, actions, rewards, terminals):
        key, k = jax.random.split(key)
        idx = jax.random.randint(k, (batch,), STACK, frames.shape[0] - STACK - 1)
        win = idx[:, None] + jnp.arange(-STACK + 1, STACK + 1)[None]        # s: idx-3..idx, s': idx+1..idx+4
        stacks = jnp.moveaxis(frames[win], 1, -1)                           # (B, 84, 84, 8)
        s, s2 = stacks[..., :STACK], stacks[..., STACK:]
        a, r, done = actions[idx], rewards[idx], terminals[idx].astype(jnp.float32)
        q_next = q_values(target, s2).max(-1)
        y = jax.lax.stop_gradient(r + GAMMA * (1.0 - done) * q_next)

        def loss_fn(p):
            q = jnp.take_along_axis(q_values(p, s), a[:, None], 1)[:, 0]
            return optax.huber_loss(q, y, delta=1.0).mean()

        loss, g = jax.value_and_grad(loss_fn)(online)
        u, opt_state = tx.update(g, opt_state, online)
        return optax.apply_updates(online, u), opt_state, key, loss

    train_step = jax.jit(train_step)
    with jax.default_device(dev):
        online = init(jax.random.PRNGKey(0), n_actions, size)
        opt_state = tx.init(online)
        replay = make_replay(jax.random.PRNGKey(1), n_frames, size, n_actions)
        key = jax.random.PRNGKey(2)
    n_params = sum(x.size for x in jax.tree_util.tree_leaves(online))
    st = {"online": online, "target": online, "opt": opt_state, "key": key, "loss": None, "reads": 0,
          "target_syncs": 0}

    def step(i):
        st["online"], st["opt"], st["key"], loss = train_step(st["online"], st["target"], st["opt"], st["key"], *replay)
        if (i + 1) % TARGET_UPDATE == 0:
            st["target"] = st["online"]                                     # Dopamine: target <- online
            st["target_syncs"] += 1
        if (i + 1) % 1000 == 0:
            st["loss"] = float(loss)
            st["reads"] += 1
        return loss

    cc.run("c3_jax_dopamine_dqn_atari_batch32", args, step, batch,
           extra=lambda: {"batch": batch, "params_m": round(n_params / 1e6, 2), "replay_frames": n_frames,
                          "loss": st["loss"], "loss_reads": st["reads"], "target_syncs": st["target_syncs"]})


if __name__ == "__main__":
    main()
