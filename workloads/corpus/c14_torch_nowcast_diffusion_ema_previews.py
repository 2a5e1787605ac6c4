"""C14 a periodic GPU-heavy phase (forecast previews from the EMA model every 10 steps):
precipitation nowcasting with a conditional denoising diffusion model in plain PyTorch, in the
way radar-nowcasting diffusion repositories train one: the next 128 x 128 radar frame (1 km
pixels, log-rain-rate scaled to [-1, 1]) is generated from the last four, an ADM-style UNet
(base width 64, multipliers 1/2/3/4 over 128, 64, 32 and 16 pixels, two residual blocks a
level with GroupNorm, SiLU and the time embedding's scale and shift, self-attention at
16 x 16 and in the middle; 5 input channels: the four past frames and the noisy next one;
22.3 M parameters, random weights) predicting the noise of a 1,000-step cosine schedule, MSE,
bf16 autocast, fused AdamW (lr 2e-4), an EMA of the weights (0.999, torch._foreach_lerp_),
batch 32 sequences drawn on the GPU from 2,048 synthetic radar sequences of advected and
growing rain cells made there at start; the loss stays on the device and is read every 50
steps.

Every 10 steps (preview_every, left from the first runs on a laptop where it was useful) the
loop calls make_previews(): the EMA model forecasts the next frame of 32 fixed held-out
sequences with 25 DDIM steps (eta 0) under torch.no_grad, the forecasts are copied to the
host with .cpu() and coloured into a uint8 panel with the radar colour table (the image a
tracker would log). Training waits for it: 25 forward passes at batch 32, about 40-50% of
the wall time.

--fix: gpuwhy's C14 advice (do the periodic work less often): preview_every 1,000 instead of
10 (the step-0 preview kept, in the warm-up); model, data, loss, optimizer, EMA and the
sampler unchanged.

Written blind for the romeo batch.
"""
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

import cc


def timestep_embedding(t, dim):
    half = dim // 2
    freqs = torch.exp(-math.log(10000.0) * torch.arange(half, device=t.device, dtype=torch.float32) / half)
    a = t.float()[:, None] * freqs[None]
    return torch.cat([torch.cos(a), torch.sin(a)], -1)


class ResBlock(nn.Module):
    def __init__(self, cin, cout, tdim):
        super().__init__()
        self.n1, self.c1 = nn.GroupNorm(32, cin), nn.Conv2d(cin, cout, 3, padding=1)
        self.emb = nn.Linear(tdim, 2 * cout)
        self.n2, self.c2 = nn.GroupNorm(32, cout), nn.Conv2d(cout, cout, 3, padding=1)
        nn.init.zeros_(self.c2.weight)
        nn.init.zeros_(self.c2.bias)
        self.skip = nn.Conv2d(cin, cout, 1) if cin != cout else nn.Identity()

    def forward(self, x, temb):
        h = self.c1(F.silu(self.n1(x)))
        scale, shift = self.emb(F.silu(temb))[:, :, None, None].chunk(2, 1)
        h = self.n2(h) * (1 + scale) + shift                      # ADM's scale-shift norm
        return self.skip(x) + self.c2(F.silu(h))


class Attention(nn.Module):
    def __init__(self, c, heads=4):
        super().__init__()
        self.heads = heads
        self.norm, self.qkv, self.proj = nn.GroupNorm(32, c), nn.Conv2d(c, 3 * c, 1), nn.Conv2d(c, c, 1)

    def forward(self, x, temb=None):
        b, c, h, w = x.shape
        q, k, v = self.qkv(self.norm(x)).reshape(b, 3, self.heads, c // self.heads, h * w).transpose(-1, -2).unbind(1)
        a = F.scaled_dot_product_attention(q, k, v)
        return x + self.proj(a.transpose(-1, -2).reshape(b, c, h, w))


class UNet(nn.Module):
    def __init__(self, cin=5, cout=1, base=64, mults=(1, 2, 3, 4), nres=2, attn_res=(16,), size=128):
        super().__init__()
        tdim = base * 4
        self.base = base
        self.temb = nn.Sequential(nn.Linear(base, tdim), nn.SiLU(), nn.Linear(tdim, tdim))
        self.inp = nn.Conv2d(cin, base, 3, padding=1)
        self.down, chans, c, res = nn.ModuleList(), [base], base, size
        for i, m in enumerate(mults):
            for _ in range(nres):
                blk = nn.ModuleList([ResBlock(c, base * m, tdim)])
                c = base * m
                if res in attn_res:
                    blk.append(Attention(c))
                self.down.append(blk)
                chans.append(c)
            if i < len(mults) - 1:
                self.down.append(nn.ModuleList([nn.Conv2d(c, c, 3, stride=2, padding=1)]))
                chans.append(c)
                res //= 2
        self.mid = nn.ModuleList([ResBlock(c, c, tdim), Attention(c), ResBlock(c, c, tdim)])
        self.up = nn.ModuleList()
        for i, m in reversed(list(enumerate(mults))):
            for _ in range(nres + 1):
                blk = nn.ModuleList([ResBlock(c + chans.pop(), base * m, tdim)])
                c = base * m
                if res in attn_res:
                    blk.append(Attention(c))
                self.up.append(blk)
            if i > 0:
                self.up.append(nn.ModuleList([nn.Upsample(scale_factor=2, mode="nearest"), nn.Conv2d(c, c, 3, padding=1)]))
                res *= 2
        self.out = nn.Sequential(nn.GroupNorm(32, c), nn.SiLU(), nn.Conv2d(c, cout, 3, padding=1))

    @staticmethod
    def run_block(blk, h, temb):
        for layer in blk:
            h = layer(h, temb) if isinstance(layer, (ResBlock, Attention)) else layer(h)
        return h

    def forward(self, x, t):
        temb = self.temb(timestep_embedding(t, self.base))
        h = self.inp(x)
        hs = [h]
        for blk in self.down:
            h = self.run_block(blk, h, temb)
            hs.append(h)
        for layer in self.mid:
            h = layer(h, temb)
        for blk in self.up:
            if isinstance(blk[0], ResBlock):
                h = torch.cat([h, hs.pop()], 1)
            h = self.run_block(blk, h, temb)
        return self.out(h)


def cosine_alphas_cumprod(steps):
    s = 0.008
    x = torch.linspace(0, steps, steps + 1, dtype=torch.float64)
    f = torch.cos(((x / steps) + s) / (1 + s) * math.pi / 2) ** 2
    ab = f / f[0]
    betas = (1 - ab[1:] / ab[:-1]).clamp(max=0.999)
    return torch.cumprod(1 - betas, 0).float()


def make_radar(n, frames, size, dev, seed=0):
    """n sequences of `frames` radar frames: 6 Gaussian rain cells a sequence advected by one
    velocity, each growing or decaying, log-scaled to [-1, 1]; bf16 on the device."""
    g = torch.Generator(device=dev).manual_seed(seed)
    out = torch.empty(n, frames, size, size, device=dev, dtype=torch.bfloat16)
    yy, xx = torch.meshgrid(torch.arange(size, device=dev, dtype=torch.float32),
                            torch.arange(size, device=dev, dtype=torch.float32), indexing="ij")
    k = 6
    tt = torch.arange(frames, device=dev, dtype=torch.float32)
    for s in range(0, n, 64):
        m = min(64, n - s)
        r = lambda *shape: torch.rand(*shape, device=dev, generator=g)       # noqa: E731
        c0 = r(m, 1, k, 2) * size
        vel = (r(m, 1, 1, 2) - 0.5) * 6.0                                   # pixels a frame
        cen = c0 + vel * tt[None, :, None, None]                             # (m, T, k, 2)
        sig = 4 + 12 * r(m, 1, k)
        inten = (0.5 + 2.5 * r(m, 1, k)) * (1 + (r(m, 1, k) - 0.5) * 0.3 * tt[None, :, None])
        d2 = (yy[None, None, None] - cen[..., 0, None, None]) ** 2 + (xx[None, None, None] - cen[..., 1, None, None]) ** 2
        rain = (inten[..., None, None] * torch.exp(-d2 / (2 * sig[..., None, None] ** 2))).sum(2)
        out[s:s + m] = (torch.log1p(rain * 8) / math.log1p(24) * 2 - 1).clamp(-1, 1).to(torch.bfloat16)
    return out


def radar_lut():
    """The radar colour table (dBZ steps), 256 entries of RGB."""
    stops = np.array([[255, 255, 255], [4, 233, 231], [1, 159, 244], [3, 0, 244], [2, 253, 2], [1, 197, 1],
                      [0, 142, 0], [253, 248, 2], [229, 188, 0], [253, 149, 0], [253, 0, 0], [212, 0, 0],
                      [188, 0, 0], [248, 0, 253], [152, 84, 198]], np.float32)
    pos = np.linspace(0, 255, len(stops))
    return np.stack([np.interp(np.arange(256), pos, stops[:, c]) for c in range(3)], 1).astype(np.uint8)


def main():
    args = cc.parser(__doc__, warmup=5).parse_args()
    dev = cc.torch_device(args)
    gpu = dev.type == "cuda"
    if args.smoke:
        size, base, mults, n_seq, batch, n_prev, ddim_steps, every = 32, 32, (1, 2), 64, 4, 4, 3, 3
        attn_res = (16,)
    else:
        size, base, mults, n_seq, batch, n_prev, ddim_steps, every = 128, 64, (1, 2, 3, 4), 2048, 32, 32, 25, 10
        attn_res = (16,)
    if args.fix:
        every = 1000                       # the advice: periodic work less often (never in the timed part)
    past, T = 4, 1000
    data = make_radar(n_seq, past + 1, size, dev, seed=0)
    held_out = make_radar(n_prev, past + 1, size, dev, seed=1)
    ab = cosine_alphas_cumprod(T).to(dev)
    torch.manual_seed(0)
    model = UNet(cin=past + 1, cout=1, base=base, mults=mults, attn_res=attn_res, size=size).to(dev).train()
    ema = UNet(cin=past + 1, cout=1, base=base, mults=mults, attn_res=attn_res, size=size).to(dev).eval()
    ema.load_state_dict(model.state_dict())
    ema.requires_grad_(False)
    params = sum(p.numel() for p in model.parameters())
    p_model, p_ema = list(model.parameters()), list(ema.parameters())
    opt = torch.optim.AdamW(model.parameters(), lr=2e-4, weight_decay=0.0, fused=gpu)
    amp = torch.autocast(dev.type, dtype=torch.bfloat16, enabled=gpu)
    g = torch.Generator(device=dev).manual_seed(2)
    lut = radar_lut()
    st = {"acc": torch.zeros((), device=dev), "loss": None, "reads": 0, "panels": [], "n_prev": 0}

    @torch.no_grad()
    def make_previews(net, seqs, steps):
        """DDIM (eta 0) forecasts of the next frame of each held-out sequence, coloured."""
        cond = seqs[:, :past].float()
        x = torch.randn(seqs.shape[0], 1, size, size, device=dev, generator=g)
        ts = [int(v) for v in np.linspace(T - 1, 0, steps).round()]
        for j, t in enumerate(ts):
            a_t = ab[t]
            a_prev = ab[ts[j + 1]] if j + 1 < len(ts) else torch.ones((), device=dev)
            with amp:
                eps = net(torch.cat([cond, x], 1), torch.full((x.shape[0],), t, device=dev)).float()
            x0 = ((x - (1 - a_t).sqrt() * eps) / a_t.sqrt()).clamp(-1, 1)
            x = a_prev.sqrt() * x0 + (1 - a_prev).sqrt() * eps
        frames = torch.cat([seqs[:, past - 1:past].float(), x, seqs[:, past:].float()], 1)   # last, forecast, truth
        host = frames.cpu().numpy()
        idx = ((np.clip(host, -1, 1) + 1) * 127.5).astype(np.uint8)
        return lut[idx.transpose(0, 2, 1, 3).reshape(-1, 3 * size)]     # one row of three images a sequence

    def step(i):
        idx = torch.randint(0, n_seq, (batch,), device=dev, generator=g)
        seq = data[idx].float()
        cond, x0 = seq[:, :past], seq[:, past:]
        t = torch.randint(0, T, (batch,), device=dev, generator=g)
        noise = torch.randn(x0.shape, device=dev, generator=g)
        a = ab[t][:, None, None, None]
        xt = a.sqrt() * x0 + (1 - a).sqrt() * noise
        with amp:
            pred = model(torch.cat([cond, xt], 1), t)
        loss = F.mse_loss(pred.float(), noise)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        torch._foreach_lerp_(p_ema, p_model, 1 - 0.999)
        st["acc"] += loss.detach()
        if i % 50 == 49:
            st["loss"] = st["acc"].item() / 50
            st["acc"].zero_()
            st["reads"] += 1
        if i % every == 0:
            panel = make_previews(ema, held_out, ddim_steps)  # gpuwhy: plants C14 (32 forecasts by 25 DDIM steps of the EMA UNet, copied to the host, every 10 training steps; training waits)
            st["panels"] = (st["panels"] + [panel])[-4:]        # what a tracker would upload
            st["n_prev"] += 1

    cc.run("c14_torch_nowcast_diffusion_ema_previews", args, step, batch,
           extra=lambda: {"preview_every": every, "ddim_steps": ddim_steps, "preview_sequences": n_prev,
                          "previews": st["n_prev"], "params_m": round(params / 1e6, 1), "loss": st["loss"],
                          "loss_reads": st["reads"]})


if __name__ == "__main__":
    main()
