"""Healthy control (Triton, autotuned at start): log-likelihood scoring of documents with a
Mixtral-style sparse mixture-of-experts decoder (4 layers of width 2,048, 16 heads with
rotary positions and causal SDPA attention, RMSNorm, and in every layer 8 SwiGLU experts of
width 5,632 of which a router picks 2 per token; vocabulary 32,000; 1.3 B parameters in bf16,
random weights), batches of 8 documents of 2,048 tokens (8 token batches made once on the GPU
and cycled) under torch.inference_mode; the summed negative log-likelihood stays on the GPU
and is read every 20 batches. The experts run as the serving engines run them: the token
slots are sorted by expert on the GPU and padded per expert to blocks of 64 rows (no host
sync: the block table is built with cumsum and searchsorted), and one hand-written Triton
grouped GEMM (vLLM's fused_moe layout: each program a 64-row block of one expert's slots
times a tile of that expert's weights) does the gate and up projections of all experts at
once, a second the down projection; SiLU-and-multiply and the weighted combine are torch ops.
The Triton kernel is decorated with @triton.autotune over four tile configurations keyed on
the problem's shape: the check at start (the grouped GEMM against a loop over the experts, on
256 tokens) compiles and benchmarks them at its size, the first batch benchmarks them again at
full size (the kernels are compiled once on a machine, Triton's cache serves later runs): a
warm-up of a few seconds, after which about 14 TFLOP a batch
(2.25 TFLOP of expert GEMMs and 0.7 of attention a layer, 2.1 of vocabulary projection) keep
the GPU busy throughout.

--fix: nothing (control).

Written blind for the golf batch.
"""
import os
import sys

if "--device" in sys.argv and "cpu" in sys.argv:
    os.environ["TRITON_INTERPRET"] = "1"  # smoke test on the CPU: Triton's interpreter

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

import cc  # noqa: E402

BLOCK_M = 64  # rows of one expert's slots a program takes; the sort pads each expert to it
_CONFIGS = [triton.Config({"BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": gm}, num_warps=w, num_stages=s)
            for bn, bk, gm, w, s in ((128, 64, 8, 4, 4), (256, 64, 8, 8, 3), (128, 128, 8, 8, 3), (64, 64, 8, 4, 4))]
if os.environ.get("TRITON_INTERPRET") == "1":  # the interpreter: one small tile, no benchmarking
    _CONFIGS = [triton.Config({"BLOCK_N": 16, "BLOCK_K": 16, "GROUP_M": 1}, num_warps=1, num_stages=1)]
    BLOCK_M = 16


@triton.autotune(configs=_CONFIGS, key=["N", "K", "EM"])
@triton.jit
def moe_gemm_kernel(a_ptr, b_ptr, c_ptr, slot_ptr, block_expert_ptr, num_slots, num_experts, N, EM,
                    stride_am, stride_be, stride_bk, stride_bn, stride_cm, K: tl.constexpr,
                    TOP_K: tl.constexpr, A_BY_TOKEN: tl.constexpr, BLOCK_M: tl.constexpr,
                    BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    """C[slot] = A[row(slot)] @ B[expert(block)] for the slots of each 64-row block."""
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(EM, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    group = GROUP_M * num_pid_n
    first_m = (pid // group) * GROUP_M
    size_m = tl.minimum(num_pid_m - first_m, GROUP_M)
    pid_m = first_m + (pid % group) % size_m
    pid_n = (pid % group) // size_m
    expert = tl.load(block_expert_ptr + pid_m)
    valid_block = expert < num_experts
    expert = tl.minimum(expert, num_experts - 1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    slot = tl.load(slot_ptr + offs_m)
    row_ok = (slot < num_slots) & valid_block
    if A_BY_TOKEN:
        a_row = slot // TOP_K
    else:
        a_row = slot
    a_row = tl.where(row_ok, a_row, 0)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + a_row[:, None] * stride_am + offs_k[None, :]
    b_ptrs = b_ptr + expert * stride_be + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        kk = k + offs_k
        a = tl.load(a_ptrs, mask=row_ok[:, None] & (kk[None, :] < K), other=0.0)
        b = tl.load(b_ptrs, mask=(kk[:, None] < K) & (offs_n[None, :] < N), other=0.0)
        acc += tl.dot(a, b)
        a_ptrs += BLOCK_K
        b_ptrs += BLOCK_K * stride_bk
    c_ptrs = c_ptr + slot[:, None] * stride_cm + offs_n[None, :]
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=row_ok[:, None] & (offs_n[None, :] < N))


def moe_gemm(a, w, slots, block_expert, num_slots, top_k, by_token):
    """a: (tokens or slots, K); w: (E, K, N); returns (num_slots, N) in slot order."""
    E, K, N = w.shape
    c = torch.empty(num_slots, N, device=a.device, dtype=a.dtype)
    EM = slots.numel()
    grid = lambda meta: (triton.cdiv(EM, BLOCK_M) * triton.cdiv(N, meta["BLOCK_N"]),)  # noqa: E731
    moe_gemm_kernel[grid](a, w, c, slots, block_expert, num_slots, E, N, EM,
                          a.stride(0), w.stride(0), w.stride(1), w.stride(2), c.stride(0), K=K,
                          TOP_K=top_k, A_BY_TOKEN=by_token, BLOCK_M=BLOCK_M)
    return c


def expert_blocks(expert_of_slot, E):
    """The slots sorted by expert and padded per expert to BLOCK_M rows, without a host sync:
    (slot ids, num_slots marking padding, of length S + E * BLOCK_M) and each block's expert
    (E for blocks past the last one)."""
    S = expert_of_slot.numel()
    dev = expert_of_slot.device
    order = torch.argsort(expert_of_slot, stable=True)
    counts = torch.zeros(E, device=dev, dtype=torch.long).index_add_(0, expert_of_slot, torch.ones_like(expert_of_slot))
    padded = (counts + BLOCK_M - 1) // BLOCK_M * BLOCK_M
    pad_end = torch.cumsum(padded, 0)
    start = torch.cumsum(counts, 0) - counts
    e_sorted = expert_of_slot[order]
    dest = (pad_end - padded)[e_sorted] + torch.arange(S, device=dev) - start[e_sorted]
    EM = S + E * BLOCK_M
    slots = torch.full((EM,), S, device=dev, dtype=torch.int32)
    slots[dest] = order.to(torch.int32)
    block_expert = torch.searchsorted(pad_end, torch.arange(0, EM, BLOCK_M, device=dev), right=True)
    return slots, block_expert.to(torch.int32)


def rope(x, cos, sin):
    x1, x2 = x.chunk(2, -1)
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], -1)


class MoELayer(nn.Module):
    def __init__(self, d, heads, experts, ffn, top_k):
        super().__init__()
        self.heads, self.top_k, self.ffn = heads, top_k, ffn
        self.n1, self.n2 = nn.RMSNorm(d), nn.RMSNorm(d)
        self.qkv, self.o = nn.Linear(d, 3 * d, bias=False), nn.Linear(d, d, bias=False)
        self.router = nn.Linear(d, experts, bias=False)
        self.w13 = nn.Parameter(torch.randn(experts, d, 2 * ffn) * d ** -0.5)     # gate | up
        self.w2 = nn.Parameter(torch.randn(experts, ffn, d) * ffn ** -0.5)

    def moe(self, x, reference=False):
        T, d = x.shape
        E = self.w13.shape[0]
        probs = torch.softmax(self.router(x).float(), -1)
        weight, expert = torch.topk(probs, self.top_k, -1)
        weight = (weight / weight.sum(-1, keepdim=True)).to(x.dtype)
        flat = expert.reshape(-1)
        if reference:  # the plain loop over experts (the check at start)
            h = torch.empty(T * self.top_k, self.w2.shape[2], device=x.device, dtype=x.dtype)
            for e in range(E):
                sel = (flat == e).nonzero().squeeze(1)
                gu = x[sel // self.top_k] @ self.w13[e]
                h[sel] = (F.silu(gu[:, :self.ffn]) * gu[:, self.ffn:]) @ self.w2[e]
        else:
            slots, block_expert = expert_blocks(flat, E)
            gu = moe_gemm(x, self.w13, slots, block_expert, T * self.top_k, self.top_k, True)
            act = F.silu(gu[:, :self.ffn]) * gu[:, self.ffn:]
            h = moe_gemm(act, self.w2, slots, block_expert, T * self.top_k, self.top_k, False)
        return (h.view(T, self.top_k, d) * weight[..., None]).sum(1)

    def forward(self, x, cos, sin):
        b, t, d = x.shape
        q, k, v = (z.view(b, t, self.heads, -1).transpose(1, 2) for z in self.qkv(self.n1(x)).split(d, -1))
        a = F.scaled_dot_product_attention(rope(q, cos, sin), rope(k, cos, sin), v, is_causal=True)
        x = x + self.o(a.transpose(1, 2).reshape(b, t, d))
        return x + self.moe(self.n2(x).view(b * t, d)).view(b, t, d)


class MoELM(nn.Module):
    def __init__(self, vocab, d, heads, layers, experts, ffn, top_k, max_len):
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.layers = nn.ModuleList(MoELayer(d, heads, experts, ffn, top_k) for _ in range(layers))
        self.norm = nn.RMSNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)
        hd = d // heads
        ang = torch.arange(max_len)[:, None] * (10000.0 ** (-torch.arange(0, hd, 2) / hd))[None]
        self.register_buffer("cos", ang.cos(), persistent=False)
        self.register_buffer("sin", ang.sin(), persistent=False)

    def forward(self, ids):
        t = ids.shape[1]
        cos, sin = self.cos[:t].to(self.head.weight.dtype), self.sin[:t].to(self.head.weight.dtype)
        x = self.embed(ids)
        for layer in self.layers:
            x = layer(x, cos, sin)
        return self.head(self.norm(x))


def main():
    args = cc.parser(__doc__).parse_args()
    dev = cc.torch_device(args)
    vocab, d, heads, layers, experts, ffn, top_k, B, T = \
        (128, 32, 2, 2, 4, 48, 2, 2, 16) if args.smoke else (32_000, 2048, 16, 4, 8, 5632, 2, 8, 2048)
    dt = torch.bfloat16 if dev.type == "cuda" else torch.float32
    torch.manual_seed(0)
    with torch.device(dev):  # the weights made where they are used
        model = MoELM(vocab, d, heads, layers, experts, ffn, top_k, T).to(dt).eval()
    g = torch.Generator(device=dev).manual_seed(1)
    # the grouped GEMM against the loop over experts, once, on a few tokens (outside the timed part)
    with torch.inference_mode():
        xc = torch.randn(256 if not args.smoke else 24, d, device=dev, generator=g).to(dt)
        layer0 = model.layers[0]
        err = ((layer0.moe(xc) - layer0.moe(xc, reference=True)).abs().max()
               / layer0.moe(xc, reference=True).abs().max()).item()
    if err > 2e-2:
        raise SystemExit(f"grouped GEMM and the per-expert loop disagree: relative error {err}")
    batches = [torch.randint(0, vocab, (B, T + 1), device=dev, generator=g) for _ in range(8)]
    nll = torch.zeros((), device=dev, dtype=torch.float64)
    log = {"ppl": None, "reads": 0, "tokens": 0}

    def step(i):
        w = batches[i % 8]
        with torch.inference_mode():
            logits = model(w[:, :-1])
            nll.add_(F.cross_entropy(logits.view(-1, vocab).float(), w[:, 1:].reshape(-1), reduction="sum"))
        log["tokens"] += B * T
        if i % 20 == 19:
            log["ppl"] = float(torch.exp(nll / log["tokens"]).item())
            log["reads"] += 1

    def chosen():
        best = getattr(moe_gemm_kernel, "cache", {})
        return sorted({str(c) for c in best.values()})

    cc.run("h_triton_moe_grouped_gemm_autotune", args, step, B,
           extra=lambda: {"params_b": round(sum(p.numel() for p in model.parameters()) / 1e9, 2),
                          "autotune_configs": len(_CONFIGS), "chosen_configs": chosen(),
                          "check_rel_err": float(f"{err:.3g}"), "nll_reads": log["reads"],
                          "triton": triton.__version__})


if __name__ == "__main__":
    main()
