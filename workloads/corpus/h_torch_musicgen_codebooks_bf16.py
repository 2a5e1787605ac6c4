"""Healthy control (PyTorch, a MusicGen-style language model over audio codec tokens):
training of the MusicGen recipe's transformer in plain PyTorch (audiocraft's layout): 4
EnCodec codebooks of 2,048 codes at 50 frames a second interleaved with the "delay" pattern
(codebook k shifted right by k frames, a special token where a codebook has no code yet),
the 4 codebook embeddings summed, a genre embedding prepended, 12 pre-LN causal blocks of
width 768 (12 heads through scaled_dot_product_attention, GELU MLP 3,072), 4 linear heads of
2,048 logits (one a codebook), cross-entropy over the valid positions of every codebook;
97.6 M parameters, bf16 autocast, fused AdamW (lr 1e-4, betas 0.9/0.95, weight decay 0.1)
with a cosine schedule, gradient clipping at 1.0; batch 12 clips of 30 s (1,500 frames,
18,000 positions a step); 1,024 clips of codes (int16) made at start on the GPU, batches
drawn there; the loss is read every 50 steps.

About 12.9 TFLOP a step (FlopCounterMode) in GEMMs of width 768-3,072 and causal SDPA over
1,503 positions, ~30-45 ms of GPU work against ~4-6 ms of host issue (~700 operations):
GPU-bound, nothing to fix. (The four heads' logits, 4 x 18,000 x 2,048, and the delay
pattern's masking are the model's own work.)

--fix: nothing (control).

Written blind for the quebec batch.
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
        self.qkv, self.proj = nn.Linear(d, 3 * d, bias=False), nn.Linear(d, d, bias=False)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d, bias=False), nn.GELU(), nn.Linear(4 * d, d, bias=False))

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(b, t, d))
        return x + self.mlp(self.ln2(x))


class MusicLM(nn.Module):
    def __init__(self, n_q, card, d, layers, heads, genres):
        super().__init__()
        self.n_q, self.card = n_q, card
        self.emb = nn.ModuleList(nn.Embedding(card + 1, d) for _ in range(n_q))     # + the special token
        self.genre = nn.Embedding(genres, d)
        self.blocks = nn.ModuleList(Block(d, heads) for _ in range(layers))
        self.ln = nn.LayerNorm(d)
        self.heads = nn.ModuleList(nn.Linear(d, card, bias=False) for _ in range(n_q))

    def forward(self, codes, genre):              # codes: (B, n_q, T) with the delay pattern applied
        x = sum(self.emb[k](codes[:, k]) for k in range(self.n_q))
        x = torch.cat([self.genre(genre)[:, None], x], 1)
        for blk in self.blocks:
            x = blk(x)
        x = self.ln(x)[:, :-1]                      # position t predicts the codes of step t
        return torch.stack([h(x) for h in self.heads], 1)                  # (B, n_q, T, card)


def delay_pattern(codes, special):
    """audiocraft's DelayedPatternProvider: codebook k shifted right by k steps."""
    b, n_q, t = codes.shape
    out = torch.full((b, n_q, t + n_q - 1), special, dtype=codes.dtype, device=codes.device)
    for k in range(n_q):
        out[:, k, k:k + t] = codes[:, k]
    return out


def main():
    args = cc.parser(__doc__, warmup=5).parse_args()
    dev = cc.torch_device(args)
    gpu = dev.type == "cuda"
    if args.smoke:
        d, layers, heads, card, frames, batch, clips = 64, 2, 4, 64, 64, 2, 16
    else:
        d, layers, heads, card, frames, batch, clips = 768, 12, 12, 2048, 1500, 12, 1024
    n_q, genres = 4, 32
    g = torch.Generator(device=dev).manual_seed(0)
    # codes with some structure: a slowly drifting code per codebook plus noise
    base = torch.randint(0, card, (clips, n_q, 1), device=dev, generator=g)
    drift = torch.randint(-3, 4, (clips, n_q, frames), device=dev, generator=g).cumsum(-1)
    codes = ((base + drift) % card).to(torch.int16)
    labels = torch.randint(0, genres, (clips,), device=dev, generator=g)
    torch.manual_seed(0)
    model = MusicLM(n_q, card, d, layers, heads, genres).to(dev).train()
    params = sum(p.numel() for p in model.parameters())
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, betas=(0.9, 0.95), weight_decay=0.1, fused=gpu)
    total = 100_000
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / 500) * 0.5 * (1 + math.cos(math.pi * min(s, total) / total)))
    amp = torch.autocast(dev.type, dtype=torch.bfloat16, enabled=gpu)
    st = {"acc": torch.zeros((), device=dev), "loss": None, "reads": 0}

    def step(i):
        idx = torch.randint(0, clips, (batch,), device=dev, generator=g)
        seq = delay_pattern(codes[idx].long(), card)                   # (B, n_q, T + n_q - 1)
        valid = seq != card                                            # the special token is not a target
        with amp:
            logits = model(seq, labels[idx])
        loss = F.cross_entropy(logits.float().flatten(0, 2), seq.masked_fill(~valid, -100).flatten(),
                               ignore_index=-100)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0, foreach=gpu)
        opt.step()
        sched.step()
        st["acc"] += loss.detach()
        if i % 50 == 49:
            st["loss"] = st["acc"].item() / 50
            st["acc"].zero_()
            st["reads"] += 1

    cc.run("h_torch_musicgen_codebooks_bf16", args, step, batch,
           extra=lambda: {"params_m": round(params / 1e6, 1), "positions_per_step": batch * (frames + n_q - 1),
                          "codebooks": n_q, "loss": st["loss"], "loss_reads": st["reads"]})


if __name__ == "__main__":
    main()
