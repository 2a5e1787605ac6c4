"""C11 memory-bound (CuPy): SGD with Nesterov momentum and weight decay over a 128M-element
flat parameter vector, written as array expressions: every operator is its own kernel that
reads and writes 512 MB, so the step is a chain of DRAM round trips.

--fix: the same update in one cupy.fuse function (one kernel: one read, one write per array).
"""
import numpy as np

import cc

try:
    import cupy as cp
except ImportError:  # CPU smoke test: numpy stands in
    cp = None


# abs() of an array is not traced by cupy.fuse; the ufunc is (one kernel either way)
_abs = cp.absolute if cp is not None else np.absolute


def sgd_update(p, g, m, lr, mom, wd):
    g = g + wd * p
    m = mom * m + g
    upd = g + mom * m
    upd = upd * (1.0 / (1.0 + 0.01 * _abs(upd)))  # soft clipping of outliers
    return p - lr * upd, m


def main():
    args = cc.parser(__doc__).parse_args()
    gpu = args.device == "cuda"
    if gpu and cp is None:
        raise SystemExit("CuPy is not installed: run with --device cpu for a smoke test")
    xp = cp if gpu else np
    n = 1 << 16 if args.smoke else 128 << 20
    p = xp.ones(n, dtype=xp.float32)
    m = xp.zeros(n, dtype=xp.float32)
    grads = [xp.asarray(np.random.default_rng(k).standard_normal(n, dtype=np.float32)) for k in range(2)]
    # gpuwhy: plants C11 (eight separate elementwise kernels per update)
    update = cp.fuse(kernel_name="sgd_update")(sgd_update) if gpu and args.fix else sgd_update

    def step(i):
        nonlocal p, m
        p, m = update(p, grads[i % 2], m, 1e-3, 0.9, 1e-4)
        return p

    cc.run("c11_cupy_chain", args, step, 1)


if __name__ == "__main__":
    main()
