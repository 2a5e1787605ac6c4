"""Healthy control (PyTorch under torch.compile, a video transformer): action-recognition training
of a TimeSformer-Base (Bertasius et al.: divided space-time attention) in plain PyTorch on
Kinetics-style clips: 8 frames of 224 x 224 a clip, 16 x 16 patches (1,568 patch tokens and a
class token), 12 blocks of width 768 (12 heads) each running temporal attention (a patch
against the same patch in the other frames, then the temporal projection), spatial attention
(within each frame, with the class token) and a GELU MLP of 3,072, scaled_dot_product_attention
for both, 400 classes (121.6 M parameters, random weights); bf16 autocast, SGD with momentum
0.9, weight decay 1e-4 and a cosine schedule as TimeSformer's configuration trains it, label
smoothing 0.1, batch 8 clips drawn on the GPU from 256 synthetic uint8 clips held there
(moving and deforming shapes on textured backgrounds), a random horizontal flip and the
normalization done there; the loss stays on the device and is read every 50 steps.

The blocks run under torch.compile in its default mode, compiled the way PyTorch's regional
compilation recipe does for a stack of identical blocks (each block's compile(): Dynamo and
Inductor compile the block's forward and backward once, in the first warm-up iteration, and
every block reuses them); about 9.4 TFLOP a step (FlopCounterMode), ~25-35 ms of GPU work
against ~3-5 ms of host time: GPU-bound, nothing to fix. Its warm-up is Inductor's
compilation (~10-20 s the first time on a machine, its caches serve later runs).

--fix: nothing (control).

Written blind for the romeo batch.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

import cc


class Attention(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)

    def forward(self, x):
        b, n, d = x.shape
        q, k, v = self.qkv(x).view(b, n, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        return self.proj(F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(b, n, d))


class DividedBlock(nn.Module):
    """TimeSformer's block: temporal attention (+ temporal_fc), spatial attention with the
    class token, MLP; x is (B, 1 + T * P, D) with the patches ordered frame-major."""

    def __init__(self, d, heads, frames, patches):
        super().__init__()
        self.t, self.p = frames, patches
        self.temporal_norm1, self.temporal_attn = nn.LayerNorm(d), Attention(d, heads)
        self.temporal_fc = nn.Linear(d, d)
        self.norm1, self.attn = nn.LayerNorm(d), Attention(d, heads)
        self.norm2 = nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x):
        b, _, d = x.shape
        t, p = self.t, self.p
        cls, xs = x[:, :1], x[:, 1:]
        # temporal: each patch position over the t frames
        xt = xs.reshape(b, t, p, d).transpose(1, 2).reshape(b * p, t, d)
        res_t = self.temporal_attn(self.temporal_norm1(xt)).reshape(b, p, t, d).transpose(1, 2).reshape(b, t * p, d)
        xs = xs + self.temporal_fc(res_t)
        # spatial: each frame's patches with the class token
        sp = torch.cat([cls.repeat_interleave(t, 0), xs.reshape(b * t, p, d)], 1)
        res_s = self.attn(self.norm1(sp))
        cls = cls + res_s[:, :1].reshape(b, t, 1, d).mean(1)
        xs = xs + res_s[:, 1:].reshape(b, t * p, d)
        x = torch.cat([cls, xs], 1)
        return x + self.mlp(self.norm2(x))


class TimeSformer(nn.Module):
    def __init__(self, classes=400, d=768, depth=12, heads=12, frames=8, size=224, patch=16):
        super().__init__()
        self.frames, self.patches = frames, (size // patch) ** 2
        self.patch_embed = nn.Conv2d(3, d, patch, stride=patch)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, d))
        self.pos_embed = nn.Parameter(torch.randn(1, self.patches + 1, d) * 0.02)
        self.time_embed = nn.Parameter(torch.zeros(1, frames, d))
        self.blocks = nn.ModuleList(DividedBlock(d, heads, frames, self.patches) for _ in range(depth))
        self.norm, self.head = nn.LayerNorm(d), nn.Linear(d, classes)

    def forward(self, video):                                   # (B, 3, T, H, W)
        b, c, t, h, w = video.shape
        x = self.patch_embed(video.transpose(1, 2).reshape(b * t, c, h, w)).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls_token.expand(b * t, -1, -1), x], 1) + self.pos_embed
        cls = x[:b, :1]
        x = x[:, 1:].reshape(b, t, self.patches, -1) + self.time_embed[:, :, None]
        x = torch.cat([cls, x.reshape(b, t * self.patches, -1)], 1)
        for blk in self.blocks:
            x = blk(x)
        return self.head(self.norm(x)[:, 0])


def make_clips(n, frames, size, dev, seed=0):
    """n uint8 clips (n, 3, T, H, W): a textured background and three moving, pulsing ellipses."""
    g = torch.Generator(device=dev).manual_seed(seed)
    out = torch.empty(n, 3, frames, size, size, device=dev, dtype=torch.uint8)
    yy, xx = torch.meshgrid(torch.linspace(-1, 1, size, device=dev), torch.linspace(-1, 1, size, device=dev), indexing="ij")
    tt = torch.arange(frames, device=dev, dtype=torch.float32)
    for s in range(0, n, 16):
        m = min(16, n - s)
        bg = F.interpolate(torch.rand(m, 3, 14, 14, device=dev, generator=g), size=(size, size), mode="bicubic",
                           align_corners=False)[:, :, None]
        c0 = torch.rand(m, 3, 2, device=dev, generator=g) * 1.2 - 0.6
        v = (torch.rand(m, 3, 2, device=dev, generator=g) - 0.5) * 0.15
        cen = c0[:, :, None] + v[:, :, None] * tt[None, None, :, None]                 # (m, 3, T, 2)
        r = (0.15 + 0.2 * torch.rand(m, 3, 1, device=dev, generator=g)) * (1 + 0.1 * torch.sin(tt))[None, None]
        d2 = (yy - cen[..., 0, None, None]) ** 2 + (xx - cen[..., 1, None, None]) ** 2   # (m, 3, T, H, W)
        blob = torch.sigmoid((r[..., None, None] ** 2 - d2) * 60)
        col = torch.rand(m, 3, 3, device=dev, generator=g)                              # (m, shape, rgb)
        fg = torch.einsum("mkthw,mkc->mcthw", blob, col)
        a = blob.amax(1, keepdim=True)
        out[s:s + m] = ((bg * 0.6 * (1 - a) + fg.clamp(0, 1) * a) * 255).to(torch.uint8)
    return out


def main():
    args = cc.parser(__doc__, warmup=5).parse_args()
    dev = cc.torch_device(args)
    gpu = dev.type == "cuda"
    if args.smoke:
        d, depth, heads, frames, size, batch, n_clips, classes = 64, 2, 4, 4, 64, 2, 8, 10
    else:
        d, depth, heads, frames, size, batch, n_clips, classes = 768, 12, 12, 8, 224, 8, 256, 400
    clips = make_clips(n_clips, frames, size, dev)
    labels = torch.randint(0, classes, (n_clips,), device=dev, generator=torch.Generator(device=dev).manual_seed(1))
    mean = torch.tensor([0.45, 0.45, 0.45], device=dev).view(1, 3, 1, 1, 1) * 255
    std = torch.tensor([0.225, 0.225, 0.225], device=dev).view(1, 3, 1, 1, 1) * 255
    torch.manual_seed(0)
    model = TimeSformer(classes, d, depth, heads, frames, size).to(dev).train()
    params = sum(p.numel() for p in model.parameters())
    for blk in model.blocks:
        blk.compile()                        # torch.compile, default mode, one block at a time
    opt = torch.optim.SGD(model.parameters(), lr=0.005, momentum=0.9, weight_decay=1e-4, foreach=gpu)
    total = 100_000
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 0.5 * (1 + math.cos(math.pi * min(s, total) / total)))
    amp = torch.autocast(dev.type, dtype=torch.bfloat16, enabled=gpu)
    g = torch.Generator(device=dev).manual_seed(2)
    st = {"acc": torch.zeros((), device=dev), "loss": None, "reads": 0}

    def step(i):
        idx = torch.randint(0, n_clips, (batch,), device=dev, generator=g)
        x = clips[idx].float()
        flip = torch.rand(batch, 1, 1, 1, 1, device=dev, generator=g) < 0.5
        x = torch.where(flip, x.flip(-1), x)
        x = (x - mean) / std
        with amp:
            logits = model(x)
        loss = F.cross_entropy(logits.float(), labels[idx], label_smoothing=0.1)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        st["acc"] += loss.detach()
        if i % 50 == 49:
            st["loss"] = st["acc"].item() / 50
            st["acc"].zero_()
            st["reads"] += 1

    cc.run("h_torch_timesformer_compile_bf16", args, step, batch,
           extra=lambda: {"params_m": round(params / 1e6, 1), "frames": frames, "tokens_per_clip": frames * (size // 16) ** 2 + 1,
                          "loss": st["loss"], "loss_reads": st["reads"]})


if __name__ == "__main__":
    main()
