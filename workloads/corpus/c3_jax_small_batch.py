"""C3 small batch (JAX): a jitted MLP classifier (4 x 1024, bf16 compute) trained with
batch 16: each GEMM fills a couple of the 132 SMs and the whole step lasts less than its
dispatch.

--fix: batch 4096 (learning rate scaled).
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
    h = x.astype(jnp.bfloat16)
    for layer in params[:-1]:
        h = jax.nn.relu(h @ layer["w"].astype(jnp.bfloat16) + layer["b"].astype(jnp.bfloat16))
    logits = (h @ params[-1]["w"].astype(jnp.bfloat16)).astype(jnp.float32) + params[-1]["b"]
    return optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()


def main():
    args = cc.parser(__doc__).parse_args()
    dev = jaxlm.device(args)
    sizes = [64, 128, 128, 10] if args.smoke else [784, 1024, 1024, 1024, 1024, 10]
    batch = cc.fix_batch(4096) if args.fix else 16  # gpuwhy: plants C3 (batch of 16)
    with jax.default_device(dev):
        params = init(jax.random.PRNGKey(0), sizes)
        opt = optax.adamw(1e-3 * (batch / 256) ** 0.5)
        state = opt.init(params)
        xs = [jax.random.normal(jax.random.PRNGKey(i), (batch, sizes[0])) for i in range(8)]
        ys = [jax.random.randint(jax.random.PRNGKey(100 + i), (batch,), 0, 10) for i in range(8)]

    @jax.jit
    def train_step(params, state, x, y):
        loss, g = jax.value_and_grad(loss_fn)(params, x, y)
        upd, state = opt.update(g, state, params)
        return optax.apply_updates(params, upd), state, loss

    def step(i):
        nonlocal params, state
        params, state, loss = train_step(params, state, xs[i % 8], ys[i % 8])
        return loss

    cc.run("c3_jax_small_batch", args, step, batch)


if __name__ == "__main__":
    main()
