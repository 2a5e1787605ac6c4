"""Healthy control (timm's own training pipeline, CPU-heavy loader workers that keep up):
ImageNet-style training of a timm ConvNeXt-Small (random weights, 1,000 classes, drop path 0.1)
the way timm's train.py sets it up: timm.data.create_loader with is_training=True over a
folder of 448 x 448 JPEG photos (a Dataset with random labels and an ImageNet-sized epoch),
RandomResizedCrop 224, horizontal flip, RandAugment rand-m9-mstd0.5-inc1 (two PIL operations
an image) in 14 persistent worker processes (one per core, two cores left), fast_collate to a
uint8 batch, pinned; timm's PrefetchLoader copies the next batch on a side stream, normalizes it
and applies random erasing (p 0.25) on the GPU; Mixup/CutMix on the GPU with
SoftTargetCrossEntropy; bf16 autocast, channels_last, cudnn.benchmark, fused AdamW with a cosine
schedule, batch 128, loss read every 50 steps. The workers spend several cores decoding and
augmenting, about half of what they could give, and stay ahead of the GPU: it should be busy
throughout after the warm-up (cudnn.benchmark's autotuning in the first steps).

--fix: nothing (control).

Written blind for the india batch.
"""
import math
import os

import numpy as np
import timm
import torch
from PIL import Image
from timm.data import Mixup, create_loader
from timm.loss import SoftTargetCrossEntropy
from torch.utils.data import Dataset

import cc


class PhotoFolder(Dataset):
    """What timm's ImageDataset does for a folder: PIL image and target; create_loader sets .transform."""

    def __init__(self, files, classes, length):
        self.files, self.length = files, length
        self.targets = np.random.default_rng(0).integers(0, classes, len(files))
        self.transform = None

    def __len__(self):
        return self.length

    def __getitem__(self, i):
        j = i % len(self.files)
        with Image.open(self.files[j]) as im:
            img = im.convert("RGB")
        if self.transform is not None:
            img = self.transform(img)
        return img, int(self.targets[j])


def main():
    args = cc.parser(__doc__, warmup=8).parse_args()
    dev = cc.torch_device(args)
    gpu = dev.type == "cuda"
    n_files, size, crop, batch, arch = (32, 96, 64, 8, "convnext_atto") if args.smoke else (512, 448, 224, 128, "convnext_small")
    workers = 1 if args.smoke else max(1, len(os.sched_getaffinity(0)) - 2)
    _, files = cc.jpeg_dir(n=n_files, size=size, tag="jpeg")
    torch.backends.cudnn.benchmark = True
    loader = create_loader(PhotoFolder(files, 1000, 1_281_167), input_size=(3, crop, crop), batch_size=batch,
                           is_training=True, auto_augment="rand-m9-mstd0.5-inc1", re_prob=0.25, re_mode="pixel",
                           interpolation="bicubic", num_workers=workers, pin_memory=gpu, use_prefetcher=gpu,
                           device=dev, persistent_workers=True)
    it = iter(loader)
    torch.manual_seed(0)
    model = timm.create_model(arch, pretrained=False, num_classes=1000, drop_path_rate=0.1)
    model = model.to(dev).to(memory_format=torch.channels_last)
    mixup = Mixup(mixup_alpha=0.8, cutmix_alpha=1.0, label_smoothing=0.1, num_classes=1000)
    criterion = SoftTargetCrossEntropy()
    opt = torch.optim.AdamW(model.parameters(), lr=4e-3 * batch / 4096, weight_decay=0.05, fused=gpu)
    total = 100_000
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 2000) * 0.5 * (1 + math.cos(math.pi * min(s, total) / total)))
    amp = torch.autocast(dev.type, dtype=torch.bfloat16, enabled=gpu)
    st = {"loss": None, "reads": 0}

    def step(i):
        x, y = next(it)
        x, y = mixup(x.to(dev, non_blocking=True), y.to(dev, non_blocking=True))
        x = x.contiguous(memory_format=torch.channels_last)
        with amp:
            loss = criterion(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        if i % 50 == 49:
            st["loss"] = loss.item()
            st["reads"] += 1

    cc.run("h_timm_convnext_randaug_loader_bf16", args, step, batch,
           extra=lambda: {"loader_workers": workers, "prefetcher": gpu, "jpeg_px": size, "loss": st["loss"],
                          "loss_reads": st["reads"]})


if __name__ == "__main__":
    main()
