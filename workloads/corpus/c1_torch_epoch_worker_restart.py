"""C1 loader workers restarted every epoch: an active-learning round. A torchvision ResNet-18
with the usual small-image stem (3x3 stride-1 first convolution, no max-pool; 64x64 inputs,
200 classes, bf16 autocast, channels_last, SGD with Nesterov momentum) is fine-tuned for many
short epochs on the labelled part of an image pool: the Dataset holds the whole pool in
memory as one uint8 numpy array (8192 images of 64x64x3, 96 MB, the way torchvision's CIFAR
datasets keep `self.data`) plus the labels, and a list of the labelled indices (2560 of
them: ten batches of 256 an epoch). __getitem__ takes a random crop of the 4-pixel-padded
image and a random flip; normalization runs on the GPU.

The DataLoader has num_workers=6 with persistent_workers left at its default (False) and a
"forkserver" multiprocessing context (the start method Python 3.14 makes the default on
Linux, chosen here for CUDA safety) whose server has torch, torchvision and numpy preloaded
(set_forkserver_preload), so a worker starts without importing them again: at every epoch
the six workers are started again, and each must receive the pickled Dataset (the whole
pool array, 96 MB, pickled and written down a pipe by the training thread, unpickled in the
worker) before it can make its first batch: about 580 MB pickled, sent and copied every ten
steps while the GPU waits. The workers themselves keep up easily once started.

--fix: persistent_workers=True (and nothing else): the workers are started once, keep their
copy of the Dataset and are handed the next epoch's indices.

Written blind for the harbor batch.
"""
import multiprocessing as mp

import numpy as np
import torch
import torch.nn.functional as F
import torchvision
from torch.utils.data import DataLoader, Dataset

import cc

MEAN = (0.480, 0.448, 0.398)
STD = (0.277, 0.269, 0.282)


class LabelledPool(Dataset):
    """The labelled part of an in-memory image pool (an active-learning round): the pool
    array stays whole, as the acquisition step scores all of it between rounds."""

    def __init__(self, images, labels, labelled, pad=4):
        self.images = images            # (N, H, W, 3) uint8, the whole pool
        self.labels = labels            # (N,) int64
        self.labelled = list(labelled)  # indices into the pool that have labels
        self.pad = pad

    def __len__(self):
        return len(self.labelled)

    def __getitem__(self, k):
        i = self.labelled[k]
        img = self.images[i]
        h, w, _ = img.shape
        p = self.pad
        padded = np.pad(img, ((p, p), (p, p), (0, 0)), mode="reflect")
        y0, x0 = np.random.randint(0, 2 * p + 1, size=2)
        crop = padded[y0:y0 + h, x0:x0 + w]
        if np.random.rand() < 0.5:
            crop = crop[:, ::-1]
        return torch.from_numpy(np.ascontiguousarray(crop.transpose(2, 0, 1))), int(self.labels[i])


def make_pool(n, size, classes):
    """The image pool, smooth random images (made once per run, outside the timed part)."""
    rng = np.random.default_rng(0)
    small = rng.integers(0, 256, (n, size // 8, size // 8, 3), dtype=np.uint8)
    images = np.repeat(np.repeat(small, 8, axis=1), 8, axis=2)
    images = images // 2 + rng.integers(0, 128, images.shape, dtype=np.uint8)
    labels = rng.integers(0, classes, n).astype(np.int64)
    return images, labels


def resnet18_small(classes):
    m = torchvision.models.resnet18(num_classes=classes)
    m.conv1 = torch.nn.Conv2d(3, 64, 3, 1, 1, bias=False)
    m.maxpool = torch.nn.Identity()
    return m


def main():
    args = cc.parser(__doc__).parse_args()
    dev = cc.torch_device(args)
    pool_n, size, classes, batch, labelled_n, workers = \
        (600, 32, 10, 16, 160, 2) if args.smoke else (8192, 64, 200, 256, 2560, 6)
    images, labels = make_pool(pool_n, size, classes)
    labelled = np.random.default_rng(1).choice(pool_n, labelled_n, replace=False)
    data = LabelledPool(images, labels, labelled)
    ctx = mp.get_context("forkserver")  # CUDA-safe workers; torch & co. imported once in the fork server
    ctx.set_forkserver_preload(["torch", "torchvision", "numpy"])
    loader = DataLoader(data, batch_size=batch, shuffle=True, drop_last=True, num_workers=workers,
                        pin_memory=dev.type == "cuda", multiprocessing_context=ctx,
                        persistent_workers=args.fix)  # gpuwhy: plants C1 (six workers started again every epoch, each sent the pickled pool)

    model = resnet18_small(classes).to(dev, memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, nesterov=True, weight_decay=5e-4,
                          foreach=True)
    mean = torch.tensor(MEAN, device=dev).view(1, 3, 1, 1) * 255
    std = torch.tensor(STD, device=dev).view(1, 3, 1, 1) * 255
    epochs = {"n": 0}

    def batches():
        while True:
            for xb, yb in loader:
                yield xb, yb
            epochs["n"] += 1

    it = batches()

    def step(i):
        xb, yb = next(it)
        x = xb.to(dev, non_blocking=True).float().sub_(mean).div_(std).contiguous(memory_format=torch.channels_last)
        y = yb.to(dev, non_blocking=True)
        with torch.autocast(dev.type, dtype=torch.bfloat16):
            loss = F.cross_entropy(model(x), y, label_smoothing=0.1)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    cc.run("c1_torch_epoch_worker_restart", args, step, batch,
           extra=lambda: {"epochs_done": epochs["n"], "batches_per_epoch": len(loader), "num_workers": workers,
                          "persistent_workers": bool(args.fix), "pool_mb": round(images.nbytes / 2**20, 1)})


if __name__ == "__main__":
    main()
