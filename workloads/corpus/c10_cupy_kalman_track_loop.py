"""C10 serial structure (a Kalman filter stepped through time from Python): filtering a day of
surveillance tracks (ADS-B-style position reports every 5 s) in CuPy, 131,072 tracks at once,
64 report times a chunk, a replayed recording of 512 report times held on the GPU
(time-major [T, tracks, 2] float32 positions in metres: manoeuvring aircraft with 50 m
measurement noise). Each track has a constant-velocity Kalman filter (state x, y, vx, vy;
white-acceleration process noise; position measurements), its state and covariance carried
from chunk to chunk. After the filter, each chunk's filtered states feed the monitoring
products: the normalized innovation squared (NIS) of every report gated at the chi-square
99% point (counted per track, the manoeuvre detector), and a 2,048 x 2,048 traffic density
map of the filtered positions (cupy.bincount), all kept on the GPU and read every 50 chunks.

The filter is the vectorized NumPy version (filterpy's equations over a batch of tracks, the
2 x 2 innovation covariance inverted in closed form) moved to CuPy by swapping the module: a
Python loop over the 64 report times of the chunk, each time ~30 dependent CuPy operations
(batched 4 x 4 matmuls, slices, the closed-form inverse, the gain, the state and covariance
updates, the outputs written into the chunk's arrays) over [131,072, 4, 4] covariances, each
a few microseconds of GPU work behind CuPy's launch cost on the host; ~1,900 small dependent
kernels a chunk.

--fix: gpuwhy's C10 advice (a fused kernel over the whole sequence instead of a time-step
loop): one cupy.RawKernel, one thread a track, that carries the state and covariance through
the chunk's 64 report times in registers (the same equations in float32); data, NIS gate,
density map and reads unchanged (both filters checked against each other at start).

Written blind for the lima batch.
"""
import numpy as np

import cc

try:
    import cupy as cp
except ImportError:  # CPU smoke test: numpy stands in
    cp = None

KF_SRC = r"""
extern "C" __global__ void kf_chunk(const float* __restrict__ z, float* __restrict__ xs,
                                    float* __restrict__ nis, float* __restrict__ xst,
                                    float* __restrict__ pst, const float* __restrict__ q,
                                    const float dt, const float r, const int T, const int M) {
    const int m = blockIdx.x * blockDim.x + threadIdx.x;
    if (m >= M) return;
    float x[4], P[4][4], A[4][4], K[4][2], P0[4], P1[4];
    for (int i = 0; i < 4; ++i) {
        x[i] = xst[(size_t)m * 4 + i];
        for (int j = 0; j < 4; ++j) P[i][j] = pst[(size_t)m * 16 + i * 4 + j];
    }
    for (int t = 0; t < T; ++t) {
        /* predict: x = F x, P = F P F^T + Q (F: constant velocity) */
        x[0] += dt * x[2];
        x[1] += dt * x[3];
        for (int j = 0; j < 4; ++j) {
            A[0][j] = P[0][j] + dt * P[2][j];
            A[1][j] = P[1][j] + dt * P[3][j];
            A[2][j] = P[2][j];
            A[3][j] = P[3][j];
        }
        for (int i = 0; i < 4; ++i) {
            P[i][0] = A[i][0] + dt * A[i][2] + q[i * 4 + 0];
            P[i][1] = A[i][1] + dt * A[i][3] + q[i * 4 + 1];
            P[i][2] = A[i][2] + q[i * 4 + 2];
            P[i][3] = A[i][3] + q[i * 4 + 3];
        }
        /* update with the position report */
        const size_t zi = ((size_t)t * M + m) * 2;
        const float y0 = z[zi] - x[0], y1 = z[zi + 1] - x[1];
        const float s00 = P[0][0] + r, s01 = P[0][1], s10 = P[1][0], s11 = P[1][1] + r;
        const float det = s00 * s11 - s01 * s10;
        const float i00 = s11 / det, i01 = -s01 / det, i10 = -s10 / det, i11 = s00 / det;
        for (int i = 0; i < 4; ++i) {
            K[i][0] = P[i][0] * i00 + P[i][1] * i10;
            K[i][1] = P[i][0] * i01 + P[i][1] * i11;
            x[i] += K[i][0] * y0 + K[i][1] * y1;
        }
        nis[(size_t)t * M + m] = y0 * (i00 * y0 + i01 * y1) + y1 * (i10 * y0 + i11 * y1);
        for (int j = 0; j < 4; ++j) { P0[j] = P[0][j]; P1[j] = P[1][j]; }
        for (int i = 0; i < 4; ++i)
            for (int j = 0; j < 4; ++j) P[i][j] -= K[i][0] * P0[j] + K[i][1] * P1[j];
        for (int i = 0; i < 4; ++i) xs[((size_t)t * M + m) * 4 + i] = x[i];
    }
    for (int i = 0; i < 4; ++i) {
        xst[(size_t)m * 4 + i] = x[i];
        for (int j = 0; j < 4; ++j) pst[(size_t)m * 16 + i * 4 + j] = P[i][j];
    }
}
"""


def main():
    args = cc.parser(__doc__).parse_args()
    gpu = args.device == "cuda"
    if gpu and cp is None:
        raise SystemExit("CuPy is not installed: run with --device cpu for a smoke test")
    xp = cp if gpu else np
    M, T, T_total, grid = (256, 8, 32, 64) if args.smoke else (131_072, 64, 512, 2048)
    n_chunks = T_total // T
    dt, sigma, q_psd = 5.0, 50.0, 1.0
    r = sigma * sigma
    extent = 1.0e6                                   # a 1,000 km square

    # the replayed recording: manoeuvring tracks, noisy position reports (made on the device)
    rs = xp.random.RandomState(0)
    p0 = rs.uniform(0.1 * extent, 0.9 * extent, (M, 2)).astype(xp.float32)
    v0 = rs.normal(0.0, 150.0, (M, 2)).astype(xp.float32)
    acc = rs.normal(0.0, 0.2, (M, 2)).astype(xp.float32)
    tt = (xp.arange(T_total, dtype=xp.float32) * dt)[:, None, None]
    truth = p0[None] + v0[None] * tt + 0.5 * acc[None] * tt * tt
    turn = xp.sin(tt / 600.0 + rs.uniform(0, 6.28, (M, 1)).astype(xp.float32)[None]) * 2000.0
    truth[..., 0] += turn[..., 0]
    z_all = (truth + rs.normal(0.0, sigma, truth.shape).astype(xp.float32)).astype(xp.float32)
    del truth, turn

    F = np.eye(4, dtype=np.float32)
    F[0, 2] = F[1, 3] = dt
    Q = q_psd * np.array([[dt ** 3 / 3, 0, dt ** 2 / 2, 0], [0, dt ** 3 / 3, 0, dt ** 2 / 2],
                          [dt ** 2 / 2, 0, dt, 0], [0, dt ** 2 / 2, 0, dt]], np.float32)
    Fd, Ftd, Qd = xp.asarray(F), xp.asarray(F.T.copy()), xp.asarray(Q)

    def initial_state():
        x = xp.zeros((M, 4), xp.float32)
        x[:, :2] = z_all[0]
        P = xp.zeros((M, 4, 4), xp.float32)
        P[:, 0, 0] = P[:, 1, 1] = r
        P[:, 2, 2] = P[:, 3, 3] = 300.0 ** 2
        return x, P

    def kf_loop(zc, xs, nis, x, P):
        """filterpy's predict/update over all tracks, one report time at a time (x, P in place)."""
        for t in range(T):  # gpuwhy: plants C10 (a Python loop over 64 report times, ~30 small dependent CuPy kernels each)
            xn = x @ Ftd
            Pn = Fd @ P @ Ftd + Qd
            y = zc[t] - xn[:, :2]
            s00 = Pn[:, 0, 0] + r
            s11 = Pn[:, 1, 1] + r
            s01, s10 = Pn[:, 0, 1], Pn[:, 1, 0]
            det = s00 * s11 - s01 * s10
            Sinv = xp.stack([xp.stack([s11, -s01], -1), xp.stack([-s10, s00], -1)], -2) / det[:, None, None]
            K = Pn[:, :, :2] @ Sinv                                   # [M, 4, 2]
            xn += (K @ y[:, :, None])[:, :, 0]
            nis[t] = (y * (Sinv @ y[:, :, None])[:, :, 0]).sum(1)
            P[...] = Pn - K @ Pn[:, :2, :]
            x[...] = xn
            xs[t] = xn

    if gpu:
        kern = cp.RawKernel(KF_SRC, "kf_chunk")
        qd = cp.asarray(Q.ravel())

    def kf_fused(zc, xs, nis, x, P):
        if gpu:
            kern(((M + 255) // 256,), (256,), (zc, xs, nis, x, P, qd, np.float32(dt), np.float32(r),
                                               np.int32(T), np.int32(M)))
        else:
            kf_loop(zc, xs, nis, x, P)

    xs = xp.empty((T, M, 4), xp.float32)
    nis = xp.empty((T, M), xp.float32)
    # both filters agree (the first chunk, from the same initial state)
    xa, Pa = initial_state()
    xb, Pb = initial_state()
    xs_b, nis_b = xp.empty_like(xs), xp.empty_like(nis)
    kf_loop(z_all[:T], xs, nis, xa, Pa)
    kf_fused(z_all[:T], xs_b, nis_b, xb, Pb)
    check = float(xp.abs(xs - xs_b).max() / extent + xp.abs(Pa - Pb).max() / (xp.abs(Pa).max() + 1e-12))
    if check > 1e-3:
        raise SystemExit(f"fused filter disagrees with the loop: {check}")
    kf = kf_fused if args.fix else kf_loop

    x, P = initial_state()
    gate = np.float32(9.21)                          # chi-square, 2 dof, 99%
    manoeuvres = xp.zeros((M,), xp.int32)
    density = xp.zeros((grid * grid,), xp.int64)
    cell = np.float32(grid / extent)
    state = {"reads": 0, "gated": None, "peak": None}

    def step(i):
        c = i % n_chunks
        if c == 0 and i > 0:                         # the recording starts again: fresh filters
            x0, P0 = initial_state()
            x[...], P[...] = x0, P0
        zc = z_all[c * T:(c + 1) * T]
        kf(zc, xs, nis, x, P)
        manoeuvres[...] += (nis > gate).sum(0).astype(xp.int32)
        gx = xp.clip((xs[..., 0] * cell).astype(xp.int32), 0, grid - 1)
        gy = xp.clip((xs[..., 1] * cell).astype(xp.int32), 0, grid - 1)
        density[...] += xp.bincount((gy * grid + gx).ravel(), minlength=grid * grid)
        if i % 50 == 49:
            state["gated"] = int(manoeuvres.sum())
            state["peak"] = int(density.max())
            state["reads"] += 1

    cc.run("c10_cupy_kalman_track_loop", args, step, M * T,
           extra=lambda: {"tracks": M, "reports_per_chunk": T, "unit": "track reports",
                          "filter": "RawKernel over the chunk" if args.fix else "Python loop over report times",
                          "filter_check": round(check, 9), "gated": state["gated"], "reads": state["reads"]})


if __name__ == "__main__":
    main()
