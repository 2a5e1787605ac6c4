"""C14 periodic stall (sample grids written as PNG files on the training thread): a
convolutional VAE for 64 x 64 RGB images (a ResNet encoder 128-256-256-512 channels down
to an 8 x 8 x 4 latent and the mirrored decoder with nearest upsampling, GroupNorm and SiLU;
34 M parameters; MSE reconstruction plus a KL term), bf16 autocast, fused AdamW, batch 64
of smooth synthetic images made once on the GPU and cycled. Every 20 steps the loop saves
what it has learned so far, as image-generation training scripts do: in eval mode it
reconstructs a fixed preview batch of 64 images and decodes 64 fixed latents, then on the
training thread builds the grids (torchvision.utils.make_grid), copies them to the CPU as
uint8 and writes them with PIL under GW_CORPUS_CACHE (/tmp/gw_corpus/c14_vae_samples/
step_N/): a 16 x 8 grid of inputs and reconstructions, an 8 x 8 grid of samples, and the
first 16 samples one file each, enlarged to 256 x 256, for a gallery. PNG compression is
CPU work of a few hundred ms each time, during which the GPU has nothing queued.

--fix: gpuwhy's C14 advice (write less often): the same samples and files every 500 steps
instead of 20, which is never inside the measured window; model and loop unchanged.
"""
import os
import shutil

import torch
import torch.nn as nn
import torch.nn.functional as F
from PIL import Image

import cc

try:
    from torchvision.utils import make_grid
except ImportError:  # torchvision's layout: nrow images a row, 2 px padding
    def make_grid(x, nrow=8, padding=2, pad_value=0.0):
        n, c, h, w = x.shape
        rows = (n + nrow - 1) // nrow
        grid = x.new_full((c, rows * (h + padding) + padding, nrow * (w + padding) + padding), pad_value)
        for k in range(n):
            r, q = divmod(k, nrow)
            grid[:, padding + r * (h + padding):padding + r * (h + padding) + h,
                 padding + q * (w + padding):padding + q * (w + padding) + w] = x[k]
        return grid


class ResBlock(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.n1, self.c1 = nn.GroupNorm(32, cin), nn.Conv2d(cin, cout, 3, padding=1)
        self.n2, self.c2 = nn.GroupNorm(32, cout), nn.Conv2d(cout, cout, 3, padding=1)
        self.skip = nn.Conv2d(cin, cout, 1) if cin != cout else nn.Identity()

    def forward(self, x):
        h = self.c1(F.silu(self.n1(x)))
        return self.skip(x) + self.c2(F.silu(self.n2(h)))


class VAE(nn.Module):
    def __init__(self, chans=(128, 256, 256, 512), z=4):
        super().__init__()
        enc = [nn.Conv2d(3, chans[0], 3, padding=1)]
        c = chans[0]
        for k, co in enumerate(chans):
            enc += [ResBlock(c, co), ResBlock(co, co)]
            c = co
            if k < len(chans) - 1:
                enc.append(nn.Conv2d(c, c, 3, stride=2, padding=1))
        enc += [nn.GroupNorm(32, c), nn.SiLU(), nn.Conv2d(c, 2 * z, 3, padding=1)]
        self.enc = nn.Sequential(*enc)
        dec = [nn.Conv2d(z, c, 3, padding=1)]
        for k, co in enumerate(reversed(chans)):
            dec += [ResBlock(c, co), ResBlock(co, co)]
            c = co
            if k < len(chans) - 1:
                dec += [nn.Upsample(scale_factor=2, mode="nearest"), nn.Conv2d(c, c, 3, padding=1)]
        dec += [nn.GroupNorm(32, c), nn.SiLU(), nn.Conv2d(c, 3, 3, padding=1)]
        self.dec = nn.Sequential(*dec)

    def encode(self, x):
        mu, logvar = self.enc(x).chunk(2, dim=1)
        return mu, logvar.clamp(-30, 20)

    def decode(self, z):
        return self.dec(z)

    def forward(self, x):
        mu, logvar = self.encode(x)
        z = mu + torch.randn_like(mu) * (0.5 * logvar).exp()
        return self.decode(z), mu, logvar


def to_image(grid):
    """A (3, H, W) tensor in [-1, 1] as an HWC uint8 numpy array (on the CPU)."""
    return grid.float().clamp(-1, 1).add(1).mul(127.5).round().to("cpu", torch.uint8).permute(1, 2, 0).numpy()


def main():
    args = cc.parser(__doc__).parse_args()
    dev = cc.torch_device(args)
    batch, res, chans, preview = (4, 32, (32, 32, 64, 64), 8) if args.smoke else (64, 64, (128, 256, 256, 512), 64)
    every = 500 if args.fix else (3 if args.smoke else 20)
    out_dir = os.path.join(cc.CACHE, "c14_vae_samples")
    shutil.rmtree(out_dir, ignore_errors=True)
    model = VAE(chans).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=2e-4, betas=(0.5, 0.9), fused=dev.type == "cuda")
    g = torch.Generator(device=dev).manual_seed(0)
    # smooth synthetic images: low-resolution noise upsampled, plus a little grain
    low = torch.rand(8 * batch, 3, res // 8, res // 8, device=dev, generator=g)
    imgs = F.interpolate(low, size=(res, res), mode="bicubic", align_corners=False)
    imgs = (imgs + 0.05 * torch.randn(imgs.shape, device=dev, generator=g)).clamp(0, 1) * 2 - 1
    data = list(imgs.split(batch))
    preview_x = imgs[:preview].clone()
    z_fixed = torch.randn(preview, 4, res // 8, res // 8, device=dev, generator=g)
    stats = {"saves": 0, "files": 0, "bytes": 0}

    def save_samples(i):
        model.eval()
        with torch.no_grad(), torch.autocast(dev.type, dtype=torch.bfloat16):
            recon, _, _ = model(preview_x)
            samples = model.decode(z_fixed)
        model.train()
        d = os.path.join(out_dir, f"step_{i + 1:07d}")
        os.makedirs(d, exist_ok=True)
        pairs = torch.stack([preview_x, recon.float()], dim=1).flatten(0, 1)  # input, reconstruction, ...
        files = [(os.path.join(d, "reconstructions.png"), to_image(make_grid(pairs, nrow=16))),
                 (os.path.join(d, "samples.png"), to_image(make_grid(samples.float(), nrow=8)))]
        for k in range(min(16, preview)):
            files.append((os.path.join(d, f"sample_{k:02d}.png"), to_image(samples[k])))
        for path, arr in files:
            im = Image.fromarray(arr)
            if im.width < 256:
                im = im.resize((256, 256), Image.LANCZOS)
            im.save(path)  # gpuwhy: plants C14 (PNG files written on the training thread every 20 steps)
            stats["files"] += 1
            stats["bytes"] += os.path.getsize(path)
        stats["saves"] += 1

    def step(i):
        x = data[i % len(data)]
        with torch.autocast(dev.type, dtype=torch.bfloat16):
            recon, mu, logvar = model(x)
        rec = F.mse_loss(recon.float(), x)
        kl = -0.5 * torch.mean(1 + logvar.float() - mu.float().pow(2) - logvar.float().exp())
        loss = rec + 1e-3 * kl
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if (i + 1) % every == 0:
            save_samples(i)

    cc.run("c14_torch_vae_png_samples", args, step, batch,
           extra=lambda: {"sample_every": every, "saves": stats["saves"], "png_files": stats["files"],
                          "png_bytes": stats["bytes"]})
    shutil.rmtree(out_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
