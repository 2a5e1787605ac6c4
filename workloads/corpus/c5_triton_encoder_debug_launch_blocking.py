"""C5 CUDA_LAUNCH_BLOCKING left on (a debugging switch in the config of a Triton kernel
project): batch scoring with a text encoder whose LayerNorm and bias+GELU are hand-written
Triton kernels (the LayerNorm of Triton's tutorial, one program a row, statistics in float32;
a fused bias + tanh-GELU over the MLP's activations), the matrix products cuBLAS and the
attention PyTorch's SDPA. The encoder is deep and narrow: 48 pre-LN layers of width 768 (12
heads, MLP 3,072; 340 M parameters in bf16 made on the GPU, random weights), learned
positions, mean pooling and a scoring head, under torch.inference_mode; batch 8 documents of
512 tokens (16 batches made once on the GPU); the scores stay on the GPU and their sum is read
every 20 batches.

The script's config dataclass has `debug_kernels: bool = True`, set while the LayerNorm kernel
was faulting with an illegal address on rows wider than its block, so that the fault is
reported at the launch that made it: `main` exports CUDA_LAUNCH_BLOCKING=1 before CUDA starts
when it is on. The kernel was fixed; the switch was left on. Every launch (Triton's, cuBLAS's,
SDPA's, PyTorch's adds) then waits for its kernel before the host moves on: about 540 launches
a batch, the host's Python and launch time and the GPU's kernel time in series.

--fix: gpuwhy's C5 advice (unset CUDA_LAUNCH_BLOCKING): the config's `debug_kernels` off, so
the variable is not exported; kernels, model, data and batch unchanged.

Written blind for the hotel batch.
"""
import dataclasses
import math
import os
import sys

if "--device" in sys.argv and "cpu" in sys.argv:
    os.environ["TRITON_INTERPRET"] = "1"  # smoke test on the CPU: Triton's interpreter

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

import cc  # noqa: E402


@dataclasses.dataclass
class Config:
    vocab: int = 32_000
    width: int = 768
    heads: int = 12
    mlp: int = 3072
    layers: int = 48
    seq: int = 512
    batch: int = 8
    eps: float = 1e-5
    debug_kernels: bool = True  # CUDA_LAUNCH_BLOCKING=1: Triton faults reported at their launch


@triton.jit
def layer_norm_kernel(x_ptr, y_ptr, w_ptr, b_ptr, stride, N, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    m = cols < N
    x = tl.load(x_ptr + row * stride + cols, mask=m, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / N
    xc = tl.where(m, x - mean, 0.0)
    var = tl.sum(xc * xc, axis=0) / N
    rstd = 1.0 / tl.sqrt(var + eps)
    w = tl.load(w_ptr + cols, mask=m, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + cols, mask=m, other=0.0).to(tl.float32)
    y = xc * rstd * w + b
    tl.store(y_ptr + row * stride + cols, y.to(y_ptr.dtype.element_ty), mask=m)


@triton.jit
def bias_gelu_kernel(x_ptr, b_ptr, y_ptr, n_elements, N, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n_elements
    x = tl.load(x_ptr + offs, mask=m, other=0.0).to(tl.float32)
    x += tl.load(b_ptr + offs % N, mask=m, other=0.0).to(tl.float32)
    # tanh-GELU: x * sigmoid(2 * sqrt(2 / pi) * (x + 0.044715 x^3))
    y = x * tl.sigmoid(1.5957691216057308 * (x + 0.044715 * x * x * x))
    tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=m)


def layer_norm(x, w, b, eps):
    x2 = x.reshape(-1, x.shape[-1])
    y = torch.empty_like(x2)
    n = x2.shape[1]
    layer_norm_kernel[(x2.shape[0],)](x2, y, w, b, x2.stride(0), n, eps, BLOCK=triton.next_power_of_2(n))
    return y.view_as(x)


def bias_gelu(x, b):
    y = torch.empty_like(x)
    n = x.numel()
    bias_gelu_kernel[(triton.cdiv(n, 2048),)](x, b, y, n, b.numel(), BLOCK=2048)
    return y


def main():
    args = cc.parser(__doc__).parse_args()
    cfg = Config()
    if args.smoke:
        cfg = dataclasses.replace(cfg, vocab=512, width=64, heads=4, mlp=256, layers=2, seq=32, batch=2)
    if args.fix:
        cfg.debug_kernels = False
    if cfg.debug_kernels:
        os.environ["CUDA_LAUNCH_BLOCKING"] = "1"  # gpuwhy: plants C5
    dev = cc.torch_device(args)
    torch.manual_seed(0)
    dt = torch.bfloat16
    d, L = cfg.width, cfg.layers

    def w(*shape, fan=None):
        return (torch.randn(*shape, device=dev) / math.sqrt(fan or shape[-1])).to(dt)

    emb = w(cfg.vocab, d, fan=1) * 0.02
    pos = w(cfg.seq, d, fan=1) * 0.02
    layers = []
    for _ in range(L):
        layers.append({
            "ln1_w": torch.ones(d, device=dev, dtype=dt), "ln1_b": torch.zeros(d, device=dev, dtype=dt),
            "qkv_w": w(3 * d, d), "qkv_b": torch.zeros(3 * d, device=dev, dtype=dt),
            "o_w": w(d, d), "o_b": torch.zeros(d, device=dev, dtype=dt),
            "ln2_w": torch.ones(d, device=dev, dtype=dt), "ln2_b": torch.zeros(d, device=dev, dtype=dt),
            "fc1_w": w(cfg.mlp, d), "fc1_b": torch.zeros(cfg.mlp, device=dev, dtype=dt),
            "fc2_w": w(d, cfg.mlp), "fc2_b": torch.zeros(d, device=dev, dtype=dt),
        })
    lnf_w, lnf_b = torch.ones(d, device=dev, dtype=dt), torch.zeros(d, device=dev, dtype=dt)
    head = w(1, d)
    batches = [torch.randint(0, cfg.vocab, (cfg.batch, cfg.seq), device=dev) for _ in range(16)]
    B, T, H, hd = cfg.batch, cfg.seq, cfg.heads, d // cfg.heads

    # the Triton LayerNorm against PyTorch's (the check that found the fault)
    xt = torch.randn(64, d, device=dev, dtype=dt)
    err = (layer_norm(xt, lnf_w, lnf_b, cfg.eps).float() - F.layer_norm(xt.float(), (d,), eps=cfg.eps)).abs().max().item()
    if err > 0.05:
        raise SystemExit(f"Triton LayerNorm disagrees with F.layer_norm: {err}")

    def encode(tokens):
        h = emb[tokens] + pos[:T]
        for p in layers:
            z = layer_norm(h, p["ln1_w"], p["ln1_b"], cfg.eps)
            q, k, v = F.linear(z, p["qkv_w"], p["qkv_b"]).view(B, T, 3, H, hd).permute(2, 0, 3, 1, 4)
            a = F.scaled_dot_product_attention(q, k, v)
            h = h + F.linear(a.transpose(1, 2).reshape(B, T, d), p["o_w"], p["o_b"])
            z = layer_norm(h, p["ln2_w"], p["ln2_b"], cfg.eps)
            z = bias_gelu(F.linear(z, p["fc1_w"]), p["fc1_b"])
            h = h + F.linear(z, p["fc2_w"], p["fc2_b"])
        h = layer_norm(h, lnf_w, lnf_b, cfg.eps)
        return (h.mean(1) @ head.t()).squeeze(1)

    total = torch.zeros((), device=dev)
    state = {"reads": 0, "score_sum": None}

    def step(i):
        nonlocal total
        with torch.inference_mode():
            s = encode(batches[i % len(batches)])
            total = total + s.float().sum()
        if i % 20 == 19:
            state["score_sum"] = total.item()
            state["reads"] += 1

    cc.run("c5_triton_encoder_debug_launch_blocking", args, step, cfg.batch,
           extra=lambda: {"cuda_launch_blocking": os.environ.get("CUDA_LAUNCH_BLOCKING"),
                          "layers": L, "width": d, "tokens_per_batch": B * T,
                          "layernorm_check": round(err, 5), "score_reads": state["reads"]})


if __name__ == "__main__":
    main()
