"""C3 batch too small for the GPU: multivariate time-series anomaly detection with TranAD (Tuli et
al., VLDB 2022, imperial-qore/TranAD src/models.py and dlutils.py) in plain PyTorch on a Server
Machine Dataset-shaped series (SMD machine-1-1: 28,479 time points of 38 metrics, min-max
scaled; made at start on the GPU: daily and weekly seasonalities, trends, bursts and noise):
sliding windows of 10 points, TranAD's model at its code's sizes (d_model 2 x 38 = 76, 38 heads
of 2, feed-forward 16 with LeakyReLU(True) as its dlutils writes it, no layer norms, one
encoder layer, two decoders; positional encoding; the two-phase self-conditioning: the focus
score c = (x1 - src)^2 of phase one fed into phase two), the epoch-weighted MSE of both
phases, AdamW (lr 1e-4, weight decay 1e-5, fused), float32 (TranAD's code runs in float64 on
the CPU; ports to the GPU run float32), windows held on the GPU, the loss read every 100 steps
(TranAD reads it with .item() every batch: left out so that only the batch is planted).

Planted: TranAD's batch of 128 windows (model.batch = 128): 1,280 tokens of width 76 a step,
every kernel a few microseconds over a few blocks; 1,191 aten operations a step forward,
backward and AdamW counted on the CPU-only machine (views included; ~500-600 kernels with
the fused AdamW), 0.3 GFLOP of work. Estimated (not measured): ~4-6 ms of host time a step
against ~1.5-2.5 ms of GPU work: the GPU idle ~60-75% of a plain step; the fix's batch 8,192
(64x) ~6-12 ms a step of GPU work, GPU-bound: about 25-45x more windows a second.

--fix: gpuwhy's C3 advice (raise the batch size, scale the learning rate): 8,192 windows a step
(cc.fix_batch(8192)), lr scaled by the square root of the batch ratio (8x); model, windows,
loss and optimizer otherwise unchanged; samples_per_s counts windows.

Written blind for the xray batch.
"""
import math

import torch
import torch.nn as nn

import cc


class PositionalEncoding(nn.Module):
    def __init__(self, d, p, max_len):
        super().__init__()
        self.drop = nn.Dropout(p)
        pe = torch.zeros(max_len, d)
        pos = torch.arange(max_len, dtype=torch.float)[:, None]
        div = torch.exp(torch.arange(0, d).float() * (-math.log(10000.0) / d))
        pe += torch.sin(pos * div)
        pe += torch.cos(pos * div)
        self.register_buffer("pe", pe[:, None])   # (T, 1, d): sequence first, as TranAD

    def forward(self, x):
        return self.drop(x + self.pe[:x.size(0)])


class EncoderLayer(nn.Module):
    """dlutils.TransformerEncoderLayer: attention and feed-forward residuals, no norms."""

    def __init__(self, d, heads, ff, p):
        super().__init__()
        self.attn = nn.MultiheadAttention(d, heads, dropout=p)
        self.l1, self.l2 = nn.Linear(d, ff), nn.Linear(ff, d)
        self.d0, self.d1, self.d2 = nn.Dropout(p), nn.Dropout(p), nn.Dropout(p)
        self.act = nn.LeakyReLU(True)

    def forward(self, src):
        src = src + self.d1(self.attn(src, src, src, need_weights=False)[0])
        return src + self.d2(self.l2(self.d0(self.act(self.l1(src)))))


class DecoderLayer(nn.Module):
    """dlutils.TransformerDecoderLayer: self-attention, cross-attention, feed-forward, no norms."""

    def __init__(self, d, heads, ff, p):
        super().__init__()
        self.attn = nn.MultiheadAttention(d, heads, dropout=p)
        self.cross = nn.MultiheadAttention(d, heads, dropout=p)
        self.l1, self.l2 = nn.Linear(d, ff), nn.Linear(ff, d)
        self.d0, self.d1, self.d2, self.d3 = nn.Dropout(p), nn.Dropout(p), nn.Dropout(p), nn.Dropout(p)
        self.act = nn.LeakyReLU(True)

    def forward(self, tgt, memory):
        tgt = tgt + self.d1(self.attn(tgt, tgt, tgt, need_weights=False)[0])
        tgt = tgt + self.d2(self.cross(tgt, memory, memory, need_weights=False)[0])
        return tgt + self.d3(self.l2(self.d0(self.act(self.l1(tgt)))))


class TranAD(nn.Module):
    def __init__(self, feats, window):
        super().__init__()
        self.n_feats = feats
        self.pos_encoder = PositionalEncoding(2 * feats, 0.1, window)
        self.encoder = EncoderLayer(2 * feats, feats, 16, 0.1)
        self.decoder1 = DecoderLayer(2 * feats, feats, 16, 0.1)
        self.decoder2 = DecoderLayer(2 * feats, feats, 16, 0.1)
        self.fcn = nn.Sequential(nn.Linear(2 * feats, feats), nn.Sigmoid())

    def encode(self, src, c, tgt):
        src = torch.cat((src, c), dim=2) * math.sqrt(self.n_feats)
        memory = self.encoder(self.pos_encoder(src))
        return tgt.repeat(1, 1, 2), memory

    def forward(self, src, tgt):
        c = torch.zeros_like(src)
        x1 = self.fcn(self.decoder1(*self.encode(src, c, tgt)))
        c = (x1 - src) ** 2
        x2 = self.fcn(self.decoder2(*self.encode(src, c, tgt)))
        return x1, x2


def smd_like(n, feats, dev, g):
    """Server-metric-like series: seasonalities, trends, bursts, noise; min-max scaled per metric."""
    t = torch.arange(n, device=dev, dtype=torch.float)[:, None]
    per = torch.randint(60, 1440, (1, feats), device=dev, generator=g).float()
    ph = torch.rand(1, feats, device=dev, generator=g) * 2 * math.pi
    x = torch.sin(2 * math.pi * t / per + ph) + 0.3 * torch.sin(2 * math.pi * t / (7 * per) + ph)
    x = x + torch.randn(1, feats, device=dev, generator=g) * t / n
    x = x + (torch.rand(n, feats, device=dev, generator=g) < 0.002) * 3.0
    x = x + 0.1 * torch.randn(n, feats, device=dev, generator=g)
    lo, hi = x.min(0).values, x.max(0).values
    return (x - lo) / (hi - lo + 1e-4)


def main():
    args = cc.parser(__doc__).parse_args()
    dev = cc.torch_device(args)
    feats, window = (8, 10) if args.smoke else (38, 10)
    n = 4000 if args.smoke else 28_479
    base_batch = 128                                     # TranAD's model.batch
    batch = (cc.fix_batch(512) if args.smoke else cc.fix_batch(8192)) if args.fix else base_batch
    g = torch.Generator(device=dev).manual_seed(0)
    series = smd_like(n, feats, dev, g)
    # convert_to_windows: each point with the 9 before it (the first ones padded with the first point)
    padded = torch.cat([series[:1].expand(window - 1, -1), series], 0)
    windows = padded.unfold(0, window, 1).permute(0, 2, 1).contiguous()   # (n, window, feats)
    n_batches = max(1, n // batch)

    torch.manual_seed(0)
    model = TranAD(feats, window).to(dev)
    lr = 1e-4 * math.sqrt(batch / base_batch)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=1e-5, fused=dev.type == "cuda")
    mse = nn.MSELoss(reduction="none")
    acc = torch.zeros((), device=dev)
    st = {"loss": None, "reads": 0}

    def step(i):
        epoch, j = divmod(i, n_batches)
        lo = j * batch
        d = windows[lo:lo + batch] if lo + batch <= n else windows[-batch:]  # gpuwhy: plants C3 (128 windows of 10 x 38 a step)
        w = d.permute(1, 0, 2)                       # (window, batch, feats): sequence first
        elem = w[-1:, :, :]
        z = model(w, elem)
        k = epoch + 1
        l1 = (1 / k) * mse(z[0], elem) + (1 - 1 / k) * mse(z[1], elem)
        loss = torch.mean(l1)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        acc.add_(loss.detach())
        if i % 100 == 99:
            st["loss"] = round(acc.item() / 100, 6)
            st["reads"] += 1
            acc.zero_()

    cc.run("c3_torch_tranad_smd_window_batch128", args, step, batch,
           extra=lambda: {"batch_windows": batch, "window": window, "features": feats,
                          "tokens_per_step": batch * window, "lr": lr, "loss": st["loss"],
                          "loss_reads": st["reads"]})


if __name__ == "__main__":
    main()
