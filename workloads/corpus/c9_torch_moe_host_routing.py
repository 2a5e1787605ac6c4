"""C9 sync stall (a mixture-of-experts dispatch that reads the routing on the host): a
decoder-only mixture-of-experts LM (4 layers, d=512, 8 heads, causal
F.scaled_dot_product_attention; in each layer a linear top-2 router over 8 SwiGLU experts
of hidden 2048 held as stacked weights, with a Switch-style load-balancing loss; vocab 8000;
113 M parameters; batch 32 x 512 tokens made once on the GPU and cycled; bf16 autocast,
fused AdamW, the loss read every 100 steps). Its MoE layer dispatches tokens the way many
hand-written MoE codes do, much as HF's Mixtral block does: `torch.bincount(top_idx
.flatten()).tolist()` to skip idle experts, then a Python loop over the experts in which
`torch.where(top_idx == e)` finds each expert's (token, slot) pairs (a nonzero: the
result's size must come back to the host), the tokens are gathered, run through the expert
and added back with index_add_. Nine host waits per layer, 36 a step, each draining the
GPU's queue before the next expert's kernels are launched one by one.

--fix: gpuwhy's C9 advice (avoid data-dependent shapes and host reads of GPU values): a
fixed-capacity dispatch without host reads: per-expert loads counted on the GPU
(scatter_add_), the (token, slot) pairs sorted by expert (argsort), each expert's first
`capacity` = 1.25 x tokens x 2 / 8 pairs gathered into an (experts, capacity, d) buffer
(overflow dropped, as Switch/GShard do), the experts run as three batched matmuls
(torch.bmm over the same stacked weights) and the outputs added back with index_add_; the
same model, router and loss otherwise.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

import cc

TOP_K = 2
CAPACITY_FACTOR = 1.25


class Attention(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(d, 3 * d, bias=False)
        self.proj = nn.Linear(d, d, bias=False)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(x).split(d, dim=2)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.proj(y.transpose(1, 2).reshape(b, t, d))


class MoE(nn.Module):
    """Top-2 mixture of SwiGLU experts; weights stacked (experts, in, out)."""

    def __init__(self, d, hidden, experts, fixed_capacity):
        super().__init__()
        self.experts, self.fixed = experts, fixed_capacity
        self.router = nn.Linear(d, experts, bias=False)
        self.w_gate = nn.Parameter(torch.randn(experts, d, hidden) * d ** -0.5)
        self.w_up = nn.Parameter(torch.randn(experts, d, hidden) * d ** -0.5)
        self.w_down = nn.Parameter(torch.randn(experts, hidden, d) * hidden ** -0.5)

    def route(self, x):
        probs = F.softmax(self.router(x).float(), dim=-1)  # (T, E)
        top_w, top_idx = probs.topk(TOP_K, dim=-1)
        top_w = top_w / top_w.sum(-1, keepdim=True)
        # Switch-style load balancing: fraction of assignments x mean router probability
        frac = F.one_hot(top_idx, self.experts).float().sum((0, 1)) / top_idx.numel()
        aux = self.experts * (frac * probs.mean(0)).sum()
        return top_w, top_idx, aux

    def forward(self, x):
        b, t, d = x.shape
        x = x.reshape(-1, d)
        top_w, top_idx, aux = self.route(x)
        y = self.dispatch_capacity(x, top_w, top_idx) if self.fixed else self.dispatch_loop(x, top_w, top_idx)
        return y.view(b, t, d), aux

    def expert(self, h, e):
        return (F.silu(h @ self.w_gate[e]) * (h @ self.w_up[e])) @ self.w_down[e]

    def dispatch_loop(self, x, top_w, top_idx):
        y = torch.zeros_like(x)
        counts = torch.bincount(top_idx.flatten(), minlength=self.experts).tolist()  # gpuwhy: plants C9 (expert loads read on the host)
        for e in range(self.experts):
            if counts[e] == 0:
                continue
            tok, slot = torch.where(top_idx == e)  # gpuwhy: plants C9 (nonzero per expert: data-dependent shapes)
            out = self.expert(x[tok], e) * top_w[tok, slot, None].to(x.dtype)
            y.index_add_(0, tok, out.to(y.dtype))
        return y

    def dispatch_capacity(self, x, top_w, top_idx):
        n, e_n = x.shape[0], self.experts
        cap = int(math.ceil(CAPACITY_FACTOR * n * TOP_K / e_n))
        flat_e = top_idx.flatten()  # (n*k,) expert of each (token, slot) pair
        order = flat_e.argsort(stable=True)  # pairs grouped by expert
        # per-expert loads, kept on the GPU (CUDA's bincount would read its maximum on the host)
        counts = torch.zeros(e_n, dtype=torch.long, device=x.device).scatter_add_(0, flat_e, torch.ones_like(flat_e))
        starts = counts.cumsum(0) - counts
        pos = torch.arange(cap, device=x.device)
        src = (starts[:, None] + pos[None, :]).clamp(max=n * TOP_K - 1)  # (E, cap) into `order`
        valid = pos[None, :] < counts[:, None]  # slots past an expert's load (or capacity) are padding
        pair = order[src]  # (E, cap) pair ids
        tok = pair // TOP_K
        h = x[tok] * valid[..., None].to(x.dtype)  # (E, cap, d)
        out = torch.bmm(F.silu(torch.bmm(h, self.w_gate)) * torch.bmm(h, self.w_up), self.w_down)
        w = top_w.flatten()[pair] * valid
        out = out * w[..., None].to(out.dtype)
        return torch.zeros_like(x).index_add_(0, tok.flatten(), out.reshape(-1, x.shape[1]).to(x.dtype))


class Block(nn.Module):
    def __init__(self, d, heads, hidden, experts, fixed):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.attn = Attention(d, heads)
        self.moe = MoE(d, hidden, experts, fixed)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        h, aux = self.moe(self.ln2(x))
        return x + h, aux


class MoELM(nn.Module):
    def __init__(self, vocab, ctx, d, heads, layers, hidden, experts, fixed):
        super().__init__()
        self.tok, self.pos = nn.Embedding(vocab, d), nn.Embedding(ctx, d)
        self.blocks = nn.ModuleList(Block(d, heads, hidden, experts, fixed) for _ in range(layers))
        self.norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)

    def forward(self, idx):
        x = self.tok(idx) + self.pos.weight[:idx.shape[1]]
        aux = 0.0
        for blk in self.blocks:
            x, a = blk(x)
            aux = aux + a
        return self.head(self.norm(x)), aux / len(self.blocks)


def main():
    args = cc.parser(__doc__).parse_args()
    dev = cc.torch_device(args)
    batch, seq, d, heads, layers, hidden, experts, vocab = \
        (4, 32, 64, 4, 2, 128, 4, 500) if args.smoke else (32, 512, 512, 8, 4, 2048, 8, 8000)
    model = MoELM(vocab, seq, d, heads, layers, hidden, experts, fixed=args.fix).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, betas=(0.9, 0.95), weight_decay=0.1,
                            fused=dev.type == "cuda")
    g = torch.Generator().manual_seed(0)
    data = [torch.randint(0, vocab, (batch, seq + 1), generator=g).to(dev) for _ in range(4)]
    acc = torch.zeros((), device=dev)
    log = {"loss": None}

    def step(i):
        x = data[i % len(data)]
        with torch.autocast(dev.type, dtype=torch.bfloat16):
            logits, aux = model(x[:, :-1])
        loss = F.cross_entropy(logits.float().reshape(-1, vocab), x[:, 1:].reshape(-1)) + 0.01 * aux
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        acc.add_(loss.detach())
        if i % 100 == 99:
            log["loss"] = acc.item() / 100
            acc.zero_()

    cc.run("c9_torch_moe_host_routing", args, step, batch,
           extra=lambda: {"dispatch": "capacity" if args.fix else "loop", "experts": experts, "top_k": TOP_K})


if __name__ == "__main__":
    main()
