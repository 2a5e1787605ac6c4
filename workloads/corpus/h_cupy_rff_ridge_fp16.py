"""Healthy control (CuPy, GEMM-bound): kernel ridge regression with random Fourier features
(Rahimi-Recht) fitted by streaming: each step takes a batch of 65,536 samples of 512
features (float16, resident on the GPU), maps them to 8,192 random features
Z = sqrt(2/D) cos(X W + b) (one cuBLAS GEMM, then one ElementwiseKernel for the cosine),
and accumulates the normal equations G += Z^T Z (8192 x 8192, a 65,536-deep GEMM) and
r += Z^T y into float32 accumulators on the device. About 9.4 TFLOP a step in three float16
GEMMs (tensor cores, float32 accumulation) against ~2 GB of elementwise traffic; nothing is
read back inside the loop. After the timed part the regression is solved once in float32
(cupy.linalg.solve).

--fix: nothing (control).

Written blind for the ridge batch.
"""
import math

import numpy as np

import cc

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
    rows, feats, rff, targets = (256, 16, 64, 4) if args.smoke else (65536, 512, 8192, 16)
    rng = np.random.default_rng(0)
    w = xp.asarray((rng.standard_normal((feats, rff)) / math.sqrt(feats) * 2.0).astype(np.float16))
    b = xp.asarray(rng.uniform(0, 2 * np.pi, rff).astype(np.float16))
    proj = xp.asarray(rng.standard_normal((feats, targets)).astype(np.float32) / math.sqrt(feats))
    batches = []
    for k in range(4):
        x = xp.asarray(rng.standard_normal((rows, feats), dtype=np.float32))
        y = xp.sin(x @ proj) + 0.1 * xp.asarray(rng.standard_normal((rows, targets), dtype=np.float32))
        batches.append((x.astype(xp.float16), y.astype(xp.float16)))
    G = xp.zeros((rff, rff), xp.float32)
    r = xp.zeros((rff, targets), xp.float32)
    scale = math.sqrt(2.0 / rff)
    z = xp.empty((rows, rff), xp.float16)
    if gpu:
        features = cp.ElementwiseKernel("T xw, T b, float32 s", "T z", "z = (T)(s * cosf((float)xw + (float)b))",
                                        "rff_cos")
    else:
        def features(xw, bb, s, out):
            out[...] = (s * np.cos(xw.astype(np.float32) + bb)).astype(out.dtype)

    def step(i):
        x, y = batches[i % len(batches)]
        features(xp.matmul(x, w), b, np.float32(scale), z)
        xp.add(G, xp.matmul(z.T, z), out=G)  # float16 GEMM (float32 accumulation), added into float32
        xp.add(r, xp.matmul(z.T, y), out=r)

    cc.run("h_cupy_rff_ridge_fp16", args, step, rows,
           extra=lambda: {"random_features": rff, "tflop_per_step": round(2 * rows * rff * (feats + rff + targets) / 1e12, 2)})
    alpha = xp.linalg.solve(G + 1e-1 * xp.eye(rff, dtype=xp.float32), r)  # the fit, once, outside the timed part
    if gpu:
        cp.cuda.runtime.deviceSynchronize()
    del alpha


if __name__ == "__main__":
    main()
