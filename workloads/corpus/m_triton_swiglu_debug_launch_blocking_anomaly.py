"""C5 + C4 (a debugging block left on: CUDA_LAUNCH_BLOCKING and autograd anomaly detection):
pre-training a small LLaMA-style decoder in plain PyTorch whose MLP activation is a hand-written
Triton SwiGLU (a forward kernel silu(gate) * up and a backward kernel for both gradients, in a
torch.autograd.Function). 12 layers of width 768, 12 heads, SwiGLU 2,048, RMSNorm, rotary
positions, SDPA causal attention, a 32,000-token vocabulary with untied embeddings (134 M
parameters), bf16 autocast, fused AdamW with warm-up and cosine decay, gradient clipping at
1.0, batch 16 x 1,024 tokens (a token stream made once on the GPU); the loss is read every 50
steps.

The script's run config has a `debug` switch, set while the first version of the SwiGLU
backward wrote past the end of its gradient on widths that were not a multiple of its block (an
illegal address reported at some later launch) and then produced NaN losses. It does two
things at the top of main:
- exports CUDA_LAUNCH_BLOCKING=1 before CUDA starts, so that every launch (Triton's, cuBLAS's,
  SDPA's, PyTorch's elementwise and optimizer kernels: ~2,800 a step) returns only when its
  kernel has finished and the host's Python and the GPU's kernels run in series (C5);
- turns on torch.autograd.set_detect_anomaly(True), which records a Python stack trace for every
  autograd node of the forward (~650 a step) and, in the backward, checks every node's
  gradients for NaN with a read-back to the host (C4: the host's per-operation cost rises far
  above the GPU's; gpuwhy may see the read-backs as C9).
The kernel was fixed (its masks), the switch was left on.

--fix: both causes' advice at once (gpuwhy's combined prediction): the config's debug switch
off, so CUDA_LAUNCH_BLOCKING is not exported and anomaly detection stays off (for anomaly
detection this is beyond the C4 advice's text, as for c4_lightning_detect_anomaly); kernels,
model, data and optimizer unchanged. The Triton SwiGLU is checked against PyTorch's at start
(forward and both gradients) in both runs.

Written blind for the kilo batch.
"""
import math
import os
import sys

if "--device" in sys.argv and "cpu" in sys.argv:
    os.environ["TRITON_INTERPRET"] = "1"  # smoke test on the CPU: Triton's interpreter

DEBUG = "--fix" not in sys.argv  # the run config's debug switch (on since the SwiGLU kernel hunt); --fix turns it off
if DEBUG:
    os.environ["CUDA_LAUNCH_BLOCKING"] = "1"  # gpuwhy: plants C5 (every launch waits for its kernel)

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

import cc  # noqa: E402


@triton.jit
def swiglu_fwd_kernel(g_ptr, u_ptr, h_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    g = tl.load(g_ptr + offs, mask=m, other=0.0).to(tl.float32)
    u = tl.load(u_ptr + offs, mask=m, other=0.0).to(tl.float32)
    h = g * tl.sigmoid(g) * u
    tl.store(h_ptr + offs, h.to(h_ptr.dtype.element_ty), mask=m)


@triton.jit
def swiglu_bwd_kernel(g_ptr, u_ptr, dh_ptr, dg_ptr, du_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    g = tl.load(g_ptr + offs, mask=m, other=0.0).to(tl.float32)
    u = tl.load(u_ptr + offs, mask=m, other=0.0).to(tl.float32)
    dh = tl.load(dh_ptr + offs, mask=m, other=0.0).to(tl.float32)
    s = tl.sigmoid(g)
    tl.store(du_ptr + offs, (dh * g * s).to(du_ptr.dtype.element_ty), mask=m)
    tl.store(dg_ptr + offs, (dh * u * s * (1.0 + g * (1.0 - s))).to(dg_ptr.dtype.element_ty), mask=m)


BLOCK = 1024


class SwiGLU(torch.autograd.Function):
    @staticmethod
    def forward(ctx, g, u):
        g, u = g.contiguous(), u.contiguous()
        h = torch.empty_like(g)
        n = g.numel()
        swiglu_fwd_kernel[(triton.cdiv(n, BLOCK),)](g, u, h, n, BLOCK=BLOCK)
        ctx.save_for_backward(g, u)
        return h

    @staticmethod
    def backward(ctx, dh):
        g, u = ctx.saved_tensors
        dh = dh.contiguous()
        dg, du = torch.empty_like(g), torch.empty_like(u)
        n = g.numel()
        swiglu_bwd_kernel[(triton.cdiv(n, BLOCK),)](g, u, dh, dg, du, n, BLOCK=BLOCK)
        return dg, du


def rms_norm(x, w, eps=1e-6):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).type_as(x) * w


def rotate_half(x):
    a, b = x.chunk(2, dim=-1)
    return torch.cat((-b, a), dim=-1)


def main():
    args = cc.parser(__doc__, warmup=3).parse_args()
    dev = cc.torch_device(args)
    gpu = dev.type == "cuda"
    torch.autograd.set_detect_anomaly(DEBUG)  # gpuwhy: plants C4 (a stack trace recorded per autograd node, a NaN read-back per backward node)
    if args.smoke:
        vocab, d, heads, ffn, layers, seq, batch = 512, 64, 4, 128, 2, 64, 2
    else:
        vocab, d, heads, ffn, layers, seq, batch = 32_000, 768, 12, 2048, 12, 1024, 16
    hd = d // heads
    torch.manual_seed(0)

    # the check that found the fault: Triton's SwiGLU against PyTorch's, forward and gradients
    g0 = torch.randn(3, 1000, device=dev, requires_grad=True)    # a width that is not a multiple of BLOCK
    u0 = torch.randn(3, 1000, device=dev, requires_grad=True)
    dh0 = torch.randn(3, 1000, device=dev)
    h_t = SwiGLU.apply(g0, u0)
    dg_t, du_t = torch.autograd.grad(h_t, (g0, u0), dh0)
    h_r = F.silu(g0) * u0
    dg_r, du_r = torch.autograd.grad(h_r, (g0, u0), dh0)
    err = max(float((a - b).detach().abs().max()) for a, b in ((h_t, h_r), (dg_t, dg_r), (du_t, du_r)))
    if err > 1e-4:
        raise SystemExit(f"Triton SwiGLU disagrees with PyTorch's: {err}")

    def lin(o, i, std=None):
        return torch.nn.Parameter(torch.randn(o, i, device=dev) * (std or 1 / math.sqrt(i)))

    params = {"emb": lin(vocab, d, 0.02), "out": lin(vocab, d), "norm": torch.nn.Parameter(torch.ones(d, device=dev))}
    blocks = []
    for _ in range(layers):
        blocks.append({"n1": torch.nn.Parameter(torch.ones(d, device=dev)), "qkv": lin(3 * d, d), "o": lin(d, d, 0.02 / math.sqrt(2 * layers)),
                       "n2": torch.nn.Parameter(torch.ones(d, device=dev)), "w1": lin(ffn, d), "w3": lin(ffn, d),
                       "w2": lin(d, ffn, 0.02 / math.sqrt(2 * layers))})
    allp = list(params.values()) + [p for b in blocks for p in b.values()]
    inv = 1.0 / (10000 ** (torch.arange(0, hd, 2, device=dev).float() / hd))
    ang = torch.outer(torch.arange(seq, device=dev).float(), inv)
    cos, sin = torch.cat((ang, ang), -1).cos(), torch.cat((ang, ang), -1).sin()

    def forward(ids):
        B, T = ids.shape
        x = F.embedding(ids, params["emb"])
        for p in blocks:
            z = rms_norm(x, p["n1"])
            q, k, v = F.linear(z, p["qkv"]).view(B, T, 3, heads, hd).permute(2, 0, 3, 1, 4)
            q = (q * cos + rotate_half(q) * sin).to(v.dtype)
            k = (k * cos + rotate_half(k) * sin).to(v.dtype)
            a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + F.linear(a.transpose(1, 2).reshape(B, T, d), p["o"])
            z = rms_norm(x, p["n2"])
            x = x + F.linear(SwiGLU.apply(F.linear(z, p["w1"]), F.linear(z, p["w3"])), p["w2"])
        return F.linear(rms_norm(x, params["norm"]), params["out"])

    total = 100_000
    opt = torch.optim.AdamW(allp, lr=6e-4, betas=(0.9, 0.95), weight_decay=0.1, fused=gpu)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / 500) * 0.5 * (1 + math.cos(math.pi * min(s, total) / total)))
    gen = torch.Generator(device=dev).manual_seed(0)
    stream = torch.randint(0, vocab, (32 * batch, seq + 1), device=dev, generator=gen)
    amp = torch.autocast(dev.type, dtype=torch.bfloat16, enabled=gpu)
    st = {"acc": torch.zeros((), device=dev), "loss": None, "reads": 0}

    def step(i):
        rows = stream[(i * batch) % stream.shape[0]:][:batch]
        with amp:
            logits = forward(rows[:, :-1])
            loss = F.cross_entropy(logits.float().view(-1, vocab), rows[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(allp, 1.0)
        opt.step()
        sched.step()
        st["acc"] += loss.detach()
        if i % 50 == 49:
            st["loss"] = st["acc"].item() / 50
            st["acc"].zero_()
            st["reads"] += 1

    cc.run("m_triton_swiglu_debug_launch_blocking_anomaly", args, step, batch,
           extra=lambda: {"debug": DEBUG, "cuda_launch_blocking": os.environ.get("CUDA_LAUNCH_BLOCKING"),
                          "detect_anomaly": torch.is_anomaly_enabled(), "swiglu_check": round(err, 7),
                          "tokens_per_step": batch * seq, "loss": st["loss"], "loss_reads": st["reads"],
                          "params_m": round(sum(p.numel() for p in allp) / 1e6, 1)})


if __name__ == "__main__":
    main()
