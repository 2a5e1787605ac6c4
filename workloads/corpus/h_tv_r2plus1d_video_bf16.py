"""Healthy control (torchvision video model, convolution-bound): Kinetics-400-style action
recognition with torchvision's R(2+1)D-18 (random weights, 400 classes), clips of 16 frames at
112 x 112, batch 32, bf16 autocast, channels_last_3d, SGD with Nesterov momentum (foreach),
warm-up and cosine decay, label smoothing 0.1; the loss is summed on the GPU and read every 50
steps. The videos are decoded once into memory (96 videos of 64 frames at 128 x 171, uint8, the
resolution the torchvision video recipe resizes to), and a Dataset cuts each clip the recipe's
way: a random 16-frame window, a random 112 x 112 crop and a horizontal flip, by numpy slicing,
returned as uint8 (T, H, W, C); 8 persistent loader workers with pin_memory and prefetch_factor
4 serve 19 MB uint8 batches, copied with non_blocking; the permute, conversion and normalization
run on the GPU. About 7.8 TFLOP a step of factorized 3D convolutions (40.5 GMACs a clip
forward) in cuDNN; the host issues ~600 kernels a step, far less than the GPU's work.

--fix changes nothing: this is a control.

Written blind for the echo batch.
"""
import math

import numpy as np
import torch
import torch.nn.functional as F
import torchvision
from torch.utils.data import DataLoader, Dataset

import cc

MEAN = (0.43216, 0.394666, 0.37645)
STD = (0.22803, 0.22145, 0.216989)


class Clips(Dataset):
    def __init__(self, videos, frames, h, w, clip, crop, classes):
        rng = np.random.default_rng(0)
        # decoded videos: smooth frames that drift over time, in uint8 (T, H, W, C)
        base = rng.integers(0, 256, (videos, 1, h // 8 + 1, w // 8 + 1, 3), dtype=np.uint8)
        self.videos = np.empty((videos, frames, h, w, 3), np.uint8)
        pan = (np.arange(w)[None, :] - np.arange(frames)[:, None]) % w  # the camera pans one pixel a frame
        for v in range(videos):
            up = np.repeat(np.repeat(base[v, 0], 8, 0), 8, 1)[:h, :w]
            self.videos[v] = up[:, pan].transpose(1, 0, 2, 3)
        self.labels = rng.integers(0, classes, videos)
        self.clip, self.crop = clip, crop

    def __len__(self):
        return 1_000_000

    def __getitem__(self, i):
        rng = np.random.default_rng(i)
        v = i % len(self.videos)
        _, n, h, w, _ = self.videos.shape
        t0 = int(rng.integers(0, n - self.clip + 1))
        y0, x0 = int(rng.integers(0, h - self.crop + 1)), int(rng.integers(0, w - self.crop + 1))
        x = self.videos[v, t0:t0 + self.clip, y0:y0 + self.crop, x0:x0 + self.crop]
        if rng.random() < 0.5:
            x = x[:, :, ::-1]
        return torch.from_numpy(np.ascontiguousarray(x)), int(self.labels[v])


def main():
    args = cc.parser(__doc__).parse_args()
    dev = cc.torch_device(args)
    torch.backends.cudnn.benchmark = True
    if args.smoke:
        data = Clips(4, 8, 40, 48, 4, 32, 400)
        batch, workers = 2, 2
    else:
        data = Clips(96, 64, 128, 171, 16, 112, 400)
        batch, workers = 32, 8
    loader = DataLoader(data, batch_size=batch, shuffle=True, drop_last=True, num_workers=workers,
                        pin_memory=dev.type == "cuda", persistent_workers=True, prefetch_factor=4)
    torch.manual_seed(0)
    model = torchvision.models.video.r2plus1d_18(num_classes=400)
    model = model.to(dev, memory_format=torch.channels_last_3d)
    opt = torch.optim.SGD(model.parameters(), lr=0.08, momentum=0.9, nesterov=True, weight_decay=1e-4, foreach=True)
    total, warm = 30_000, 500
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / warm) * 0.5 * (1 + math.cos(math.pi * min(s, total) / total)))
    mean = torch.tensor(MEAN, device=dev).view(1, 3, 1, 1, 1) * 255
    std = torch.tensor(STD, device=dev).view(1, 3, 1, 1, 1) * 255
    acc = torch.zeros((), device=dev)
    log = {"loss": None, "reads": 0}
    it = iter(loader)

    def step(i):
        x, y = next(it)
        x, y = x.to(dev, non_blocking=True), y.to(dev, non_blocking=True)
        x = ((x.permute(0, 4, 1, 2, 3).float() - mean) / std).contiguous(memory_format=torch.channels_last_3d)
        with torch.autocast(dev.type, dtype=torch.bfloat16):
            loss = F.cross_entropy(model(x), y, label_smoothing=0.1)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        acc.add_(loss.detach())
        if i % 50 == 49:
            log["loss"] = acc.item() / 50
            log["reads"] += 1
            acc.zero_()

    cc.run("h_tv_r2plus1d_video_bf16", args, step, batch,
           extra=lambda: {"clip": [data.clip, data.crop, data.crop], "loss_reads": log["reads"]})


if __name__ == "__main__":
    main()
