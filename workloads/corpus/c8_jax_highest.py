"""C8 no mixed precision (JAX): the language model trained in float32 with
jax_default_matmul_precision="highest" (set once for reproducibility): every matmul runs
as a true FP32 GEMM, without tensor cores (not even TF32).

--fix: bfloat16 compute with float32 master weights, default matmul precision.
"""
import sys

import jax

if "--fix" not in sys.argv:
    jax.config.update("jax_default_matmul_precision", "highest")  # gpuwhy: plants C8

import jax.numpy as jnp  # noqa: E402
import optax  # noqa: E402

import cc  # noqa: E402
import jaxlm  # noqa: E402


def main():
    args = cc.parser(__doc__).parse_args()
    dev = jaxlm.device(args)
    vocab, d, layers, heads, seq, batch = (512, 64, 2, 4, 33, 2) if args.smoke else (16000, 768, 4, 12, 257, 32)
    dtype = jnp.bfloat16 if args.fix else jnp.float32
    with jax.default_device(dev):
        params = jaxlm.init(jax.random.PRNGKey(0), vocab, d, layers, seq)
        opt = optax.adamw(3e-4)
        state = opt.init(params)
        batches = [jax.random.randint(jax.random.PRNGKey(i), (batch, seq), 0, vocab) for i in range(8)]
    train_step = jax.jit(jaxlm.make_step(opt, heads, dtype), donate_argnums=(0, 1))

    def step(i):
        nonlocal params, state
        params, state, loss = train_step(params, state, batches[i % 8])
        return loss

    cc.run("c8_jax_highest", args, step, batch)


if __name__ == "__main__":
    main()
