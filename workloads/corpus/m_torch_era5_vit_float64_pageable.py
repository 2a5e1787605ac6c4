"""C1 + C6 a weather model's samples normalized in float64 with NumPy on the training thread
and copied to the GPU from pageable memory, still in float64: training a ClimaX-style ViT to
forecast the atmosphere 6 hours ahead on a 1.40625-degree grid (128 x 256): 38 variables (5
upper-air variables on 7 pressure levels and 3 surface fields), two input states (t - 6 h and
t, as GraphCast takes them) plus 2 static fields (land-sea mask, orography) and 4 time
features, 82 input channels; patch embedding 4 x 4 (2,048 tokens), 12 pre-norm transformer
layers of width 1,024 (16 heads, GELU, PyTorch's SDPA), a linear head to the 38 x 4 x 4 patch
values, the target the 6-hour tendency; latitude-weighted MSE, bf16 autocast, fused AdamW,
batch 4; the loss is read every 50 steps. 256 six-hourly states (1.27 GB of float32) are held
in RAM, as xarray loads a year's subset of ERA5 from Zarr; the per-level climatological mean
and standard deviation are float64 (xarray's reductions).

The Dataset normalizes each sample's three states with `(x - mean) / std` against the float64
statistics (so the result is float64), concatenates them with the static fields and the time
features, and returns float64 tensors; the DataLoader runs with its defaults (num_workers=0,
pin_memory=False) and the loop does `x.to(device).float()`. Per step: ~12 states normalized
and concatenated on the training thread and the batch collated (126 MB of float64) there (C1),
then copied from pageable memory (C6) before the forward pass can start.

--fix: both causes' advice: DataLoader(num_workers=N, one per free core (cc.fix_workers()),
pin_memory=True, persistent_workers=True) and `.to(device, non_blocking=True)`; the Dataset
(still float64), model, loss and optimizer unchanged.

Written blind for the november batch.
"""
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

import cc


def make_era5(T, C, H, W, seed=0):
    """Smooth, moving, level-dependent fields standing in for ERA5 (float32, as stored)."""
    rng = np.random.default_rng(seed)
    lat = np.linspace(-88.6, 88.6, H, dtype=np.float32)[:, None]
    lon = np.linspace(0, 358.6, W, dtype=np.float32)[None, :]
    base = rng.normal(0, 1, C).astype(np.float32) * 20 + 250
    amp = rng.uniform(2, 15, C).astype(np.float32)
    k = rng.integers(1, 6, C)
    state = np.empty((T, C, H, W), np.float32)
    merid = np.cos(np.deg2rad(lat)).astype(np.float32)[None]                      # [1, H, 1]
    clim = (base[:, None, None] + amp[:, None, None] * (merid * 2 - 1)
            + rng.standard_normal((C, H, W), dtype=np.float32) * 0.5)             # [C, H, W]
    speed = (1 + np.arange(C) % 3).astype(np.float32)[:, None, None]
    for t in range(T):
        wave = np.sin(np.deg2rad(lon)[None] * k[:, None, None] + np.float32(t * 0.13) * speed).astype(np.float32)
        np.add(clim, (amp[:, None, None] * 0.3) * merid * wave, out=state[t])
    return state


class ERA5Window(Dataset):
    """(t - 6 h, t) -> tendency to t + 6 h, normalized with the float64 climatology."""

    def __init__(self, state, mean, std, static, hours):
        self.state, self.mean, self.std, self.static, self.hours = state, mean, std, static, hours
        self.H, self.W = state.shape[2:]

    def __len__(self):
        return self.state.shape[0] - 2

    def __getitem__(self, i):
        prev = (self.state[i] - self.mean) / self.std
        cur = (self.state[i + 1] - self.mean) / self.std
        nxt = (self.state[i + 2] - self.mean) / self.std
        h = self.hours[i + 1]
        tf = np.empty((4, self.H, self.W))
        tf[0], tf[1] = math.sin(2 * math.pi * h / 24), math.cos(2 * math.pi * h / 24)
        tf[2], tf[3] = math.sin(2 * math.pi * h / 8766), math.cos(2 * math.pi * h / 8766)
        x = np.concatenate([prev, cur, self.static, tf])
        return torch.from_numpy(x), torch.from_numpy(nxt - cur)


class ClimaXViT(nn.Module):
    def __init__(self, c_in, c_out, H, W, p, d, depth, heads):
        super().__init__()
        self.p, self.c_out, self.H, self.W = p, c_out, H, W
        self.embed = nn.Conv2d(c_in, d, p, p)
        self.pos = nn.Parameter(torch.randn(1, (H // p) * (W // p), d) * 0.02)
        layer = nn.TransformerEncoderLayer(d, heads, 4 * d, dropout=0.0, activation="gelu", batch_first=True,
                                           norm_first=True)
        self.blocks = nn.TransformerEncoder(layer, depth, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, c_out * p * p)

    def forward(self, x):
        b = x.shape[0]
        t = self.embed(x).flatten(2).transpose(1, 2) + self.pos
        t = self.head(self.norm(self.blocks(t)))
        hp, wp, p = self.H // self.p, self.W // self.p, self.p
        return t.view(b, hp, wp, self.c_out, p, p).permute(0, 3, 1, 4, 2, 5).reshape(b, self.c_out, self.H, self.W)


def main():
    args = cc.parser(__doc__, warmup=3).parse_args()
    dev = cc.torch_device(args)
    gpu = dev.type == "cuda"
    if args.smoke:
        T, C, H, W, p, d, depth, heads, batch = 24, 6, 16, 32, 4, 64, 2, 4, 2
    else:
        T, C, H, W, p, d, depth, heads, batch = 256, 38, 128, 256, 4, 1024, 12, 16, 4
    state = make_era5(T, C, H, W)
    clim = state[::8]                                   # the climatology's sample of the record
    mean = clim.mean((0, 2, 3), dtype=np.float64)[:, None, None]
    std = clim.std((0, 2, 3), dtype=np.float64)[:, None, None]
    rng = np.random.default_rng(1)
    static = np.stack([(rng.random((H, W)) < 0.3).astype(np.float32),
                       rng.gamma(1.0, 0.5, (H, W)).astype(np.float32)])
    hours = np.arange(T) * 6
    ds = ERA5Window(state, mean, std, static, hours)
    c_in = 2 * C + 2 + 4
    if args.fix:
        loader = DataLoader(ds, batch_size=batch, shuffle=True, drop_last=True, num_workers=cc.fix_workers(),
                            pin_memory=gpu, persistent_workers=True)
    else:
        loader = DataLoader(ds, batch_size=batch, shuffle=True, drop_last=True)  # gpuwhy: plants C1 (num_workers=0: ~12 float64 normalizations and the 126 MB collate on the training thread each step)

    def batches():
        while True:
            yield from loader

    it = batches()
    torch.manual_seed(0)
    model = ClimaXViT(c_in, C, H, W, p, d, depth, heads).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=5e-4, weight_decay=1e-5, fused=gpu)
    lat = torch.linspace(-88.6, 88.6, H, device=dev)
    wlat = torch.cos(torch.deg2rad(lat))
    wlat = (wlat / wlat.mean()).view(1, 1, H, 1)
    amp = torch.autocast(dev.type, dtype=torch.bfloat16, enabled=gpu)
    log = {"acc": torch.zeros((), device=dev), "loss": None, "reads": 0}

    def step(i):
        x, y = next(it)
        if args.fix:
            x, y = x.to(dev, non_blocking=True).float(), y.to(dev, non_blocking=True).float()
        else:
            x, y = x.to(dev).float(), y.to(dev).float()  # gpuwhy: plants C6 (126 MB of float64 copied from pageable memory each step)
        with amp:
            pred = model(x)
        loss = ((pred.float() - y) ** 2 * wlat).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        log["acc"] += loss.detach()
        if i % 50 == 49:
            log["loss"] = log["acc"].item() / 50
            log["acc"].zero_()
            log["reads"] += 1

    cc.run("m_torch_era5_vit_float64_pageable", args, step, batch,
           extra=lambda: {"loader_workers": loader.num_workers, "pin_memory": loader.pin_memory,
                          "batch_mb": round(batch * (c_in + C) * H * W * 8 / 1e6, 1), "input_dtype": "float64",
                          "params_m": round(sum(q.numel() for q in model.parameters()) / 1e6, 1),
                          "loss": log["loss"], "loss_reads": log["reads"]})


if __name__ == "__main__":
    main()
