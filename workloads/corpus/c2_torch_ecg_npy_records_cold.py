"""C2 storage reads (one small .npy file per ECG record, read cold on the training thread):
multi-label 12-lead ECG classification in the PTB-XL benchmark's setting (Strodthoff et al.),
in plain PyTorch. The data set is laid out as the usual conversion of PTB-XL's WFDB records
leaves it: one .npy file per record (10 s at 500 Hz, 5,000 x 12 int16 samples in microvolts,
120 KB) in directories of a thousand, 12,288 records (1.5 GB, written once under
GW_CORPUS_CACHE) and one array of 71 multi-hot SCP-statement labels. The model is the
benchmark's xresnet1d50 (fastai's XResNet in 1-D: a three-convolution stem, bottleneck blocks
[3, 4, 6, 3] of widths 64-512 with expansion 4 and kernel size 5, average-pool shortcuts, a
concat-pool head with BatchNorm, dropout and a 512-wide hidden layer; 20.6 M parameters,
random weights), bf16 autocast, fused AdamW with a one-cycle schedule, BCE over the 71
labels, batch 128 random 2,048-sample windows (4.1 s); the int16 windows are converted to
millivolts on the GPU; the loss stays there and is read every 50 steps.

The input pipeline is the Dataset most ECG repositories write: __getitem__ np.loads the
record's file and cuts a random window, under a DataLoader left at its default
num_workers=0, so the training thread reads the files itself. The records are dropped from
the page cache at every start (posix_fadvise(POSIX_FADV_DONTNEED) on each file, no root
needed), as when the data set sits on a disk the page cache does not hold: each step waits
on 128 cold reads of 120 KB, one after another, while the GPU finishes the previous step and
then idles.

--fix: gpuwhy's C2 advice (keep the data set in RAM): every record read once into one int16
array before training (outside the timed part), the same Dataset cutting its windows from
memory; model, order, batch, windows and loader unchanged.

Written blind for the romeo batch.
"""
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

import cc

FS, SECONDS, LEADS, N_LABELS = 500, 10, 12, 71


def make_records(n):
    """n synthetic 12-lead records as PTB-XL-style .npy files (5,000 x 12 int16, microvolts),
    written once and synced; returns the paths and the (n, 71) multi-hot labels."""
    root = os.path.join(cc.CACHE, f"ptbxl_npy_{n}")
    paths = [os.path.join(root, f"records500/{k // 1000:02d}000/{k + 1:05d}_hr.npy") for k in range(n)]
    lab_path = os.path.join(root, "labels.npy")
    if os.path.exists(os.path.join(root, ".done")):
        return paths, np.load(lab_path)
    rng = np.random.default_rng(0)
    t = np.arange(FS * SECONDS, dtype=np.float32) / FS
    # P, Q, R, S, T waves: centre (fraction of the beat), width, base amplitude (mV) per lead
    mu = np.array([0.18, 0.36, 0.40, 0.44, 0.68], np.float32)
    sd = np.array([0.025, 0.008, 0.010, 0.010, 0.045], np.float32)
    base = rng.normal(0, 1, (5, LEADS)).astype(np.float32) * np.array([0.08, 0.1, 0.6, 0.2, 0.2], np.float32)[:, None]
    base[2] = np.abs(base[2]) + 0.5
    labels = np.zeros((n, N_LABELS), np.float32)
    for k in range(0, n, 128):
        m = min(128, n - k)
        hr = rng.uniform(48, 120, (m, 1)).astype(np.float32)
        phase = (t[None] * hr / 60 + rng.uniform(0, 1, (m, 1)).astype(np.float32)) % 1.0      # (m, T)
        amp = base[None] * rng.uniform(0.6, 1.4, (m, 5, LEADS)).astype(np.float32)
        st = rng.normal(0, 0.05, (m, 1, LEADS)).astype(np.float32)                            # ST shift
        w = np.exp(-np.square(phase[..., None] - mu) / (2 * sd ** 2))                          # (m, T, 5)
        x = np.matmul(w, amp)                                                                  # (m, T, leads)
        x += st * ((phase > 0.46) & (phase < 0.62))[..., None]
        f_bw = rng.uniform(0.1, 0.5, (m, 1, 1)).astype(np.float32)
        x += 0.15 * np.sin((2 * np.pi * f_bw) * t[None, :, None] + rng.uniform(0, 6.3, (m, 1, LEADS)).astype(np.float32))
        x += rng.standard_normal(x.shape, dtype=np.float32) * np.float32(0.02)
        pcm = np.clip(x * 1000, -32768, 32767).astype(np.int16)
        for j in range(m):
            os.makedirs(os.path.dirname(paths[k + j]), exist_ok=True)
            np.save(paths[k + j], pcm[j])
        lab = rng.random((m, N_LABELS)) < 0.04
        lab[:, 0] |= hr[:, 0] < 60            # sinus bradycardia
        lab[:, 1] |= hr[:, 0] > 100           # sinus tachycardia
        lab[:, 2] |= st[:, 0, 1] > 0.05       # ST elevation
        labels[k:k + m] = lab
    np.save(lab_path, labels)
    os.sync()  # written back, so that the pages can be dropped
    open(os.path.join(root, ".done"), "w").close()
    return paths, labels


def drop_from_page_cache(paths):
    for p in paths:
        fd = os.open(p, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


class ECGRecords(Dataset):
    """Random windows of `window` samples from each record; int16 (leads, window)."""

    def __init__(self, paths, labels, window, in_memory=None):
        self.paths, self.labels, self.window = paths, torch.from_numpy(labels), window
        self.mem = in_memory
        self.rng = np.random.default_rng(1)
        self.reads = 0

    def __len__(self):
        return len(self.paths)

    def __getitem__(self, i):
        if self.mem is None:
            sig = np.load(self.paths[i])  # gpuwhy: plants C2 (one cold 120 KB file read per record, 128 a step, on the training thread)
            self.reads += 1
        else:
            sig = self.mem[i]
        s = int(self.rng.integers(0, sig.shape[0] - self.window + 1))
        return torch.from_numpy(np.ascontiguousarray(sig[s:s + self.window].T)), self.labels[i]


def conv_bn(ni, nf, ks, stride=1, act=True, zero=False):
    bn = nn.BatchNorm1d(nf)
    nn.init.constant_(bn.weight, 0.0 if zero else 1.0)
    layers = [nn.Conv1d(ni, nf, ks, stride=stride, padding=ks // 2, bias=False), bn]
    return nn.Sequential(*layers, nn.ReLU(inplace=True)) if act else nn.Sequential(*layers)


class XResBlock(nn.Module):
    """fastai's bottleneck ResBlock (1x1, kxk with the stride, 1x1, zero-initialized last BN)."""

    def __init__(self, ni, nh, stride, ks):
        super().__init__()
        nf = nh * 4
        self.convs = nn.Sequential(conv_bn(ni, nh, 1), conv_bn(nh, nh, ks, stride), conv_bn(nh, nf, 1, act=False, zero=True))
        idp = [nn.AvgPool1d(2, ceil_mode=True)] if stride != 1 else []
        if ni != nf:
            idp.append(conv_bn(ni, nf, 1, act=False))
        self.idpath = nn.Sequential(*idp)

    def forward(self, x):
        return F.relu(self.convs(x) + self.idpath(x), inplace=True)


class XResNet1d(nn.Module):
    def __init__(self, c_in, n_out, layers=(3, 4, 6, 3), ks=5, widths=(64, 128, 256, 512)):
        super().__init__()
        self.stem = nn.Sequential(conv_bn(c_in, 32, ks, 2), conv_bn(32, 32, ks), conv_bn(32, 64, ks),
                                  nn.MaxPool1d(3, 2, 1))
        blocks, ni = [], 64
        for i, (n, nh) in enumerate(zip(layers, widths)):
            for j in range(n):
                blocks.append(XResBlock(ni, nh, 2 if (i > 0 and j == 0) else 1, ks))
                ni = nh * 4
        self.blocks = nn.Sequential(*blocks)
        self.head = nn.Sequential(nn.BatchNorm1d(2 * ni), nn.Dropout(0.25), nn.Linear(2 * ni, 512), nn.ReLU(inplace=True),
                                  nn.BatchNorm1d(512), nn.Dropout(0.5), nn.Linear(512, n_out))

    def forward(self, x):
        x = self.blocks(self.stem(x))
        x = torch.cat([F.adaptive_avg_pool1d(x, 1), F.adaptive_max_pool1d(x, 1)], 1).flatten(1)
        return self.head(x)


def main():
    args = cc.parser(__doc__, warmup=3).parse_args()
    dev = cc.torch_device(args)
    gpu = dev.type == "cuda"
    if args.smoke:
        n, batch, window, layers, widths = 64, 8, 512, (1, 1, 1, 1), (8, 16, 16, 32)
    else:
        n, batch, window, layers, widths = 12_288, 128, 2048, (3, 4, 6, 3), (64, 128, 256, 512)
    paths, labels = make_records(n)
    drop_from_page_cache(paths)
    mem = None
    if args.fix:  # the advice: the whole data set in RAM, read once before training
        mem = np.empty((n, FS * SECONDS, LEADS), np.int16)
        for k, p in enumerate(paths):
            mem[k] = np.load(p)
    ds = ECGRecords(paths, labels, window, in_memory=mem)
    loader = DataLoader(ds, batch_size=batch, shuffle=True, drop_last=True)   # num_workers=0 (the default)

    torch.manual_seed(0)
    model = XResNet1d(LEADS, N_LABELS, layers=layers, widths=widths).to(dev).train()
    params = sum(p.numel() for p in model.parameters())
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=1e-2, fused=gpu)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=1e-2, total_steps=100_000, pct_start=0.3)
    amp = torch.autocast(dev.type, dtype=torch.bfloat16, enabled=gpu)
    st = {"it": iter(loader), "epochs": 0, "acc": torch.zeros((), device=dev), "loss": None, "reads": 0}

    def next_batch():
        try:
            return next(st["it"])
        except StopIteration:
            st["epochs"] += 1
            st["it"] = iter(loader)
            return next(st["it"])

    def step(i):
        x, y = next_batch()
        x = x.to(dev, non_blocking=True).float().mul_(1e-3)            # microvolts -> millivolts
        y = y.to(dev, non_blocking=True)
        with amp:
            logits = model(x)
        loss = F.binary_cross_entropy_with_logits(logits.float(), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        st["acc"] += loss.detach()
        if i % 50 == 49:
            st["loss"] = st["acc"].item() / 50
            st["acc"].zero_()
            st["reads"] += 1

    cc.run("c2_torch_ecg_npy_records_cold", args, step, batch,
           extra=lambda: {"records": n, "window": window, "params_m": round(params / 1e6, 1),
                          "in_memory": mem is not None, "files_read_in_loop": ds.reads,
                          "epochs_done": st["epochs"], "loss": st["loss"], "loss_reads": st["reads"]})


if __name__ == "__main__":
    main()
