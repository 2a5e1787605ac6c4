"""C8 tensor cores unused (Triton, exact float32 dot products): a neural surrogate of a
physics parameterization (the kind a climate or combustion code calls instead of its
column physics) evaluated over 65,536 grid columns a call: 256 input features a column,
an MLP 256 -> 2048 -> 2048 -> 2048 -> 128 with SiLU, every layer one launch of a
hand-written Triton kernel (tiled matmul, bias and activation fused in the epilogue,
float32 in and out, 128 x 128 x 32 tiles, 8 warps, 3 stages). The kernel's tl.dot asks
for input_precision="ieee", as a scientific user writes it after TF32 failed a
bit-for-bit regression test: the products run on the CUDA cores in float32 FMA, about
1.2 TFLOP a call. Inputs are made once on the device (4 batches cycled); outputs go into
a ring on the GPU, a checksum of it read every 100 calls; the kernel is checked against
torch at start.

--fix: gpuwhy's C8 advice, its "at least allow TF32" part: the same kernel with
input_precision="tf32" (tensor cores, float32 storage and accumulation); data, tiles and
layers unchanged.

Written blind for the ridge batch.
"""
import os
import sys

if "--device" in sys.argv and "cpu" in sys.argv:
    os.environ["TRITON_INTERPRET"] = "1"  # smoke test on the CPU: Triton's interpreter

import torch
import torch.nn.functional as F
import triton
import triton.language as tl

import cc


@triton.jit
def dense_kernel(x_ptr, w_ptr, b_ptr, y_ptr, M, N, K,
                 stride_xm, stride_xk, stride_wk, stride_wn, stride_ym, stride_yn,
                 SILU: tl.constexpr, PRECISION: tl.constexpr,
                 BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """y = act(x @ w + b); x (M, K), w (K, N), b (N), y (M, N), all float32."""
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    xp = x_ptr + rm[:, None] * stride_xm + rk[None, :] * stride_xk
    wp = w_ptr + rk[:, None] * stride_wk + rn[None, :] * stride_wn
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        kk = rk < K - k
        a = tl.load(xp, mask=(rm[:, None] < M) & kk[None, :], other=0.0)
        b = tl.load(wp, mask=kk[:, None] & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc, input_precision=PRECISION)  # gpuwhy: plants C8 (PRECISION "ieee": float32 FMA, no tensor cores)
        xp += BK * stride_xk
        wp += BK * stride_wk
    acc += tl.load(b_ptr + rn, mask=rn < N, other=0.0)[None, :]
    if SILU:
        acc = acc * tl.sigmoid(acc)
    out = y_ptr + rm[:, None] * stride_ym + rn[None, :] * stride_yn
    tl.store(out, acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


def dense(x, w, b, silu, precision, tiles, out=None):
    m, k = x.shape
    n = w.shape[1]
    bm, bn, bk, warps, stages = tiles
    y = torch.empty((m, n), device=x.device, dtype=torch.float32) if out is None else out
    grid = (triton.cdiv(m, bm), triton.cdiv(n, bn))
    dense_kernel[grid](x, w, b, y, m, n, k, x.stride(0), x.stride(1), w.stride(0), w.stride(1),
                       y.stride(0), y.stride(1), SILU=silu, PRECISION=precision, BM=bm, BN=bn, BK=bk,
                       num_warps=warps, num_stages=stages)
    return y


def main():
    args = cc.parser(__doc__).parse_args()
    dev = cc.torch_device(args)
    if args.smoke:
        sizes, rows, tiles = [16, 64, 64, 8], 64, (32, 32, 16, 4, 1)
    else:
        sizes, rows, tiles = [256, 2048, 2048, 2048, 128], 65536, (128, 128, 32, 8, 3)
    precision = "tf32" if args.fix else "ieee"
    g = torch.Generator(device=dev).manual_seed(0)
    layers = [((torch.randn(a, b, device=dev, generator=g) / a ** 0.5), torch.zeros(b, device=dev))
              for a, b in zip(sizes[:-1], sizes[1:])]
    # the kernel against torch once (float32 reference on a slice)
    xs = torch.randn(128, sizes[0], device=dev, generator=g)
    w0, b0 = layers[0]
    ref = F.silu(xs.double() @ w0.double() + b0.double())
    err = (dense(xs, w0, b0, True, precision, tiles).double() - ref).abs().max().item()
    if err > 1e-2 * ref.abs().max().item() + 1e-3:
        raise SystemExit(f"Triton kernel mismatch: max error {err}")
    inputs = [torch.randn(rows, sizes[0], device=dev, generator=g) for _ in range(4)]
    hidden = [torch.empty(rows, n, device=dev) for n in sizes[1:-1]]
    ring = torch.zeros(8, rows, sizes[-1], device=dev)
    checks = {"reads": 0, "checksum": None}

    def step(i):
        h = inputs[i % len(inputs)]
        for j, (w, b) in enumerate(layers):
            last = j == len(layers) - 1
            h = dense(h, w, b, not last, precision, tiles, out=ring[i % len(ring)] if last else hidden[j])
        if i % 100 == 99:
            checks["checksum"] = ring.sum().item()
            checks["reads"] += 1

    cc.run("c8_triton_ieee_surrogate", args, step, rows,
           extra=lambda: {"input_precision": precision, "kernel_max_err": err,
                          "tflop_per_call": round(2 * rows * sum(a * b for a, b in zip(sizes[:-1], sizes[1:])) / 1e12, 3),
                          "checksum_reads": checks["reads"]})


if __name__ == "__main__":
    main()
