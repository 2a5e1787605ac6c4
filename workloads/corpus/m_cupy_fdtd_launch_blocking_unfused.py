"""C5 + C11 (CUDA_LAUNCH_BLOCKING left in a CuPy script, and the field updates written as NumPy
array expressions): a 2D finite-difference time-domain (FDTD) electromagnetics solver in the
TMz polarization (Ez, Hx, Hy on a Yee grid, Schneider's normalized update equations), ported
from its NumPy version to CuPy by swapping the module: a 2,560 x 2,560 float32 grid (26 MB a
field) with dielectric cylinders (relative permittivity 4) in free space, a graded lossy
sponge layer 64 cells deep at the edges (electric and magnetic loss matched, so waves leave
without reflection), a continuous-wave point source (32 points a wavelength, ramped on) and
four probes whose Ez values go into a ring on the device every time step; the field energy is
read every 500 steps. One harness iteration is one time step.

Two things in the script:
- the update is written the way the NumPy version was, one array expression a line over
  shifted slices (Hx[:-1, :] = chh[:-1, :] * Hx[:-1, :] - che[:-1, :] * (Ez[1:, :] - Ez[:-1, :]),
  the same for Hy, then Ez from the curl of H): each operator is its own CuPy kernel with its
  own 26 MB temporary, 17 full-grid passes a step through DRAM plus the source and the probes
  (C11);
- its first lines export CUDA_LAUNCH_BLOCKING=1, put there while a RawKernel for a total-field
  / scattered-field source was faulting ("so the error shows up at the right line"), and left
  when that source was dropped: every one of the ~22 launches a step waits for its kernel
  before CuPy's Python code moves on to the next (C5).

--fix: both causes' advice at once (gpuwhy's combined prediction): CUDA_LAUNCH_BLOCKING not
exported, and the H update and the E update each one cupy.ElementwiseKernel over the grid (the
same coefficients, the same arithmetic, each field read once), the source and the probes as
before; grid, materials, source, probes and time step unchanged.

Written blind for the juliet batch.
"""
import os
import sys

FIX = "--fix" in sys.argv
if not FIX:
    os.environ["CUDA_LAUNCH_BLOCKING"] = "1"  # gpuwhy: plants C5 (left from debugging a source RawKernel)

import numpy as np  # noqa: E402

import cc  # noqa: E402

try:
    import cupy as cp  # noqa: E402
except ImportError:  # CPU smoke test: numpy stands in
    cp = None

IMP0 = 376.730313
COURANT = 0.5          # 2D stability limit is 1/sqrt(2)
PPW = 32               # points per wavelength of the source
SRC_TABLE = 4096       # a whole number of source periods (period = PPW / COURANT = 64 steps)
RING = 1024            # probe samples kept on the device

H_SRC = r"""
const int x = (int)(i % nx);
const int y = (int)(i / nx);
const float e = ez[i];
const float c_h = chh[i];
const float c_e = che[i];
if (y < ny - 1) hx[i] = c_h * hx[i] - c_e * (ez[i + nx] - e);
if (x < nx - 1) hy[i] = c_h * hy[i] + c_e * (ez[i + 1] - e);
"""

E_SRC = r"""
const int x = (int)(i % nx);
const int y = (int)(i / nx);
if (x > 0 && x < nx - 1 && y > 0 && y < ny - 1) {
    const float curl = (hy[i] - hy[i - 1]) - (hx[i] - hx[i - nx]);
    ez[i] = cee[i] * ez[i] + ceh[i] * curl;
}
"""


def materials(xp, ny, nx, sponge):
    """Coefficient arrays: dielectric cylinders and a graded, matched lossy sponge at the edges."""
    yy, xx = np.mgrid[0:ny, 0:nx].astype(np.float32)
    eps = np.ones((ny, nx), np.float32)
    rng = np.random.default_rng(0)
    for _ in range(12):
        cy, cx = rng.uniform(sponge + 0.1 * ny, ny - sponge - 0.1 * ny), rng.uniform(sponge + 0.1 * nx, nx - sponge - 0.1 * nx)
        r = rng.uniform(0.02, 0.05) * min(ny, nx)
        eps[(yy - cy) ** 2 + (xx - cx) ** 2 < r * r] = 4.0
    d = np.minimum.reduce([yy, xx, ny - 1 - yy, nx - 1 - xx])        # distance to the nearest edge
    depth = np.clip((sponge - d) / sponge, 0.0, 1.0)
    loss = (0.35 * depth ** 3).astype(np.float32)                      # polynomial grading
    cee = ((1 - loss) / (1 + loss)).astype(np.float32)
    ceh = (COURANT * IMP0 / eps / (1 + loss)).astype(np.float32)
    chh = ((1 - loss) / (1 + loss)).astype(np.float32)                 # magnetic loss matched to the electric
    che = (COURANT / IMP0 / (1 + loss)).astype(np.float32)
    return [xp.asarray(a) for a in (cee, ceh, chh, che)]


def main():
    args = cc.parser(__doc__, warmup=20).parse_args()
    gpu = args.device == "cuda" and cp is not None
    if args.device == "cuda" and cp is None:
        raise SystemExit("no CuPy: run with --device cpu for a smoke test")
    xp = cp if gpu else np
    n, sponge = (96, 12) if args.smoke else (2560, 64)
    ny = nx = n
    cee, ceh, chh, che = materials(xp, ny, nx, sponge)
    ez = xp.zeros((ny, nx), xp.float32)
    hx = xp.zeros((ny, nx), xp.float32)
    hy = xp.zeros((ny, nx), xp.float32)
    k = np.arange(SRC_TABLE, dtype=np.float64)
    src = xp.asarray((np.sin(2 * np.pi * COURANT * k / PPW)).astype(np.float32))
    sy, sx = ny // 2, nx // 3
    py = xp.asarray(np.array([ny // 2, ny // 4, 3 * ny // 4, ny // 2], np.int64))
    px = xp.asarray(np.array([2 * nx // 3, nx // 2, nx // 2, nx - sponge - 8], np.int64))
    rec = xp.zeros((RING, 4), xp.float32)
    st = {"energy": None, "reads": 0}

    if FIX and gpu:
        h_kernel = cp.ElementwiseKernel("raw float32 ez, raw float32 chh, raw float32 che, int32 nx, int32 ny",
                                        "raw float32 hx, raw float32 hy", H_SRC, "fdtd_tmz_h")
        e_kernel = cp.ElementwiseKernel("raw float32 hx, raw float32 hy, raw float32 cee, raw float32 ceh, int32 nx, int32 ny",
                                        "raw float32 ez", E_SRC, "fdtd_tmz_e")
        size = ny * nx

        def update():
            h_kernel(ez, chh, che, np.int32(nx), np.int32(ny), hx, hy, size=size)
            e_kernel(hx, hy, cee, ceh, np.int32(nx), np.int32(ny), ez, size=size)
    elif FIX:
        def update():
            """numpy stand-in of the two fused kernels (same arithmetic, one pass each)"""
            hx[:-1, :] = chh[:-1, :] * hx[:-1, :] - che[:-1, :] * (ez[1:, :] - ez[:-1, :])
            hy[:, :-1] = chh[:, :-1] * hy[:, :-1] + che[:, :-1] * (ez[:, 1:] - ez[:, :-1])
            curl = (hy[1:-1, 1:-1] - hy[1:-1, :-2]) - (hx[1:-1, 1:-1] - hx[:-2, 1:-1])
            ez[1:-1, 1:-1] = cee[1:-1, 1:-1] * ez[1:-1, 1:-1] + ceh[1:-1, 1:-1] * curl
    else:
        def update():
            hx[:-1, :] = chh[:-1, :] * hx[:-1, :] - che[:-1, :] * (ez[1:, :] - ez[:-1, :])  # gpuwhy: plants C11 (a kernel and a 26 MB temporary per operator)
            hy[:, :-1] = chh[:, :-1] * hy[:, :-1] + che[:, :-1] * (ez[:, 1:] - ez[:, :-1])
            ez[1:-1, 1:-1] = cee[1:-1, 1:-1] * ez[1:-1, 1:-1] + ceh[1:-1, 1:-1] * (
                (hy[1:-1, 1:-1] - hy[1:-1, :-2]) - (hx[1:-1, 1:-1] - hx[:-2, 1:-1]))

    def step(i):
        update()
        ramp = min(1.0, i / 256.0)
        ez[sy, sx] += src[i % SRC_TABLE] * np.float32(ramp)    # soft source
        rec[i % RING] = ez[py, px]                               # the probes, kept on the device
        if i % 500 == 499:
            st["energy"] = float((ez * ez).sum() + IMP0 * IMP0 * ((hx * hx).sum() + (hy * hy).sum()))
            st["reads"] += 1
        return None

    cc.run("m_cupy_fdtd_launch_blocking_unfused", args, step, 1,
           extra=lambda: {"grid": n, "cuda_launch_blocking": os.environ.get("CUDA_LAUNCH_BLOCKING"),
                          "fused_kernels": bool(FIX), "energy": st["energy"], "energy_reads": st["reads"],
                          "probe_max": float(abs(rec).max()), "cupy": gpu})


if __name__ == "__main__":
    main()
