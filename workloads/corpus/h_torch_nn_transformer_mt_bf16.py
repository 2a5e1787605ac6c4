"""Healthy control (PyTorch's stock nn.Transformer): WMT-style machine translation with a
Transformer-big built from torch.nn.Transformer itself (d_model 1,024, 16 heads, 6 encoder and
6 decoder layers, FFN 4,096, ReLU, dropout 0.1, pre-LN, batch_first), a shared 32,000-token
BPE embedding scaled by sqrt(d) and tied to the output projection, sinusoidal positions,
label-smoothed (0.1) cross-entropy that ignores padding, bf16 autocast, Adam (fused, betas
0.9/0.98) with the paper's inverse-square-root warm-up, batch 96 sentence pairs of up to 128
source and 128 target tokens (lengths bucketed, 10-20% padding; source padding masked with
src_key_padding_mask and memory_key_padding_mask, the decoder causal with tgt_is_causal=True).
Sixteen token batches are made once on the GPU and cycled; the loss is accumulated on the GPU
and read every 100 steps; nothing else waits for the GPU. About 15.5 TFLOP a step (6 x 210 M
weights x 12,288 target and 12,288 source positions, the tied projection included) of large
bf16 GEMMs: the GPU busy throughout.

--fix: nothing (control).

Written blind for the golf batch.
"""
import math
import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F

import cc

PAD, BOS = 0, 1


class Seq2Seq(nn.Module):
    def __init__(self, vocab, d, heads, layers, ffn, max_len):
        super().__init__()
        self.d = d
        self.embed = nn.Embedding(vocab, d, padding_idx=PAD)
        nn.init.normal_(self.embed.weight, std=d ** -0.5)
        pos = torch.arange(max_len)[:, None] * torch.exp(torch.arange(0, d, 2) * (-math.log(10000.0) / d))[None]
        self.register_buffer("pe", torch.stack([pos.sin(), pos.cos()], -1).flatten(1), persistent=False)
        self.core = nn.Transformer(d, heads, layers, layers, ffn, dropout=0.1, batch_first=True, norm_first=True)
        self.drop = nn.Dropout(0.1)

    def embed_pos(self, ids):
        return self.drop(self.embed(ids) * math.sqrt(self.d) + self.pe[:ids.shape[1]])

    def forward(self, src, tgt_in):
        src_pad = src == PAD
        out = self.core(self.embed_pos(src), self.embed_pos(tgt_in),
                        tgt_mask=nn.Transformer.generate_square_subsequent_mask(tgt_in.shape[1], device=src.device),
                        src_key_padding_mask=src_pad, memory_key_padding_mask=src_pad, tgt_is_causal=True)
        return F.linear(out, self.embed.weight)        # tied output projection


def make_batch(g, dev, batch, src_len, tgt_len, vocab):
    """A bucketed batch: lengths within the bucket's top 20%, padding at the end."""
    def side(n):
        lens = torch.randint(int(n * 0.8), n + 1, (batch,), device=dev, generator=g)
        ids = torch.randint(4, vocab, (batch, n), device=dev, generator=g)
        return ids.masked_fill(torch.arange(n, device=dev)[None] >= lens[:, None], PAD), lens
    src, _ = side(src_len)
    tgt, _ = side(tgt_len - 1)
    tgt = torch.cat([torch.full((batch, 1), BOS, device=dev, dtype=tgt.dtype), tgt], 1)
    return src, tgt[:, :-1], tgt[:, 1:]


def main():
    args = cc.parser(__doc__).parse_args()
    dev = cc.torch_device(args)
    warnings.filterwarnings("ignore", message=".*enable_nested_tensor.*")
    vocab, d, heads, layers, ffn, batch, src_len, tgt_len = \
        (500, 32, 2, 1, 64, 4, 12, 12) if args.smoke else (32_000, 1024, 16, 6, 4096, 96, 128, 128)
    torch.manual_seed(0)
    model = Seq2Seq(vocab, d, heads, layers, ffn, max(src_len, tgt_len) + 1).to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=1.0, betas=(0.9, 0.98), eps=1e-9, fused=dev.type == "cuda")
    warm = 4000
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: d ** -0.5 * min((s + 1) ** -0.5, (s + 1) * warm ** -1.5))
    g = torch.Generator(device=dev).manual_seed(1)
    data = [make_batch(g, dev, batch, src_len, tgt_len + 1, vocab) for _ in range(16)]
    acc = torch.zeros((), device=dev)
    log = {"loss": None, "reads": 0}

    def step(i):
        src, tgt_in, tgt_out = data[i % 16]
        with torch.autocast(dev.type, dtype=torch.bfloat16):
            logits = model(src, tgt_in)
            loss = F.cross_entropy(logits.reshape(-1, vocab), tgt_out.reshape(-1), ignore_index=PAD,
                                   label_smoothing=0.1)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        acc.add_(loss.detach())
        if i % 100 == 99:
            log["loss"] = acc.item() / 100
            log["reads"] += 1
            acc.zero_()

    cc.run("h_torch_nn_transformer_mt_bf16", args, step, batch,
           extra=lambda: {"params_m": round(sum(p.numel() for p in model.parameters()) / 1e6, 1),
                          "tokens_per_step": batch * (src_len + tgt_len), "loss_reads": log["reads"]})


if __name__ == "__main__":
    main()
