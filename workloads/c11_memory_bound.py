"""C11 memory-bound (CuPy, not PyTorch): a chain of 8 elementwise ops over 1 GiB per step.

--fix: the same chain fused into one ElementwiseKernel (one read, one write).
"""
import cupy as cp

import common


def main():
    args = common.parser(__doc__).parse_args()
    n = 256 * 1024 * 1024
    x = cp.random.random(n, dtype=cp.float32)
    out = cp.empty_like(x)
    fused = cp.ElementwiseKernel(
        "float32 x", "float32 y",
        "float t = x * 1.01f + 0.5f; t = t > 0.f ? t : 0.f; t = t * t; t = t - 0.25f;"
        "t = t * 0.5f; t = fabsf(t); t = t + 1.0f; y = sqrtf(t);", "gw_chain")

    def step(i):
        if args.fix:
            fused(x, out)
        else:
            t = x * 1.01 + 0.5
            t = cp.maximum(t, 0)
            t = t * t
            t = t - 0.25
            t = t * 0.5
            t = cp.abs(t)
            t = t + 1.0
            cp.sqrt(t, out=out)

    common.run("c11_memory_bound", args, step, 1)


if __name__ == "__main__":
    main()
