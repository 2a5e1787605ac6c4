"""C2 + C6 (pre-extracted video features read from a cold disk on the training thread and
copied to the GPU from pageable memory): temporal action localization on pre-extracted clip
features, the ActionFormer/TriDet way (THUMOS-sized: 20 action classes plus background): each
video's I3D features (768 snippets of 2,048 float32 values, RGB and flow concatenated, 6 MB)
sit in their own .npy file, 640 videos (3.75 GiB) under GW_CORPUS_CACHE, written once. The model
is a temporal transformer in plain PyTorch: a Conv1d projection (2,048 -> 768, kernel 3) with
LayerNorm and GELU, 8 pre-LN encoder layers of width 768 (12 heads, SDPA) over the 768 snippets,
and per-snippet heads for the class (sigmoid focal loss) and the distances to the action's
start and end (L1 on the snippets inside an action); bf16 autocast, fused AdamW, batch 16
videos; the per-snippet labels live on the GPU; the loss is summed on the GPU and read every 50
steps. At every start the run drops the feature files from the page cache with
posix_fadvise(POSIX_FADV_DONTNEED) (no root needed), as when the feature set is larger than the
memory left for caching it; each epoch visits the videos in a new random order.

The training loop loads each batch itself, as such repositories do when "features are small,
no workers needed": for each of the 16 videos, np.load of its file (a cold 6 MB read from the
disk, the thread in the read) and xb[j].copy_(torch.from_numpy(feats)) into the GPU batch, a
copy from pageable memory that the driver stages through its own pinned buffer while the host
waits; the first copy also waits for the previous step's kernels. About 100 MB of reads and
100 MB of pageable copies a step, while the GPU has ~15 ms of work.

--fix: gpuwhy's advice for both causes: the feature set read into RAM once before training
(the C2 advice: keep the data set in RAM; one pass over the files, outside the timed part),
into one pinned tensor (the C6 advice: pinned host memory), and each video's rows copied with
copy_(non_blocking=True) into the GPU batch; model, batches, order and loss unchanged.

Written blind for the echo batch.
"""
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision

import cc

CLASSES = 20


def feature_dir(n, t, d):
    """n per-video feature files (t x d float32 .npy), written once and synced; returns the paths."""
    root = os.path.join(cc.CACHE, f"tal_i3d_{n}x{t}x{d}")
    paths = [os.path.join(root, f"video_{k:04d}.npy") for k in range(n)]
    if os.path.exists(os.path.join(root, ".done")):
        return paths
    os.makedirs(root, exist_ok=True)
    rng = np.random.default_rng(0)
    base = rng.standard_normal((t, d), dtype=np.float32)
    for k, p in enumerate(paths):
        # each video its own mix of the base (features are dense and incompressible)
        feats = np.roll(base, 37 * k, axis=0) * np.float32(0.5 + (k % 7) / 7) + np.float32(0.01 * k)
        with open(p, "wb") as f:
            np.save(f, np.maximum(feats, 0, out=feats))  # post-ReLU features
            f.flush()
            os.fsync(f.fileno())  # written back, so that the pages can be dropped
    open(os.path.join(root, ".done"), "w").close()
    return paths


def drop_from_page_cache(paths):
    for p in paths:
        fd = os.open(p, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def action_labels(n, t, seed=1):
    """Per-snippet class (0 background) and distances to the action's start and end."""
    rng = np.random.default_rng(seed)
    cls = np.zeros((n, t), np.int64)
    reg = np.zeros((n, t, 2), np.float32)
    for v in range(n):
        for _ in range(rng.integers(1, 5)):
            length = int(rng.integers(t // 32, t // 6))
            s = int(rng.integers(0, t - length))
            cls[v, s:s + length] = rng.integers(1, CLASSES + 1)
            pos = np.arange(length, dtype=np.float32)
            reg[v, s:s + length, 0], reg[v, s:s + length, 1] = pos, length - 1 - pos
    return cls, reg / t


class Layer(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc, self.out = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = (z.view(b, t, self.heads, -1).transpose(1, 2) for z in self.qkv(self.ln1(x)).split(d, 2))
        x = x + self.proj(F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(b, t, d))
        return x + self.out(F.gelu(self.fc(self.ln2(x))))


class TemporalLocalizer(nn.Module):
    def __init__(self, d_in, d, layers, heads):
        super().__init__()
        self.embed = nn.Conv1d(d_in, d, 3, padding=1)
        self.ln = nn.LayerNorm(d)
        self.layers = nn.ModuleList(Layer(d, heads) for _ in range(layers))
        self.norm = nn.LayerNorm(d)
        self.cls_head = nn.Sequential(nn.Linear(d, d), nn.GELU(), nn.Linear(d, CLASSES))
        self.reg_head = nn.Sequential(nn.Linear(d, d), nn.GELU(), nn.Linear(d, 2))

    def forward(self, feats):  # (B, T, d_in)
        x = F.gelu(self.ln(self.embed(feats.transpose(1, 2)).transpose(1, 2)))
        for layer in self.layers:
            x = layer(x)
        x = self.norm(x)
        return self.cls_head(x), F.relu(self.reg_head(x))


def main():
    args = cc.parser(__doc__).parse_args()
    dev = cc.torch_device(args)
    if args.smoke:
        n, t, d_in, d, layers, heads, batch = 24, 32, 64, 64, 2, 4, 4
    else:
        n, t, d_in, d, layers, heads, batch = 640, 768, 2048, 768, 8, 12, 16
    paths = feature_dir(n, t, d_in)
    drop_from_page_cache(paths)
    pin = dev.type == "cuda"
    cls, reg = action_labels(n, t)
    cls_gpu, reg_gpu = torch.from_numpy(cls).to(dev), torch.from_numpy(reg).to(dev)

    if args.fix:  # the whole feature set in RAM, pinned: one pass over the files before training
        ram = torch.empty((n, t, d_in), dtype=torch.float32, pin_memory=pin)
        for k, p in enumerate(paths):
            with open(p, "rb") as f:
                if np.lib.format.read_magic(f) == (1, 0):  # skip the .npy header
                    np.lib.format.read_array_header_1_0(f)
                else:
                    np.lib.format.read_array_header_2_0(f)
                f.readinto(memoryview(ram[k].numpy()).cast("B"))

        def load_into(xb, ids):
            for j, v in enumerate(ids):
                xb[j].copy_(ram[v], non_blocking=True)
    else:
        def load_into(xb, ids):
            for j, v in enumerate(ids):
                feats = np.load(paths[v])  # gpuwhy: plants C2 (a cold 6 MB read from the disk per video, on the training thread)
                xb[j].copy_(torch.from_numpy(feats))  # gpuwhy: plants C6 (copied to the GPU from pageable memory, synchronously)

    torch.manual_seed(0)
    model = TemporalLocalizer(d_in, d, layers, heads).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.05, fused=dev.type == "cuda")
    xb = torch.empty((batch, t, d_in), device=dev)
    rng = np.random.default_rng(2)
    order = {"perm": rng.permutation(n), "pos": 0, "epochs": 0}
    acc = torch.zeros((), device=dev)
    log = {"loss": None, "reads": 0}

    def next_ids():
        if order["pos"] + batch > n:
            order["perm"], order["pos"] = rng.permutation(n), 0
            order["epochs"] += 1
        ids = order["perm"][order["pos"]:order["pos"] + batch]
        order["pos"] += batch
        return ids

    def step(i):
        ids = next_ids()
        load_into(xb, ids)
        sel = torch.from_numpy(ids).to(dev, non_blocking=True)
        y_cls, y_reg = cls_gpu[sel], reg_gpu[sel]
        with torch.autocast(dev.type, dtype=torch.bfloat16):
            logits, dist = model(xb)
        onehot = F.one_hot(y_cls, CLASSES + 1)[..., 1:].float()
        pos = (y_cls > 0).float()
        cls_loss = torchvision.ops.sigmoid_focal_loss(logits.float(), onehot, reduction="sum") / pos.sum().clamp(min=1)
        reg_loss = ((dist.float() - y_reg).abs().sum(-1) * pos).sum() / pos.sum().clamp(min=1)
        loss = cls_loss + reg_loss
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        acc.add_(loss.detach())
        if i % 50 == 49:
            log["loss"] = acc.item() / 50
            log["reads"] += 1
            acc.zero_()

    cc.run("m_torch_cold_features_pageable", args, step, batch,
           extra=lambda: {"features": "pinned RAM, read before training" if args.fix else "np.load per video, pageable copy",
                          "mb_per_step": round(batch * t * d_in * 4 / 2 ** 20, 1), "epochs_done": order["epochs"],
                          "loss_reads": log["reads"]})


if __name__ == "__main__":
    main()
