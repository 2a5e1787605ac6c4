"""C4 launch-bound (an EMA of the weights updated one tensor at a time): a DDPM-style
diffusion model, a UNet for 32 x 32 images (base width 64, channel multipliers 1/2/2/2, two
residual blocks per level with GroupNorm, SiLU, 3x3 convolutions and a projection of the
sinusoidal time embedding, self-attention at 16 x 16 and in the middle, nearest-upsampling
decoder with skip connections; 328 parameter tensors, 9 M weights), trained to predict the
noise (linear beta schedule, 1000 steps, MSE) with bf16 autocast and fused AdamW at batch
128 on images made once on the GPU. After every optimizer step the EMA copy of the model is
updated the way many diffusion training scripts write it:

    for p_ema, p in zip(ema.parameters(), model.parameters()):
        p_ema.mul_(decay).add_(p.detach(), alpha=1 - decay)

two small kernels per tensor, 656 launches a step from a Python loop, on a step whose own
forward and backward launch about as fast as the GPU runs them: the host falls behind and
the GPU waits for launches.

--fix: gpuwhy's C4 advice (use foreach/fused multi-tensor ops instead of per-parameter
loops): the same EMA as one torch._foreach_lerp_(ema_params, params, 1 - decay) over the
two parameter lists (a few multi-tensor kernels); model, data and optimizer unchanged.
--alt: C4's first remedy instead: the model's forward and backward under
torch.compile(mode="reduce-overhead") (CUDA graphs), the Python EMA loop left in place.
"""
import copy
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

import cc


def timestep_embedding(t, dim):
    half = dim // 2
    freqs = torch.exp(-math.log(10000) * torch.arange(half, device=t.device, dtype=torch.float32) / half)
    ang = t.float()[:, None] * freqs[None]
    return torch.cat([ang.sin(), ang.cos()], dim=1)


class ResBlock(nn.Module):
    def __init__(self, cin, cout, tdim, dropout=0.1):
        super().__init__()
        self.norm1 = nn.GroupNorm(32, cin)
        self.conv1 = nn.Conv2d(cin, cout, 3, padding=1)
        self.temb = nn.Linear(tdim, cout)
        self.norm2 = nn.GroupNorm(32, cout)
        self.drop = nn.Dropout(dropout)
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1)
        self.skip = nn.Conv2d(cin, cout, 1) if cin != cout else nn.Identity()

    def forward(self, x, temb):
        h = self.conv1(F.silu(self.norm1(x)))
        h = h + self.temb(F.silu(temb))[:, :, None, None]
        h = self.conv2(self.drop(F.silu(self.norm2(h))))
        return self.skip(x) + h


class Attention(nn.Module):
    def __init__(self, ch):
        super().__init__()
        self.norm = nn.GroupNorm(32, ch)
        self.q, self.k, self.v = nn.Conv2d(ch, ch, 1), nn.Conv2d(ch, ch, 1), nn.Conv2d(ch, ch, 1)
        self.proj = nn.Conv2d(ch, ch, 1)

    def forward(self, x):
        b, c, hh, ww = x.shape
        h = self.norm(x)
        q, k, v = (m(h).flatten(2).transpose(1, 2).unsqueeze(1) for m in (self.q, self.k, self.v))
        y = F.scaled_dot_product_attention(q, k, v).squeeze(1).transpose(1, 2).reshape(b, c, hh, ww)
        return x + self.proj(y)


class UNet(nn.Module):
    def __init__(self, ch=64, mults=(1, 2, 2, 2), blocks=2, attn_res=(16,), res=32):
        super().__init__()
        self.ch = ch
        tdim = 4 * ch
        self.temb = nn.Sequential(nn.Linear(ch, tdim), nn.SiLU(), nn.Linear(tdim, tdim))
        self.conv_in = nn.Conv2d(3, ch, 3, padding=1)
        self.down = nn.ModuleList()
        chans, c, r = [ch], ch, res
        for lvl, m in enumerate(mults):
            for _ in range(blocks):
                self.down.append(ResBlock(c, ch * m, tdim))
                c = ch * m
                if r in attn_res:
                    self.down.append(Attention(c))
                chans.append(c)
            if lvl != len(mults) - 1:
                self.down.append(nn.Conv2d(c, c, 3, stride=2, padding=1))
                chans.append(c)
                r //= 2
        self.mid = nn.ModuleList([ResBlock(c, c, tdim), Attention(c), ResBlock(c, c, tdim)])
        self.up = nn.ModuleList()
        for lvl, m in reversed(list(enumerate(mults))):
            for _ in range(blocks + 1):
                self.up.append(ResBlock(c + chans.pop(), ch * m, tdim))
                c = ch * m
                if r in attn_res:
                    self.up.append(Attention(c))
            if lvl != 0:
                self.up.append(nn.Upsample(scale_factor=2, mode="nearest"))
                self.up.append(nn.Conv2d(c, c, 3, padding=1))
                r *= 2
        self.norm_out = nn.GroupNorm(32, c)
        self.conv_out = nn.Conv2d(c, 3, 3, padding=1)

    def forward(self, x, t):
        temb = self.temb(timestep_embedding(t, self.ch))
        h = self.conv_in(x)
        hs = [h]
        for m in self.down:
            if isinstance(m, ResBlock):
                h = m(h, temb)
                hs.append(h)
            elif isinstance(m, Attention):
                h = m(h)
                hs[-1] = h
            else:  # downsampling convolution
                h = m(h)
                hs.append(h)
        for m in self.mid:
            h = m(h, temb) if isinstance(m, ResBlock) else m(h)
        for m in self.up:
            if isinstance(m, ResBlock):
                h = m(torch.cat([h, hs.pop()], dim=1), temb)
            else:
                h = m(h)
        return self.conv_out(F.silu(self.norm_out(h)))


def main():
    args = cc.parser(__doc__).parse_args()
    dev = cc.torch_device(args)
    batch, res, ch = (4, 16, 32) if args.smoke else (128, 32, 64)
    model = UNet(ch=ch, res=res, attn_res=(res // 2,)).to(dev)
    ema = copy.deepcopy(model).requires_grad_(False)
    params = list(model.parameters())
    ema_params = list(ema.parameters())
    opt = torch.optim.AdamW(params, lr=2e-4, weight_decay=0.0, fused=dev.type == "cuda")
    betas = torch.linspace(1e-4, 0.02, 1000, device=dev)
    alpha_bar = torch.cumprod(1 - betas, dim=0)
    g = torch.Generator(device=dev).manual_seed(0)
    images = torch.rand(16, batch, 3, res, res, device=dev, generator=g) * 2 - 1

    def update_ema(i):
        decay = min(0.9999, (1 + i) / (10 + i))
        with torch.no_grad():
            if args.fix:
                torch._foreach_lerp_(ema_params, params, 1 - decay)
            else:
                for p_ema, p in zip(ema_params, params):
                    p_ema.mul_(decay).add_(p.detach(), alpha=1 - decay)  # gpuwhy: plants C4 (two kernels per tensor, Python loop)

    fwd = torch.compile(model, mode=cc.alt_setup(args, "reduce-overhead", 10)) if args.alt else model

    def step(i):
        x0 = images[i % len(images)]
        t = torch.randint(0, 1000, (batch,), device=dev, generator=g)
        noise = torch.randn(x0.shape, device=dev, generator=g)
        ab = alpha_bar[t].view(-1, 1, 1, 1)
        xt = ab.sqrt() * x0 + (1 - ab).sqrt() * noise
        with torch.autocast(dev.type, dtype=torch.bfloat16):
            pred = fwd(xt, t)
        loss = F.mse_loss(pred.float(), noise)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        update_ema(i)

    cc.run("c4_torch_unet_ema_loop", args, step, batch,
           extra={"param_tensors": len(params), "ema": "foreach_lerp" if args.fix else "python loop",
                  "params_m": round(sum(p.numel() for p in params) / 1e6, 1)})


if __name__ == "__main__":
    main()
