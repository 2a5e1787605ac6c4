"""C2 storage reads (one LiDAR scan and its label file per sample, read cold on the training
thread): bird's-eye-view semantic segmentation of SemanticKITTI-style LiDAR scans (Behley et
al., ICCV 2019) with a PointPillars encoder and backbone (Lang et al., CVPR 2019, as
OpenPCDet's PointPillar configuration for KITTI lays it out), in plain PyTorch. The data set is
laid out as SemanticKITTI ships it: sequences/00/velodyne/NNNNNN.bin (float32 x, y, z,
remission; 110,000-125,000 points from a 64-beam sensor, ~1.9 MB) and sequences/00/labels/
NNNNNN.label (one uint32 a point, ~0.47 MB), 1,024 synthetic scans (2.4 GB, written once under
GW_CORPUS_CACHE and synced, must not be a tmpfs). Each step reads 8 scans with np.fromfile in
the Dataset's __getitem__, under a DataLoader with pin_memory=True and the default
num_workers=0; on the GPU the points go into 0.16 m pillars over [0, 69.12] x [-39.68, 39.68]
m (432 x 496), PointPillars' PFN (9 point features -> 64, BatchNorm, ReLU, max per pillar by
scatter_reduce) makes the 64-channel BEV image, the RPN backbone (3 blocks of 4/6/6 3 x 3
convolutions of 64/128/256 channels at strides 2/4/8, BatchNorm, ReLU, three transposed
convolutions to 128 channels at stride 2, concatenated) and a 1 x 1 head predict each cell's
20 SemanticKITTI classes (the majority label of its points, empty cells ignored), upsampled
to the pillar grid; 5.6 M parameters, random weights, bf16 autocast, channels_last, fused
AdamW with a one-cycle schedule, the loss read every 50 steps.

Planted: the scans are dropped from the page cache at every start (posix_fadvise(
POSIX_FADV_DONTNEED) on each file, no root needed, the same effect for these files as
`echo 1 > /proc/sys/vm/drop_caches`), as when the data set sits on a disk the page cache does
not hold: each step waits on 16 cold sequential reads (8 scans, ~19.5 MB) one after another on
the training thread while the GPU finishes the previous step and then idles. Estimated (not
measured): ~2.2 TFLOP a step of convolutions (forward and backward, batch 8) at ~250-350
TFLOP/s plus ~2 GB of BatchNorm/ReLU traffic, ~8-12 ms of GPU work; the reads 10-20 ms a step
on a local NVMe disk (1-2 GB/s for a single reader), 40-100 ms on a network or virtio disk
(0.2-0.5 GB/s); plain ~20-110 ms a step, the GPU idle ~50-90% of it (the disk sets where).

--fix: gpuwhy's C2 advice (keep the data set in RAM): every scan and label file read once into
memory before training (outside the timed part; ~2-12 s cold), the same Dataset, loader,
order and batch serving them from there; model unchanged. Expected ~10-14 ms a step, about
2-8x. If a plain run passes one epoch (128 steps) its second epoch's reads come from the page
cache (the JSON line's epochs_done).

Written blind for the yankee batch.
"""
import math
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

import cc

VOXEL = 0.16
X_RANGE, Y_RANGE = (0.0, 69.12), (-39.68, 39.68)
N_CLASSES = 20


def make_scans(n, smoke):
    """n synthetic 64-beam scans as SemanticKITTI files, written once and synced."""
    tag = "smoke" if smoke else "full"
    root = os.path.join(cc.CACHE, f"semantickitti_{tag}_{n}", "sequences", "00")
    vel = [os.path.join(root, "velodyne", f"{k:06d}.bin") for k in range(n)]
    lab = [os.path.join(root, "labels", f"{k:06d}.label") for k in range(n)]
    if os.path.exists(os.path.join(root, ".done")):
        return vel, lab
    os.makedirs(os.path.dirname(vel[0]), exist_ok=True)
    os.makedirs(os.path.dirname(lab[0]), exist_ok=True)
    rng = np.random.default_rng(0)
    beams, cols = (16, 256) if smoke else (64, 1950)
    elev = np.deg2rad(np.linspace(-24.8, 2.0, beams)).astype(np.float32)
    for k in range(n):
        az = np.linspace(-np.pi, np.pi, cols, endpoint=False, dtype=np.float32)
        # ground at -1.73 m, walls and objects as a smooth range profile per azimuth
        wall = (8 + 30 * np.abs(np.sin(az * rng.integers(2, 6) + rng.uniform(0, 6)))).astype(np.float32)
        ground = np.where(elev[:, None] < 0, -1.73 / np.tan(np.minimum(elev[:, None], -1e-3)), 1e3)
        rng_m = np.minimum(ground, wall[None, :]) + rng.normal(0, 0.03, (beams, cols)).astype(np.float32)
        rng_m = np.clip(rng_m, 1.0, 80.0).astype(np.float32)
        x = rng_m * np.cos(elev)[:, None] * np.cos(az)[None]
        y = rng_m * np.cos(elev)[:, None] * np.sin(az)[None]
        z = rng_m * np.sin(elev)[:, None]
        rem = rng.uniform(0, 1, (beams, cols)).astype(np.float32)
        pts = np.stack([x, y, z, rem], -1).reshape(-1, 4)
        keep = rng.random(pts.shape[0]) < rng.uniform(0.88, 1.0)          # dropouts: 110-125 k points
        pts = pts[keep].astype(np.float32)
        cls = np.where(pts[:, 2] < -1.6, 9, np.where(pts[:, 2] < 0.5, 10 + (np.abs(pts[:, 1]) > 6), 13 + (pts[:, 3] > 0.5)))
        label = (cls.astype(np.uint32) | (rng.integers(0, 50, pts.shape[0]).astype(np.uint32) << 16))
        pts.tofile(vel[k])
        label.tofile(lab[k])
    os.sync()  # written back, so that the pages can be dropped
    open(os.path.join(root, ".done"), "w").close()
    return vel, lab


def drop_from_page_cache(paths):
    for p in paths:
        fd = os.open(p, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


class SemanticKITTI(Dataset):
    def __init__(self, vel, lab, in_memory=None):
        self.vel, self.lab, self.mem = vel, lab, in_memory
        self.reads = 0

    def __len__(self):
        return len(self.vel)

    def __getitem__(self, i):
        if self.mem is None:
            pts = np.fromfile(self.vel[i], dtype=np.float32).reshape(-1, 4)  # gpuwhy: plants C2 (cold 1.9 MB scan + 0.47 MB label a sample, 8 a step, on the training thread)
            label = np.fromfile(self.lab[i], dtype=np.uint32)
            self.reads += 2
        else:
            pts, label = self.mem[i]
        return torch.from_numpy(pts), torch.from_numpy((label & 0xFFFF).astype(np.int64))


def collate(batch):
    pts = torch.cat([p for p, _ in batch])
    lab = torch.cat([lab for _, lab in batch])
    bidx = torch.cat([torch.full((p.shape[0],), k, dtype=torch.int64) for k, (p, _) in enumerate(batch)])
    return pts, lab, bidx


def conv_bn(ci, co, stride=1):
    return nn.Sequential(nn.Conv2d(ci, co, 3, stride, 1, bias=False), nn.BatchNorm2d(co, eps=1e-3, momentum=0.01), nn.ReLU(inplace=True))


class PointPillarsSeg(nn.Module):
    def __init__(self, nx, ny, widths=(64, 128, 256), layers=(4, 6, 6), up=128, pfn=64):
        super().__init__()
        self.nx, self.ny, self.pfn_c = nx, ny, pfn
        self.pfn = nn.Linear(9, pfn, bias=False)
        self.pfn_bn = nn.BatchNorm1d(pfn, eps=1e-3, momentum=0.01)
        self.blocks, self.deblocks = nn.ModuleList(), nn.ModuleList()
        ci = pfn
        for k, (w, n) in enumerate(zip(widths, layers)):
            self.blocks.append(nn.Sequential(conv_bn(ci, w, 2), *[conv_bn(w, w) for _ in range(n)]))
            s = 2 ** k
            self.deblocks.append(nn.Sequential(nn.ConvTranspose2d(w, up, s, s, bias=False) if s > 1 else nn.Conv2d(w, up, 1, bias=False),
                                               nn.BatchNorm2d(up, eps=1e-3, momentum=0.01), nn.ReLU(inplace=True)))
            ci = w
        self.head = nn.Sequential(nn.Conv2d(up * len(widths), N_CLASSES * 4, 1), nn.PixelShuffle(2))
        self.head_out = nn.Conv2d(N_CLASSES, N_CLASSES, 1)

    def forward(self, feats, cell, batch):
        f = F.relu(self.pfn_bn(self.pfn(feats).float()))                     # (P, 64)
        bev = torch.zeros(batch * self.ny * self.nx + 1, self.pfn_c, device=f.device, dtype=f.dtype)
        bev = bev.scatter_reduce(0, cell[:, None].expand(-1, self.pfn_c), f, "amax", include_self=True)
        x = bev[:-1].view(batch, self.ny, self.nx, self.pfn_c).permute(0, 3, 1, 2).contiguous(memory_format=torch.channels_last)
        ups = []
        for blk, de in zip(self.blocks, self.deblocks):
            x = blk(x)
            ups.append(de(x))
        return self.head_out(self.head(torch.cat(ups, 1)))


def main():
    args = cc.parser(__doc__, warmup=3).parse_args()
    dev = cc.torch_device(args)
    gpu = dev.type == "cuda"
    nx = round((X_RANGE[1] - X_RANGE[0]) / VOXEL)
    ny = round((Y_RANGE[1] - Y_RANGE[0]) / VOXEL)
    if args.smoke:
        n, batch, widths, layers, up, pfn = 32, 2, (8, 16, 16), (1, 1, 1), 8, 8
    else:
        n, batch, widths, layers, up, pfn = 1024, 8, (64, 128, 256), (4, 6, 6), 128, 64
    vel, lab = make_scans(n, args.smoke)
    drop_from_page_cache(vel + lab)
    mem = None
    if args.fix:  # the advice: the whole data set in RAM, read once before training
        mem = [(np.fromfile(v, dtype=np.float32).reshape(-1, 4), np.fromfile(l, dtype=np.uint32)) for v, l in zip(vel, lab)]
    ds = SemanticKITTI(vel, lab, in_memory=mem)
    loader = DataLoader(ds, batch_size=batch, shuffle=True, drop_last=True, collate_fn=collate, pin_memory=gpu)  # num_workers=0 (the default)

    torch.manual_seed(0)
    model = PointPillarsSeg(nx, ny, widths, layers, up, pfn).to(dev).to(memory_format=torch.channels_last).train()
    params = sum(p.numel() for p in model.parameters())
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=1e-2, fused=gpu)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=3e-3, total_steps=100_000, pct_start=0.4)
    amp = torch.autocast(dev.type, dtype=torch.bfloat16, enabled=gpu)
    st = {"it": iter(loader), "epochs": 0, "acc": torch.zeros((), device=dev), "loss": None, "reads": 0, "points": 0, "samples": 0}

    def next_batch():
        try:
            return next(st["it"])
        except StopIteration:
            st["epochs"] += 1
            st["it"] = iter(loader)
            return next(st["it"])

    def step(i):
        pts, label, bidx = next_batch()
        st["points"] += pts.shape[0]
        st["samples"] += batch
        pts = pts.to(dev, non_blocking=True)
        label = label.to(dev, non_blocking=True)
        bidx = bidx.to(dev, non_blocking=True)
        ix = ((pts[:, 0] - X_RANGE[0]) / VOXEL).floor().long()
        iy = ((pts[:, 1] - Y_RANGE[0]) / VOXEL).floor().long()
        inside = (ix >= 0) & (ix < nx) & (iy >= 0) & (iy < ny)
        dump = batch * ny * nx                                             # points outside go to a dummy cell
        cell = torch.where(inside, (bidx * ny + iy.clamp(0, ny - 1)) * nx + ix.clamp(0, nx - 1), dump)
        cx = (ix.float() + 0.5) * VOXEL + X_RANGE[0]
        cy = (iy.float() + 0.5) * VOXEL + Y_RANGE[0]
        # PointPillars' 9 features (the pillar mean replaced by the cell centre's z of 0)
        feats = torch.cat([pts, (pts[:, 0] - cx)[:, None], (pts[:, 1] - cy)[:, None], pts[:, 2:3],
                           (pts[:, 0] - cx)[:, None], (pts[:, 1] - cy)[:, None]], 1)
        # each cell's target: the largest class id among its points (0, unlabeled, where empty)
        tgt = torch.zeros(dump + 1, dtype=torch.int64, device=dev).scatter_reduce(0, cell, label, "amax")
        tgt = tgt[:-1].view(batch, ny, nx)
        with amp:
            logits = model(feats, cell, batch)
        loss = F.cross_entropy(logits.float(), tgt, ignore_index=0)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        st["acc"] += loss.detach()
        if i % 50 == 49:
            st["loss"] = st["acc"].item() / 50
            st["acc"].zero_()
            st["reads"] += 1

    cc.run("c2_torch_semantickitti_scan_bin_cold", args, step, batch,
           extra=lambda: {"scans": n, "bev": [ny, nx], "params_m": round(params / 1e6, 2), "in_memory": mem is not None,
                          "files_read_in_loop": ds.reads, "points_per_scan": round(st["points"] / max(1, st["samples"])),
                          "epochs_done": st["epochs"], "loss": st["loss"], "loss_reads": st["reads"]})


if __name__ == "__main__":
    main()
