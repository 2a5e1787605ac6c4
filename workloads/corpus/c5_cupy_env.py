"""C5 CUDA_LAUNCH_BLOCKING=1 left on (CuPy): an image-denoising loop (FFT convolution,
elementwise shrinkage, GEMM-based projection) in a script that sets the variable at the
top "to get readable tracebacks"; every launch then waits for its kernel.

--fix: the line is gone (the script does not set it).
"""
import os
import sys

if "--fix" not in sys.argv:
    os.environ["CUDA_LAUNCH_BLOCKING"] = "1"  # gpuwhy: plants C5 (before CUDA starts)

import numpy as np  # noqa: E402

import cc  # noqa: E402

try:
    import cupy as cp
except ImportError:  # CPU smoke test: numpy stands in
    cp = None


def main():
    args = cc.parser(__doc__).parse_args()
    gpu = args.device == "cuda"
    if gpu and cp is None:
        raise SystemExit("CuPy is not installed: run with --device cpu for a smoke test")
    xp = cp if gpu else np
    b, s = (2, 64) if args.smoke else (16, 512)
    rng = np.random.default_rng(0)
    img = xp.asarray(rng.standard_normal((b, s, s), dtype=np.float32))
    kern = xp.fft.rfft2(xp.asarray(rng.standard_normal((s, s), dtype=np.float32)) * 1e-3)
    basis = xp.asarray(rng.standard_normal((s, s), dtype=np.float32)).astype(xp.float16)
    lam = np.float32(0.05)

    def step(i):
        nonlocal img
        for _ in range(4):  # iterations of the solver per step
            blurred = xp.fft.irfft2(xp.fft.rfft2(img) * kern, s=(s, s))
            resid = img - blurred
            z = (resid.astype(xp.float16) @ basis).astype(xp.float32)
            z = xp.sign(z) * xp.maximum(xp.abs(z) - lam, 0)
            img = 0.9 * img + 0.1 * (z.astype(xp.float16) @ basis.T).astype(xp.float32) / s
        return img

    cc.run("c5_cupy_env", args, step, b)


if __name__ == "__main__":
    main()
