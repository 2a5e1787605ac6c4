"""C1 event-camera preprocessing on the training thread (a tonic-style transform pipeline in the
Dataset, DataLoader with num_workers=0): gesture recognition from a 128 x 128 dynamic vision
sensor in the DVS128 Gesture setting, in plain PyTorch, the way tonic's tutorials train on it.
The data set is 176 recordings (11 gestures x 16 takes, 2 s each, 100,000 events a recording
at ~50,000 events/s: the moving hand's edges and the sensor's background activity) held in RAM
as tonic holds them, one structured NumPy array of events per recording with tonic's dtype
(x and y int16, polarity bool, t int64 microseconds), made at start. A sample is a random
300 ms slice of a recording (~15,000 events) through tonic's usual training transforms,
written as tonic writes them in NumPy: DropEvent(p=0.1), RandomFlipLR(p=0.5),
SpatialJitter(sigma 1 pixel, clipped to the sensor) and ToFrame(n_time_bins=10), whose
event-by-event np.add.at into a (10, 2, 128, 128) int16 histogram is most of the ~3 ms of
CPU time a sample. The model is a torchvision resnet34 (weights=None) with its stem taking
the 20 time-bin x polarity channels (21.3 M parameters, random weights), bf16 autocast,
channels_last, fused AdamW (lr 1e-3, weight decay 0.05) with a cosine schedule, label
smoothing 0.1, batch 32 samples; the int16 frames are turned into log-counts on the GPU; the
loss stays there and is read every 50 steps.

The DataLoader is left at its default num_workers=0, so the training thread slices, drops,
flips, jitters and bins the events of 32 samples (~70-110 ms of NumPy on the CPU-only machine)
before each step, whose GPU work (0.26 TFLOP, ~700 kernels) is ~5-9 ms.

--fix: gpuwhy's C1 advice (load data in worker processes): the same DataLoader with
num_workers=N, one per free core (cc.fix_workers()), pin_memory=True, prefetch_factor=4 and
persistent_workers=True, the frames copied with non_blocking=True; recordings, transforms
(each worker its own generator), model, batch and optimizer unchanged.

Written blind for the sierra batch.
"""
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision
from torch.utils.data import DataLoader, Dataset

import cc

W = H = 128
EVENT_DTYPE = np.dtype([("x", np.int16), ("y", np.int16), ("p", bool), ("t", np.int64)])   # tonic's
N_CLASSES = 11


def make_recordings(n_takes, seconds, rate, rng):
    """n_takes recordings of each of the 11 gestures: events on the edge of a moving hand (a ring
    whose path depends on the gesture) and uniform background activity, as tonic arrays."""
    recs, labels = [], []
    n = int(seconds * rate)
    col = lambda a: np.asarray(a, np.float32)[:, None]                              # noqa: E731
    for c in range(N_CLASSES):
        k = n_takes
        t = ((np.arange(n, dtype=np.float32)[None] + rng.random((k, n), np.float32)) * np.float32(seconds * 1e6 / n))
        s = t * np.float32(1e-6)
        ph = 2 * np.pi * col(0.6 + 0.25 * rng.random(k)) * s + col(rng.random(k) * 6.28)   # the gesture's pace
        cx0, cy0 = col(64 + rng.normal(0, 6, k)), col(64 + rng.normal(0, 6, k))
        amp = col(22 + 8 * rng.random(k))
        if c < 4:          # circles (clockwise / anticlockwise, left / right arm)
            sign = 1 if c % 2 == 0 else -1
            cx, cy = cx0 - 18 * (c >= 2) + amp * np.cos(sign * ph), cy0 + amp * np.sin(sign * ph)
        elif c < 8:        # waves and swipes (horizontal / vertical, one or both arms)
            cx = cx0 + amp * np.sin(ph) * (c % 2 == 0)
            cy = cy0 + amp * np.sin(ph) * (c % 2 == 1)
            cx = cx + (c >= 6) * 20 * np.sign(np.sin(3 * ph))
        else:              # clapping, drums, guitar: two hands moving against each other
            side = np.where(np.arange(n) % 2 == 0, 1, -1).astype(np.float32)
            cx = cx0 + (10 + 8 * np.abs(np.sin(ph * (c - 6)))) * side
            cy = cy0 + 6 * np.sin(2 * ph)
        ang = rng.random((k, n), np.float32) * np.float32(2 * np.pi)
        r = col(9 + 3 * rng.random(k))
        x = cx + r * np.cos(ang) + rng.standard_normal((k, n), np.float32) * np.float32(0.8)
        y = cy + r * np.sin(ang) + rng.standard_normal((k, n), np.float32) * np.float32(0.8)
        noise = rng.random((k, n), np.float32) < 0.12                            # background activity
        x = np.where(noise, rng.random((k, n), np.float32) * W, x)
        y = np.where(noise, rng.random((k, n), np.float32) * H, y)
        pol = (np.cos(ang - ph) > 0) ^ noise                                      # leading / trailing edge
        for j in range(k):
            ev = np.empty(n, EVENT_DTYPE)
            ev["x"] = np.clip(x[j], 0, W - 1)
            ev["y"] = np.clip(y[j], 0, H - 1)
            ev["p"] = pol[j]
            ev["t"] = t[j]
            recs.append(ev)
            labels.append(c)
    return recs, np.array(labels, np.int64)


class DVSGestureSlices(Dataset):
    """Random `window_us` slices of the recordings through tonic's training transforms:
    DropEvent, RandomFlipLR, SpatialJitter, ToFrame(n_time_bins); int16 (bins * 2, H, W)."""

    def __init__(self, recs, labels, window_us, bins, length):
        self.recs, self.labels, self.window, self.bins, self.length = recs, labels, window_us, bins, length
        self.rng, self.pid = None, None

    def __len__(self):
        return self.length

    def _rng(self):
        if self.pid != os.getpid():   # each loader worker its own generator (tonic transforms use np.random)
            self.pid = os.getpid()
            self.rng = np.random.default_rng(torch.initial_seed() % 2**32)
        return self.rng

    def __getitem__(self, i):
        rng = self._rng()
        r = i % len(self.recs)
        ev = self.recs[r]
        t0 = int(rng.integers(ev["t"][0], ev["t"][-1] - self.window))
        a, b = np.searchsorted(ev["t"], [t0, t0 + self.window])
        ev = ev[a:b]
        ev = ev[rng.random(len(ev)) >= 0.1]                                     # DropEvent(p=0.1)
        ev = ev.copy()
        if rng.random() < 0.5:                                                  # RandomFlipLR(p=0.5)
            ev["x"] = W - 1 - ev["x"]
        ev["x"] = np.clip(ev["x"] + np.rint(rng.normal(0, 1.0, len(ev))), 0, W - 1)   # SpatialJitter
        ev["y"] = np.clip(ev["y"] + np.rint(rng.normal(0, 1.0, len(ev))), 0, H - 1)
        frames = np.zeros((self.bins, 2, H, W), np.int16)                       # ToFrame(n_time_bins)
        tb = ((ev["t"] - ev["t"][0]) * self.bins // (ev["t"][-1] - ev["t"][0] + 1)).astype(np.intp)
        np.add.at(frames, (tb, ev["p"].astype(np.intp), ev["y"].astype(np.intp), ev["x"].astype(np.intp)), 1)
        return torch.from_numpy(frames.reshape(2 * self.bins, H, W)), int(self.labels[r])


def main():
    args = cc.parser(__doc__, warmup=5).parse_args()
    dev = cc.torch_device(args)
    gpu = dev.type == "cuda"
    if args.smoke:
        takes, seconds, rate, batch, bins = 2, 1.0, 20_000, 8, 4
    else:
        takes, seconds, rate, batch, bins = 16, 2.0, 50_000, 32, 10
    recs, labels = make_recordings(takes, seconds, rate, np.random.default_rng(0))
    ds = DVSGestureSlices(recs, labels, window_us=300_000, bins=bins, length=8_192)
    if args.fix:
        workers = 2 if args.smoke else cc.fix_workers()
        loader = DataLoader(ds, batch_size=batch, shuffle=True, drop_last=True, num_workers=workers,
                            pin_memory=gpu, prefetch_factor=4, persistent_workers=True)
    else:
        workers = 0
        loader = DataLoader(ds, batch_size=batch, shuffle=True, drop_last=True)  # gpuwhy: plants C1 (num_workers=0: tonic's slicing, DropEvent, flip, jitter and ToFrame of 32 samples, ~70-110 ms of NumPy, on the training thread before each step)

    torch.manual_seed(0)
    model = torchvision.models.resnet34(weights=None, num_classes=N_CLASSES)
    model.conv1 = nn.Conv2d(2 * bins, 64, 7, 2, 3, bias=False)
    model = model.to(dev, memory_format=torch.channels_last).train()
    params = sum(p.numel() for p in model.parameters())
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.05, fused=gpu)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=100_000)
    amp = torch.autocast(dev.type, dtype=torch.bfloat16, enabled=gpu)
    st = {"it": iter(loader), "epochs": 0, "acc": torch.zeros((), device=dev), "loss": None, "reads": 0}

    def next_batch():
        try:
            return next(st["it"])
        except StopIteration:  # a new epoch
            st["epochs"] += 1
            st["it"] = iter(loader)
            return next(st["it"])

    def step(i):
        x, y = next_batch()
        x = x.to(dev, non_blocking=args.fix)
        y = y.to(dev, non_blocking=args.fix)
        x = torch.log1p(x.float()).contiguous(memory_format=torch.channels_last)
        with amp:
            logits = model(x)
        loss = F.cross_entropy(logits.float(), y, label_smoothing=0.1)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        st["acc"] += loss.detach()
        if i % 50 == 49:
            st["loss"] = st["acc"].item() / 50
            st["acc"].zero_()
            st["reads"] += 1

    cc.run("c1_tv_dvs_gesture_event_frames_main", args, step, batch,
           extra=lambda: {"num_workers": workers, "recordings": len(recs), "time_bins": bins,
                          "params_m": round(params / 1e6, 1), "epochs_done": st["epochs"], "loss": st["loss"],
                          "loss_reads": st["reads"]})


if __name__ == "__main__":
    main()
