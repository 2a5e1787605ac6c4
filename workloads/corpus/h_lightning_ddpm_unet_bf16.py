"""Healthy control: DDPM training (Ho et al. 2020) of a U-Net denoiser as a LightningModule on
64 x 64 images, configured well: the DDPM / improved-DDPM U-Net (base width 128, multipliers
1, 2, 3, 4, two residual blocks a level with GroupNorm(32), SiLU, dropout 0.1 and a sinusoidal
time embedding, self-attention at 16 x 16 and 8 x 8; 88 M parameters), epsilon-prediction MSE
at a uniformly drawn timestep of a linear 1,000-step beta schedule, AdamW 2e-4 with warm-up,
gradient clipping 1.0, Trainer(precision="bf16-mixed"), channels_last, batch 64. The images
are 4,096 synthetic 72 x 72 RGB uint8 pictures held in RAM; random 64 x 64 crops and flips are
made in 4 DataLoader workers (pinned, persistent, prefetch 4: ~20 us an image), scaled to
[-1, 1] and noised on the GPU; the loss is read every 50 steps. About 11.6 TFLOP a step
(FlopCounterMode on the meta device): cuDNN convolutions, attention, and GroupNorm/SiLU
passes over large activations; GPU-bound, nothing to fix (memory-bound normalization kernels
are part of the work here).

Written blind for the lima batch.
"""
import math

import lightning as L
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

import cc


def timestep_embedding(t, dim):
    half = dim // 2
    freqs = torch.exp(-math.log(10_000) * torch.arange(half, device=t.device, dtype=torch.float32) / half)
    a = t.float()[:, None] * freqs[None]
    return torch.cat([torch.cos(a), torch.sin(a)], 1)


class ResBlock(nn.Module):
    def __init__(self, cin, cout, tdim, dropout):
        super().__init__()
        self.n1, self.c1 = nn.GroupNorm(32, cin), nn.Conv2d(cin, cout, 3, padding=1)
        self.t = nn.Linear(tdim, cout)
        self.n2, self.c2 = nn.GroupNorm(32, cout), nn.Conv2d(cout, cout, 3, padding=1)
        self.drop = nn.Dropout(dropout)
        self.skip = nn.Conv2d(cin, cout, 1) if cin != cout else nn.Identity()

    def forward(self, x, temb):
        h = self.c1(F.silu(self.n1(x)))
        h = h + self.t(F.silu(temb))[:, :, None, None]
        h = self.c2(self.drop(F.silu(self.n2(h))))
        return self.skip(x) + h


class Attn(nn.Module):
    def __init__(self, c, heads=4):
        super().__init__()
        self.norm, self.qkv, self.proj, self.heads = nn.GroupNorm(32, c), nn.Conv2d(c, 3 * c, 1), nn.Conv2d(c, c, 1), heads

    def forward(self, x):
        b, c, h, w = x.shape
        q, k, v = self.qkv(self.norm(x)).reshape(b, 3, self.heads, c // self.heads, h * w).unbind(1)
        o = F.scaled_dot_product_attention(q.transpose(-1, -2), k.transpose(-1, -2), v.transpose(-1, -2))
        return x + self.proj(o.transpose(-1, -2).reshape(b, c, h, w))


class UNet(nn.Module):
    def __init__(self, ch=128, mults=(1, 2, 3, 4), blocks=2, attn_res=(16, 8), res=64, dropout=0.1):
        super().__init__()
        tdim = 4 * ch
        self.ch = ch
        self.temb = nn.Sequential(nn.Linear(ch, tdim), nn.SiLU(), nn.Linear(tdim, tdim))
        self.inp = nn.Conv2d(3, ch, 3, padding=1)
        self.down, chans, c, r = nn.ModuleList(), [ch], ch, res
        for i, m in enumerate(mults):
            for _ in range(blocks):
                self.down.append(nn.ModuleList([ResBlock(c, ch * m, tdim, dropout)] + ([Attn(ch * m)] if r in attn_res else [])))
                c = ch * m
                chans.append(c)
            if i < len(mults) - 1:
                self.down.append(nn.ModuleList([nn.Conv2d(c, c, 3, stride=2, padding=1)]))
                chans.append(c)
                r //= 2
        self.mid = nn.ModuleList([ResBlock(c, c, tdim, dropout), Attn(c), ResBlock(c, c, tdim, dropout)])
        self.up = nn.ModuleList()
        for i, m in reversed(list(enumerate(mults))):
            for _ in range(blocks + 1):
                self.up.append(nn.ModuleList([ResBlock(c + chans.pop(), ch * m, tdim, dropout)] + ([Attn(ch * m)] if r in attn_res else [])))
                c = ch * m
            if i > 0:
                self.up.append(nn.ModuleList([nn.Upsample(scale_factor=2, mode="nearest"), nn.Conv2d(c, c, 3, padding=1)]))
                r *= 2
        self.out = nn.Sequential(nn.GroupNorm(32, c), nn.SiLU(), nn.Conv2d(c, 3, 3, padding=1))

    def forward(self, x, t):
        temb = self.temb(timestep_embedding(t, self.ch))
        h = self.inp(x)
        hs = [h]
        for mods in self.down:
            if isinstance(mods[0], ResBlock):
                h = mods[0](h, temb)
                for a in mods[1:]:
                    h = a(h)
            else:
                h = mods[0](h)
            hs.append(h)
        h = self.mid[2](self.mid[1](self.mid[0](h, temb)), temb)
        for mods in self.up:
            if isinstance(mods[0], ResBlock):
                h = mods[0](torch.cat([h, hs.pop()], 1), temb)
                for a in mods[1:]:
                    h = a(h)
            else:
                h = mods[1](mods[0](h))
        return self.out(h)


class Pictures(Dataset):
    def __init__(self, imgs, crop, n=10_000_000):
        self.imgs, self.crop, self.n = imgs, crop, n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        r = np.random.default_rng(i)
        img = self.imgs[i % len(self.imgs)]
        y0, x0 = r.integers(0, img.shape[1] - self.crop + 1, 2)
        img = img[:, y0:y0 + self.crop, x0:x0 + self.crop]
        if r.random() < 0.5:
            img = img[:, :, ::-1]
        return torch.from_numpy(np.ascontiguousarray(img))


class DDPM(L.LightningModule):
    def __init__(self, unet_kw, T=1000):
        super().__init__()
        self.unet = UNet(**unet_kw).to(memory_format=torch.channels_last)
        betas = torch.linspace(1e-4, 0.02, T, dtype=torch.float64)
        abar = torch.cumprod(1 - betas, 0)
        self.register_buffer("sqrt_abar", abar.sqrt().float(), persistent=False)
        self.register_buffer("sqrt_1m_abar", (1 - abar).sqrt().float(), persistent=False)
        self.T = T
        self.acc, self.loss_value, self.reads = None, None, 0

    def training_step(self, x, batch_idx):
        x0 = (x.float() / 127.5 - 1.0).contiguous(memory_format=torch.channels_last)
        t = torch.randint(0, self.T, (x0.shape[0],), device=x0.device)
        eps = torch.randn_like(x0)
        xt = self.sqrt_abar[t][:, None, None, None] * x0 + self.sqrt_1m_abar[t][:, None, None, None] * eps
        loss = F.mse_loss(self.unet(xt, t).float(), eps)
        self.acc = loss.detach() if self.acc is None else self.acc + loss.detach()
        if (batch_idx + 1) % 50 == 0:
            self.loss_value = self.acc.item() / 50
            self.acc = None
            self.reads += 1
        return loss

    def configure_optimizers(self):
        opt = torch.optim.AdamW(self.parameters(), lr=2e-4, weight_decay=0.0, fused=self.device.type == "cuda")
        sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 5000))
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step"}}


def main():
    args = cc.parser(__doc__, warmup=5).parse_args()
    gpu = args.device == "cuda"
    if args.smoke:
        n_img, src, res, batch, unet_kw = 32, 20, 16, 4, dict(ch=32, mults=(1, 2), blocks=1, attn_res=(8,), res=16)
    else:
        n_img, src, res, batch, unet_kw = 4096, 72, 64, 64, dict(ch=128, mults=(1, 2, 3, 4), blocks=2, attn_res=(16, 8), res=64)
    rng = np.random.default_rng(0)
    low = rng.integers(0, 256, (n_img, 3, (src + 7) // 8, (src + 7) // 8)).astype(np.float32)
    imgs = np.clip(np.kron(low, np.ones((1, 1, 8, 8), np.float32))[:, :, :src, :src]
                   + rng.normal(0, 12, (n_img, 3, src, src)), 0, 255).astype(np.uint8)      # pictures in RAM
    loader = DataLoader(Pictures(imgs, res), batch_size=batch, shuffle=False, num_workers=4, pin_memory=gpu,
                        persistent_workers=True, prefetch_factor=4, drop_last=True)
    torch.manual_seed(0)
    torch.backends.cudnn.benchmark = gpu
    model = DDPM(unet_kw)
    timer = cc.lightning_timer("h_lightning_ddpm_unet_bf16", args, batch,
                               extra=lambda: {"precision": trainer.precision, "loss": model.loss_value,
                                              "loss_reads": model.reads,
                                              "params_m": round(sum(p.numel() for p in model.parameters()) / 1e6, 1)})
    trainer = cc.lightning_trainer(args, [timer], precision="bf16-mixed" if gpu else "32-true", gradient_clip_val=1.0)
    trainer.fit(model, loader)


if __name__ == "__main__":
    main()
