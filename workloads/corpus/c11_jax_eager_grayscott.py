"""C11 memory-bound (JAX, eager): a Gray-Scott reaction-diffusion simulation on an 8192x8192
float32 grid (two 256 MB fields) written with jax.numpy and run op by op without jax.jit:
each jnp operation (the four jnp.roll shifts of each Laplacian, the products, the sums, the
clip) is its own XLA program that reads and writes whole fields, so the GPU stays busy
streaming DRAM (about 30 round trips of 256 MB per step) while it computes little.

--fix: the same step under jax.jit (buffers donated): XLA fuses the chain into a few kernels
that read each field once, gpuwhy's C11 advice for JAX (jit the whole function).
"""
import jax
import jax.numpy as jnp

import cc
import jaxlm

DU, DV, FEED, KILL, DT = 0.16, 0.08, 0.035, 0.065, 1.0


def laplacian(z):
    return (jnp.roll(z, 1, 0) + jnp.roll(z, -1, 0) + jnp.roll(z, 1, 1) + jnp.roll(z, -1, 1) - 4.0 * z)


def gray_scott(u, v):
    uvv = u * v * v
    u = u + DT * (DU * laplacian(u) - uvv + FEED * (1.0 - u))
    v = v + DT * (DV * laplacian(v) + uvv - (FEED + KILL) * v)
    return jnp.clip(u, 0.0, 1.0), jnp.clip(v, 0.0, 1.0)


def main():
    args = cc.parser(__doc__).parse_args()
    dev = jaxlm.device(args)
    n = 256 if args.smoke else 8192
    with jax.default_device(dev):
        key = jax.random.PRNGKey(0)
        u = jnp.ones((n, n), jnp.float32)
        v = jnp.zeros((n, n), jnp.float32)
        c = slice(n // 2 - n // 16, n // 2 + n // 16)
        v = v.at[c, c].set(0.25) + 0.01 * jax.random.uniform(key, (n, n))
        u = u - v
    update = jax.jit(gray_scott, donate_argnums=(0, 1)) if args.fix else gray_scott

    def step(i):
        nonlocal u, v
        with jax.default_device(dev):
            u, v = update(u, v)  # gpuwhy: plants C11 (about 30 eager jnp ops over 256 MB fields)
        return v

    cc.run("c11_jax_eager_grayscott", args, step, n * n)


if __name__ == "__main__":
    main()
