"""C13 power/thermal (load only, JAX): a jitted chain of large bf16 matmuls (a deep linear
"stress" block, 8192-wide, batch 16384) run without pause: the sustained tensor-core load
that meets the H200's power limit. A program cannot plant a power or thermal fault (limits
and clocks must not be changed on the test machine).

--fix changes nothing (the remedies are outside the program): gpuwhy should report C13 if
NVML saw the power cap, else nothing at warning or above.
"""
import jax
import jax.numpy as jnp

import cc
import jaxlm


def main():
    args = cc.parser(__doc__).parse_args()
    dev = jaxlm.device(args)
    d, depth, batch = (64, 2, 32) if args.smoke else (8192, 6, 16384)
    with jax.default_device(dev):
        ks = jax.random.split(jax.random.PRNGKey(0), depth + 1)
        ws = [jax.random.normal(k, (d, d), jnp.bfloat16) * d ** -0.5 for k in ks[:depth]]
        x = jax.random.normal(ks[-1], (batch, d), jnp.bfloat16)

    @jax.jit
    def block(x, ws):
        for w in ws:
            x = jnp.tanh(x @ w)  # gpuwhy: plants C13 (sustained full-power load)
        return x

    def step(i):
        nonlocal x
        x = block(x, ws)
        return x

    cc.run("c13_jax_power", args, step, batch)


if __name__ == "__main__":
    main()
