"""Healthy control (loader workers serving uint8 images, augmentation on the GPU): a
torchvision ResNet-50 (the same network written out where torchvision is missing; 1000
classes) trained at 224 px, batch 256, channels_last, bf16 autocast, SGD with Nesterov
momentum (fused), label smoothing. The training set is decoded once into an in-memory
uint8 array (2048 images of 256 x 256 x 3, HWC); a Dataset returns each image as a uint8
tensor without any work on it, and a DataLoader with 8 workers (persistent, pin_memory,
prefetch_factor=4) batches them. The batch goes to the GPU as uint8 with non_blocking=True,
and the augmentation runs there: a random 224 px crop and a random horizontal flip per
image (one gather), conversion to float and normalization, already channels_last from the
HWC layout. Nothing on the host waits for the GPU inside the loop: the loader is far ahead
and the GPU should be busy throughout.

--fix: nothing (control).
"""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

import cc

try:
    import torchvision
except ImportError:  # the same ResNet-50, written out
    torchvision = None


class Bottleneck(nn.Module):
    def __init__(self, cin, width, stride):
        super().__init__()
        cout = 4 * width
        self.conv1, self.bn1 = nn.Conv2d(cin, width, 1, bias=False), nn.BatchNorm2d(width)
        self.conv2, self.bn2 = nn.Conv2d(width, width, 3, stride, 1, bias=False), nn.BatchNorm2d(width)
        self.conv3, self.bn3 = nn.Conv2d(width, cout, 1, bias=False), nn.BatchNorm2d(cout)
        self.short = None
        if stride != 1 or cin != cout:
            self.short = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        y = F.relu(self.bn2(self.conv2(y)))
        y = self.bn3(self.conv3(y))
        return F.relu(y + (x if self.short is None else self.short(x)))


class ResNet(nn.Module):
    def __init__(self, depths, classes, base=64):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, base, 7, 2, 3, bias=False), nn.BatchNorm2d(base), nn.ReLU(inplace=True),
                                  nn.MaxPool2d(3, 2, 1))
        blocks, cin = [], base
        for k, n in enumerate(depths):
            for j in range(n):
                blocks.append(Bottleneck(cin, base * 2 ** k, 2 if j == 0 and k > 0 else 1))
                cin = 4 * base * 2 ** k
        self.blocks = nn.Sequential(*blocks)
        self.fc = nn.Linear(cin, classes)

    def forward(self, x):
        return self.fc(self.blocks(self.stem(x)).mean((2, 3)))


def make_model(smoke, classes):
    if smoke:
        return ResNet((1, 1, 1, 1), classes, base=16)
    if torchvision is not None:
        return torchvision.models.resnet50(num_classes=classes)
    return ResNet((3, 4, 6, 3), classes)


class InMemoryImages(Dataset):
    """Decoded images (N, H, W, 3) uint8 and their labels; __getitem__ does no work."""

    def __init__(self, images, labels):
        self.images, self.labels = images, labels

    def __len__(self):
        return 1_000_000  # many passes over the images held in RAM

    def __getitem__(self, i):
        i %= len(self.images)
        return torch.from_numpy(self.images[i]), int(self.labels[i])


def gpu_augment(x, res, mean, std, gen):
    """Random res x res crop and horizontal flip per image, on the GPU; x: (B, H, W, 3) uint8.
    Returns (B, 3, res, res) float, channels_last (permuted from HWC)."""
    b, h, w, _ = x.shape
    dev = x.device
    oy = torch.randint(0, h - res + 1, (b, 1, 1), device=dev, generator=gen)
    ox = torch.randint(0, w - res + 1, (b, 1, 1), device=dev, generator=gen)
    flip = torch.rand(b, 1, 1, device=dev, generator=gen) < 0.5
    r = torch.arange(res, device=dev)
    cols = torch.where(flip, res - 1 - r.view(1, 1, res), r.view(1, 1, res)) + ox
    rows = r.view(1, res, 1) + oy
    crop = x[torch.arange(b, device=dev).view(b, 1, 1), rows, cols]  # (B, res, res, 3)
    crop = crop.permute(0, 3, 1, 2).float()  # NCHW view of NHWC memory: channels_last
    return (crop - mean) / std


def main():
    args = cc.parser(__doc__, warmup=5).parse_args()
    dev = cc.torch_device(args)
    n, stored, res, batch, classes, workers = (64, 40, 32, 8, 10, 2) if args.smoke else (2048, 256, 224, 256, 1000, 8)
    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, (n, stored, stored, 3), dtype=np.uint8)
    labels = rng.integers(0, classes, n)
    pin = dev.type == "cuda"
    loader = DataLoader(InMemoryImages(images, labels), batch_size=batch, shuffle=True, drop_last=True,
                        num_workers=workers, pin_memory=pin, persistent_workers=True, prefetch_factor=4)
    model = make_model(args.smoke, classes).to(dev).to(memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=0.2, momentum=0.9, nesterov=True, weight_decay=5e-5,
                          fused=dev.type == "cuda")
    mean = torch.tensor([0.485, 0.456, 0.406], device=dev).view(1, 3, 1, 1) * 255
    std = torch.tensor([0.229, 0.224, 0.225], device=dev).view(1, 3, 1, 1) * 255
    gen = torch.Generator(device=dev).manual_seed(0)
    it = iter(loader)

    def step(i):
        xb, yb = next(it)
        x = gpu_augment(xb.to(dev, non_blocking=True), res, mean, std, gen)
        y = yb.to(dev, non_blocking=True)
        with torch.autocast(dev.type, dtype=torch.bfloat16):
            loss = F.cross_entropy(model(x), y, label_smoothing=0.1)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    cc.run("h_tv_gpu_aug_workers", args, step, batch,
           extra=lambda: {"torchvision": torchvision is not None, "num_workers": workers})


if __name__ == "__main__":
    main()
