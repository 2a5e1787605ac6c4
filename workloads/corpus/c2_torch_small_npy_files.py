"""C2 storage (many small files read cold by two loader workers): a torchvision ResNet-18
image classifier (224 px, 1000 classes, bf16 autocast, channels_last, SGD with momentum,
batch 128) trained on a data set of 16384 images stored one per .npy file (256 x 256 x 3
uint8, 192 KB each, 3.2 GB in one directory under GW_CORPUS_CACHE, written once). At start
each run drops the files from the page cache with posix_fadvise(POSIX_FADV_DONTNEED) (no
root needed), as when the data set was written long ago or is larger than the memory left
for caching it. A Dataset's __getitem__ opens and np.loads one file, takes a random
224 x 224 crop and a flip and returns a uint8 CHW tensor; a DataLoader with num_workers=2,
shuffle and pin_memory collates 128 of them a step; normalization happens on the GPU. Each
worker spends most of a batch waiting on 128 cold reads of 192 KB (one after the other,
since a worker reads one file at a time) and the rest in np.load, the crop and the collate:
the two workers deliver batches more slowly than the GPU trains on them.

--fix: gpuwhy's advice for a loader that cannot keep up (add loader workers): num_workers =
the free cores (cc.fix_workers()), prefetch_factor=4, persistent_workers=True, so that
many more reads are in flight; the files are dropped from the page cache the same way.
"""
import os

import numpy as np
import torch
import torch.nn.functional as F
import torchvision
from torch.utils.data import DataLoader, Dataset

import cc


def make_files(n, size):
    """n images of size x size x 3 as .npy files, written once; returns the paths."""
    d = os.path.join(cc.CACHE, f"small_npy_{n}_{size}")
    paths = [os.path.join(d, f"{k // 1024:02d}_{k:06d}.npy") for k in range(n)]
    if os.path.exists(os.path.join(d, ".done")):
        return paths
    os.makedirs(d, exist_ok=True)
    rng = np.random.default_rng(0)
    for start in range(0, n, 256):
        chunk = rng.integers(0, 256, (min(256, n - start), size, size, 3), dtype=np.uint8)
        for k, img in enumerate(chunk):
            np.save(paths[start + k], img)
    os.sync()  # written back, so that the pages can be dropped
    open(os.path.join(d, ".done"), "w").close()
    return paths


def drop_from_page_cache(paths):
    """posix_fadvise(DONTNEED) on each file: its clean pages leave the page cache."""
    dropped = 0
    for p in paths:
        fd = os.open(p, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            dropped += 1
        finally:
            os.close(fd)
    return dropped


class NpyImages(Dataset):
    def __init__(self, paths, crop):
        self.paths, self.crop = paths, crop

    def __len__(self):
        return len(self.paths)

    def __getitem__(self, i):
        img = np.load(self.paths[i])  # gpuwhy: plants C2 (one cold 192 KB file per sample, two workers)
        r = np.random.default_rng()
        y0, x0 = r.integers(0, img.shape[0] - self.crop + 1, 2)
        img = img[y0:y0 + self.crop, x0:x0 + self.crop]
        if r.random() < 0.5:
            img = img[:, ::-1]
        return torch.from_numpy(np.ascontiguousarray(img.transpose(2, 0, 1))), i % 1000


def main():
    args = cc.parser(__doc__).parse_args()
    dev = cc.torch_device(args)
    n, size, crop, batch = (64, 40, 32, 8) if args.smoke else (16384, 256, 224, 128)
    paths = make_files(n, size)
    dropped = drop_from_page_cache(paths)
    workers = (2 if args.smoke else cc.fix_workers()) if args.fix else 2
    opts = dict(prefetch_factor=4, persistent_workers=True) if args.fix else {}
    loader = DataLoader(NpyImages(paths, crop), batch_size=batch, shuffle=True, drop_last=True,
                        num_workers=workers, pin_memory=dev.type == "cuda", **opts)
    model = torchvision.models.resnet18(num_classes=1000).to(dev).to(memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=0.2, momentum=0.9, weight_decay=5e-5, nesterov=True,
                          foreach=dev.type == "cuda")
    mean = torch.tensor([0.485, 0.456, 0.406], device=dev).view(1, 3, 1, 1) * 255
    std = torch.tensor([0.229, 0.224, 0.225], device=dev).view(1, 3, 1, 1) * 255
    state = {"it": iter(loader), "epochs": 0}

    def next_batch():
        try:
            return next(state["it"])
        except StopIteration:  # a new epoch (the workers start again unless persistent)
            state["epochs"] += 1
            state["it"] = iter(loader)
            return next(state["it"])

    def step(i):
        x, y = next_batch()
        x = x.to(dev, non_blocking=True).contiguous(memory_format=torch.channels_last)
        y = y.to(dev, non_blocking=True)
        x = (x.float() - mean) / std
        with torch.autocast(dev.type, dtype=torch.bfloat16):
            loss = F.cross_entropy(model(x), y, label_smoothing=0.1)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    cc.run("c2_torch_small_npy_files", args, step, batch,
           extra=lambda: {"num_workers": workers, "files": n, "dropped_from_cache": dropped,
                          "epochs_done": state["epochs"]})


if __name__ == "__main__":
    main()
