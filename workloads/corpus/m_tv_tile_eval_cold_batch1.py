"""C2 storage (every validation tile read cold from disk on the main thread) and C3 work too
small for the GPU (the DataLoader's default batch of one): the checkpoint sweep at the end of a
land-cover segmentation run. Each of the run's saved checkpoints (four here, held on the GPU)
is evaluated on the same 2,048 validation tiles, Sentinel-2-style 256 x 256 chips of four
bands (blue, green, red, near infrared as int16 reflectance) with their label band (10
classes), stored one tile per .npy file (640 KB, 1.3 GB in one directory under
GW_CORPUS_CACHE, written once). The model is torchvision's LR-ASPP MobileNetV3-Large
(random weights, its first convolution taking the four bands), eval, channels_last, bf16
autocast under inference_mode; per-band normalization on the GPU; the confusion matrix is
accumulated on the GPU with bincount and the mIoU read every 50 batches. At start the tiles
are dropped from the page cache with posix_fadvise(POSIX_FADV_DONTNEED), as on a node whose
page cache holds the training shards instead.

The evaluation script builds its loader as `DataLoader(ValTiles(paths))`: no batch size (the
default is 1) and no workers, so the main thread np.loads one cold 640 KB file at a time and
the GPU then runs one tile through ~150 small kernels (C2: the reads; C3: batch-1 kernels far
too small for the GPU, shorter than their launches).

--fix: gpuwhy's advice for both: the validation tiles kept in RAM (read once before the sweep,
outside the timed part, into one pinned tensor: the same files, the same np.load) and served
in batches of 64 (cc.fix_batch(64)) copied non_blocking; model, checkpoints, normalization
and metric unchanged.

Written blind for the lima batch.
"""
import os

import numpy as np
import torch
import torch.nn as nn
import torchvision
from torch.utils.data import DataLoader, Dataset

import cc

CLASSES = 10


def make_tiles(n, size, tag):
    """n tiles [5, size, size] int16 (4 bands + labels) as .npy files, written once."""
    d = os.path.join(cc.CACHE, f"s2_val_tiles_{tag}_{n}_{size}")
    paths = [os.path.join(d, f"tile_{k:05d}.npy") for k in range(n)]
    if os.path.exists(os.path.join(d, ".done")):
        return paths
    os.makedirs(d, exist_ok=True)
    rng = np.random.default_rng(0)
    yy, xx = np.mgrid[0:size, 0:size].astype(np.float32) / size
    for k, p in enumerate(paths):
        f = rng.uniform(1, 6, 4)
        field = np.sin(2 * np.pi * (f[0] * xx + rng.random())) * np.cos(2 * np.pi * (f[1] * yy + rng.random()))
        label = np.clip(((field + 1) * CLASSES / 2).astype(np.int16), 0, CLASSES - 1)
        bands = (label[None] * np.array([300, 250, 200, 500], np.float32)[:, None, None] + 800
                 + rng.normal(0, 150, (4, size, size))).astype(np.int16)
        np.save(p, np.concatenate([bands, label[None]]))
    os.sync()
    open(os.path.join(d, ".done"), "w").close()
    return paths


def drop_from_page_cache(paths):
    for p in paths:
        fd = os.open(p, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


class ValTiles(Dataset):
    def __init__(self, paths):
        self.paths = paths

    def __len__(self):
        return len(self.paths)

    def __getitem__(self, i):
        return torch.from_numpy(np.load(self.paths[i]))  # gpuwhy: plants C2 (one cold 640 KB tile file read on the main thread per tile)


class InRam(Dataset):
    """The fix: every tile read once into one pinned tensor; a batch is a slice of it."""

    def __init__(self, paths, batch, pin):
        x = torch.from_numpy(np.stack([np.load(p) for p in paths]))     # [n, 5, H, W] int16
        self.x = x.pin_memory() if pin else x
        self.batch = batch

    def __len__(self):
        return len(self.x) // self.batch

    def __getitem__(self, i):
        return self.x[i * self.batch:(i + 1) * self.batch]             # contiguous: one copy


def main():
    args = cc.parser(__doc__).parse_args()
    dev = cc.torch_device(args)
    gpu = dev.type == "cuda"
    n, size, n_ckpt = (64, 64, 2) if args.smoke else (2048, 256, 4)
    paths = make_tiles(n, size, "smoke" if args.smoke else "full")
    drop_from_page_cache(paths)
    batch = (8 if args.smoke else cc.fix_batch(64)) if args.fix else 1
    if args.fix:
        loader = DataLoader(InRam(paths, batch, gpu), batch_size=None, shuffle=False)
    else:
        loader = DataLoader(ValTiles(paths))  # gpuwhy: plants C3 (no batch_size: the DataLoader's default of one tile a forward)

    model = torchvision.models.segmentation.lraspp_mobilenet_v3_large(weights=None, weights_backbone=None,
                                                                      num_classes=CLASSES)
    stem = model.backbone["0"][0]
    model.backbone["0"][0] = nn.Conv2d(4, stem.out_channels, stem.kernel_size, stem.stride, stem.padding, bias=False)
    model = model.to(dev).eval().to(memory_format=torch.channels_last)
    torch.manual_seed(0)
    ckpts = []                                                   # the run's saved checkpoints, on the GPU
    for c in range(n_ckpt):
        sd = {k: v.clone() for k, v in model.state_dict().items()}
        for k, v in sd.items():
            if v.is_floating_point() and v.dim() > 1:
                v.add_(torch.randn_like(v) * 0.01 * (c + 1))
        ckpts.append(sd)
    mean = torch.tensor([1800.0, 1650.0, 1500.0, 2300.0], device=dev).view(1, 4, 1, 1)
    std = torch.tensor([900.0, 800.0, 700.0, 1400.0], device=dev).view(1, 4, 1, 1)
    conf = torch.zeros(CLASSES * CLASSES, dtype=torch.int64, device=dev)
    amp = torch.autocast(dev.type, dtype=torch.bfloat16, enabled=gpu)
    st = {"it": iter(loader), "pass": 0, "miou": None, "reads": 0, "tiles": 0}

    def next_batch():
        try:
            return next(st["it"])
        except StopIteration:                                    # the next checkpoint's pass
            st["pass"] += 1
            model.load_state_dict(ckpts[st["pass"] % n_ckpt])
            st["it"] = iter(loader)
            return next(st["it"])

    model.load_state_dict(ckpts[0])

    def step(i):
        t = next_batch().to(dev, non_blocking=True)             # [B, 5, H, W] int16: 4 bands + labels
        x = t[:, :4].float().contiguous(memory_format=torch.channels_last)
        y = t[:, 4].long()
        with torch.inference_mode(), amp:
            pred = model((x - mean) / std)["out"].argmax(1)
            conf.add_(torch.bincount((y * CLASSES + pred).flatten(), minlength=CLASSES * CLASSES))
        st["tiles"] += x.shape[0]
        if i % 50 == 49:
            cm = conf.view(CLASSES, CLASSES).double()
            iou = cm.diag() / (cm.sum(0) + cm.sum(1) - cm.diag()).clamp(min=1)
            st["miou"] = float(iou.mean())
            st["reads"] += 1

    cc.run("m_tv_tile_eval_cold_batch1", args, step, batch,
           extra=lambda: {"tiles_per_batch": batch, "tiles": n, "tile_kb": 5 * size * size * 2 // 1024,
                          "data": "RAM (pinned)" if args.fix else "cold .npy files", "passes": st["pass"],
                          "tiles_seen": st["tiles"], "miou": st["miou"], "miou_reads": st["reads"]})


if __name__ == "__main__":
    main()
