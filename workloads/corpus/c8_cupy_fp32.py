"""C8 no mixed precision (CuPy): a two-layer MLP trained with hand-written backprop in
float32; every GEMM (forward, both gradients) runs as an FP32 SGEMM without tensor cores.

--fix: mixed precision by hand: float32 master weights, GEMM operands cast to float16
(tensor cores, float32 accumulation), the update in float32.
"""
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
    batch, din, hidden, dout = (64, 32, 64, 8) if args.smoke else (8192, 4096, 4096, 1024)
    rng = np.random.default_rng(0)
    w1 = xp.asarray(rng.standard_normal((din, hidden), dtype=np.float32) * din ** -0.5)
    w2 = xp.asarray(rng.standard_normal((hidden, dout), dtype=np.float32) * hidden ** -0.5)
    xs = [xp.asarray(rng.standard_normal((batch, din), dtype=np.float32)) for _ in range(4)]
    ys = [xp.asarray(rng.standard_normal((batch, dout), dtype=np.float32)) for _ in range(4)]
    # gpuwhy: plants C8 (GEMMs in float32: the compute type is the master weights' type)
    ct = xp.float16 if args.fix else xp.float32
    lr = 1e-3

    def step(i):
        x, y = xs[i % 4].astype(ct), ys[i % 4]
        a1, b2 = w1.astype(ct), w2.astype(ct)
        h = xp.maximum(x @ a1, 0)
        out = (h @ b2).astype(xp.float32)
        dout_ = (2.0 / batch) * (out - y)
        dw2 = (h.T @ dout_.astype(ct)).astype(xp.float32)
        dh = (dout_.astype(ct) @ b2.T) * (h > 0)
        dw1 = (x.T @ dh).astype(xp.float32)
        w1[...] -= lr * dw1
        w2[...] -= lr * dw2
        return out

    cc.run("c8_cupy_fp32", args, step, batch)


if __name__ == "__main__":
    main()
