"""Healthy control (CuPy, an iterative solver written for the GPU): implicit time stepping of
heat conduction through a heterogeneous material (a CT-scanned rock core's conductivity as a
smooth log-normal field, contrast ~50) on a 320 x 320 x 320 grid in float32: each time step solves
(I - dt div(k grad)) u_new = u_old, zero boundary values, with Jacobi-preconditioned conjugate
gradients. The operator is matrix-free, one cupy.RawKernel over the 7-point stencil with the
face conductivities; the two dot products of an iteration are cupy.ReductionKernels that
accumulate in float64 into 0-d device arrays; the vector updates are two fused
cupy.ElementwiseKernels (x, r and the preconditioned residual in one, the search direction in
the other) that read alpha and beta from those 0-d arrays on the device: five kernels an
iteration, each a full pass over 131 MB vectors, and no host read. Convergence (the residual
norm) is read every 25 iterations; a time step ends at a relative residual of 1e-6 or after 300
iterations, and the next one starts from its solution. The GPU should be busy throughout:
memory-bound kernels back to back, launched far ahead of the GPU.

One harness iteration is one CG iteration.

--fix: nothing (control).

Written blind for the india batch.
"""
import numpy as np

import cc

try:
    import cupy as cp
except ImportError:  # CPU smoke test: numpy stands in
    cp = None

STENCIL_SRC = r"""
extern "C" __global__ void apply_a(const float* __restrict__ u, const float* __restrict__ kx,
                                   const float* __restrict__ ky, const float* __restrict__ kz,
                                   const float* __restrict__ diag, float* __restrict__ out,
                                   const int nx, const int ny, const int nz, const float c) {
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const long long plane = (long long)nx * ny;
    if (i >= plane * nz) return;
    const int x = (int)(i % nx);
    const int y = (int)((i / nx) % ny);
    const int z = (int)(i / plane);
    float s = diag[i] * u[i];
    if (x + 1 < nx) s -= c * kx[i] * u[i + 1];
    if (x > 0)      s -= c * kx[i - 1] * u[i - 1];
    if (y + 1 < ny) s -= c * ky[i] * u[i + nx];
    if (y > 0)      s -= c * ky[i - nx] * u[i - nx];
    if (z + 1 < nz) s -= c * kz[i] * u[i + plane];
    if (z > 0)      s -= c * kz[i - plane] * u[i - plane];
    out[i] = s;
}
"""


def main():
    args = cc.parser(__doc__, warmup=10).parse_args()
    gpu = args.device == "cuda" and cp is not None
    if args.device == "cuda" and cp is None:
        raise SystemExit("no CuPy: run with --device cpu for a smoke test")
    xp = cp if gpu else np
    n = 24 if args.smoke else 320
    check_every, max_iter, tol = 25, 300, 1e-6
    h = 1.0 / n
    dt = 2e-4
    c = np.float32(dt / (h * h))

    # conductivity: a smooth log-normal field (Gaussian-filtered noise), on the device
    rs = xp.random.RandomState(0)
    g = rs.standard_normal((n, n, n)).astype(xp.float32)
    kk = xp.fft.fftfreq(n).astype(xp.float32)
    kr = xp.fft.rfftfreq(n).astype(xp.float32)
    filt = xp.exp(-(kk[:, None, None] ** 2 + kk[None, :, None] ** 2 + kr[None, None, :] ** 2) * (n / 6.0) ** 2)
    g = xp.fft.irfftn(xp.fft.rfftn(g) * filt, s=(n, n, n)).astype(xp.float32)
    g = (g - g.mean()) / g.std()
    cond = xp.exp(np.float32(1.0) * g).astype(xp.float32)             # array order (z, y, x)

    def face(a, axis):
        """harmonic mean with the next cell along axis; the last face is the boundary (own k)"""
        nxt = xp.roll(a, -1, axis=axis)
        f = 2 * a * nxt / (a + nxt)
        idx = [slice(None)] * 3
        idx[axis] = -1
        f[tuple(idx)] = a[tuple(idx)]
        return f.astype(xp.float32)

    kx, ky, kz = face(cond, 2), face(cond, 1), face(cond, 0)
    # diagonal: 1 + c * (sum of the six faces); at the lower boundaries the cell's own k
    def lo(f, axis):
        """the face below each cell: the previous cell's upper face, the cell's own k at the boundary"""
        first, rest = [slice(None)] * 3, [slice(None)] * 3
        first[axis], rest[axis] = slice(0, 1), slice(0, n - 1)
        return xp.concatenate([cond[tuple(first)], f[tuple(rest)]], axis=axis)

    diag = (1 + c * (kx + lo(kx, 2) + ky + lo(ky, 1) + kz + lo(kz, 0))).astype(xp.float32)
    dinv = (1.0 / diag).astype(xp.float32)

    if gpu:
        stencil = cp.RawKernel(STENCIL_SRC, "apply_a")
        threads = 256
        blocks = (n * n * n + threads - 1) // threads

        def apply_a(u, out):
            stencil((blocks,), (threads,), (u, kx, ky, kz, diag, out, np.int32(n), np.int32(n), np.int32(n), c))
            return out

        dot = cp.ReductionKernel("float32 a, float32 b", "float64 s", "(double)a * (double)b", "a + b", "s = a", "0",
                                 "pcg_dot", reduce_type="double")
        step_x = cp.ElementwiseKernel("float32 p, float32 ap, float32 dinv, float64 rz, float64 pap",
                                      "float32 x, float32 r, float32 z",
                                      "const float alpha = (float)(rz / pap); x += alpha * p; r -= alpha * ap; z = r * dinv;",
                                      "pcg_update")
        step_p = cp.ElementwiseKernel("float32 z, float64 rz_new, float64 rz", "float32 p",
                                      "p = z + (float)(rz_new / rz) * p;", "pcg_direction")
    else:
        def apply_a(u, out):
            out[...] = diag * u
            out[:, :, :-1] -= c * kx[:, :, :-1] * u[:, :, 1:]
            out[:, :, 1:] -= c * kx[:, :, :-1] * u[:, :, :-1]
            out[:, :-1, :] -= c * ky[:, :-1, :] * u[:, 1:, :]
            out[:, 1:, :] -= c * ky[:, :-1, :] * u[:, :-1, :]
            out[:-1] -= c * kz[:-1] * u[1:]
            out[1:] -= c * kz[:-1] * u[:-1]
            return out

        def dot(a, b):
            return np.asarray(np.dot(a.ravel().astype(np.float64), b.ravel().astype(np.float64)))

        def step_x(p, ap, dinv_, rz, pap, x, r, z):
            alpha = np.float32(rz / pap)
            x += alpha * p
            r -= alpha * ap
            z[...] = r * dinv_

        def step_p(z, rz_new, rz, p):
            p[...] = z + np.float32(rz_new / rz) * p

    # initial temperature: a hot inclusion in a cold block
    zz, yy, xx = np.meshgrid(*(np.linspace(0, 1, n, dtype=np.float32),) * 3, indexing="ij")
    u0 = xp.asarray(np.exp(-((xx - 0.5) ** 2 + (yy - 0.4) ** 2 + (zz - 0.6) ** 2) / 0.02).astype(np.float32))
    vec = lambda: xp.zeros((n, n, n), xp.float32)  # noqa: E731
    x, r, z, p, ap, b = vec(), vec(), vec(), vec(), vec(), vec()
    st = {"it": 0, "steps": 0, "iters": [], "rr0": None, "rz": None, "res": None, "reads": 0}

    def start_time_step(u_old):
        b[...] = u_old
        x[...] = u_old                              # initial guess: the old temperature
        apply_a(x, ap)
        r[...] = b - ap
        z[...] = r * dinv
        p[...] = z
        st["rz"] = dot(r, z)
        st["rr0"] = float(dot(b, b))                # once a time step
        st["reads"] += 1
        st["it"] = 0

    start_time_step(u0)

    def step(i):
        apply_a(p, ap)
        pap = dot(p, ap)
        step_x(p, ap, dinv, st["rz"], pap, x, r, z)
        rz_new = dot(r, z)
        step_p(z, rz_new, st["rz"], p)
        st["rz"] = rz_new
        st["it"] += 1
        if st["it"] % check_every == 0:
            st["res"] = (float(dot(r, r)) / st["rr0"]) ** 0.5   # the convergence check
            st["reads"] += 1
            if st["res"] < tol or st["it"] >= max_iter:
                st["iters"].append(st["it"])
                st["steps"] += 1
                start_time_step(x.copy())
        return None

    cc.run("h_cupy_pcg_diffusion_device_scalars", args, step, 1,
           extra=lambda: {"grid": n, "time_steps_done": st["steps"], "cg_iterations_per_time_step": st["iters"][-5:],
                          "last_relative_residual": st["res"], "host_reads": st["reads"], "cupy": gpu})


if __name__ == "__main__":
    main()
