"""C9 host scalars in an iterative solver (CuPy): conjugate gradient on a 1024x1024 Poisson
problem (matrix-free 5-point stencil written with array slicing), solved again and again to a
relative residual of 1e-4, in the textbook form, with
the step sizes as Python floats: pAp = float(cp.vdot(p, Ap)) and rr_new = float(cp.vdot(r, r))
(the latter also the convergence test), so every iteration waits twice for the GPU and then
launches the next dozen small kernels from an empty queue.

--fix: alpha and beta stay 0-d device arrays (no float()), and the residual is read for the
convergence test every 50 iterations (gpuwhy's C9 advice: keep values on the GPU, read
them every N steps). The kernels are the same.
"""
import numpy as np

import cc

try:
    import cupy as cp
except ImportError:  # CPU smoke test: numpy stands in
    cp = None


def laplacian(xp, p, out):
    """A p for the 5-point Laplacian with zero boundary values."""
    xp.multiply(p, 4.0, out=out)
    out[1:] -= p[:-1]
    out[:-1] -= p[1:]
    out[:, 1:] -= p[:, :-1]
    out[:, :-1] -= p[:, 1:]
    return out


def main():
    args = cc.parser(__doc__).parse_args()
    gpu = args.device == "cuda"
    if gpu and cp is None:
        raise SystemExit("CuPy is not installed: run with --device cpu for a smoke test")
    xp = cp if gpu else np
    n = 128 if args.smoke else 1024
    rng = np.random.default_rng(0)
    b = xp.asarray(rng.standard_normal((n, n), dtype=np.float32))
    # relative residual 1e-4: a solve takes about a thousand iterations, then it starts
    # again (as each time step of a simulation would)
    tol = 1e-4 * float(xp.linalg.norm(b))
    state = {}

    def restart():
        x = xp.zeros_like(b)
        r = b.copy()
        state.update(x=x, r=r, p=r.copy(), Ap=xp.empty_like(b), rr=xp.vdot(r, r), rrf=float(xp.vdot(r, r)))

    restart()

    def step(i):
        s = state
        x, r, p, Ap = s["x"], s["r"], s["p"], s["Ap"]
        laplacian(xp, p, Ap)
        if args.fix:
            alpha = s["rr"] / xp.vdot(p, Ap)
            x += alpha * p
            r -= alpha * Ap
            rr_new = xp.vdot(r, r)
            if i % 50 == 0 and float(xp.sqrt(rr_new)) < tol:
                restart()
                return
            p *= rr_new / s["rr"]
            p += r
            s["rr"] = rr_new
            return
        alpha = s["rrf"] / float(xp.vdot(p, Ap))  # gpuwhy: plants C9 (a Python float of a GPU dot product)
        x += alpha * p
        r -= alpha * Ap
        rr_new = float(xp.vdot(r, r))  # gpuwhy: plants C9 (the residual read every iteration)
        if np.sqrt(rr_new) < tol:
            restart()
            return
        p *= rr_new / s["rrf"]
        p += r
        s["rrf"] = rr_new

    cc.run("c9_cupy_cg_scalars", args, step, 1)


if __name__ == "__main__":
    main()
