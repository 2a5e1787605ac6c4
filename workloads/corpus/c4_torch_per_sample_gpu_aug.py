"""C4 launch-bound augmentation on the GPU, one sample at a time: a torchvision ResNet-18
(96 px crops, 100 classes, bf16 autocast, channels_last, SGD with Nesterov momentum, label
smoothing) trained from 4096 uint8 images of 112x112 kept on the GPU. Each batch of 256 is
augmented in a Python loop over its samples, the way a torchvision-style transform is
written for one image: a random 96 px crop by slicing, a random horizontal flip, a random
brightness/contrast change around the image's mean, and a random rotation of up to 15
degrees (a rotation matrix from a precomputed table of 31, F.affine_grid and F.grid_sample
on a batch of one), then torch.stack. About 19 small kernels a sample (the float conversion,
the flip, the mean and the contrast change, affine_grid's base grid and product,
grid_sample), some 4,800 a step, issued by the interpreter while the GPU finishes each in a
few microseconds; the random numbers come from Python's `random` (no host reads of GPU
values).

--fix: the same augmentations batched: the per-sample parameters drawn as tensors on the
GPU (crop offsets, flip mask, brightness and contrast factors, rotation index into the same
table), flips applied with a mask (torch.where), brightness/contrast with per-sample
factors, and the rotation's sampling grid (one F.affine_grid for the batch) shifted and scaled
into each image's crop window: one F.grid_sample for the whole batch. About 40 kernels a step;
the output is augment_one's but at the rotated crop's edges, where the bilinear taps read the
neighbouring pixels instead of zeros.

Written blind for the harbor batch.
"""
import math
import random

import torch
import torch.nn.functional as F
import torchvision

import cc

MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)
MAX_DEG = 15


def rotation_table(dev):
    """(31, 2, 3): rotation matrices for -15..15 degrees, for F.affine_grid."""
    out = []
    for deg in range(-MAX_DEG, MAX_DEG + 1):
        a = math.radians(deg)
        out.append([[math.cos(a), -math.sin(a), 0.0], [math.sin(a), math.cos(a), 0.0]])
    return torch.tensor(out, device=dev)


def augment_one(img, rot, crop):
    """One uint8 (3, H, W) image on the GPU -> a float (3, crop, crop) training sample."""
    _, h, w = img.shape
    top, left = random.randint(0, h - crop), random.randint(0, w - crop)
    x = img[:, top:top + crop, left:left + crop].float().div_(255)
    if random.random() < 0.5:
        x = x.flip(-1)
    brightness, contrast = random.uniform(0.75, 1.25), random.uniform(0.75, 1.25)
    m = x.mean()
    x = ((x - m) * contrast + m * brightness).clamp_(0, 1)
    theta = rot[random.randint(0, 2 * MAX_DEG)].unsqueeze(0)
    grid = F.affine_grid(theta, (1, 3, crop, crop), align_corners=False)
    return F.grid_sample(x.unsqueeze(0), grid, mode="bilinear", padding_mode="zeros", align_corners=False)[0]


def augment_batch(imgs, rot, crop, gen):
    """The same augmentations for a (B, 3, H, W) uint8 batch, as batched tensor operations."""
    b, _, h, w = imgs.shape
    dev = imgs.device
    top = torch.randint(0, h - crop + 1, (b,), device=dev, generator=gen)
    left = torch.randint(0, w - crop + 1, (b,), device=dev, generator=gen)
    flip = torch.rand(b, 1, 1, 1, device=dev, generator=gen) < 0.5
    bc = torch.empty(b, 2, 1, 1, 1, device=dev).uniform_(0.75, 1.25, generator=gen)
    angle = torch.randint(0, 2 * MAX_DEG + 1, (b,), device=dev, generator=gen)
    x = imgs.float().div_(255)
    x = torch.where(flip, x.flip(-1), x)
    # each crop's mean, as augment_one takes it (on a flipped image the window is mirrored)
    left = torch.where(flip.view(b), w - crop - left, left)
    ys = torch.arange(h, device=dev)
    xs = torch.arange(w, device=dev)
    inside = (((ys >= top[:, None]) & (ys < top[:, None] + crop))[:, :, None] &
              ((xs >= left[:, None]) & (xs < left[:, None] + crop))[:, None, :])
    m = (x * inside[:, None]).sum((1, 2, 3), keepdim=True) / (3 * crop * crop)
    x = ((x - m) * bc[:, 1] + m * bc[:, 0]).clamp_(0, 1)
    # the rotation in each crop's own coordinates, then mapped into the whole image (one grid for
    # the batch); points that fall outside the crop read zeros, as they do in augment_one
    grid = F.affine_grid(rot[angle], (b, 3, crop, crop), align_corners=False)
    outside = (grid.abs() > 1).any(-1, keepdim=True)
    cx = (2 * (left.float() + crop / 2) / w) - 1
    cy = (2 * (top.float() + crop / 2) / h) - 1
    grid = torch.stack([grid[..., 0] * (crop / w) + cx[:, None, None], grid[..., 1] * (crop / h) + cy[:, None, None]], -1)
    grid = grid.masked_fill(outside, 2.0)
    return F.grid_sample(x, grid, mode="bilinear", padding_mode="zeros", align_corners=False)


def main():
    args = cc.parser(__doc__).parse_args()
    dev = cc.torch_device(args)
    n, size, crop, batch, classes = (64, 40, 32, 8, 10) if args.smoke else (4096, 112, 96, 256, 100)
    g = torch.Generator(device=dev).manual_seed(0)
    images = torch.randint(0, 256, (n, 3, size, size), dtype=torch.uint8, device=dev, generator=g)
    labels = torch.randint(0, classes, (n,), device=dev, generator=g)
    rot = rotation_table(dev)
    mean = torch.tensor(MEAN, device=dev).view(1, 3, 1, 1)
    std = torch.tensor(STD, device=dev).view(1, 3, 1, 1)
    model = torchvision.models.resnet18(num_classes=classes).to(dev, memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, nesterov=True, weight_decay=5e-5, foreach=True)
    random.seed(0)

    def step(i):
        idx = random.sample(range(n), batch)
        idx_t = torch.tensor(idx)
        idx_t = idx_t.pin_memory() if dev.type == "cuda" else idx_t
        idx_t = idx_t.to(dev, non_blocking=True)
        y = labels[idx_t]
        if args.fix:
            x = augment_batch(images[idx_t], rot, crop, g)
        else:
            x = torch.stack([augment_one(images[j], rot, crop) for j in idx])  # gpuwhy: plants C4 (per-sample augmentation loop, ~19 kernels a sample)
        x = ((x - mean) / std).contiguous(memory_format=torch.channels_last)
        with torch.autocast(dev.type, dtype=torch.bfloat16):
            loss = F.cross_entropy(model(x), y, label_smoothing=0.1)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    cc.run("c4_torch_per_sample_gpu_aug", args, step, batch, extra={"batched_augmentation": bool(args.fix)})


if __name__ == "__main__":
    main()
