"""C6 pageable host memory (pin_memory=True that pins nothing: the batch is a dataclass): 2D human
pose estimation with SimpleBaseline (Xiao et al. 2018): a torchvision ResNet-50 backbone
(weights=None) and three 4 x 4 stride-2 deconvolutions of 256 channels with BatchNorm and ReLU,
a 1 x 1 convolution to 17 COCO keypoint heatmaps; input 256 x 192, heatmaps 64 x 48;
JointsMSELoss with target weights; Adam (lr 1e-3, foreach); bf16 autocast, channels_last,
cudnn.benchmark; batch 64; the loss is read every 50 steps.

The input pipeline is the reference one in spirit: a Dataset over 4,096 person crops held in
RAM as uint8 (288 x 216, synthetic, with 17 keypoints each) whose __getitem__ takes a random
256 x 192 crop, flips it half the time (swapping left and right joints), converts and
normalizes it to float32 CHW (ToTensor + Normalize) and renders the 17 target Gaussians
(sigma 2) at 64 x 48; 12 DataLoader workers (persistent, prefetch 4) and pin_memory=True. The
collate_fn, written for readability, returns a @dataclass PoseBatch(images, heatmaps,
target_weight) with a to(device, non_blocking) method. PyTorch's pin-memory thread pins
tensors, mappings, sequences and objects with a pin_memory() method; a plain dataclass is
passed through as it is, so every step copies 38 MB of images and 13 MB of heatmaps from
pageable memory, and the non_blocking copies are synchronous: each waits for the stream
(the previous step) and then for the staged copy, at a pageable copy rate.

--fix: gpuwhy's C6 advice (pinned host memory, non-blocking copies): PoseBatch gains the
pin_memory() method the DataLoader documentation asks custom batch types for, so the
pin-memory thread pins it and the copies are asynchronous; data, workers, model, loss and
optimizer unchanged.

Written blind for the papa batch.
"""
import dataclasses

import numpy as np
import torch
import torch.nn as nn
import torchvision
from torch.utils.data import DataLoader, Dataset

import cc

FLIP_PAIRS = [(1, 2), (3, 4), (5, 6), (7, 8), (9, 10), (11, 12), (13, 14), (15, 16)]
MEAN = torch.tensor([0.485, 0.456, 0.406]).view(3, 1, 1)
STD = torch.tensor([0.229, 0.224, 0.225]).view(3, 1, 1)


@dataclasses.dataclass
class PoseBatch:
    images: torch.Tensor         # (B, 3, H, W) float32, normalized
    heatmaps: torch.Tensor       # (B, 17, H/4, W/4) float32
    target_weight: torch.Tensor  # (B, 17, 1) float32

    def to(self, device, non_blocking=False):
        return type(self)(*(t.to(device, non_blocking=non_blocking) for t in dataclasses.astuple(self)))


@dataclasses.dataclass
class PinnedPoseBatch(PoseBatch):
    def pin_memory(self):
        """What the DataLoader docs ask of a custom batch type: called by the pin-memory thread."""
        return type(self)(*(t.pin_memory() for t in dataclasses.astuple(self)))


class PersonCrops(Dataset):
    def __init__(self, images, joints, visible, size, sigma, length):
        self.images, self.joints, self.visible = images, joints, visible
        self.h, self.w = size
        self.sigma, self.length = sigma, length
        self.ys = np.arange(self.h // 4, dtype=np.float32)[:, None]
        self.xs = np.arange(self.w // 4, dtype=np.float32)[None, :]

    def __len__(self):
        return self.length

    def __getitem__(self, i):
        rng = np.random.default_rng((i * 7919 + torch.initial_seed()) % 2 ** 63)
        k = i % self.images.shape[0]
        img, joints, vis = self.images[k], self.joints[k].copy(), self.visible[k].copy()
        oy = int(rng.integers(0, img.shape[0] - self.h + 1))
        ox = int(rng.integers(0, img.shape[1] - self.w + 1))
        crop = img[oy:oy + self.h, ox:ox + self.w]
        joints -= (ox, oy)
        if rng.random() < 0.5:
            crop = crop[:, ::-1]
            joints[:, 0] = self.w - 1 - joints[:, 0]
            for a, b in FLIP_PAIRS:
                joints[[a, b]], vis[[a, b]] = joints[[b, a]], vis[[b, a]]
        x = torch.from_numpy(np.ascontiguousarray(crop)).permute(2, 0, 1).contiguous().float().div_(255)  # ToTensor
        x = x.sub_(MEAN).div_(STD)                                                                          # Normalize
        mu = joints / 4.0
        inside = (mu[:, 0] >= 0) & (mu[:, 0] < self.w // 4) & (mu[:, 1] >= 0) & (mu[:, 1] < self.h // 4)
        weight = (vis & inside).astype(np.float32)
        g = np.exp(-((self.xs[None] - mu[:, 0, None, None]) ** 2 + (self.ys[None] - mu[:, 1, None, None]) ** 2)
                   / (2 * self.sigma ** 2)).astype(np.float32)
        return x, torch.from_numpy(g * weight[:, None, None]), torch.from_numpy(weight[:, None])


def make_collate(cls):
    def collate(samples):
        xs, hs, ws = zip(*samples)
        return cls(torch.stack(xs), torch.stack(hs), torch.stack(ws))
    return collate


class SimpleBaseline(nn.Module):
    def __init__(self, joints=17):
        super().__init__()
        r = torchvision.models.resnet50(weights=None)
        self.backbone = nn.Sequential(*list(r.children())[:-2])
        layers, cin = [], 2048
        for _ in range(3):
            layers += [nn.ConvTranspose2d(cin, 256, 4, 2, 1, bias=False), nn.BatchNorm2d(256), nn.ReLU(inplace=True)]
            cin = 256
        self.deconv = nn.Sequential(*layers)
        self.final = nn.Conv2d(256, joints, 1)

    def forward(self, x):
        return self.final(self.deconv(self.backbone(x)))


def joints_mse(pred, target, weight):
    """JointsMSELoss(use_target_weight=True): 0.5 * MSE per joint, averaged over the joints."""
    b, j = pred.shape[:2]
    p, t = pred.float().reshape(b, j, -1), target.reshape(b, j, -1)
    return 0.5 * ((p * weight - t * weight) ** 2).mean()


def make_people(n, h, w, rng):
    """Person-like crops: smooth backgrounds with limb-coloured strokes near 17 keypoints."""
    small = rng.integers(0, 256, (n, h // 8, w // 8, 3), dtype=np.uint8)
    images = np.repeat(np.repeat(small, 8, axis=1), 8, axis=2)
    centre = np.array([w / 2, h / 2], np.float32)
    template = np.array([[0, -90], [-8, -96], [8, -96], [-16, -92], [16, -92], [-30, -60], [30, -60], [-40, -20],
                         [40, -20], [-44, 15], [44, 15], [-20, 20], [20, 20], [-22, 70], [22, 70], [-24, 115],
                         [24, 115]], np.float32)
    joints = centre + template[None] * rng.uniform(0.8, 1.1, (n, 1, 1)) + rng.normal(0, 6, (n, 17, 2))
    joints = joints.astype(np.float32)
    for k in range(n):
        for x, y in joints[k].astype(int):
            images[k, max(0, y - 3):y + 3, max(0, x - 3):x + 3] = (255, 64, 32)
    visible = rng.random((n, 17)) < 0.85
    return images, joints, visible


def main():
    args = cc.parser(__doc__, warmup=6).parse_args()
    dev = cc.torch_device(args)
    gpu = dev.type == "cuda"
    if args.smoke:
        n_img, size, batch, workers = 32, (64, 32), 4, 2
    else:
        n_img, size, batch, workers = 4096, (256, 192), 64, 12
    rng = np.random.default_rng(0)
    images, joints, visible = make_people(n_img, size[0] + 32, size[1] + 24, rng)
    data = PersonCrops(images, joints, visible, size, 2.0, 10_000_000)
    batch_cls = PinnedPoseBatch if args.fix else PoseBatch
    loader = DataLoader(data, batch_size=batch, shuffle=True, drop_last=True, num_workers=workers,
                        collate_fn=make_collate(batch_cls), pin_memory=gpu, prefetch_factor=4,
                        persistent_workers=True)
    torch.backends.cudnn.benchmark = True
    torch.manual_seed(0)
    model = SimpleBaseline().to(dev, memory_format=torch.channels_last).train()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, foreach=True)
    amp = torch.autocast(dev.type, dtype=torch.bfloat16, enabled=gpu)
    it = iter(loader)
    st = {"acc": torch.zeros((), device=dev), "loss": None, "reads": 0, "pinned": None}

    def step(i):
        b = next(it)
        st["pinned"] = b.images.is_pinned() if gpu else None
        b = b.to(dev, non_blocking=True)  # gpuwhy: plants C6 (PoseBatch has no pin_memory(): pin_memory=True leaves it pageable, 51 MB copied from pageable memory a step)
        with amp:
            pred = model(b.images.contiguous(memory_format=torch.channels_last))
        loss = joints_mse(pred, b.heatmaps, b.target_weight)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        st["acc"] += loss.detach()
        if i % 50 == 49:
            st["loss"] = st["acc"].item() / 50
            st["acc"].zero_()
            st["reads"] += 1

    cc.run("c6_tv_pose_dataclass_batch_unpinned", args, step, batch,
           extra=lambda: {"batch_type": batch_cls.__name__, "batch_pinned": st["pinned"], "num_workers": workers,
                          "input": list(size), "copy_mb_per_step": round(batch * (3 * size[0] * size[1] + 17 * size[0] * size[1] // 16) * 4 / 1e6, 1),
                          "loss": st["loss"], "loss_reads": st["reads"]})


if __name__ == "__main__":
    main()
