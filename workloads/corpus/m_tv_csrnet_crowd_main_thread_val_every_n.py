"""C1 + C14 (density maps made on the training thread, and the validation split scored every 10
steps): crowd counting in the ShanghaiTech Part B setting with CSRNet, in plain PyTorch and
torchvision. 256 training and 120 validation street scenes of 768 x 1,024 (synthetic: a
textured background with 40-300 darker heads in clusters, fewer and larger towards the
camera), the training images and their head points in host memory, the validation images
and counts on the GPU. CSRNet: torchvision's VGG-16 features up to conv4_3 (weights=None) as
the front end and the dilated back end (six 3 x 3 convolutions of dilation 2, 512-64
channels) with a 1 x 1 output, a density map at 1/8 resolution (16.3 M parameters, random
weights); pixel-wise MSE against the ground-truth density, bf16 autocast, channels_last,
fused Adam (lr 1e-5), batch 8 random 512 x 512 crops; the loss stays on the GPU and is read
every 50 steps.

Two things slow it, both as such repositories have them:
- the Dataset makes each sample's target on the fly, so that it follows the augmentation: a
  random rescale (0.8-1.2, PIL bilinear), a random crop and flip, then the geometry-adaptive
  density map of CSRNet's make_dataset (each head a Gaussian of sigma 0.3 x the mean distance
  to its 3 nearest neighbours, added patch by patch in a Python loop) summed to 1/8 scale,
  under a DataLoader left at num_workers=0: ~40-80 ms of PIL and NumPy on the training
  thread before each step, the GPU idle meanwhile (C1);
- the loop validates every 10 steps (val_every from a config written for a 20-image debug
  split and kept when the real split came in): model.eval(), torch.no_grad(), the 120
  validation images at full 768 x 1,024 resolution in batches of 8, the counts' absolute and
  squared errors read per batch with .tolist() into a running MAE / MSE, then model.train():
  ~78 TFLOP, about one and a half times the GPU work of the 10 training steps between,
  training waiting (C14).

--fix: gpuwhy's advice for both: the same DataLoader with num_workers=N, one per free core
(cc.fix_workers()), pin_memory=True, persistent_workers=True and prefetch_factor=4, the batches
copied with non_blocking=True (C1: load data in worker processes); and val_every 1,000 instead
of 10, never inside the timed part (C14: evaluate less often); data, augmentation, targets,
model, loss, optimizer and the validation itself unchanged.

Written blind for the tango batch.
"""
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision
from PIL import Image
from torch.utils.data import DataLoader, Dataset

import cc

MEAN = torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1)
STD = torch.tensor([0.229, 0.224, 0.225]).view(1, 3, 1, 1)


def make_scenes(n, h, w, dev, seed):
    """n synthetic crowd scenes: uint8 (n, h, w, 3) on dev and the head points (x, y) of each."""
    rng = np.random.default_rng(seed)
    g = torch.Generator(device=dev).manual_seed(seed)
    points, imgs = [], []
    for k in range(0, n, 16):
        m = min(16, n - k)
        low = torch.rand(m, 3, h // 32, w // 32, device=dev, generator=g)
        img = F.interpolate(low, size=(h, w), mode="bicubic", align_corners=False) * 0.6 + 0.2
        img = img + 0.08 * torch.rand(m, 3, h, w, device=dev, generator=g)
        heads = torch.zeros(m, 1, h, w, device=dev)
        for j in range(m):
            count = int(rng.integers(40, 300))
            centres = rng.uniform([0, 0.3 * h], [w, h], (max(1, count // 25), 2))
            c = centres[rng.integers(0, len(centres), count)]
            spread = 20 + 60 * (c[:, 1] / h)                                  # nearer: sparser, larger
            p = np.clip(c + rng.normal(0, 1, (count, 2)) * spread[:, None], [0, 0.25 * h], [w - 1, h - 1])
            points.append(p.astype(np.float32))
            yi, xi = torch.from_numpy(p[:, 1].astype(np.int64)).to(dev), torch.from_numpy(p[:, 0].astype(np.int64)).to(dev)
            heads[j, 0].index_put_((yi, xi), torch.ones(count, device=dev), accumulate=True)
        r = torch.arange(-7, 8, device=dev, dtype=torch.float32)
        disc = ((r[:, None] ** 2 + r[None] ** 2) <= 36).float()[None, None]
        shade = F.conv2d(heads, disc, padding=7).clamp(max=1)
        img = img * (1 - 0.55 * shade)
        imgs.append((img.clamp(0, 1) * 255).to(torch.uint8).permute(0, 2, 3, 1))
    return torch.cat(imgs), points


def adaptive_density(pts, h, w):
    """CSRNet's geometry-adaptive density: a Gaussian per head, sigma 0.3 x the mean distance to
    its 3 nearest neighbours, added patch by patch."""
    den = np.zeros((h, w), np.float32)
    n = len(pts)
    if n == 0:
        return den
    if n > 1:
        d = np.sqrt(((pts[:, None, :] - pts[None, :, :]) ** 2).sum(-1))
        d.sort(axis=1)
        sig = 0.3 * d[:, 1:4].mean(1)
    else:
        sig = np.full(1, (h + w) / 4.0, np.float32)
    for (x, y), s in zip(pts, np.clip(sig, 1.0, 20.0)):
        r = max(1, int(3 * s))
        ax = np.arange(-r, r + 1, dtype=np.float32)
        g1 = np.exp(-ax * ax / (2 * s * s))
        k = np.outer(g1, g1)
        k /= k.sum()
        xi, yi = int(x), int(y)
        y0, y1, x0, x1 = max(0, yi - r), min(h, yi + r + 1), max(0, xi - r), min(w, xi + r + 1)
        den[y0:y1, x0:x1] += k[y0 - (yi - r):y1 - (yi - r), x0 - (xi - r):x1 - (xi - r)]
    return den


class CrowdCrops(Dataset):
    """Random-scale 512 x 512 crops with flips and their 1/8-scale density targets."""

    def __init__(self, images, points, crop):
        self.images, self.points, self.crop = images, points, crop
        self.rng, self.pid = None, None

    def __len__(self):
        return len(self.images)

    def _rng(self):
        if self.pid != os.getpid():     # each loader worker its own generator
            self.pid = os.getpid()
            self.rng = np.random.default_rng(torch.initial_seed() % 2**32)
        return self.rng

    def __getitem__(self, i):
        rng, c = self._rng(), self.crop
        img, pts = self.images[i], self.points[i]
        s = rng.uniform(0.8, 1.2)
        h, w = max(c, int(img.shape[0] * s)), max(c, int(img.shape[1] * s))
        im = np.asarray(Image.fromarray(img).resize((w, h), Image.BILINEAR))
        pts = pts * np.array([w / img.shape[1], h / img.shape[0]], np.float32)
        y0, x0 = int(rng.integers(0, h - c + 1)), int(rng.integers(0, w - c + 1))
        im = im[y0:y0 + c, x0:x0 + c]
        pts = pts - np.array([x0, y0], np.float32)
        pts = pts[(pts[:, 0] >= 0) & (pts[:, 0] < c) & (pts[:, 1] >= 0) & (pts[:, 1] < c)]
        if rng.random() < 0.5:
            im = im[:, ::-1]
            pts[:, 0] = c - 1 - pts[:, 0]
        den = adaptive_density(pts, c, c)
        den8 = den.reshape(c // 8, 8, c // 8, 8).sum((1, 3))                  # CSRNet's 1/8 target
        return torch.from_numpy(np.ascontiguousarray(im)), torch.from_numpy(den8)


class CSRNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.frontend = torchvision.models.vgg16(weights=None).features[:23]     # conv1_1 ... conv4_3
        layers, cin = [], 512
        for cout in (512, 512, 512, 256, 128, 64):
            layers += [nn.Conv2d(cin, cout, 3, padding=2, dilation=2), nn.ReLU(inplace=True)]
            cin = cout
        self.backend = nn.Sequential(*layers)
        self.output = nn.Conv2d(64, 1, 1)

    def forward(self, x):
        return self.output(self.backend(self.frontend(x)))


def main():
    args = cc.parser(__doc__, warmup=5).parse_args()
    dev = cc.torch_device(args)
    gpu = dev.type == "cuda"
    if args.smoke:
        n_train, n_val, h, w, crop, batch, val_batch, every = 16, 8, 192, 256, 128, 2, 4, 3
    else:
        n_train, n_val, h, w, crop, batch, val_batch, every = 256, 120, 768, 1024, 512, 8, 8, 10
    if args.fix:
        every = 1000                      # the advice: evaluate less often (never in the timed part)
    imgs, points = make_scenes(n_train, h, w, dev, seed=0)
    images = list(imgs.cpu().numpy())     # the training set in host memory, as the loader reads it
    del imgs
    val_imgs, val_points = make_scenes(n_val, h, w, dev, seed=1)
    val_counts = torch.tensor([len(p) for p in val_points], dtype=torch.float32, device=dev)
    ds = CrowdCrops(images, points, crop)
    if args.fix:
        workers = 2 if args.smoke else cc.fix_workers()
        loader = DataLoader(ds, batch_size=batch, shuffle=True, drop_last=True, num_workers=workers,
                            pin_memory=gpu, persistent_workers=True, prefetch_factor=4)
    else:
        workers = 0
        loader = DataLoader(ds, batch_size=batch, shuffle=True, drop_last=True)  # gpuwhy: plants C1 (num_workers=0: the rescale, crop and the geometry-adaptive density maps of 8 samples, ~40-80 ms of PIL and NumPy on the training thread before each step)
    mean, std = MEAN.to(dev), STD.to(dev)

    torch.manual_seed(0)
    model = CSRNet().to(dev, memory_format=torch.channels_last).train()
    params = sum(p.numel() for p in model.parameters())
    opt = torch.optim.Adam(model.parameters(), lr=1e-5, weight_decay=1e-4, fused=gpu)
    amp = torch.autocast(dev.type, dtype=torch.bfloat16, enabled=gpu)
    st = {"it": iter(loader), "epochs": 0, "acc": torch.zeros((), device=dev), "loss": None, "reads": 0,
          "vals": 0, "val": None}

    def prep(x):
        return ((x.permute(0, 3, 1, 2).float() / 255 - mean) / std).contiguous(memory_format=torch.channels_last)

    def validate():
        model.eval()
        abs_err, sq_err, count = 0.0, 0.0, 0
        with torch.no_grad():
            for s in range(0, n_val, val_batch):
                with amp:
                    den = model(prep(val_imgs[s:s + val_batch]))
                err = den.float().sum((1, 2, 3)) - val_counts[s:s + val_batch]
                e = torch.stack([err.abs().sum(), (err * err).sum()]).tolist()      # the running average's update
                abs_err, sq_err, count = abs_err + e[0], sq_err + e[1], count + len(err)
        model.train()
        return {"mae": round(abs_err / count, 2), "mse": round((sq_err / count) ** 0.5, 2)}

    def next_batch():
        try:
            return next(st["it"])
        except StopIteration:  # a new epoch
            st["epochs"] += 1
            st["it"] = iter(loader)
            return next(st["it"])

    def step(i):
        x, den = next_batch()
        x = prep(x.to(dev, non_blocking=args.fix))
        den = den.to(dev, non_blocking=args.fix)[:, None]
        with amp:
            pred = model(x)
        loss = F.mse_loss(pred.float(), den * 100.0)        # the density scaled, as such repositories do
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        st["acc"] += loss.detach()
        if i % 50 == 49:
            st["loss"] = st["acc"].item() / 50
            st["acc"].zero_()
            st["reads"] += 1
        if (i + 1) % every == 0:
            st["val"] = validate()  # gpuwhy: plants C14 (the 120 validation images at 768 x 1,024 scored every 10 steps, 15 forward batches each read back; training waits)
            st["vals"] += 1

    cc.run("m_tv_csrnet_crowd_main_thread_val_every_n", args, step, batch,
           extra=lambda: {"num_workers": workers, "val_every": every, "val_images": n_val, "validations": st["vals"],
                          "params_m": round(params / 1e6, 1), "epochs_done": st["epochs"], "loss": st["loss"],
                          "loss_reads": st["reads"], "last_val": st["val"]})


if __name__ == "__main__":
    main()
