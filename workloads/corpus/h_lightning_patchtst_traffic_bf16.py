"""Healthy control (Lightning, long-term time-series forecasting): PatchTST/42 as the
Time-Series-Library builds it, trained as a LightningModule on a Traffic-sized data set (862
road-occupancy sensors, 17,544 hourly points; synthetic daily and weekly profiles with
incidents, held on the GPU as one [17,544, 862] float32 tensor): look-back 336, horizon 96,
channel independence (each of a window's 862 series is its own sample), RevIN-style
instance normalization, patches of 16 at stride 8 (42 patches, the end padded by replication),
a linear patch embedding to 128 with learned positions, 3 encoder layers (16 heads, SDPA,
BatchNorm after the attention and after the feed-forward of 256, GELU, dropout 0.2), a
flatten head to the 96 future values; MSE loss, Adam (lr 1e-4) with OneCycle,
Trainer(precision="bf16-mixed"); the DataLoader yields index batches of 32 window starts and
the windows are gathered on the GPU (27,584 series, 1.16 M patch tokens a step). The loss is
accumulated on the GPU and read every 50 steps.

About 3.1 TFLOP a step (FlopCounterMode) in GEMMs of width 128-384 and ~25-40 GB of activation traffic (the
BatchNorm, GELU and dropout passes over 1.16 M x 128 tokens), ~25-35 ms of GPU work against
~6-9 ms of host issue and Lightning's loop: GPU-bound, nothing to fix. (The elementwise passes
are the model's own work at this width; a C11 finding would be a false alarm to look at.)

--fix: nothing (control).

Written blind for the oscar batch.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
import lightning as L
from torch.utils.data import DataLoader, Dataset

import cc


def make_traffic(T, C, g, dev):
    t = torch.arange(T, device=dev, dtype=torch.float32)[:, None]
    phase = torch.rand(1, C, device=dev, generator=g) * 2 * math.pi
    level = 0.02 + 0.08 * torch.rand(1, C, device=dev, generator=g)
    day = torch.relu(torch.sin(2 * math.pi * t / 24 + phase)) ** 2 + 0.6 * torch.relu(torch.sin(2 * math.pi * t / 12 + phase)) ** 4
    week = 1.0 - 0.5 * (((t // 24) % 7) >= 5).float()
    x = level * (1 + 3 * day * week)
    incidents = (torch.rand(T, C, device=dev, generator=g) < 0.002).float()
    x = x + 0.2 * F.max_pool1d(incidents.T[None], 5, 1, 2)[0].T
    return x + 0.005 * torch.randn(T, C, device=dev, generator=g)


class EncoderLayer(nn.Module):
    def __init__(self, d, heads, d_ff, dropout):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(d, 3 * d)
        self.out = nn.Linear(d, d)
        self.norm1 = nn.BatchNorm1d(d)
        self.ff = nn.Sequential(nn.Linear(d, d_ff), nn.GELU(), nn.Dropout(dropout), nn.Linear(d_ff, d))
        self.norm2 = nn.BatchNorm1d(d)
        self.drop = nn.Dropout(dropout)
        self.p = dropout

    def bn(self, norm, x):
        return norm(x.transpose(1, 2)).transpose(1, 2)

    def forward(self, x):
        b, n, d = x.shape
        q, k, v = self.qkv(x).view(b, n, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v, dropout_p=self.p if self.training else 0.0)
        x = self.bn(self.norm1, x + self.drop(self.out(a.transpose(1, 2).reshape(b, n, d))))
        return self.bn(self.norm2, x + self.drop(self.ff(x)))


class PatchTST(L.LightningModule):
    def __init__(self, series, seq_len, pred_len, patch_len, stride, d, heads, d_ff, layers, lr, total):
        super().__init__()
        self.register_buffer("series", series, persistent=False)
        self.seq_len, self.pred_len, self.patch_len, self.stride = seq_len, pred_len, patch_len, stride
        self.n_patches = (seq_len - patch_len) // stride + 2
        self.embed = nn.Linear(patch_len, d)
        self.pos = nn.Parameter(torch.empty(self.n_patches, d).uniform_(-0.02, 0.02))
        self.drop = nn.Dropout(0.2)
        self.layers = nn.ModuleList(EncoderLayer(d, heads, d_ff, 0.2) for _ in range(layers))
        self.head = nn.Linear(self.n_patches * d, pred_len)
        self.lr, self.total = lr, total
        self.acc = None
        self.last_loss = None
        self.reads = 0

    def forward(self, x):                                       # (B, L, C)
        b, _, c = x.shape
        mean = x.mean(1, keepdim=True)
        std = torch.sqrt(x.var(1, keepdim=True, unbiased=False) + 1e-5)
        z = ((x - mean) / std).permute(0, 2, 1).reshape(b * c, self.seq_len)
        z = F.pad(z[:, None], (0, self.stride), mode="replicate")[:, 0]
        z = z.unfold(-1, self.patch_len, self.stride)          # (B*C, N, P)
        h = self.drop(self.embed(z) + self.pos)
        for layer in self.layers:
            h = layer(h)
        y = self.head(h.flatten(1)).view(b, c, self.pred_len).permute(0, 2, 1)
        return y * std + mean

    def training_step(self, starts, batch_idx):
        span = torch.arange(self.seq_len + self.pred_len, device=starts.device)
        w = self.series[starts[:, None] + span]                 # (B, L + H, C)
        x, y = w[:, :self.seq_len], w[:, self.seq_len:]
        loss = F.mse_loss(self(x).float(), y)
        self.acc = loss.detach() if self.acc is None else self.acc + loss.detach()
        if batch_idx % 50 == 49:
            self.last_loss = self.acc.item() / 50
            self.acc = None
            self.reads += 1
        return loss

    def configure_optimizers(self):
        opt = torch.optim.Adam(self.parameters(), lr=self.lr, foreach=True)
        sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=self.lr, total_steps=self.total, pct_start=0.3)
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step"}}


class WindowStarts(Dataset):
    def __init__(self, n_starts, batch, n_batches, seed=0):
        self.n, self.b, self.nb = n_starts, batch, n_batches
        self.g = torch.Generator().manual_seed(seed)

    def __len__(self):
        return self.nb

    def __getitem__(self, i):
        return torch.randint(0, self.n, (self.b,), generator=self.g)


def main():
    args = cc.parser(__doc__, warmup=5).parse_args()
    dev = cc.torch_device(args)
    if args.smoke:
        T, C, seq_len, pred_len, d, heads, d_ff, layers, batch = 2000, 16, 96, 24, 32, 4, 64, 1, 4
    else:
        T, C, seq_len, pred_len, d, heads, d_ff, layers, batch = 17_544, 862, 336, 96, 128, 16, 256, 3, 32
    torch.manual_seed(0)
    g = torch.Generator(device=dev).manual_seed(1)
    series = make_traffic(T, C, g, dev)
    train_end = int(T * 0.7)
    model = PatchTST(series[:train_end], seq_len, pred_len, 16, 8, d, heads, d_ff, layers, lr=1e-4, total=1_000_000)
    loader = DataLoader(WindowStarts(train_end - seq_len - pred_len + 1, batch, 1_000_000), batch_size=None)
    timer = cc.lightning_timer("h_lightning_patchtst_traffic_bf16", args, batch,
                               extra=lambda: {"series_per_step": batch * C, "patches": model.n_patches,
                                              "loss": model.last_loss, "loss_reads": model.reads,
                                              "params_m": round(sum(p.numel() for p in model.parameters()) / 1e6, 2)})
    trainer = cc.lightning_trainer(args, [timer], precision="bf16-mixed" if dev.type == "cuda" else "32-true")
    trainer.fit(model, loader)


if __name__ == "__main__":
    main()
