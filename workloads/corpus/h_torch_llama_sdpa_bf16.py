"""Healthy control (a LLaMA-style decoder at bf16): 12 layers, d=1024, 16 heads of 64,
RMSNorm (torch.nn.functional.rms_norm, nn.RMSNorm's function), rotary position embeddings
(cos/sin tables made once), a SwiGLU MLP of hidden 2816, F.scaled_dot_product_attention
with is_causal, no biases, an untied embedding and output head over a 32000-token
vocabulary (220 M parameters), bf16 autocast, fused AdamW with weight decay on the
matrices only, a linear warm-up then cosine learning rate, gradient clipping
(clip_grad_norm_, whose norm stays on the GPU), batch 16 x 2048 tokens (32k a step) made
once on the GPU and cycled. The loss is accumulated as a GPU tensor and read once every
100 steps: nothing on the host waits for the GPU inside the loop, and every matmul is
large (about 40 TFLOP a step against some 1,600 launches).

--fix: nothing (control).
--alt: the fix for the memory-bound finding (C11) gpuwhy ranks first: the model under
torch.compile (default mode: Inductor fuses RMSNorm, the rotary products and SwiGLU's gate
into their neighbours); loss, optimizer and loop unchanged.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

import cc


def rms_norm(x, weight, eps):
    if hasattr(F, "rms_norm"):
        return F.rms_norm(x, (x.shape[-1],), weight, eps)
    return x * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + eps).to(x.dtype) * weight


class RMSNorm(nn.Module):
    def __init__(self, d, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d))

    def forward(self, x):
        return rms_norm(x, self.weight, self.eps)


def rotary_tables(ctx, head_dim, base=10000.0):
    inv = 1.0 / base ** (torch.arange(0, head_dim, 2).float() / head_dim)
    ang = torch.outer(torch.arange(ctx).float(), inv)  # (ctx, head_dim/2)
    ang = torch.cat([ang, ang], dim=-1)
    return ang.cos(), ang.sin()


def rotate_half(x):
    a, b = x.chunk(2, dim=-1)
    return torch.cat([-b, a], dim=-1)


def apply_rotary(x, cos, sin):
    return x * cos + rotate_half(x) * sin


class Attention(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads, self.head_dim = heads, d // heads
        self.wq = nn.Linear(d, d, bias=False)
        self.wk = nn.Linear(d, d, bias=False)
        self.wv = nn.Linear(d, d, bias=False)
        self.wo = nn.Linear(d, d, bias=False)

    def forward(self, x, cos, sin):
        b, t, d = x.shape
        q, k, v = (w(x).view(b, t, self.heads, self.head_dim).transpose(1, 2) for w in (self.wq, self.wk, self.wv))
        q, k = apply_rotary(q, cos, sin), apply_rotary(k, cos, sin)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.wo(y.transpose(1, 2).reshape(b, t, d))


class SwiGLU(nn.Module):
    def __init__(self, d, hidden):
        super().__init__()
        self.w1 = nn.Linear(d, hidden, bias=False)
        self.w3 = nn.Linear(d, hidden, bias=False)
        self.w2 = nn.Linear(hidden, d, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class Layer(nn.Module):
    def __init__(self, d, heads, hidden):
        super().__init__()
        self.attn_norm, self.mlp_norm = RMSNorm(d), RMSNorm(d)
        self.attn = Attention(d, heads)
        self.mlp = SwiGLU(d, hidden)

    def forward(self, x, cos, sin):
        x = x + self.attn(self.attn_norm(x), cos, sin)
        return x + self.mlp(self.mlp_norm(x))


class Llama(nn.Module):
    def __init__(self, vocab, ctx, d, heads, layers, hidden):
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.layers = nn.ModuleList(Layer(d, heads, hidden) for _ in range(layers))
        self.norm = RMSNorm(d)
        self.output = nn.Linear(d, vocab, bias=False)
        cos, sin = rotary_tables(ctx, d // heads)
        self.register_buffer("cos", cos, persistent=False)
        self.register_buffer("sin", sin, persistent=False)
        for name, p in self.named_parameters():
            if p.dim() == 2:
                std = 0.02 / math.sqrt(2 * layers) if name.endswith(("wo.weight", "w2.weight")) else 0.02
                nn.init.normal_(p, std=std)

    def forward(self, idx):
        t = idx.shape[1]
        kind = idx.device.type
        dt = torch.get_autocast_dtype(kind) if torch.is_autocast_enabled(kind) else self.cos.dtype
        cos, sin = self.cos[:t].to(dt), self.sin[:t].to(dt)  # the q/k dtype: no fp32 promotion
        h = self.embed(idx)
        for layer in self.layers:
            h = layer(h, cos, sin)
        return self.output(self.norm(h))


def main():
    args = cc.parser(__doc__).parse_args()
    dev = cc.torch_device(args)
    batch, ctx, d, heads, layers, hidden, vocab = \
        (2, 32, 64, 4, 2, 176, 500) if args.smoke else (16, 2048, 1024, 16, 12, 2816, 32000)
    model = Llama(vocab, ctx, d, heads, layers, hidden).to(dev)
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=3e-4, betas=(0.9, 0.95), eps=1e-8, fused=dev.type == "cuda")
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / 200) * (0.1 + 0.45 * (1 + math.cos(math.pi * min(s, 100_000) / 100_000))))
    g = torch.Generator().manual_seed(0)
    data = [torch.randint(0, vocab, (batch, ctx + 1), generator=g).to(dev) for _ in range(4)]
    acc = torch.zeros((), device=dev)
    log = {"loss": None, "reads": 0}

    fwd = torch.compile(model, mode=cc.alt_setup(args, "default", 5)) if args.alt else model

    def step(i):
        x = data[i % len(data)]
        with torch.autocast(dev.type, dtype=torch.bfloat16):
            logits = fwd(x[:, :-1])
        loss = F.cross_entropy(logits.float().view(-1, vocab), x[:, 1:].reshape(-1))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        opt.zero_grad(set_to_none=True)
        acc.add_(loss.detach())
        if i % 100 == 99:
            log["loss"] = acc.item() / 100
            log["reads"] += 1
            acc.zero_()

    cc.run("h_torch_llama_sdpa_bf16", args, step, batch,
           extra=lambda: {"params_m": round(sum(p.numel() for p in model.parameters()) / 1e6, 1),
                          "loss_reads": log["reads"]})


if __name__ == "__main__":
    main()
