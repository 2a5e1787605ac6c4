"""Healthy control (Triton, GEMM-bound): batched inference of a feed-forward text encoder whose
matrix products are a hand-written Triton kernel: token embeddings (vocabulary 32000,
d=4096, bf16) go through 4 residual feed-forward blocks (LayerNorm, up-projection to 16384
with bias and tanh-GELU fused in the kernel's epilogue, down-projection to 4096 with bias
and the residual add fused), then mean pooling over each sequence and L2 normalization
into an output ring on the GPU. A batch is 64 sequences of 128 tokens (8192 rows): 8
Triton launches of 2.2 TFLOP each pair of them, about 8.8 TFLOP a batch, against a
LayerNorm, an embedding gather and a few small ops; one tiling (128 x 256 x 64, grouped
program order, 8 warps, 3 stages), no autotuning, compiled in the warm-up; the kernel
checked against torch once at start. Token ids are made once on the device and cycled; a
checksum of the outputs is read every 100 batches.

--fix: nothing (control).

Written blind for the quarry batch.
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
def ffn_matmul_kernel(a_ptr, w_ptr, bias_ptr, res_ptr, c_ptr, M, N, K,
                      stride_am, stride_ak, stride_wk, stride_wn, stride_cm, stride_cn,
                      GELU: tl.constexpr, RESIDUAL: tl.constexpr,
                      BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP_M: tl.constexpr):
    """C = act(A @ W + bias) (+ R): A (M, K), W (K, N), bias (N), R and C (M, N); fp32 accumulation."""
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(M, BM)
    tiles_n = tl.cdiv(N, BN)
    per_group = GROUP_M * tiles_n  # programs of GROUP_M row tiles walk the columns together (L2 reuse)
    group = pid // per_group
    first_m = group * GROUP_M
    rows_in_group = tl.minimum(tiles_m - first_m, GROUP_M)
    tile_m = first_m + (pid % per_group) % rows_in_group
    tile_n = (pid % per_group) // rows_in_group
    offs_m = tile_m * BM + tl.arange(0, BM)
    offs_n = tile_n * BN + tl.arange(0, BN)
    offs_k = tl.arange(0, BK)
    a_tile = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    w_tile = w_ptr + offs_k[:, None] * stride_wk + offs_n[None, :] * stride_wn
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        k_ok = offs_k < K - k0
        a = tl.load(a_tile, mask=(offs_m[:, None] < M) & k_ok[None, :], other=0.0)
        w = tl.load(w_tile, mask=k_ok[:, None] & (offs_n[None, :] < N), other=0.0)
        acc += tl.dot(a, w)
        a_tile += BK * stride_ak
        w_tile += BK * stride_wk
    acc += tl.load(bias_ptr + offs_n, mask=offs_n < N, other=0.0).to(tl.float32)[None, :]
    if GELU:  # tanh approximation: x * sigmoid(2 * sqrt(2 / pi) * (x + 0.044715 x^3))
        acc = acc * tl.sigmoid(1.5957691216057308 * (acc + 0.044715 * acc * acc * acc))
    c_off = offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    c_ok = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    if RESIDUAL:
        acc += tl.load(res_ptr + c_off, mask=c_ok, other=0.0).to(tl.float32)
    tl.store(c_ptr + c_off, acc.to(c_ptr.dtype.element_ty), mask=c_ok)


class TritonLinear:
    """y = act(x @ W + b) (+ residual) through ffn_matmul_kernel."""

    def __init__(self, w, b, tiles):
        self.w, self.b = w, b  # w (K, N), row-major
        self.bm, self.bn, self.bk, self.warps, self.stages = tiles

    def __call__(self, x, gelu=False, residual=None, out=None):
        m, k = x.shape
        n = self.w.shape[1]
        out = torch.empty((m, n), dtype=x.dtype, device=x.device) if out is None else out
        grid = (triton.cdiv(m, self.bm) * triton.cdiv(n, self.bn),)
        ffn_matmul_kernel[grid](x, self.w, self.b, residual if residual is not None else out, out, m, n, k,
                                x.stride(0), x.stride(1), self.w.stride(0), self.w.stride(1),
                                out.stride(0), out.stride(1), GELU=gelu, RESIDUAL=residual is not None,
                                BM=self.bm, BN=self.bn, BK=self.bk, GROUP_M=8,
                                num_warps=self.warps, num_stages=self.stages)
        return out


def main():
    args = cc.parser(__doc__).parse_args()
    dev = cc.torch_device(args)
    if args.smoke:
        vocab, d, ff, depth, seqs, seq_len = 500, 64, 128, 2, 4, 16
        tiles, dtype = (32, 32, 32, 4, 1), torch.float32  # the interpreter: float32, small tiles
    else:
        vocab, d, ff, depth, seqs, seq_len = 32000, 4096, 16384, 4, 64, 128
        tiles, dtype = (128, 256, 64, 8, 3), torch.bfloat16
    g = torch.Generator(device=dev).manual_seed(0)

    def weight(*shape, fan_in):
        return (torch.randn(*shape, device=dev, generator=g) / fan_in ** 0.5).to(dtype)

    embed = weight(vocab, d, fan_in=1)
    blocks = []
    for _ in range(depth):
        ln_w, ln_b = torch.ones(d, device=dev, dtype=dtype), torch.zeros(d, device=dev, dtype=dtype)
        up = TritonLinear(weight(d, ff, fan_in=d), torch.zeros(ff, device=dev, dtype=dtype), tiles)
        down = TritonLinear(weight(ff, d, fan_in=ff), torch.zeros(d, device=dev, dtype=dtype), tiles)
        blocks.append((ln_w, ln_b, up, down))

    # the kernel against torch once (small slice, same tiling)
    xs = torch.randn(256, d, device=dev, generator=g).to(dtype)
    up = blocks[0][2]
    ref = F.gelu(xs.float() @ up.w.float() + up.b.float(), approximate="tanh")
    err = (up(xs, gelu=True).float() - ref).abs().max().item()
    if err > 0.05 * ref.abs().max().item() + 1e-3:
        raise SystemExit(f"Triton kernel mismatch: max error {err}")

    rows = seqs * seq_len
    ids = [torch.randint(0, vocab, (rows,), device=dev, generator=g) for _ in range(4)]
    hidden = torch.empty(rows, ff, device=dev, dtype=dtype)  # the up-projection's output, reused
    ring = torch.zeros(16, seqs, d, device=dev)
    checks = {"reads": 0, "checksum": None}

    @torch.no_grad()
    def step(i):
        x = embed[ids[i % len(ids)]]
        for ln_w, ln_b, up_l, down_l in blocks:
            h = F.layer_norm(x, (d,), ln_w, ln_b)
            up_l(h, gelu=True, out=hidden)
            x = down_l(hidden, residual=x)
        pooled = x.view(seqs, seq_len, d).float().mean(1)
        ring[i % len(ring)] = F.normalize(pooled, dim=-1)
        if i % 100 == 99:
            checks["checksum"] = ring.sum().item()
            checks["reads"] += 1

    cc.run("h_triton_ffn_bf16", args, step, seqs,
           extra=lambda: {"rows_per_batch": rows, "tflop_per_batch": round(4 * rows * d * ff * depth / 1e12, 2),
                          "kernel_max_err": round(err, 5), "checksum_reads": checks["reads"]})


if __name__ == "__main__":
    main()
