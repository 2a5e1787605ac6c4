"""C1 data loading (too few workers for point-cloud preprocessing): a DGCNN-style semantic
segmentation network (three EdgeConv blocks over a k=20 nearest-neighbour graph rebuilt
from the features at each block, a 1024-wide global feature, a per-point head over 13
classes; plain PyTorch, bf16 autocast with the neighbour search in float32, AdamW, batch
32 blocks of 2048 points) trained on indoor scans the S3DIS way: 64 synthetic rooms of
200,000 coloured, labelled points (floor, ceiling, walls, furniture boxes) held in memory,
and a Dataset whose __getitem__ cuts a random 2 m x 2 m block out of a room, subsamples it
on a 2 cm voxel grid (np.unique over the voxel keys), draws 2048 points, applies two
elastic distortions (noise on a coarse grid, box-blurred, interpolated trilinearly at
every point), a rotation about z, anisotropic scaling, jitter and colour jitter, and
builds the 9 features per point (centred xyz, rgb, xyz normalized to the block), all in
numpy. A DataLoader with num_workers=2 (persistent, pinned) collates the blocks: a batch
costs one worker several GPU steps, so two workers cannot keep up and the training thread
waits for batches.

--fix: gpuwhy's C1 advice (add loader workers): num_workers = the free cores
(cc.fix_workers()), prefetch_factor=4, persistent_workers=True; Dataset and model
unchanged.

Written blind for the quarry batch.
"""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

import cc

CLASSES = 13


def make_room(rng, n):
    """One room: floor, ceiling, four walls and twelve boxes of furniture, with colours
    that depend on the class (plus noise)."""
    w, d, h = rng.uniform(4, 8), rng.uniform(4, 8), rng.uniform(2.6, 3.2)
    size = np.array([w, d, h])
    parts = []

    def plane(k, cls, axis, val):
        p = rng.uniform(0, 1, (k, 3)) * size
        p[:, axis] = val + rng.normal(0, 0.005, k)
        parts.append((p, np.full(k, cls)))

    m = n // 10
    plane(2 * m, 0, 2, 0.0)
    plane(m, 1, 2, h)
    for axis, val in ((0, 0.0), (0, w), (1, 0.0), (1, d)):
        plane(m, 2, axis, val)
    boxes = 12
    k = (n - 7 * m) // boxes
    for b in range(boxes):
        corner = rng.uniform(0.1, 0.8, 3) * np.array([w, d, 0])
        parts.append((corner + rng.uniform(0, 1, (k, 3)) * rng.uniform(0.3, 1.5, 3), np.full(k, 3 + b % 10)))
    xyz = np.concatenate([p for p, _ in parts]).astype(np.float32)
    lab = np.concatenate([c for _, c in parts]).astype(np.uint8)
    rgb = (rng.uniform(0, 255, (len(lab), 3)) * 0.3 + (lab[:, None] * np.array([20, 53, 91])) % 255 * 0.7)
    return xyz, rgb.astype(np.uint8), lab


def elastic(xyz, rng, granularity, magnitude):
    """Elastic distortion: 3D noise on a coarse grid, smoothed, interpolated at the points."""
    lo = xyz.min(0)
    dims = ((xyz.max(0) - lo) // granularity).astype(np.int64) + 3
    noise = rng.standard_normal((*dims, 3)).astype(np.float32)
    for axis in range(3):
        noise = (np.roll(noise, 1, axis) + noise + np.roll(noise, -1, axis)) / 3
    g = (xyz - lo) / granularity
    i0 = np.floor(g).astype(np.int64)
    f = g - i0
    out = np.zeros_like(xyz)
    for dx in (0, 1):
        for dy in (0, 1):
            for dz in (0, 1):
                wgt = ((f[:, 0] if dx else 1 - f[:, 0]) * (f[:, 1] if dy else 1 - f[:, 1])
                       * (f[:, 2] if dz else 1 - f[:, 2]))
                out += wgt[:, None] * noise[i0[:, 0] + dx, i0[:, 1] + dy, i0[:, 2] + dz]
    return xyz + out * magnitude


class RoomBlocks(Dataset):
    def __init__(self, rooms, points, length):
        self.rooms, self.points, self.length = rooms, points, length

    def __len__(self):
        return self.length

    def __getitem__(self, i):
        r = np.random.default_rng()
        xyz, rgb, lab = self.rooms[i % len(self.rooms)]
        c = xyz[r.integers(len(xyz))]
        m = (np.abs(xyz[:, 0] - c[0]) < 1.0) & (np.abs(xyz[:, 1] - c[1]) < 1.0)
        p, col, y = xyz[m], rgb[m], lab[m]
        keys = np.floor(p / 0.02).astype(np.int64)
        keys -= keys.min(0)
        _, first = np.unique((keys[:, 0] * 100003 + keys[:, 1]) * 1009 + keys[:, 2], return_index=True)
        p, col, y = p[first], col[first], y[first]
        sel = r.choice(len(p), self.points, replace=len(p) < self.points)
        p, col, y = p[sel], col[sel].astype(np.float32) / 255, y[sel]
        p = elastic(p, r, 0.2, 0.4)
        p = elastic(p, r, 0.8, 1.6)
        th = r.uniform(0, 2 * np.pi)
        rot = np.array([[np.cos(th), -np.sin(th), 0], [np.sin(th), np.cos(th), 0], [0, 0, 1]], np.float32)
        p = (p - p.mean(0)) @ rot.T * r.uniform(0.9, 1.1, 3).astype(np.float32)
        p += np.clip(r.normal(0, 0.01, p.shape), -0.05, 0.05).astype(np.float32)
        col = np.clip(col * r.uniform(0.8, 1.2) + r.normal(0, 0.03, col.shape), 0, 1)
        feat = np.concatenate([p, col, p / (np.abs(p).max(0) + 1e-6)], 1).astype(np.float32)
        return torch.from_numpy(feat.T.copy()), torch.from_numpy(y.astype(np.int64))


def knn(x, k):
    """Indices of the k nearest neighbours of every point, x (B, C, N), in float32."""
    with torch.autocast(x.device.type, enabled=False):
        x = x.float()
        inner = torch.bmm(x.transpose(1, 2), x)
        sq = (x * x).sum(1, keepdim=True)
        neg_dist = 2 * inner - sq - sq.transpose(1, 2)
        return neg_dist.topk(k, dim=-1).indices


def edge_features(x, k, graph_from=None):
    """(B, C, N) -> (B, 2C, N, k): [x_j - x_i, x_i] over the k neighbours j of each i."""
    b, c, n = x.shape
    idx = knn(x if graph_from is None else graph_from, k)
    idx = (idx + torch.arange(b, device=x.device).view(b, 1, 1) * n).reshape(-1)
    pts = x.transpose(1, 2).reshape(b * n, c)
    nbr = pts[idx].view(b, n, k, c)
    ctr = pts.view(b, n, 1, c).expand(b, n, k, c)
    return torch.cat([nbr - ctr, ctr], dim=3).permute(0, 3, 1, 2).contiguous()


def conv2d(cin, cout):
    return nn.Sequential(nn.Conv2d(cin, cout, 1, bias=False), nn.BatchNorm2d(cout), nn.LeakyReLU(0.2))


def conv1d(cin, cout):
    return nn.Sequential(nn.Conv1d(cin, cout, 1, bias=False), nn.BatchNorm1d(cout), nn.LeakyReLU(0.2))


class DGCNNSeg(nn.Module):
    def __init__(self, cin=9, k=20, emb=1024, classes=CLASSES):
        super().__init__()
        self.k = k
        self.ec1 = nn.Sequential(conv2d(2 * cin, 64), conv2d(64, 64))
        self.ec2 = nn.Sequential(conv2d(128, 64), conv2d(64, 64))
        self.ec3 = conv2d(128, 64)
        self.emb = conv1d(192, emb)
        self.head = nn.Sequential(conv1d(emb + 192, 512), conv1d(512, 256), nn.Dropout(0.5),
                                  nn.Conv1d(256, classes, 1))

    def forward(self, x):
        n = x.shape[2]
        x1 = self.ec1(edge_features(x, self.k, graph_from=x[:, :3])).amax(-1)  # graph on xyz
        x2 = self.ec2(edge_features(x1, self.k)).amax(-1)
        x3 = self.ec3(edge_features(x2, self.k)).amax(-1)
        local = torch.cat([x1, x2, x3], 1)
        g = self.emb(local).amax(-1, keepdim=True).expand(-1, -1, n)
        return self.head(torch.cat([g, local], 1))


def main():
    args = cc.parser(__doc__, warmup=5).parse_args()
    dev = cc.torch_device(args)
    rooms_n, room_pts, points, batch, k = (4, 20000, 256, 4, 8) if args.smoke else (64, 200_000, 2048, 32, 20)
    rng = np.random.default_rng(0)
    rooms = [make_room(rng, room_pts) for _ in range(rooms_n)]
    data = RoomBlocks(rooms, points, length=1_000_000)
    pin = dev.type == "cuda"
    if args.fix:
        workers = 2 if args.smoke else cc.fix_workers()
        loader = DataLoader(data, batch_size=batch, shuffle=True, drop_last=True, num_workers=workers,
                            prefetch_factor=4, persistent_workers=True, pin_memory=pin)
    else:
        workers = 2
        loader = DataLoader(data, batch_size=batch, shuffle=True, drop_last=True,
                            num_workers=workers,  # gpuwhy: plants C1 (two workers for numpy voxelization and elastic augmentation)
                            persistent_workers=True, pin_memory=pin)
    model = DGCNNSeg(k=k).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=1e-4, fused=dev.type == "cuda")
    it = iter(loader)
    losses = []
    log = {"loss": None}

    def step(i):
        x, y = (t.to(dev, non_blocking=True) for t in next(it))
        with torch.autocast(dev.type, dtype=torch.bfloat16):
            logits = model(x)
        loss = F.cross_entropy(logits.float(), y, label_smoothing=0.2)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        losses.append(loss.detach())
        if len(losses) == 50:
            log["loss"] = torch.stack(losses).mean().item()
            losses.clear()

    cc.run("c1_torch_pointcloud_workers", args, step, batch,
           extra=lambda: {"num_workers": workers, "points": points, "k": k})


if __name__ == "__main__":
    main()
