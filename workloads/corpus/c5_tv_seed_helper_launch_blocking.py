"""C5 CUDA_LAUNCH_BLOCKING=1 left on (through a reproducibility helper): a Kaggle-style
semantic-segmentation script (building footprints from aerial tiles) that trains torchvision's
DeepLabV3 with a MobileNetV3-Large backbone (random weights, 2 classes, no auxiliary head) at
512 x 512, batch 16, bf16 autocast, channels_last, AdamW (foreach, PyTorch's default) with a
polynomial learning-rate decay, cross-entropy plus a soft Dice term. The tiles (uint8 RGB) and
their masks are held on the GPU (a small competition data set, 256 tiles loaded once) and
augmented there (random flips, brightness and contrast), normalized with the ImageNet mean and
std; the loss is read every 50 steps.

The script starts, as the notebook it came from did, by calling its `seed_everything(42)` helper
copied from a "reproducible PyTorch" snippet: Python, NumPy and torch seeds,
cudnn.deterministic, cudnn.benchmark off, PYTHONHASHSEED, and
os.environ["CUDA_LAUNCH_BLOCKING"] = "1" (the snippet's line for "exact error locations"). The
helper runs before the model is moved to the GPU, so the variable is in the environment when
CUDA starts: every kernel launch waits for the kernel to finish (about 900 launches a step),
and the host's launch work and the GPU's kernels take turns instead of overlapping.

--fix: gpuwhy's C5 advice: the CUDA_LAUNCH_BLOCKING line deleted from the helper; the seeds,
cudnn.deterministic and benchmark settings (and everything else) unchanged.

Written blind for the delta batch.
"""
import os
import random
import sys

import numpy as np
import torch
import torch.nn.functional as F
import torchvision

import cc


def seed_everything(seed=42):
    """Make runs reproducible (as the snippet says)."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    torch.cuda.manual_seed_all(seed)
    os.environ["PYTHONHASHSEED"] = str(seed)
    torch.backends.cudnn.deterministic = True
    torch.backends.cudnn.benchmark = False
    if "--fix" not in sys.argv:
        os.environ["CUDA_LAUNCH_BLOCKING"] = "1"  # gpuwhy: plants C5 (set before CUDA starts: every launch waits for its kernel)


def dice_loss(logits, target, eps=1.0):
    prob = logits.float().softmax(1)[:, 1]
    t = target.float()
    inter = (prob * t).sum((1, 2))
    return 1 - ((2 * inter + eps) / (prob.sum((1, 2)) + t.sum((1, 2)) + eps)).mean()


def main():
    args = cc.parser(__doc__).parse_args()
    seed_everything(42)  # before anything touches CUDA
    dev = cc.torch_device(args)
    tiles, res, batch = (8, 64, 2) if args.smoke else (256, 512, 16)
    model = torchvision.models.segmentation.deeplabv3_mobilenet_v3_large(
        weights=None, weights_backbone=None, num_classes=2, aux_loss=False)
    model = model.to(dev, memory_format=torch.channels_last)
    opt = torch.optim.AdamW(model.parameters(), lr=6e-4, weight_decay=1e-4)
    total = 40_000
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: (1 - min(s, total - 1) / total) ** 0.9)
    g = torch.Generator(device=dev).manual_seed(0)
    # tiles: smooth "roofs" on noise; masks: where the roofs are
    roofs = F.interpolate(torch.rand(tiles, 1, res // 16, res // 16, device=dev, generator=g), size=(res, res),
                          mode="bilinear", align_corners=False)
    masks = (roofs[:, 0] > 0.6).to(torch.uint8)
    images = (roofs * 140 + torch.rand(tiles, 3, res, res, device=dev, generator=g) * 90).to(torch.uint8)
    mean = torch.tensor([0.485, 0.456, 0.406], device=dev).view(1, 3, 1, 1) * 255
    std = torch.tensor([0.229, 0.224, 0.225], device=dev).view(1, 3, 1, 1) * 255
    losses = []
    log = {"loss": None, "reads": 0}

    def step(i):
        idx = torch.randint(0, tiles, (batch,), device=dev, generator=g)
        x, y = images[idx].float(), masks[idx].long()
        flip = torch.rand(batch, 1, 1, 1, device=dev, generator=g) < 0.5
        x, y = torch.where(flip, x.flip(3), x), torch.where(flip[:, 0], y.flip(2), y)
        gain = 1 + 0.2 * (torch.rand(batch, 1, 1, 1, device=dev, generator=g) - 0.5)
        bias = 20 * (torch.rand(batch, 1, 1, 1, device=dev, generator=g) - 0.5)
        x = ((x * gain + bias).clamp(0, 255) - mean) / std
        x = x.contiguous(memory_format=torch.channels_last)
        with torch.autocast(dev.type, dtype=torch.bfloat16):
            out = model(x)["out"]
            loss = F.cross_entropy(out.float(), y) + dice_loss(out, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        losses.append(loss.detach())
        if len(losses) == 50:
            log["loss"] = torch.stack(losses).mean().item()
            log["reads"] += 1
            losses.clear()

    cc.run("c5_tv_seed_helper_launch_blocking", args, step, batch,
           extra=lambda: {"cuda_launch_blocking": os.environ.get("CUDA_LAUNCH_BLOCKING", ""),
                          "loss_reads": log["reads"]})


if __name__ == "__main__":
    main()
