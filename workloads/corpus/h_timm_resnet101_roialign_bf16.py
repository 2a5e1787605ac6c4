"""Healthy control (timm, augmentation on the GPU): ImageNet-style training of a timm ResNet-101
(random weights, 1,000 classes, 44.5 M parameters) at bf16 autocast and channels_last, batch
128, SGD with Nesterov momentum (fused), a warm-up/cosine LambdaLR per step, label smoothing 0.1.
The training images, 2,048 decoded images of 320 x 320 (pixel values in float32, 2.5 GB),
sit on the GPU (as a DALI or FFCV pipeline would leave them); each batch is cut from them on the GPU with one
torchvision.ops.roi_align call (a random-resized crop per image: scale 0.25-1, ratio 3/4-4/3,
to 224 x 224), flipped per sample with torch.where, and normalized. The loss is accumulated on
the GPU and read every 50 steps; nothing else waits for the GPU. About 3 TFLOP a step of cuDNN
convolutions (7.8 GFLOPs an image forward, times 3): the GPU busy throughout.

--fix: nothing (control).

Written blind for the foxtrot batch.
"""
import math

import timm
import torch
import torch.nn.functional as F
import torchvision

import cc


def main():
    args = cc.parser(__doc__).parse_args()
    dev = cc.torch_device(args)
    n, size, crop, batch, classes = (16, 48, 32, 4, 10) if args.smoke else (2048, 320, 224, 128, 1000)
    torch.backends.cudnn.benchmark = True
    g = torch.Generator(device=dev).manual_seed(0)
    small = torch.randint(0, 256, (n, 3, size // 8, size // 8), device=dev, generator=g, dtype=torch.uint8)
    pool = F.interpolate(small.float(), size=(size, size), mode="bilinear", align_corners=False)
    pool = (pool * 0.7 + torch.rand(n, 3, size, size, device=dev, generator=g) * 76).round()
    # pixel values 0-255 kept in float32 (roi_align takes boxes of the image's dtype)
    labels = torch.randint(0, classes, (n,), device=dev, generator=g)
    mean = torch.tensor([0.485, 0.456, 0.406], device=dev).view(1, 3, 1, 1) * 255
    std = torch.tensor([0.229, 0.224, 0.225], device=dev).view(1, 3, 1, 1) * 255

    torch.manual_seed(0)
    model = timm.create_model("resnet101", pretrained=False, num_classes=classes)
    model = model.to(dev, memory_format=torch.channels_last)
    decay = [p for p in model.parameters() if p.ndim > 1]
    no_decay = [p for p in model.parameters() if p.ndim <= 1]
    fused = dev.type == "cuda"
    opt = torch.optim.SGD([{"params": decay, "weight_decay": 5e-5}, {"params": no_decay, "weight_decay": 0.0}],
                          lr=0.2, momentum=0.9, nesterov=True, fused=fused)
    total, warm = 100_000, 2_000
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / warm) * 0.5 * (1 + math.cos(math.pi * min(s, total) / total)))
    acc = torch.zeros((), device=dev)
    log = {"loss": None, "reads": 0}

    def batch_on_gpu():
        idx = torch.randint(0, n, (batch,), device=dev, generator=g)
        area = size * size * torch.empty(batch, device=dev).uniform_(0.25, 1.0, generator=g)
        logr = torch.empty(batch, device=dev).uniform_(math.log(3 / 4), math.log(4 / 3), generator=g)
        w = (area * logr.exp()).sqrt().clamp(8, size)
        h = (area / logr.exp()).sqrt().clamp(8, size)
        x0 = (size - w) * torch.rand(batch, device=dev, generator=g)
        y0 = (size - h) * torch.rand(batch, device=dev, generator=g)
        boxes = torch.stack([idx.float(), x0, y0, x0 + w, y0 + h], 1)
        x = torchvision.ops.roi_align(pool, boxes, (crop, crop), aligned=True)
        flip = torch.rand(batch, 1, 1, 1, device=dev, generator=g) < 0.5
        x = torch.where(flip, x.flip(3), x).float()
        return ((x - mean) / std).contiguous(memory_format=torch.channels_last), labels[idx]

    def step(i):
        x, y = batch_on_gpu()
        with torch.autocast(dev.type, dtype=torch.bfloat16):
            loss = F.cross_entropy(model(x).float(), y, label_smoothing=0.1)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        acc.add_(loss.detach())
        if i % 50 == 49:
            log["loss"] = acc.item() / 50
            log["reads"] += 1
            acc.zero_()

    cc.run("h_timm_resnet101_roialign_bf16", args, step, batch, extra=lambda: {"loss_reads": log["reads"]})


if __name__ == "__main__":
    main()
