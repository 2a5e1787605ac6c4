"""C5 + C1 (a training script still on its debug profile: CUDA_LAUNCH_BLOCKING=1 and no loader
workers): semantic segmentation of street scenes (Cityscapes-sized: 19 classes, 255 ignored,
images at half resolution, 512 x 1024) with an HF transformers SegFormer-B2 built from its
config (SegformerConfig: depths 3/4/6/3, widths 64/128/320/512, all-MLP decoder of 768; random
weights), bf16 autocast, AdamW (lr 6e-5, poly decay, as the SegFormer recipe), the model's own
loss (logits upsampled to the labels, cross-entropy ignoring 255), batch 8 crops of 512 x 512;
the loss is summed on the GPU and read every 50 steps. The Dataset holds 64 images and label
maps in memory and augments each sample the mmsegmentation way with PIL and numpy: a random
scale in [1, 2] and a 512 crop (the source window resized with PIL, bilinear for the image,
nearest for the labels), a horizontal flip and photometric distortion (PIL ImageEnhance
brightness, contrast and colour), returned as uint8 CHW; normalization is on the GPU.

The script's config has a "debug" and a "cluster" profile, and its profile line still says
debug, left from chasing a device-side assert: the debug profile exports CUDA_LAUNCH_BLOCKING=1
(and TORCH_SHOW_CPP_STACKTRACES=1) before CUDA starts, so that the error points at its kernel,
and sets the DataLoader's num_workers to 0, so that a failing sample raises in the main process.
With both, each step first augments its 8 samples on the training thread (the GPU idle), then
launches about 1,800 kernels (SegFormer's many small layers, forward and backward, and the
optimizer's foreach passes over its 377 tensors) one at a time, each launch returning only
when its kernel has finished: host time, GPU time and a launch round trip per kernel add up
instead of overlapping.

--fix: the cluster profile, which applies gpuwhy's advice for both causes: no
CUDA_LAUNCH_BLOCKING (the C5 advice: unset it) and DataLoader(num_workers=one per free core
(cc.fix_workers()), persistent_workers=True, prefetch_factor=4) (the C1 advice); pin_memory,
model, data, augmentation and optimizer the same in both profiles.

Written blind for the echo batch.
"""
import os

import numpy as np
import torch
from PIL import Image, ImageEnhance
from torch.utils.data import DataLoader, Dataset
from transformers import SegformerConfig, SegformerForSemanticSegmentation

import cc

PROFILES = {
    # debug: launches synchronous so a device-side assert points at its kernel, samples made
    # in the main process so a failing one raises there
    "debug": {"env": {"CUDA_LAUNCH_BLOCKING": "1", "TORCH_SHOW_CPP_STACKTRACES": "1"}, "num_workers": 0},
    "cluster": {"env": {}, "num_workers": "auto"},
}
MEAN = (123.675, 116.28, 103.53)
STD = (58.395, 57.12, 57.375)
CLASSES = 19


class StreetScenes(Dataset):
    def __init__(self, n, h, w, crop):
        rng = np.random.default_rng(0)
        coarse = rng.integers(0, 256, (n, h // 16, w // 16, 3), dtype=np.uint8)
        self.images = np.stack([np.asarray(Image.fromarray(c).resize((w, h), Image.BILINEAR)) for c in coarse])
        lab = rng.integers(0, CLASSES, (n, h // 32, w // 32), dtype=np.uint8)
        lab[rng.random(lab.shape) < 0.05] = 255  # unlabeled regions
        self.labels = np.repeat(np.repeat(lab, 32, 1), 32, 2)
        self.crop = crop

    def __len__(self):
        return 1_000_000

    def __getitem__(self, i):
        rng = np.random.default_rng(i)
        k = i % len(self.images)
        h, w = self.labels.shape[1:]
        win = int(round(self.crop / rng.uniform(1.0, 2.0)))  # random scale in [1, 2], then a crop
        y0, x0 = int(rng.integers(0, h - win + 1)), int(rng.integers(0, w - win + 1))
        img = Image.fromarray(self.images[k, y0:y0 + win, x0:x0 + win]).resize((self.crop, self.crop), Image.BILINEAR)
        lab = Image.fromarray(self.labels[k, y0:y0 + win, x0:x0 + win]).resize((self.crop, self.crop), Image.NEAREST)
        if rng.random() < 0.5:
            img, lab = img.transpose(Image.FLIP_LEFT_RIGHT), lab.transpose(Image.FLIP_LEFT_RIGHT)
        img = ImageEnhance.Brightness(img).enhance(rng.uniform(0.75, 1.25))  # photometric distortion
        img = ImageEnhance.Contrast(img).enhance(rng.uniform(0.5, 1.5))
        img = ImageEnhance.Color(img).enhance(rng.uniform(0.5, 1.5))
        return (torch.from_numpy(np.asarray(img).transpose(2, 0, 1).copy()),
                torch.from_numpy(np.asarray(lab).copy()))


def main():
    args = cc.parser(__doc__).parse_args()
    name = "cluster" if args.fix else "debug"  # the config file's profile line
    profile = PROFILES[name]
    os.environ.update(profile["env"])  # gpuwhy: plants C5 (the debug profile exports CUDA_LAUNCH_BLOCKING=1 before CUDA starts)
    dev = cc.torch_device(args)
    if args.smoke:
        data = StreetScenes(4, 64, 128, 32)
        cfg = SegformerConfig(num_labels=CLASSES, depths=[1, 1, 1, 1], hidden_sizes=[16, 32, 64, 128],
                              decoder_hidden_size=64, semantic_loss_ignore_index=255)
        batch = 2
    else:
        data = StreetScenes(64, 512, 1024, 512)
        cfg = SegformerConfig(num_labels=CLASSES, depths=[3, 4, 6, 3], hidden_sizes=[64, 128, 320, 512],
                              decoder_hidden_size=768, semantic_loss_ignore_index=255)  # SegFormer-B2
        batch = 8
    if profile["num_workers"] == "auto":
        loader = DataLoader(data, batch_size=batch, shuffle=True, drop_last=True, num_workers=cc.fix_workers(),
                            pin_memory=True, persistent_workers=True, prefetch_factor=4)
    else:
        loader = DataLoader(data, batch_size=batch, shuffle=True, drop_last=True,  # gpuwhy: plants C1 (num_workers=0: the 8 samples augmented on the training thread)
                            num_workers=profile["num_workers"], pin_memory=True)
    torch.manual_seed(0)
    model = SegformerForSemanticSegmentation(cfg).to(dev).train()
    opt = torch.optim.AdamW(model.parameters(), lr=6e-5, weight_decay=0.01)
    total = 160_000
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: (1 - min(s, total - 1) / total) ** 1.0)
    mean = torch.tensor(MEAN, device=dev).view(1, 3, 1, 1)
    std = torch.tensor(STD, device=dev).view(1, 3, 1, 1)
    acc = torch.zeros((), device=dev)
    log = {"loss": None, "reads": 0}
    it = iter(loader)

    def step(i):
        img, lab = next(it)
        img = img.to(dev, non_blocking=True)
        lab = lab.to(dev, non_blocking=True).long()
        x = (img.float() - mean) / std
        with torch.autocast(dev.type, dtype=torch.bfloat16):
            loss = model(pixel_values=x, labels=lab).loss
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        acc.add_(loss.detach())
        if i % 50 == 49:
            log["loss"] = acc.item() / 50
            log["reads"] += 1
            acc.zero_()

    cc.run("m_hf_segformer_debug_profile", args, step, batch,
           extra=lambda: {"profile": name, "cuda_launch_blocking": os.environ.get("CUDA_LAUNCH_BLOCKING", "unset"),
                          "num_workers": loader.num_workers, "loss_reads": log["reads"]})


if __name__ == "__main__":
    main()
