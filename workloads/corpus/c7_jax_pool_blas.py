"""C7 CPU thread oversubscription (JAX): a multiprocessing Pool of 12 feature extractors
(numpy: random projections of image patches, BLAS) feeds a jitted classifier; every pool
process runs OpenBLAS with one thread per core, beside JAX's own threads: about 200 busy
threads on 16 cores, each process slowed by the others.

--fix: one BLAS thread per process (OPENBLAS_NUM_THREADS/OMP_NUM_THREADS=1 set at the top,
before numpy is imported).
"""
import os
import sys

if "--fix" in sys.argv:
    for v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[v] = "1"

import multiprocessing as mp  # noqa: E402

import numpy as np  # noqa: E402

import cc  # noqa: E402

ROWS, DIM, FEAT = 512, 1024, 512
PROJ = None


def features(seed):
    """Patches -> random-projection features (two BLAS matmuls)."""
    rng = np.random.default_rng(seed)
    patches = rng.standard_normal((ROWS, DIM), dtype=np.float32)  # gpuwhy: plants C7 (BLAS pool per process)
    f = np.maximum(patches @ PROJ, 0)
    return (f @ PROJ.T[:FEAT, :FEAT]).astype(np.float32), rng.integers(0, 10, ROWS).astype(np.int32)


def main():
    global PROJ
    args = cc.parser(__doc__).parse_args()
    PROJ = (np.random.default_rng(0).standard_normal((DIM, FEAT)) / DIM ** 0.5).astype(np.float32)
    procs = 2 if args.smoke else 12
    pool = mp.get_context("fork").Pool(procs)  # forked before JAX starts its threads
    batches = cc.prefetch(pool, features, range(1_000_000), 2 * procs)

    import jax
    import jax.numpy as jnp
    import optax
    import jaxlm
    dev = jaxlm.device(args)
    with jax.default_device(dev):
        k1, k2 = jax.random.split(jax.random.PRNGKey(0))
        params = {"w1": jax.random.normal(k1, (FEAT, 2048)) * 0.03, "w2": jax.random.normal(k2, (2048, 10)) * 0.02}
        opt = optax.adam(1e-3)
        state = opt.init(params)

    def loss_fn(p, x, y):
        h = jax.nn.gelu(x.astype(jnp.bfloat16) @ p["w1"].astype(jnp.bfloat16))
        logits = (h @ p["w2"].astype(jnp.bfloat16)).astype(jnp.float32)
        return optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()

    @jax.jit
    def train_step(p, s, x, y):
        loss, g = jax.value_and_grad(loss_fn)(p, x, y)
        upd, s = opt.update(g, s, p)
        return optax.apply_updates(p, upd), s, loss

    def step(i):
        nonlocal params, state
        x, y = next(batches)
        params, state, loss = train_step(params, state, jax.device_put(x, dev), jax.device_put(y, dev))
        return loss

    try:
        cc.run("c7_jax_pool_blas", args, step, ROWS)
    finally:
        pool.terminate()


if __name__ == "__main__":
    main()
