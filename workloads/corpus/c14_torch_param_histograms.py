"""C14 periodic host work (parameter histograms): a decoder-only transformer LM (6 layers,
d=512, 8 heads, causal mask, vocab 8000, batch 32 x 256 tokens, bf16 autocast, fused
AdamW, a few batches made once on the GPU and cycled) that logs its weights the way
`wandb.watch(model, log="all", log_freq=20)` does, without the network: every 20 steps,
for every named parameter and its gradient, the tensor is copied to the host
(.detach().float().cpu().numpy()), binned by np.histogram (64 bins) and summarized (mean,
std, L2 norm); the dict of all of them is json.dumps-ed into an in-memory history. About
27 M weights and as many gradients go through numpy on the training thread while the GPU
waits, every 20 steps.

--fix: gpuwhy's C14 advice (log less often): the same logging every 1000 steps (never in
the measured window).
"""
import json
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

import cc


class LM(nn.Module):
    def __init__(self, vocab, d, heads, layers, seq):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(seq, d)
        layer = nn.TransformerEncoderLayer(d, heads, 4 * d, dropout=0.1, activation="gelu", batch_first=True,
                                           norm_first=True)
        self.blocks = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)
        self.register_buffer("causal", nn.Transformer.generate_square_subsequent_mask(seq), persistent=False)

    def forward(self, x):
        t = x.shape[1]
        h = self.tok(x) * math.sqrt(self.tok.embedding_dim) + self.pos.weight[:t]
        h = self.blocks(h, mask=self.causal[:t, :t], is_causal=True)
        return self.head(self.norm(h))


class HistogramLogger:
    """What wandb.watch(model, log="all") records, kept in memory: per parameter and per
    gradient a 64-bin histogram and a few statistics, one JSON record per logging step."""

    def __init__(self, model, bins=64):
        self.model, self.bins, self.history = model, bins, []

    def log(self, step):
        record = {"step": step}
        for name, p in self.model.named_parameters():
            for key, t in (("parameters/" + name, p), ("gradients/" + name, p.grad)):
                if t is None:
                    continue
                a = t.detach().float().cpu().numpy()
                counts, edges = np.histogram(a, bins=self.bins)
                record[key] = {"histogram": counts.tolist(), "bin_edges": edges.tolist(), "mean": float(a.mean()),
                               "std": float(a.std()), "l2_norm": float(np.linalg.norm(a.ravel()))}
        self.history.append(json.dumps(record))


def main():
    args = cc.parser(__doc__).parse_args()
    dev = cc.torch_device(args)
    batch, seq, d, heads, layers, vocab = (4, 16, 64, 4, 2, 500) if args.smoke else (32, 256, 512, 8, 6, 8000)
    model = LM(vocab, d, heads, layers, seq).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.1, fused=dev.type == "cuda")
    g = torch.Generator().manual_seed(0)
    data = [torch.randint(0, vocab, (batch, seq + 1), generator=g).to(dev) for _ in range(4)]
    logger = HistogramLogger(model)
    log_freq = 1000 if args.fix else (2 if args.smoke else 20)

    def step(i):
        x = data[i % len(data)]
        with torch.autocast(dev.type, dtype=torch.bfloat16):
            logits = model(x[:, :-1])
        loss = F.cross_entropy(logits.float().reshape(-1, vocab), x[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if (i + 1) % log_freq == 0:
            logger.log(i + 1)  # gpuwhy: plants C14 (every parameter and gradient through numpy every 20 steps)

    cc.run("c14_torch_param_histograms", args, step, batch,
           extra=lambda: {"log_records": len(logger.history), "log_freq": log_freq})


if __name__ == "__main__":
    main()
