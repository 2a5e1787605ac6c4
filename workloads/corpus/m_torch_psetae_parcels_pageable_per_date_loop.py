"""Two causes (C6 pageable copies and C4 launch-bound small kernels): crop-type mapping from
Sentinel-2 image time series with PSE-TAE (Garnot et al., CVPR 2020: a Pixel-Set Encoder and a
Temporal Attention Encoder), in the S2-Agri setting, in plain PyTorch, written as ports of
VSainteuf/pytorch-psetae into a project's own training script often are: each parcel a set of 64
pixels (zero-padded and masked where the parcel is smaller) of 10 bands on 24 acquisition dates,
20 crop classes; PSE (mlp1 10 -> 32 -> 64 with BatchNorm, masked mean and standard deviation
pooling, mlp2 128 -> 128), TAE (LayerNorm, sinusoidal encoding of the day of year with T = 1000,
4 heads of d_k 32 with the mean "master query", mlp3 512 -> 128 -> 128, dropout 0.2), decoder
mlp4 128 -> 64 -> 32 -> 20; 164 k parameters in 42 tensors, the focal loss (gamma 1), Adam
(lr 1e-3), float32 as the reference trains it; the loss stays on the GPU and is read every 50
steps. The data set is preloaded into RAM (BreizhCrops' preload_ram, the project's exported
parcels): 8,192 parcels as one float32 NumPy array of (N, 24, 10, 64), normalized per band and
shuffled once when exported (503 MB, made at start on the GPU and copied to host memory), the
pixel masks beside it; batches of 512 parcels are cut from it in order.

Two causes, as such ports have them:
- the batch goes to the GPU as `torch.from_numpy(X[s:e]).to(device)`: a 31.5 MB copy from
  pageable memory a step, the host blocked for it (~3-5 ms at 6-10 GB/s, estimated) and the GPU
  idle while it is staged (C6);
- the port applies the Pixel-Set Encoder date by date in a Python loop (`torch.stack([self.pse(
  x[:, t], mask) for t in range(T)], 1)`) where the reference folds the dates into the batch: 24
  passes of ~51 aten operations forward and ~72 backward on 512-parcel tensors (32,768 pixel rows
  of 32-64 channels, a few microseconds of GPU work each), ~3,200 operations a step against ~400
  with the dates folded (counted on the CPU with a dispatch-mode counter, the update apart):
  ~15-20 ms of host issue against ~2-4 ms of GPU work, estimated (C4).

--fix: both advices: the array pinned once at start (`pin_memory()`, 503 MB) and each batch copied
with `non_blocking=True` on a side stream one batch ahead (C6: pinned memory, non-blocking
copies); and the dates folded into the batch as the reference's PSE does (x.view(B * T, C, S)),
one pass of the encoder over 393,216 pixel rows (C4: fewer, larger kernels); model, data, loss and
optimizer otherwise unchanged.

Written blind for the victor batch.
"""
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

import cc


class LinLayer(nn.Module):
    """Linear, BatchNorm1d over the channels, ReLU (pytorch-psetae's linlayer)."""

    def __init__(self, cin, cout, act=True):
        super().__init__()
        self.lin = nn.Linear(cin, cout)
        self.bn = nn.BatchNorm1d(cout)
        self.act = act

    def forward(self, x):
        y = self.lin(x)
        if y.dim() == 3:                                   # (N, S, C): BatchNorm over C
            y = self.bn(y.transpose(1, 2)).transpose(1, 2)
        else:
            y = self.bn(y)
        return F.relu(y) if self.act else y


class PixelSetEncoder(nn.Module):
    def __init__(self, cin=10, mlp1=(32, 64), mlp2=(128,)):
        super().__init__()
        dims = (cin,) + mlp1
        self.mlp1 = nn.Sequential(*[LinLayer(a, b) for a, b in zip(dims[:-1], dims[1:])])
        dims = (2 * mlp1[-1],) + mlp2
        self.mlp2 = nn.Sequential(*[LinLayer(a, b, act=(k < len(mlp2) - 1)) for k, (a, b) in enumerate(zip(dims[:-1], dims[1:]))])

    def forward(self, x, mask):
        """x (N, C, S) pixels, mask (N, S) 1 on a real pixel."""
        out = self.mlp1(x.transpose(1, 2))                  # (N, S, 64)
        m = mask.unsqueeze(-1)
        n = m.sum(1).clamp(min=1.0)
        mean = (out * m).sum(1) / n
        var = (((out - mean.unsqueeze(1)) * m) ** 2).sum(1) / (n - 1).clamp(min=1.0)
        std = torch.sqrt(var + 1e-31)
        return self.mlp2(torch.cat([mean, std], 1))


class TemporalAttentionEncoder(nn.Module):
    def __init__(self, cin=128, n_head=4, d_k=32, n_neurons=(512, 128, 128), dropout=0.2, T=1000, len_max=366):
        super().__init__()
        self.n_head, self.d_k = n_head, d_k
        pos = torch.arange(len_max + 1, dtype=torch.float32)[:, None]
        i = torch.arange(cin, dtype=torch.float32)[None]
        angle = pos / T ** (2 * (i // 2) / cin)
        table = torch.where(i % 2 == 0, torch.sin(angle), torch.cos(angle))
        self.register_buffer("pos_table", table)
        self.inlayernorm = nn.LayerNorm(cin)
        self.fc1_q = nn.Linear(cin, n_head * d_k)
        self.fc1_k = nn.Linear(cin, n_head * d_k)
        self.fc2 = nn.Sequential(nn.BatchNorm1d(n_head * d_k), nn.Linear(n_head * d_k, n_head * d_k))
        dims = n_neurons
        self.mlp3 = nn.Sequential(*[LinLayer(a, b) for a, b in zip(dims[:-1], dims[1:])])
        self.dropout = nn.Dropout(dropout)
        self.outlayernorm = nn.LayerNorm(n_neurons[-1])

    def forward(self, x, days):
        b, t, c = x.shape
        x = self.inlayernorm(x) + self.pos_table[days].unsqueeze(0)
        q = self.fc2(self.fc1_q(x).mean(1)).view(b, self.n_head, self.d_k)          # master query
        k = self.fc1_k(x).view(b, t, self.n_head, self.d_k)
        attn = torch.softmax(torch.einsum("bhd,bthd->bht", q, k) / math.sqrt(self.d_k), dim=-1)
        out = torch.einsum("bht,btc->bhc", attn, x).reshape(b, self.n_head * c)
        return self.outlayernorm(self.dropout(self.mlp3(out)))


class PseTae(nn.Module):
    def __init__(self, n_classes=20, fold_dates=False):
        super().__init__()
        self.spatial_encoder = PixelSetEncoder()
        self.temporal_encoder = TemporalAttentionEncoder()
        self.decoder = nn.Sequential(LinLayer(128, 64), LinLayer(64, 32), nn.Linear(32, n_classes))
        self.fold_dates = fold_dates

    def forward(self, x, mask, days):
        """x (B, T, C, S), mask (B, S), days (T,)."""
        b, t = x.shape[:2]
        if self.fold_dates:                                 # the reference: dates folded into the batch
            feats = self.spatial_encoder(x.flatten(0, 1), mask.repeat_interleave(t, 0)).view(b, t, -1)
        else:
            feats = torch.stack([self.spatial_encoder(x[:, d], mask) for d in range(t)], dim=1)  # gpuwhy: plants C4 (the Pixel-Set Encoder run date by date: 24 passes of ~120 small operations forward and backward)
        return self.decoder(self.temporal_encoder(feats, days))


def focal_loss(logits, y, gamma=1.0):
    logp = F.log_softmax(logits, 1).gather(1, y[:, None])[:, 0]
    return (-(1 - logp.exp()) ** gamma * logp).mean()


def make_parcels(dev, n, t, c, s, n_classes, seed=0):
    """n parcels: per-class phenology curves (NDVI-like rise and fall per band) shifted and scaled per
    parcel, per-pixel noise and field heterogeneity, ~15% of parcels smaller than s pixels."""
    g = torch.Generator(device=dev).manual_seed(seed)
    doy = torch.linspace(15, 350, t, device=dev)
    peak = torch.rand(n_classes, 1, device=dev, generator=g) * 180 + 90
    width = torch.rand(n_classes, 1, device=dev, generator=g) * 50 + 30
    band_gain = torch.rand(n_classes, c, device=dev, generator=g) * 2 - 0.5
    labels = torch.randint(0, n_classes, (n,), device=dev, generator=g)
    X = torch.empty(n, t, c, s, device=dev)
    for a in range(0, n, 1024):
        y = labels[a:a + 1024]
        m = y.numel()
        shift = torch.randn(m, 1, device=dev, generator=g) * 12
        curve = torch.exp(-((doy[None] - peak[y] - shift) / width[y]) ** 2)                 # (m, t)
        base = curve[:, :, None] * band_gain[y][:, None, :] + 0.3                           # (m, t, c)
        field = torch.randn(m, 1, c, s, device=dev, generator=g) * 0.05
        X[a:a + 1024] = base[..., None] * (1 + field) + torch.randn(m, t, c, s, device=dev, generator=g) * 0.08
    npix = torch.where(torch.rand(n, device=dev, generator=g) < 0.15,
                       torch.randint(8, s, (n,), device=dev, generator=g), torch.full((n,), s, device=dev))
    mask = (torch.arange(s, device=dev)[None] < npix[:, None]).float()
    X *= mask[:, None, None, :]
    mu = (X.sum((0, 1, 3)) / (mask.sum() * t))[None, None, :, None]
    sd = (((X - mu) * mask[:, None, None, :]) ** 2).sum((0, 1, 3)).div(mask.sum() * t).sqrt()[None, None, :, None]
    X = ((X - mu) / sd) * mask[:, None, None, :]
    days = doy.round().long()
    return X, mask, labels, days


def main():
    args = cc.parser(__doc__, warmup=5).parse_args()
    dev = cc.torch_device(args)
    gpu = dev.type == "cuda"
    if args.smoke:
        n, t, c, s, batch = 256, 6, 10, 16, 32
    else:
        n, t, c, s, batch = 8192, 24, 10, 64, 512
    n_classes = 20

    torch.manual_seed(0)
    Xg, Mg, Yg, days = make_parcels(dev, n, t, c, s, n_classes)
    X = Xg.cpu().numpy()                                    # preload_ram: the exported parcels in host memory
    M = Mg.cpu().numpy()
    Y = Yg.cpu().numpy()
    del Xg, Mg, Yg
    if gpu:
        torch.cuda.empty_cache()

    model = PseTae(n_classes, fold_dates=args.fix).to(dev).train()
    n_params = sum(p.numel() for p in model.parameters())
    n_tensors = sum(1 for _ in model.parameters())
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    n_batches = n // batch

    if args.fix:
        Xp, Mp, Yp = (torch.from_numpy(a) for a in (X, M, Y))
        if gpu:
            Xp, Mp, Yp = Xp.pin_memory(), Mp.pin_memory(), Yp.pin_memory()
        copy_stream = torch.cuda.Stream() if gpu else None

        def load(k):
            a, b = (k % n_batches) * batch, (k % n_batches + 1) * batch
            if not gpu:
                return Xp[a:b].to(dev), Mp[a:b].to(dev), Yp[a:b].to(dev), None
            with torch.cuda.stream(copy_stream):
                out = (Xp[a:b].to(dev, non_blocking=True), Mp[a:b].to(dev, non_blocking=True),
                       Yp[a:b].to(dev, non_blocking=True))
                ev = torch.cuda.Event()
                ev.record(copy_stream)
            return out + (ev,)

        pending = {"next": load(0)}

        def get_batch(k):
            xb, mb, yb, ev = pending["next"]
            if ev is not None:
                torch.cuda.current_stream().wait_event(ev)
                for x in (xb, mb, yb):
                    x.record_stream(torch.cuda.current_stream())
            pending["next"] = load(k + 1)               # the next batch copies while this one trains
            return xb, mb, yb
    else:
        def get_batch(k):
            a, b = (k % n_batches) * batch, (k % n_batches + 1) * batch
            xb = torch.from_numpy(X[a:b]).to(dev)  # gpuwhy: plants C6 (31.5 MB a step copied from pageable memory, the host blocked for it)
            mb = torch.from_numpy(M[a:b]).to(dev)
            yb = torch.from_numpy(Y[a:b]).to(dev)
            return xb, mb, yb

    st = {"acc": torch.zeros((), device=dev), "loss": None, "reads": 0}

    def step(i):
        xb, mb, yb = get_batch(i)
        logits = model(xb, mb, days)
        loss = focal_loss(logits, yb)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        st["acc"] += loss.detach()
        if (i + 1) % 50 == 0:
            st["loss"] = st["acc"].item() / 50
            st["acc"].zero_()
            st["reads"] += 1

    cc.run("m_torch_psetae_parcels_pageable_per_date_loop", args, step, batch,
           extra=lambda: {"parcels": n, "dates": t, "pixels": s, "batch_mb": round(batch * t * c * s * 4 / 2**20, 1),
                          "params_k": round(n_params / 1e3, 1), "param_tensors": n_tensors, "loss": st["loss"],
                          "loss_reads": st["reads"]})


if __name__ == "__main__":
    main()
