"""C11 memory-bound elementwise chain (a NumPy molecular-dynamics code ported to CuPy by swapping
the module): a Lennard-Jones liquid, the state point of LAMMPS's `melt` benchmark (an fcc
lattice at reduced density 0.8442, 60 x 60 x 60 cells: 864,000 atoms, initial temperature 3.0,
cutoff 2.5 sigma, skin 0.3, neighbour list rebuilt every 20 steps, velocity Verlet at dt
0.005, NVE), positions as an (N, 3) float32 array in a periodic box of 100.8 sigma.
The neighbour list is a padded (N, 112) int32 array (-1 after a particle's ~78 neighbours),
built every 20 steps from a cell list with a small cupy.RawKernel; thermodynamic output
(kinetic and potential energy, the largest neighbour count) is read every 100 steps.

The force routine is the NumPy one, array expressions over the (N, K) pairs: the positions
of the neighbours gathered into an (N, K, 3) array, the minimum image (d -= L * rint(d / L)),
r^2, the cutoff mask, 1 / r^2, r^-6, the force magnitude 48 r^-6 (r^-6 - 1/2) / r^2 and the
sum over neighbours. Each expression is its own CuPy kernel with its own (N, K, 3) or (N, K)
temporary (1.16 GB and 0.39 GB), ~20 of them a step: ~30 GB of DRAM traffic for a few
GFLOP. The GPU is busy, streaming memory.

--fix: gpuwhy's C11 advice (fuse the elementwise chain): the same force arithmetic in one
cupy.RawKernel, one thread an atom looping over its neighbours (positions read once, the
force written once); the lattice, neighbour list, integrator and thermodynamic output
unchanged (both forces checked equal at start).

Written blind for the papa batch.
"""
import math

import numpy as np

import cc

try:
    import cupy as cp
    import cupyx
except ImportError:  # CPU smoke test: numpy stands in
    cp = None

RC, SKIN, DT, REBUILD, K = 2.5, 0.3, 0.005, 20, 112

NBR_SRC = r"""
extern "C" __global__ void build_nbr(const float* pos, const int* cell_start, const int* cell_count,
                                     const int* sorted_idx, int nc, float cs, float L, float rlist2,
                                     int n, int K, int* nbr, int* count) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float xi = pos[3 * i], yi = pos[3 * i + 1], zi = pos[3 * i + 2];
    int cx = min((int)(xi / cs), nc - 1), cy = min((int)(yi / cs), nc - 1), cz = min((int)(zi / cs), nc - 1);
    int c = 0;
    for (int dz = -1; dz <= 1; ++dz)
    for (int dy = -1; dy <= 1; ++dy)
    for (int dx = -1; dx <= 1; ++dx) {
        int cell = (((cz + dz + nc) % nc) * nc + (cy + dy + nc) % nc) * nc + (cx + dx + nc) % nc;
        int s = cell_start[cell], e = s + cell_count[cell];
        for (int p = s; p < e; ++p) {
            int j = sorted_idx[p];
            if (j == i) continue;
            float ddx = pos[3 * j] - xi, ddy = pos[3 * j + 1] - yi, ddz = pos[3 * j + 2] - zi;
            ddx -= L * rintf(ddx / L); ddy -= L * rintf(ddy / L); ddz -= L * rintf(ddz / L);
            if (ddx * ddx + ddy * ddy + ddz * ddz < rlist2) {
                if (c < K) nbr[i * K + c] = j;
                ++c;
            }
        }
    }
    for (int q = c; q < K; ++q) nbr[i * K + q] = -1;
    count[i] = c;
}
"""

FORCE_SRC = r"""
extern "C" __global__ void lj_force(const float* pos, const int* nbr, int n, int K, float L, float rc2,
                                    float* f) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float xi = pos[3 * i], yi = pos[3 * i + 1], zi = pos[3 * i + 2];
    float fx = 0.f, fy = 0.f, fz = 0.f;
    for (int k = 0; k < K; ++k) {
        int j = nbr[i * K + k];
        if (j < 0) break;
        float dx = pos[3 * j] - xi, dy = pos[3 * j + 1] - yi, dz = pos[3 * j + 2] - zi;
        dx -= L * rintf(dx / L); dy -= L * rintf(dy / L); dz -= L * rintf(dz / L);
        float r2 = dx * dx + dy * dy + dz * dz;
        if (r2 < rc2) {
            float inv2 = 1.f / r2, inv6 = inv2 * inv2 * inv2;
            float fm = 48.f * inv6 * (inv6 - 0.5f) * inv2;
            fx -= fm * dx; fy -= fm * dy; fz -= fm * dz;
        }
    }
    f[3 * i] = fx; f[3 * i + 1] = fy; f[3 * i + 2] = fz;
}
"""


def fcc(cells, density):
    """An fcc lattice of 4 cells^3 atoms at the given reduced density; returns (pos, box)."""
    a = (4.0 / density) ** (1.0 / 3.0)
    basis = np.array([[0, 0, 0], [0.5, 0.5, 0], [0.5, 0, 0.5], [0, 0.5, 0.5]])
    g = np.stack(np.meshgrid(*[np.arange(cells)] * 3, indexing="ij"), -1).reshape(-1, 1, 3)
    return ((g + basis[None]) * a).reshape(-1, 3).astype(np.float32), np.float32(cells * a)


def main():
    args = cc.parser(__doc__, warmup=5).parse_args()
    gpu = args.device == "cuda"
    if gpu and cp is None:
        raise SystemExit("CuPy is not installed: run with --device cpu for a smoke test")
    xp = cp if gpu else np
    cells = 4 if args.smoke else 60
    pos_h, box = fcc(cells, 0.8442)
    n = pos_h.shape[0]
    L = float(box)
    rc2, rlist2 = np.float32(RC * RC), np.float32((RC + SKIN) ** 2)
    nc = max(3, int(L // (RC + SKIN)))
    cs = np.float32(L / nc)
    rng = np.random.default_rng(0)
    vel_h = rng.normal(0.0, math.sqrt(3.0), (n, 3)).astype(np.float32)
    vel_h -= vel_h.mean(0)
    pos, vel = xp.asarray(pos_h), xp.asarray(vel_h)
    shift = 4.0 * (RC ** -12 - RC ** -6)

    if gpu:
        build_k = cp.RawKernel(NBR_SRC, "build_nbr")
        force_k = cp.RawKernel(FORCE_SRC, "lj_force")

    def build(pos):
        """The cell list and the padded neighbour list (N, K) of pairs within rc + skin."""
        if not gpu:  # CPU smoke test: brute force over all pairs
            d = pos[None, :, :] - pos[:, None, :]
            d -= L * np.rint(d / L)
            r2 = (d * d).sum(-1)
            np.fill_diagonal(r2, np.inf)
            close = r2 < rlist2
            count = close.sum(1).astype(np.int32)
            nbr = np.full((n, K), -1, np.int32)
            for i in range(n):
                js = np.nonzero(close[i])[0][:K]
                nbr[i, :js.shape[0]] = js
            return nbr, count
        c = xp.minimum((pos / cs).astype(xp.int32), nc - 1)
        cell = (c[:, 2] * nc + c[:, 1]) * nc + c[:, 0]
        order = xp.argsort(cell).astype(xp.int32)
        cell_count = xp.zeros(nc ** 3, xp.int32)
        cupyx.scatter_add(cell_count, cell, 1)
        cell_start = (xp.cumsum(cell_count) - cell_count).astype(xp.int32)
        nbr = xp.empty((n, K), xp.int32)
        count = xp.empty(n, xp.int32)
        build_k(((n + 127) // 128,), (128,), (pos, cell_start, cell_count, order, np.int32(nc), cs, np.float32(L),
                                                rlist2, np.int32(n), np.int32(K), nbr, count))
        return nbr, count

    def forces_numpy_style(pos, nbr):
        valid = nbr >= 0
        d = pos[xp.where(valid, nbr, 0)] - pos[:, None, :]  # gpuwhy: plants C11 (~20 array expressions a step over (N, K, 3) and (N, K) temporaries of 1.16 and 0.39 GB)
        d -= L * xp.rint(d / L)
        r2 = (d * d).sum(-1)
        m = valid & (r2 < rc2)
        r2 = xp.where(m, r2, xp.float32(1.0))
        inv2 = xp.float32(1.0) / r2
        inv6 = inv2 * inv2 * inv2
        fmag = xp.where(m, xp.float32(48.0) * inv6 * (inv6 - xp.float32(0.5)) * inv2, xp.float32(0.0))
        return -(fmag[..., None] * d).sum(1)

    def forces_fused(pos, nbr):
        if not gpu:  # CPU smoke test: the kernel's arithmetic, atom by atom, vectorized
            return forces_numpy_style(pos, nbr)
        f = xp.empty_like(pos)
        force_k(((n + 127) // 128,), (128,), (pos, nbr, np.int32(n), np.int32(K), np.float32(L), rc2, f))
        return f

    def potential(pos, nbr):
        valid = nbr >= 0
        d = pos[xp.where(valid, nbr, 0)] - pos[:, None, :]
        d -= L * xp.rint(d / L)
        r2 = (d * d).sum(-1)
        m = valid & (r2 < rc2)
        inv6 = xp.where(m, xp.float32(1.0) / xp.where(m, r2, xp.float32(1.0)), xp.float32(0.0)) ** 3
        return 0.5 * float((xp.where(m, 4.0 * inv6 * (inv6 - 1.0) - shift, 0.0)).sum())

    nbr, count = build(pos)
    # equivalence at start: the fused kernel's forces equal the array expressions'
    fa, fb = forces_numpy_style(pos + xp.float32(0.01) * xp.asarray(vel_h), nbr), None
    fb = forces_fused(pos + xp.float32(0.01) * xp.asarray(vel_h), nbr)
    err = float(xp.abs(fa - fb).max()) / max(1.0, float(xp.abs(fa).max()))
    if err > 1e-4:
        raise SystemExit(f"fused forces disagree with the array expressions: {err}")
    del fa, fb
    force = forces_fused if args.fix else forces_numpy_style
    f = force(pos, nbr)
    st = {"pos": pos, "vel": vel, "f": f, "nbr": nbr, "maxn": count.max(), "thermo": None, "reads": 0, "builds": 1}

    def step(i):
        v = st["vel"] + xp.float32(0.5 * DT) * st["f"]
        p = st["pos"] + xp.float32(DT) * v
        p = p - L * xp.floor(p / L)  # wrap into the box
        if i % REBUILD == REBUILD - 1:
            st["nbr"], count = build(p)
            st["maxn"] = xp.maximum(st["maxn"], count.max())
            st["builds"] += 1
        f = force(p, st["nbr"])
        v = v + xp.float32(0.5 * DT) * f
        st["pos"], st["vel"], st["f"] = p, v, f
        if i % 100 == 99:
            ke = 0.5 * float((v * v).sum())
            maxn = int(st["maxn"])
            if maxn > K:
                raise SystemExit(f"neighbour list overflow: {maxn} > {K}")
            st["thermo"] = {"temp": round(2 * ke / (3 * n), 4), "pe_per_atom": round(potential(p, st["nbr"]) / n, 4),
                            "max_neighbours": maxn}
            st["reads"] += 1

    cc.run("c11_cupy_lj_md_neighbor_eager", args, step, 1,
           extra=lambda: {"atoms": n, "box": round(L, 2), "max_neighbours_k": K,
                          "force": "RawKernel" if args.fix else "array expressions",
                          "thermo": st["thermo"], "thermo_reads": st["reads"], "list_builds": st["builds"],
                          "pairs_gb": round(n * K * 3 * 4 / 1e9, 2), "check_err": err})


if __name__ == "__main__":
    main()
