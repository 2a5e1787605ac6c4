"""C7 CPU thread oversubscription (a worker_init_fn that gives every DataLoader worker all the
cores): audio tagging (AudioSet-style, 527 classes, multi-label) with a PANNs CNN14-style CNN in
plain PyTorch on 10 s clips at 16 kHz. The clips are int16 waveforms held in RAM (256 clips,
made at start with NumPy, with 16 background-noise clips) and the features are made in the
DataLoader's 12 workers with torch CPU operators, the way PANNs-style training scripts without
torchaudio do it: a random time shift and gain, background noise mixed in at a random SNR,
pre-emphasis, torch.stft (n_fft 512, hop 160), power, a 64-band mel filterbank (a matmul),
log, per-clip normalization and SpecAugment (two frequency and two time masks): a
[1, 1001, 64] float32 log-mel a clip. The model: CNN14 (six blocks of two 3 x 3 convolutions
with BatchNorm and ReLU, 64 to 2,048 channels, 2 x 2 average pooling; a BatchNorm over the
mel bands in front; max + mean pooling over time; fc 2,048 and the 527-way output; ~80 M
parameters, ~40 GFLOP a clip forward), BCE with logits, fused AdamW, bf16 autocast,
channels_last, cudnn.benchmark, batch 32, pinned batches copied with non_blocking=True; the
loss is read every 50 steps.

The workers' worker_init_fn seeds NumPy and Python's random per worker, as the PyTorch docs
recommend, and then calls `torch.set_num_threads(os.cpu_count())`, from a forum answer to
"feature extraction in my DataLoader is slow" (PyTorch sets one thread in each worker; the
answer puts it back to all the cores). Each of the 12 workers then runs every stft, matmul
and elementwise operator of its clips as an OpenMP region of 16 threads: 192 compute threads
of the workers, plus the training thread, the pinning thread and the main process's own pool,
on 16 cores. The regions are small (a clip's operators cover 0.16-0.6 M values, a few tens of
microseconds of work each), so each one waits at its barrier for threads that the other
workers' threads have preempted or that spin on a core another worker needs; the loader falls
behind the GPU.

The workers are forked before the training process runs any parallel CPU operator (libgomp's
thread pool does not survive a fork: a worker that asks for 16 threads after the parent used
its pool would hang, not slow down; the script builds the loader first).

--fix: gpuwhy's C7 advice (limit the intra-op threads to the cores available): the
worker_init_fn leaves the DataLoader's one thread a worker (12 workers, 12 threads, beside the
training thread); data, features, workers, model and optimizer unchanged.

Written blind for the kilo batch.
"""
import os
import random
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

import cc

FIX = "--fix" in sys.argv
SR, N_FFT, HOP, N_MELS, CLASSES = 16_000, 512, 160, 64, 527


def mel_filterbank(n_freqs, n_mels, sr, fmin=50.0):
    """HTK-style triangular mel filters, [n_freqs, n_mels] (NumPy: nothing parallel in the parent)."""
    f = np.linspace(0, sr / 2, n_freqs)
    mel = lambda hz: 2595 * np.log10(1 + hz / 700)
    pts = 700 * (10 ** (np.linspace(mel(fmin), mel(sr / 2), n_mels + 2) / 2595) - 1)
    fb = np.zeros((n_freqs, n_mels), np.float32)
    for m in range(n_mels):
        lo, c, hi = pts[m], pts[m + 1], pts[m + 2]
        fb[:, m] = np.clip(np.minimum((f - lo) / (c - lo), (hi - f) / (hi - c)), 0, None)
    return fb


class Clips(Dataset):
    """Log-mel features of the clips, made on demand with torch CPU operators."""

    def __init__(self, wav, noise, labels, n=1_000_000):
        self.wav, self.noise, self.labels, self.n = wav, noise, labels, n
        self.fb = torch.from_numpy(mel_filterbank(N_FFT // 2 + 1, N_MELS, SR)).t().contiguous()
        self.win = torch.from_numpy(np.hanning(N_FFT + 1)[:-1].astype(np.float32))

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        r = random.Random(i)
        k = i % len(self.wav)
        x = torch.from_numpy(self.wav[k]).float() / 32768.0
        x = torch.roll(x, r.randint(-SR // 10, SR // 10))                     # time shift
        x = x * 10 ** (r.uniform(-6, 6) / 20)                                 # gain
        nz = torch.from_numpy(self.noise[r.randrange(len(self.noise))])
        snr = r.uniform(5, 30)
        x = x + nz * (x.pow(2).mean().sqrt() / (nz.pow(2).mean().sqrt() * 10 ** (snr / 20) + 1e-8))
        x = torch.cat([x[:1], x[1:] - 0.97 * x[:-1]])                        # pre-emphasis
        spec = torch.stft(x, N_FFT, HOP, window=self.win, return_complex=True)
        power = spec.real.pow(2) + spec.imag.pow(2)                          # [257, frames]
        lm = torch.log(torch.matmul(self.fb, power) + 1e-6)                  # [64, frames]
        lm = (lm - lm.mean()) / (lm.std() + 1e-5)
        for _ in range(2):                                                   # SpecAugment
            f0 = r.randrange(N_MELS - 8)
            lm[f0:f0 + r.randint(0, 8)] = 0
            t0 = r.randrange(lm.shape[1] - 40)
            lm[:, t0:t0 + r.randint(0, 40)] = 0
        return lm.t().unsqueeze(0).contiguous(), torch.from_numpy(self.labels[k])   # [1, frames, 64]


def init_worker(worker_id):
    seed = torch.initial_seed() % 2 ** 32
    np.random.seed(seed)
    random.seed(seed)
    if not FIX:
        torch.set_num_threads(os.cpu_count())  # gpuwhy: plants C7 (16 OpenMP threads in each of 12 loader workers, on 16 cores)


class ConvBlock(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.c1 = nn.Conv2d(cin, cout, 3, 1, 1, bias=False)
        self.b1 = nn.BatchNorm2d(cout)
        self.c2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.b2 = nn.BatchNorm2d(cout)

    def forward(self, x, pool):
        x = F.relu_(self.b1(self.c1(x)))
        x = F.relu_(self.b2(self.c2(x)))
        return F.avg_pool2d(x, pool) if pool else x


class Cnn14(nn.Module):
    def __init__(self, widths=(64, 128, 256, 512, 1024, 2048), classes=CLASSES):
        super().__init__()
        self.bn0 = nn.BatchNorm2d(N_MELS)
        cins = (1,) + widths[:-1]
        self.blocks = nn.ModuleList(ConvBlock(a, b) for a, b in zip(cins, widths))
        self.fc1 = nn.Linear(widths[-1], widths[-1])
        self.out = nn.Linear(widths[-1], classes)

    def forward(self, x):                          # [B, 1, T, mel]
        x = self.bn0(x.transpose(1, 3)).transpose(1, 3)
        for j, b in enumerate(self.blocks):
            x = b(x, (2, 2) if j < len(self.blocks) - 1 else None)
            x = F.dropout(x, 0.2, self.training)
        x = x.mean(3)                              # over mel
        x = x.amax(2) + x.mean(2)                  # over time
        x = F.dropout(F.relu_(self.fc1(F.dropout(x, 0.5, self.training))), 0.5, self.training)
        return self.out(x)


def main():
    args = cc.parser(__doc__, warmup=5).parse_args()
    dev = cc.torch_device(args)
    gpu = dev.type == "cuda"
    if args.smoke:
        clips, seconds, batch, workers, widths = 16, 1, 4, 2, (8, 16, 32, 32, 64, 64)
    else:
        clips, seconds, batch, workers, widths = 256, 10, 32, 12, (64, 128, 256, 512, 1024, 2048)
    # the data set in RAM, made with NumPy (no parallel torch operator before the workers fork)
    rng = np.random.default_rng(0)
    n = SR * seconds
    t = np.arange(n, dtype=np.float32) / SR
    wav = np.empty((clips, n), np.int16)
    for c in range(clips):
        f0 = rng.uniform(80, 2000)
        env = (np.sin(2 * np.pi * rng.uniform(0.2, 3) * t) > rng.uniform(-0.5, 0.5)).astype(np.float32)
        s = env * np.sin(2 * np.pi * f0 * t + 3 * np.sin(2 * np.pi * rng.uniform(1, 8) * t))
        s += 0.3 * rng.standard_normal(n, dtype=np.float32)
        wav[c] = np.clip(s * 8000, -32768, 32767).astype(np.int16)
    noise = rng.standard_normal((16, n), dtype=np.float32) * 0.1
    labels = (rng.random((clips, CLASSES)) < 0.01).astype(np.float32)
    labels[np.arange(clips), rng.integers(0, CLASSES, clips)] = 1.0

    loader = DataLoader(Clips(wav, noise, labels), batch_size=batch, shuffle=True, drop_last=True,
                        num_workers=workers, worker_init_fn=init_worker, pin_memory=gpu,
                        persistent_workers=True, prefetch_factor=4)
    it = iter(loader)                              # the workers fork here
    first = next(it)

    torch.manual_seed(0)
    torch.backends.cudnn.benchmark = gpu
    with torch.device(dev):
        model = Cnn14(widths)
    model = model.to(memory_format=torch.channels_last).train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01, fused=gpu)
    amp = torch.autocast(dev.type, dtype=torch.bfloat16, enabled=gpu)
    st = {"acc": torch.zeros((), device=dev), "loss": None, "reads": 0, "pending": first}

    def step(i):
        x, y = st["pending"] if st["pending"] is not None else next(it)
        st["pending"] = None
        x = x.to(dev, non_blocking=True).contiguous(memory_format=torch.channels_last)
        y = y.to(dev, non_blocking=True)
        with amp:
            loss = F.binary_cross_entropy_with_logits(model(x).float(), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        st["acc"] += loss.detach()
        if i % 50 == 49:
            st["loss"] = st["acc"].item() / 50
            st["acc"].zero_()
            st["reads"] += 1

    cc.run("c7_torch_worker_init_set_num_threads", args, step, batch,
           extra=lambda: {"loader_workers": workers, "worker_threads": 1 if FIX else os.cpu_count(),
                          "cores": len(os.sched_getaffinity(0)), "clip_s": seconds, "loss": st["loss"],
                          "loss_reads": st["reads"],
                          "params_m": round(sum(p.numel() for p in model.parameters()) / 1e6, 1)})


if __name__ == "__main__":
    main()
