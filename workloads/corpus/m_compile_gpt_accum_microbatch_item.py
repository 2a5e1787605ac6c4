"""C3 + C9 gradient accumulation over tiny micro-batches, each loss read with .item(): pre-training
a GPT-2-style decoder (6 layers of width 768, 12 heads, context 1,024, vocabulary
32,000 tied, SDPA causal attention, GELU-tanh; 68 M parameters) under
torch.compile(model), bf16 autocast, fused AdamW, clip_grad_norm_ 1.0; a logical batch of 32
sequences (32,768 tokens) a step from a token stream made once on the GPU; the loss is logged
every step.

The loop is nanoGPT's configuration shrunk to a small card's memory and left that way on the
H100: gradient_accumulation_steps = 16 micro-batches of 2 sequences (C3: each micro-batch's
kernels are small, 2,048 tokens), and the running loss summed with `loss.item()` after each
micro-batch's backward for the progress line (C9: 16 host reads a step, the GPU drained
before each next micro-batch is issued).

--fix: both causes' advice: the batch raised to 32 sequences in one micro-batch
(gradient_accumulation_steps 1, the same 32,768 tokens and the same optimizer step: the mean
of the micro-batch means equals the batch mean), and the loss kept on the GPU and read every
50 steps; model, data, optimizer and clipping unchanged (the gradients of both layouts
checked equal at start).

Written blind for the mike batch.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

import cc


class Block(nn.Module):
    def __init__(self, d, h):
        super().__init__()
        self.h = h
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc, self.out = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x):
        B, T, D = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(B, T, 3, self.h, D // self.h).transpose(1, 3).unbind(2)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(B, T, D)
        x = x + self.proj(y)
        return x + self.out(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self, V, T, d, L, h):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(V, d), nn.Embedding(T, d)
        self.blocks = nn.ModuleList(Block(d, h) for _ in range(L))
        self.lnf = nn.LayerNorm(d)
        self.apply(lambda m: nn.init.normal_(m.weight, std=0.02) if isinstance(m, (nn.Linear, nn.Embedding)) else None)

    def forward(self, idx, targets):
        x = self.wte(idx) + self.wpe.weight[: idx.shape[1]]
        for b in self.blocks:
            x = b(x)
        logits = self.lnf(x) @ self.wte.weight.T
        return F.cross_entropy(logits.float().view(-1, logits.shape[-1]), targets.reshape(-1))


def main():
    args = cc.parser(__doc__, warmup=5).parse_args()
    dev = cc.torch_device(args)
    gpu = dev.type == "cuda"
    if args.smoke:
        V, T, d, L, h, logical, micro, stream = 512, 64, 64, 2, 4, 8, 2, 50_000
    else:
        V, T, d, L, h, logical, micro, stream = 32_000, 1024, 768, 6, 12, 32, 2, 50_000_000
    if args.fix:
        mb = cc.fix_batch(logical)
    else:
        mb = micro  # gpuwhy: plants C3 (micro-batches of 2 sequences, 16 accumulated: small kernels for a step's 32,768 tokens)
    accum = logical // mb
    torch.manual_seed(0)
    model = GPT(V, T, d, L, h).to(dev).train()
    opt = torch.optim.AdamW(model.parameters(), lr=6e-4, betas=(0.9, 0.95), weight_decay=0.1, fused=gpu)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 2000) * 0.5 * (1 + math.cos(math.pi * min(s, 600_000) / 600_000)))
    gen = torch.Generator(device=dev).manual_seed(1)
    tokens = torch.randint(0, V, (stream,), device=dev, generator=gen)
    offs = torch.arange(T + 1, device=dev)
    amp = torch.autocast(dev.type, dtype=torch.bfloat16, enabled=gpu)

    # equivalence at start (eager, float32): 4 micro-batches of 2 and one of 8 give the same gradients
    chk = torch.randint(0, stream - T - 1, (8, 1), device=dev, generator=gen) + offs
    chk = tokens[chk]
    grads = []
    for parts in (4, 1):
        model.zero_grad(set_to_none=True)
        for c in chk.chunk(parts):
            (model(c[:, :-1], c[:, 1:]) / parts).backward()
        grads.append(torch.cat([p.grad.flatten() for p in model.parameters()]))
    assert torch.allclose(grads[0], grads[1], rtol=1e-3, atol=1e-6), (grads[0] - grads[1]).abs().max()
    model.zero_grad(set_to_none=True)
    cmodel = torch.compile(model)

    st = {"acc": torch.zeros((), device=dev), "loss": None, "reads": 0, "running": 0.0}

    def step(i):
        for _ in range(accum):
            start = torch.randint(0, stream - T - 1, (mb, 1), device=dev, generator=gen)
            seq = tokens[start + offs]
            with amp:
                loss = cmodel(seq[:, :-1], seq[:, 1:]) / accum
            loss.backward()
            if args.fix:
                st["acc"] += loss.detach()
            else:
                st["running"] += loss.item()  # gpuwhy: plants C9 (a host read after each micro-batch's backward: 16 syncs a step)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0, foreach=True)
        opt.step()
        sched.step()
        opt.zero_grad(set_to_none=True)
        if args.fix and i % 50 == 49:
            st["loss"] = st["acc"].item() / 50
            st["acc"].zero_()
            st["reads"] += 1
        elif not args.fix:
            st["loss"] = st["running"]
            st["running"] = 0.0
            st["reads"] += 1

    cc.run("m_compile_gpt_accum_microbatch_item", args, step, logical,
           extra=lambda: {"micro_batch": mb, "accumulation_steps": accum, "tokens_per_step": logical * T,
                          "loss": st["loss"], "loss_reads": st["reads"],
                          "params_m": round(sum(p.numel() for p in model.parameters()) / 1e6, 1)})


if __name__ == "__main__":
    main()
