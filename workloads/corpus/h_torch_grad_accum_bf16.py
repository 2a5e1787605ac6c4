"""Healthy control (gradient accumulation): a nanoGPT-style LM (8 layers, d=768, 12 heads,
context 512, vocab 16000, tied embeddings, F.scaled_dot_product_attention with
is_causal) trained with bf16 autocast and fused AdamW on micro-batches of 16 x 512 tokens
made once on the GPU and cycled, 4 gradient-accumulation micro-batches per optimizer step
(loss scaled by 1/4), gradient clipping before the step, and the loss accumulated as a
GPU tensor and read with .item() once every 50 optimizer steps. Nothing on the host
waits for the GPU inside the loop: the GPU should be busy throughout.

--fix: nothing (control).

--alt: the fix for the launch-bound finding (C4) gpuwhy ranks first: the model (forward and
loss) under torch.compile(mode="reduce-overhead") (CUDA graphs; GW_ALT_MODE=default for
fusion alone), the gradients allocated once and zeroed in place (so that no graph output
becomes a .grad the next micro-batch adds to), at least 5 warm-up iterations. Written after gpuwhy's report of the wild
batch, to measure whether its C4 is real headroom in this control.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

import cc

ACCUM = 4


class Block(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc, self.out = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, d))
        return x + self.out(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self, vocab, ctx, d, heads, layers):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(vocab, d), nn.Embedding(ctx, d)
        self.blocks = nn.ModuleList(Block(d, heads) for _ in range(layers))
        self.ln_f = nn.LayerNorm(d)
        self.lm_head = nn.Linear(d, vocab, bias=False)
        self.lm_head.weight = self.wte.weight
        self.apply(self._init)

    @staticmethod
    def _init(m):
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, std=0.02)
        if isinstance(m, nn.Linear) and m.bias is not None:
            nn.init.zeros_(m.bias)

    def forward(self, idx, targets):
        x = self.wte(idx) + self.wpe.weight[:idx.shape[1]]
        for blk in self.blocks:
            x = blk(x)
        logits = self.lm_head(self.ln_f(x))
        return F.cross_entropy(logits.float().view(-1, logits.shape[-1]), targets.reshape(-1))


def main():
    args = cc.parser(__doc__).parse_args()
    dev = cc.torch_device(args)
    micro, ctx, d, heads, layers, vocab = (2, 32, 64, 4, 2, 500) if args.smoke else (16, 512, 768, 12, 8, 16000)
    model = GPT(vocab, ctx, d, heads, layers).to(dev)
    fwd = torch.compile(model, mode=cc.alt_setup(args, "reduce-overhead", 5)) if args.alt else model
    if args.alt:  # gradients made once and zeroed in place: a graph's output never becomes a .grad
        for p in model.parameters():
            p.grad = torch.zeros_like(p)
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=6e-4, betas=(0.9, 0.95), fused=dev.type == "cuda")
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 100) * 0.5 * (1 + math.cos(math.pi * min(s, 20000) / 20000)))
    g = torch.Generator().manual_seed(0)
    data = [torch.randint(0, vocab, (micro, ctx + 1), generator=g).to(dev) for _ in range(2 * ACCUM)]
    acc = torch.zeros((), device=dev)
    log = {"loss": None, "reads": 0}

    def step(i):
        nonlocal acc
        for k in range(ACCUM):
            x = data[(i * ACCUM + k) % len(data)]
            if args.alt:
                torch.compiler.cudagraph_mark_step_begin()
            with torch.autocast(dev.type, dtype=torch.bfloat16):
                loss = fwd(x[:, :-1], x[:, 1:]) / ACCUM
            loss.backward()
            acc += loss.detach()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        opt.zero_grad(set_to_none=not args.alt)
        if i % 50 == 49:
            log["loss"] = acc.item() / 50
            log["reads"] += 1
            acc.zero_()

    cc.run("h_torch_grad_accum_bf16", args, step, micro * ACCUM,
           extra=lambda: {"micro_batches_per_step": ACCUM, "loss_reads": log["reads"]})


if __name__ == "__main__":
    main()
