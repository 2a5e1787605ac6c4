"""C6 pageable copies + C8 FP32 math: an image classifier (torchvision's ResNet-18, or the
same network written out where torchvision is missing; 1000 classes, 224 px, batch 256, SGD
with Nesterov momentum, fused, label smoothing) trained in plain FP32: no autocast, the
precision flags left at PyTorch's defaults (FP32 matmuls without TF32; cuDNN picks its own
convolution math). The training set is held in memory as one uint8 numpy array
(4096 x 3 x 224 x 224, 617 MB, decoded, resized and shuffled once), as users do with a
dataset that fits in RAM: each step slices the next batch, converts it on the CPU with
torch.from_numpy(...).float() (a 154 MB float32 tensor in pageable memory) and sends it
with .to(device): a synchronous copy through the driver's staging buffer, which waits for
the GPU's previous step and holds the GPU idle while 154 MB cross; normalization and the
random flip run on the GPU.

--fix: both of gpuwhy's advices: the uint8 batch copied into pinned memory
(.pin_memory(); the caching host allocator reuses its blocks only once their copies are
done) and sent with non_blocking=True, converted to float on the GPU (C6: pinned,
asynchronous copies, a quarter of the bytes), and the forward and loss under
torch.autocast(bfloat16) (C8: bf16 for the convolutions and matmuls); model, data and
optimizer unchanged.
"""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

import cc

try:
    import torchvision
except ImportError:  # the same ResNet-18, written out
    torchvision = None


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1, self.bn1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout)
        self.conv2, self.bn2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False), nn.BatchNorm2d(cout)
        self.short = None
        if stride != 1 or cin != cout:
            self.short = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return F.relu(y + (x if self.short is None else self.short(x)))


class ResNet(nn.Module):
    def __init__(self, depths, classes, base=64):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, base, 7, 2, 3, bias=False), nn.BatchNorm2d(base), nn.ReLU(inplace=True),
                                  nn.MaxPool2d(3, 2, 1))
        blocks, cin = [], base
        for k, n in enumerate(depths):
            for j in range(n):
                blocks.append(BasicBlock(cin, base * 2 ** k, 2 if j == 0 and k > 0 else 1))
                cin = base * 2 ** k
        self.blocks = nn.Sequential(*blocks)
        self.fc = nn.Linear(cin, classes)

    def forward(self, x):
        return self.fc(self.blocks(self.stem(x)).mean((2, 3)))


def make_model(smoke, classes):
    if smoke:
        return ResNet((1, 1, 1, 1), classes, base=16)
    if torchvision is not None:
        return torchvision.models.resnet18(num_classes=classes)
    return ResNet((2, 2, 2, 2), classes)


def main():
    args = cc.parser(__doc__).parse_args()
    dev = cc.torch_device(args)
    n, res, batch, classes = (64, 32, 8, 10) if args.smoke else (4096, 224, 256, 1000)
    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, (n, 3, res, res), dtype=np.uint8)  # decoded, resized and shuffled once
    labels = rng.integers(0, classes, n).astype(np.int64)
    model = make_model(args.smoke, classes).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, nesterov=True, weight_decay=5e-5,
                          fused=dev.type == "cuda")
    mean = torch.tensor([0.485, 0.456, 0.406], device=dev).view(1, 3, 1, 1) * 255
    std = torch.tensor([0.229, 0.224, 0.225], device=dev).view(1, 3, 1, 1) * 255
    pin = dev.type == "cuda"
    steps_per_epoch = n // batch

    def step(i):
        s = (i % steps_per_epoch) * batch
        if args.fix:
            xb, yb = torch.from_numpy(images[s:s + batch]), torch.from_numpy(labels[s:s + batch])
            if pin:
                xb, yb = xb.pin_memory(), yb.pin_memory()
            x = xb.to(dev, non_blocking=True).float()
            y = yb.to(dev, non_blocking=True)
        else:
            x = torch.from_numpy(images[s:s + batch]).float().to(dev)  # gpuwhy: plants C6 (a 154 MB float32 batch copied from pageable memory)
            y = torch.from_numpy(labels[s:s + batch]).to(dev)
        x = (x - mean) / std
        if i % 2:
            x = x.flip(3)
        if args.fix:
            with torch.autocast(dev.type, dtype=torch.bfloat16):
                loss = F.cross_entropy(model(x), y, label_smoothing=0.1)
        else:
            loss = F.cross_entropy(model(x), y, label_smoothing=0.1)  # gpuwhy: plants C8 (FP32 forward and backward, no autocast)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    cc.run("m_torch_pageable_fp32_cnn", args, step, batch,
           extra=lambda: {"torchvision": torchvision is not None, "autocast": bool(args.fix),
                          "pinned": bool(args.fix and pin)})


if __name__ == "__main__":
    main()
