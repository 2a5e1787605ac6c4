"""C1 host preparation of each frame before the GPU part (a NumPy/SciPy calibration half-ported
to CuPy): lucky-imaging / deep-sky stacking of a stream of raw 1,024 x 1,024 uint16 camera
frames. Each frame is calibrated (dark subtracted, divided by the normalized flat), its hot
pixels removed with a 3 x 3 median filter, then registered on the GPU against the reference
frame by phase correlation (cupy.fft.rfft2 of the frame, the normalized cross-power spectrum,
irfft2, the peak's position read as the integer shift), shifted with cupy.roll and added to the
running sum and the sum of squares (for the sigma map). The raw frames (32, made once in host
memory, as read from the camera's ring buffer: a star field with drift, noise and hot pixels)
are cycled; the stack's mean and the shift statistics are read every 50 frames.

The script was ported from NumPy by swapping `xp = cupy` in the registration and stacking
code; the calibration stayed in NumPy and scipy.ndimage.median_filter on the host, so each
frame is calibrated and median-filtered by one host thread (~4 MB of float32 work) and then
copied up, while the GPU waits.

--fix: gpuwhy's C1 advice for host work on the thread that feeds the GPU, by moving it onto
the GPU (as c1_torch_cpu_embedding_sparseadam's fix): the raw uint16 frame copied up and the
same calibration and cupyx.scipy.ndimage.median_filter run on the device; registration,
stacking and reads unchanged (the calibrated frames of both paths checked equal at start).

Written blind for the mike batch.
"""
import numpy as np
import scipy.ndimage as ndi

import cc

try:
    import cupy as cp
    import cupyx.scipy.ndimage as gndi
except ImportError:  # CPU smoke test: numpy stands in
    import numpy as cp
    gndi = ndi


def main():
    args = cc.parser(__doc__, warmup=3).parse_args()
    if args.device == "cuda" and cp is np:
        raise SystemExit("no CuPy: run with --device cpu for a smoke test")
    N, n_frames = (256, 8) if args.smoke else (1024, 32)
    rng = np.random.default_rng(0)
    # the sky: stars as Gaussian blobs, drifting a few pixels per frame, plus hot pixels
    yy, xx = np.mgrid[0:N, 0:N].astype(np.float32)
    sky = np.full((N, N), 400.0, np.float32)
    for _ in range(60 if args.smoke else 400):
        y0, x0, a = rng.uniform(8, N - 8), rng.uniform(8, N - 8), rng.uniform(300, 8000)
        r = int(6)
        ys, xs = int(y0), int(x0)
        sl = (slice(max(ys - r, 0), ys + r), slice(max(xs - r, 0), xs + r))
        sky[sl] += a * np.exp(-((yy[sl] - y0) ** 2 + (xx[sl] - x0) ** 2) / 4.0)
    dark = rng.normal(100, 5, (N, N)).astype(np.float32)
    flat = (1.0 + 0.05 * np.sin(xx / N * 3) * np.cos(yy / N * 2)).astype(np.float32)
    hot = rng.random((N, N)) < 1e-4
    raws = []
    for f in range(n_frames):
        frame = np.roll(sky, (f % 7 - 3, (f * 3) % 11 - 5), (0, 1)) * flat + dark
        frame = rng.poisson(np.maximum(frame, 0)).astype(np.float32)
        frame[hot] = 65000
        raws.append(np.clip(frame, 0, 65535).astype(np.uint16))
    flat_n = flat / flat.mean()
    dark_d, flat_d = cp.asarray(dark), cp.asarray(flat_n)

    def calibrate_host(raw):
        return ndi.median_filter((raw.astype(np.float32) - dark) / flat_n, size=3, mode="nearest")

    def calibrate_device(raw):
        return gndi.median_filter((cp.asarray(raw).astype(cp.float32) - dark_d) / flat_d, size=3, mode="nearest")

    # equivalence at start: the same calibrated frame from both paths
    a = calibrate_host(raws[0])
    b = calibrate_device(raws[0])
    b = b.get() if hasattr(b, "get") else b
    assert np.allclose(a, b, rtol=1e-5, atol=1e-2), np.abs(a - b).max()

    ref_f = cp.conj(cp.fft.rfft2(cp.asarray(a)))
    st = {"sum": cp.zeros((N, N), cp.float32), "sq": cp.zeros((N, N), cp.float32), "n": 0,
          "shift_abs": 0, "mean": None, "reads": 0}

    def step(i):
        raw = raws[i % n_frames]
        if args.fix:
            img = calibrate_device(raw)
        else:
            img = cp.asarray(calibrate_host(raw))  # gpuwhy: plants C1 (dark/flat and a 3 x 3 median filter of 1 M pixels on the host thread before each frame goes up)
        cps = cp.fft.rfft2(img) * ref_f
        corr = cp.fft.irfft2(cps / (cp.abs(cps) + 1e-6), s=(N, N))
        peak = int(corr.argmax())
        dy, dx = peak // N, peak % N
        dy, dx = (dy - N if dy > N // 2 else dy), (dx - N if dx > N // 2 else dx)
        aligned = cp.roll(img, (-dy, -dx), (0, 1))
        st["sum"] += aligned
        st["sq"] += aligned * aligned
        st["n"] += 1
        st["shift_abs"] += abs(dy) + abs(dx)
        if i % 50 == 49:
            st["mean"] = float((st["sum"] / st["n"]).mean())
            st["reads"] += 1
        return aligned

    cc.run("c1_cupy_astro_stack_host_median", args, step, 1,
           extra=lambda: {"calibration": "device" if args.fix else "host numpy/scipy", "frame": [N, N],
                          "stack_mean": st["mean"], "reads": st["reads"],
                          "mean_abs_shift": round(st["shift_abs"] / max(st["n"], 1), 2)})


if __name__ == "__main__":
    main()
