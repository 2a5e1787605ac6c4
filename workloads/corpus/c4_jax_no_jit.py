"""C4 launch-bound (JAX): an MLP regressor trained op by op, without jax.jit: every
primitive of the forward, of the gradient and of optax's Adam update is dispatched from
Python on its own, and each runs for microseconds on the GPU.

--fix: the same step function wrapped in jax.jit (one compiled program, buffers donated).
"""
import jax
import jax.numpy as jnp
import optax

import cc
import jaxlm


def init(key, sizes):
    ks = jax.random.split(key, len(sizes))
    return [{"w": jax.random.normal(k, (a, b)) * (2 / a) ** 0.5, "b": jnp.zeros((b,))}
            for k, a, b in zip(ks, sizes[:-1], sizes[1:])]


def loss_fn(params, x, y):
    h = x
    for layer in params[:-1]:
        h = jax.nn.silu(h @ layer["w"] + layer["b"])
        h = h / (1e-6 + jnp.linalg.norm(h, axis=-1, keepdims=True)) * h.shape[-1] ** 0.5
    pred = h @ params[-1]["w"] + params[-1]["b"]
    return jnp.mean(optax.huber_loss(pred, y))


def main():
    args = cc.parser(__doc__).parse_args()
    dev = jaxlm.device(args)
    batch, sizes = (64, [32, 64, 64, 1]) if args.smoke else (8192, [256, 512, 512, 512, 512, 512, 1])
    with jax.default_device(dev):
        params = init(jax.random.PRNGKey(0), sizes)
        opt = optax.chain(optax.clip_by_global_norm(1.0), optax.adam(1e-3))
        state = opt.init(params)
        xs = [jax.random.normal(jax.random.PRNGKey(i), (batch, sizes[0])) for i in range(8)]
        ys = [x[:, :1] * 2 + 1 for x in xs]

    def train_step(params, state, x, y):
        loss, g = jax.value_and_grad(loss_fn)(params, x, y)
        upd, state = opt.update(g, state, params)
        return optax.apply_updates(params, upd), state, loss

    if args.fix:
        train_step = jax.jit(train_step, donate_argnums=(0, 1))
    # else: gpuwhy: plants C4 (no jax.jit: every primitive is dispatched on its own)

    def step(i):
        nonlocal params, state
        with jax.default_device(dev):
            params, state, loss = train_step(params, state, xs[i % 8], ys[i % 8])
        return loss

    cc.run("c4_jax_no_jit", args, step, batch)


if __name__ == "__main__":
    main()
