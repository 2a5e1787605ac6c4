"""C9 host reads every step (per-parameter gradient norms in a dict): a GPT-style language
model written in plain PyTorch (6 pre-LayerNorm blocks, d=768, 12 heads with separate
q/k/v/o projections, GELU MLP of 3072, learned positions, untied 32000-token head; 92 M
weights in 101 tensors), F.scaled_dot_product_attention with is_causal, bf16 autocast,
fused AdamW, gradient clipping (clip_grad_norm_, on the GPU); batches of 8 x 512 tokens made
once on the GPU. After backward, every step, the loop fills a dict for its logger with each
parameter's gradient norm: `{name: p.grad.norm().item() for name, p in
model.named_parameters()}` (the "watch the gradients" snippet found in many scripts): 101
small norm kernels, each followed by a host read that waits for it, with the GPU idle in
between; then the optimizer step and the next forward start from an empty queue. The loss
stays on the GPU (averaged and read every 100 steps).

--fix: log less often (the advice a user gets for this): the same dict of norms every 100
steps instead of every step. Nothing else changes.

--alt: the launch-bound (C4) remedy with the planted reads left in place: the model (forward,
and through it backward) compiled with torch.compile(mode="reduce-overhead", dynamic=False)
(Inductor + CUDA graphs); the loss, the per-parameter p.grad.norm().item() loop every step,
clipping, the optimizer and the scheduler stay eager as in the plain run. Grads are set to
None before the graphs replay. At least 10 warm-up iterations unless --warmup is given
(compilation, CUDA graph warm-up and recording).

Written blind for the harbor batch.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

import cc


class Block(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.q, self.k, self.v, self.o = (nn.Linear(d, d) for _ in range(4))
        self.fc1, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x):
        b, t, d = x.shape
        h = self.ln1(x)
        q, k, v = (proj(h).view(b, t, self.heads, d // self.heads).transpose(1, 2) for proj in (self.q, self.k, self.v))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.o(a.transpose(1, 2).reshape(b, t, d))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


class LM(nn.Module):
    def __init__(self, vocab, ctx, d, heads, layers):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(ctx, d)
        self.blocks = nn.ModuleList(Block(d, heads) for _ in range(layers))
        self.ln_f = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)

    def forward(self, idx):
        x = self.tok(idx) + self.pos.weight[:idx.shape[1]]
        for blk in self.blocks:
            x = blk(x)
        return self.head(self.ln_f(x))


def main():
    args = cc.parser(__doc__).parse_args()
    dev = cc.torch_device(args)
    batch, ctx, d, heads, layers, vocab = (2, 32, 64, 4, 2, 500) if args.smoke else (8, 512, 768, 12, 6, 32000)
    norm_every = 100 if args.fix else 1
    model = LM(vocab, ctx, d, heads, layers).to(dev)
    fwd = torch.compile(model, mode=cc.alt_setup(args, "reduce-overhead", 10), dynamic=False) if args.alt else model
    n_tensors = sum(1 for _ in model.parameters())
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, betas=(0.9, 0.95), weight_decay=0.1, fused=dev.type == "cuda")
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / 200) * 0.5 * (1 + math.cos(math.pi * min(s, 20_000) / 20_000)))
    g = torch.Generator(device=dev).manual_seed(0)
    data = [torch.randint(0, vocab, (batch, ctx + 1), device=dev, generator=g) for _ in range(8)]
    history = []  # what the logger gets: (step, {parameter: gradient norm})
    losses = []
    log = {"loss": None, "norm_logs": 0}

    def step(i):
        xy = data[i % len(data)]
        if args.alt:
            # grads set to None before the graphs replay: the previous step's grads (backward
            # graph outputs that autograd took over) are not alive when their memory is reused
            opt.zero_grad(set_to_none=True)
            torch.compiler.cudagraph_mark_step_begin()
        with torch.autocast(dev.type, dtype=torch.bfloat16):
            logits = fwd(xy[:, :-1])
        loss = F.cross_entropy(logits.float().reshape(-1, vocab), xy[:, 1:].reshape(-1))
        loss.backward()
        if i % norm_every == 0:
            grad_norms = {name: p.grad.norm().item() for name, p in model.named_parameters() if p.grad is not None}  # gpuwhy: plants C9 (a host read per parameter, every step)
            history.append((i, grad_norms))
            del history[:-10]
            log["norm_logs"] += 1
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        opt.zero_grad(set_to_none=True)
        losses.append(loss.detach())
        if len(losses) == 100:
            log["loss"] = torch.stack(losses).mean().item()
            losses.clear()

    cc.run("c9_torch_param_norm_items", args, step, batch,
           extra=lambda: {"param_tensors": n_tensors, "norm_every": norm_every, "norm_logs": log["norm_logs"]})


if __name__ == "__main__":
    main()
