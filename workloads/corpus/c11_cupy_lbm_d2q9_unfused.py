"""C11 memory-bound elementwise chain (a NumPy lattice Boltzmann code ported to CuPy by
swapping the module): flow past a cylinder in a channel with the D2Q9 BGK lattice Boltzmann
method, the textbook NumPy formulation (Schroeder's and Mocz's well-known scripts) run on a
4,096 x 4,096 lattice in float32 with `import cupy as np` in spirit. The populations are one
(9, ny, nx) array (604 MB). A step is: the macroscopic density and velocity (sums over the nine
directions of f, f * cx and f * cy), the equilibrium written as array expressions over
(9, ny, nx) broadcasts (cu = 3 (cx ux + cy uy), w rho (1 + cu + cu^2 / 2 - 3/2 |u|^2)), the
relaxation f += omega (feq - f), the bounce-back on the cylinder with cupy.where, the inflow
set at the left edge, and the streaming by nine pairs of cupy.roll. Each array expression is
its own CuPy kernel with its own temporary, so the collision reads and writes the 604 MB
population array and its 604 MB temporaries some twenty times a step: the GPU is busy, but
with DRAM traffic, not arithmetic. A vorticity diagnostic is read back every 200 steps.

--fix: gpuwhy's C11 advice (fuse the elementwise chain): the macroscopic moments, the
equilibrium and the relaxation in one cupy.ElementwiseKernel a lattice cell, which reads the
nine populations once and writes them once; the bounce-back, the inflow, the streaming
(cupy.roll), the lattice and the diagnostic unchanged.

Written blind for the hotel batch.
"""
import numpy as np

import cc

try:
    import cupy as cp
except ImportError:  # CPU smoke test: numpy stands in
    cp = None

# D2Q9: rest, the four axes, the four diagonals
CX = np.array([0, 1, 0, -1, 0, 1, -1, -1, 1])
CY = np.array([0, 0, 1, 0, -1, 1, 1, -1, -1])
W = np.array([4 / 9] + [1 / 9] * 4 + [1 / 36] * 4, np.float32)
OPP = np.array([0, 3, 4, 1, 2, 7, 8, 5, 6])

COLLIDE_SRC = r"""
const size_t nn = (size_t)ny * nx;
float fi[9];
float rho = 0.f, mx = 0.f, my = 0.f;
#pragma unroll
for (int k = 0; k < 9; ++k) { fi[k] = f[k * nn + i]; rho += fi[k]; }
mx = fi[1] - fi[3] + fi[5] - fi[6] - fi[7] + fi[8];
my = fi[2] - fi[4] + fi[5] + fi[6] - fi[7] - fi[8];
const float ux = mx / rho, uy = my / rho;
const float usq = 1.5f * (ux * ux + uy * uy);
const float cx[9] = {0.f, 1.f, 0.f, -1.f, 0.f, 1.f, -1.f, -1.f, 1.f};
const float cy[9] = {0.f, 0.f, 1.f, 0.f, -1.f, 1.f, 1.f, -1.f, -1.f};
const float w[9] = {4.f / 9.f, 1.f / 9.f, 1.f / 9.f, 1.f / 9.f, 1.f / 9.f,
                    1.f / 36.f, 1.f / 36.f, 1.f / 36.f, 1.f / 36.f};
#pragma unroll
for (int k = 0; k < 9; ++k) {
    const float cu = 3.f * (cx[k] * ux + cy[k] * uy);
    const float feq = w[k] * rho * (1.f + cu + 0.5f * cu * cu - usq);
    f[k * nn + i] = fi[k] + omega * (feq - fi[k]);
}
"""


def main():
    args = cc.parser(__doc__).parse_args()
    gpu = args.device == "cuda"
    if gpu and cp is None:
        raise SystemExit("CuPy is not installed: run with --device cpu for a smoke test")
    xp = cp if gpu else np
    ny, nx = (64, 128) if args.smoke else (4096, 4096)
    u_in, re = 0.04, 220.0
    r = ny // 9
    nu = u_in * r / re
    omega = np.float32(1.0 / (3.0 * nu + 0.5))
    cx = xp.asarray(CX.astype(np.float32))[:, None, None]
    cy = xp.asarray(CY.astype(np.float32))[:, None, None]
    w = xp.asarray(W)[:, None, None]
    opp = xp.asarray(OPP)
    yy, xx = np.mgrid[0:ny, 0:nx]
    cyl = xp.asarray(((xx - nx // 4) ** 2 + (yy - ny // 2) ** 2) < r * r)  # the obstacle
    wall = xp.asarray((yy == 0) | (yy == ny - 1))
    solid = cyl | wall

    def equilibrium(rho, ux, uy):
        cu = 3.0 * (cx * ux + cy * uy)
        usq = 1.5 * (ux ** 2 + uy ** 2)
        return w * rho * (1.0 + cu + 0.5 * cu ** 2 - usq)

    ones = xp.ones((ny, nx), xp.float32)
    zeros = xp.zeros((ny, nx), xp.float32)
    # a small sinusoidal perturbation of the inflow breaks the symmetry (vortex street)
    u0 = (u_in * (1.0 + 1e-3 * xp.sin(2 * np.pi * xp.arange(ny, dtype=xp.float32) / ny)))[:, None] * ones
    f = equilibrium(ones, u0, zeros).astype(xp.float32)
    f_in = equilibrium(ones[:, :1], u0[:, :1], zeros[:, :1]).astype(xp.float32)  # the inflow column

    if args.fix and gpu:
        collide_k = cp.ElementwiseKernel("float32 omega, int32 ny, int32 nx", "raw float32 f",
                                         COLLIDE_SRC, "lbm_bgk_collide")

        def collide(f):
            collide_k(omega, np.int32(ny), np.int32(nx), f, size=ny * nx)
            return f
    elif args.fix:  # CPU smoke test: the same arithmetic cell by cell vectorized in numpy
        def collide(f):
            rho = f.sum(0)
            ux = (f[1] - f[3] + f[5] - f[6] - f[7] + f[8]) / rho
            uy = (f[2] - f[4] + f[5] + f[6] - f[7] - f[8]) / rho
            f += omega * (equilibrium(rho, ux, uy) - f)
            return f
    else:
        def collide(f):
            rho = f.sum(0)  # gpuwhy: plants C11
            ux = (f * cx).sum(0) / rho
            uy = (f * cy).sum(0) / rho
            feq = equilibrium(rho, ux, uy)
            f += omega * (feq - f)
            return f

    diag = {"reads": 0, "max_vorticity": None}

    def step(i):
        nonlocal f
        bounce = f[opp]  # bounce-back: the streamed populations reflected at solid cells
        f = collide(f)
        f = xp.where(solid[None], bounce, f)
        f[:, :, 0] = f_in[:, :, 0]  # inflow
        for k in range(9):  # streaming
            f[k] = xp.roll(xp.roll(f[k], int(CX[k]), axis=1), int(CY[k]), axis=0)
        if i % 200 == 199:
            rho = f.sum(0)
            ux = (f * cx).sum(0) / rho
            uy = (f * cy).sum(0) / rho
            vort = (xp.roll(uy, -1, 1) - xp.roll(uy, 1, 1)) - (xp.roll(ux, -1, 0) - xp.roll(ux, 1, 0))
            diag["max_vorticity"] = float(xp.abs(vort).max())
            diag["reads"] += 1

    cc.run("c11_cupy_lbm_d2q9_unfused", args, step, 1,
           extra=lambda: {"lattice": [ny, nx], "cells_per_step": ny * nx,
                          "population_mb": round(9 * ny * nx * 4 / 2 ** 20, 1),
                          "diagnostic_reads": diag["reads"],
                          "collision": "ElementwiseKernel" if args.fix else "array expressions"})


if __name__ == "__main__":
    main()
