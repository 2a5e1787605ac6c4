"""Healthy control: batched prefill through weight-only int8-quantized MLP blocks with a
hand-written Triton kernel (W8A16, as in LLM serving stacks' weight-only quantization): the
SwiGLU MLPs of four LLaMA-7B-sized layers (hidden 4,096, intermediate 11,008), weights stored
as int8 with one float scale per output channel (per-channel absmax quantization), dequantized
inside the GEMM's K loop (int8 -> bf16, bf16 tensor-core products, float32 accumulation, the
scale applied to the tile), activations bf16; a prefill batch of 8 prompts x 512 tokens (4,096
rows) a step, RMSNorm and residuals in PyTorch; the batch's mean activation is read every 50
steps. About 4.4 TFLOP a step in 12 large GEMMs: GPU-bound, nothing to fix.

Written blind for the mike batch.
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
def w8a16_kernel(a_ptr, w_ptr, s_ptr, c_ptr, M, N, K: tl.constexpr, stride_am, stride_ak, stride_wk, stride_wn,
                 stride_cm, stride_cn, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP_M: tl.constexpr):
    """C = A @ (W * s): A (M, K) bf16, W (K, N) int8, s (N) float32 per output channel; K a
    compile-time constant (two values: 4,096 and 11,008)."""
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(M, BM)
    tiles_n = tl.cdiv(N, BN)
    per_group = GROUP_M * tiles_n
    group = pid // per_group
    first_m = group * GROUP_M
    rows = tl.minimum(tiles_m - first_m, GROUP_M)
    tile_m = first_m + (pid % per_group) % rows
    tile_n = (pid % per_group) // rows
    offs_m = tile_m * BM + tl.arange(0, BM)
    offs_n = tile_n * BN + tl.arange(0, BN)
    offs_k = tl.arange(0, BK)
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    w_ptrs = w_ptr + offs_k[:, None] * stride_wk + offs_n[None, :] * stride_wn
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        kmask = offs_k < K - k
        a = tl.load(a_ptrs, mask=(offs_m[:, None] < M) & kmask[None, :], other=0.0)
        w = tl.load(w_ptrs, mask=kmask[:, None] & (offs_n[None, :] < N), other=0)
        acc += tl.dot(a, w.to(a.dtype))
        a_ptrs += BK * stride_ak
        w_ptrs += BK * stride_wk
    s = tl.load(s_ptr + offs_n, mask=offs_n < N, other=0.0)
    acc = acc * s[None, :]
    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


class W8Linear:
    def __init__(self, w, tiles):
        """w: float (K, N); quantized per output channel to int8."""
        self.scale = (w.abs().amax(0) / 127.0).float().clamp_min(1e-8)
        self.q = torch.round(w / self.scale).clamp(-127, 127).to(torch.int8).contiguous()
        self.tiles = tiles

    def __call__(self, a):
        M, K = a.shape
        N = self.q.shape[1]
        c = torch.empty(M, N, device=a.device, dtype=a.dtype)
        BM, BN, BK, GM, warps, stages = self.tiles
        grid = (triton.cdiv(M, BM) * triton.cdiv(N, BN),)
        w8a16_kernel[grid](a, self.q, self.scale, c, M, N, K, a.stride(0), a.stride(1), self.q.stride(0),
                           self.q.stride(1), c.stride(0), c.stride(1), BM=BM, BN=BN, BK=BK, GROUP_M=GM,
                           num_warps=warps, num_stages=stages)
        return c

    def reference(self, a):
        return (a.float() @ (self.q.float() * self.scale)).to(a.dtype)


def main():
    args = cc.parser(__doc__).parse_args()
    dev = cc.torch_device(args)
    if args.smoke:
        d, ff, depth, rows = 64, 160, 2, 64
        tiles, dtype = (32, 32, 32, 4, 1, 1), torch.float32  # the interpreter: float32, small tiles
    else:
        d, ff, depth, rows = 4096, 11008, 4, 4096
        tiles, dtype = (128, 256, 64, 8, 8, 3), torch.bfloat16
    g = torch.Generator(device=dev).manual_seed(0)
    layers = []
    for _ in range(depth):
        gate = W8Linear(torch.randn(d, ff, device=dev, generator=g) / d ** 0.5, tiles)
        up = W8Linear(torch.randn(d, ff, device=dev, generator=g) / d ** 0.5, tiles)
        down = W8Linear(torch.randn(ff, d, device=dev, generator=g) / ff ** 0.5, tiles)
        layers.append((torch.ones(d, device=dev, dtype=dtype), gate, up, down))
    prompts = torch.randn(8, rows, d, device=dev, generator=g).to(dtype)

    # the kernel checked against the dequantized reference at start
    a = prompts[0, :256]
    got, want = layers[0][1](a).float(), layers[0][1].reference(a).float()
    assert torch.allclose(got, want, rtol=2e-2, atol=2e-2 * want.abs().max().item()), (got - want).abs().max()

    def rms(x, w):
        xf = x.float()
        return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6)).to(x.dtype) * w

    st = {"acc": torch.zeros((), device=dev), "mean": None, "reads": 0}

    def step(i):
        with torch.inference_mode():
            x = prompts[i % 8]
            for w_norm, gate, up, down in layers:
                h = rms(x, w_norm)
                x = x + down(F.silu(gate(h)) * up(h))
            st["acc"] += x.float().mean()
        if i % 50 == 49:
            st["mean"] = st["acc"].item() / 50
            st["acc"].zero_()
            st["reads"] += 1

    cc.run("h_triton_w8a16_mlp_prefill", args, step, rows,
           extra=lambda: {"tokens_per_step": rows, "gemm_tflop_per_step": round(depth * 3 * 2 * rows * d * ff / 1e12, 2),
                          "mean_activation": st["mean"], "reads": st["reads"]})


if __name__ == "__main__":
    main()
