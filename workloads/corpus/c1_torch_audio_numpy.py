"""C1 data loading (audio): a keyword-spotting CNN (four conv blocks, bf16 autocast) trained
on one-second 16 kHz clips whose log-mel spectrograms are computed in the Dataset's
__getitem__ with NumPy (framing, Hann window, rfft, a 64-band mel matrix, log), plus a
random gain and time shift; DataLoader(num_workers=0), so all of it runs on the training
thread between steps while the GPU waits.

--fix: gpuwhy's C1 advice for PyTorch: DataLoader(num_workers = the free cores (cc.fix_workers()),
pin_memory=True, prefetch_factor=4, persistent_workers=True), with NumPy's BLAS and FFT threads bounded to
one per worker (OMP/OPENBLAS/MKL_NUM_THREADS=1, set before NumPy is imported, unless the
environment sets them): workers that each start a thread per core for every small
matmul would oversubscribe the CPUs (gpuwhy's C7).
"""
import os
import sys

if "--fix" in sys.argv:
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(var, "1")

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

import cc

SR, N_FFT, HOP, MELS = 16000, 512, 160, 64


def mel_matrix():
    f = np.linspace(0, SR / 2, N_FFT // 2 + 1)
    mel = 2595 * np.log10(1 + f / 700)
    edges = np.linspace(mel[0], mel[-1], MELS + 2)
    m = np.zeros((MELS, f.size), np.float32)
    for b in range(MELS):
        lo, mid, hi = edges[b], edges[b + 1], edges[b + 2]
        m[b] = np.clip(np.minimum((mel - lo) / (mid - lo), (hi - mel) / (hi - mid)), 0, None)
    return m


class Clips(Dataset):
    def __init__(self, n, seconds=1.0):
        self.n, self.len = n, int(SR * seconds)
        self.mel = mel_matrix()
        self.window = np.hanning(N_FFT).astype(np.float32)
        self.base = np.random.default_rng(0).standard_normal((64, self.len)).astype(np.float32)

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        rng = np.random.default_rng(i)
        x = np.roll(self.base[i % 64], int(rng.integers(0, SR // 10))) * rng.uniform(0.5, 1.5)
        frames = np.lib.stride_tricks.sliding_window_view(x, N_FFT)[::HOP] * self.window
        spec = np.abs(np.fft.rfft(frames, axis=1)) ** 2
        feat = np.log(spec @ self.mel.T + 1e-6).T.astype(np.float32)
        return torch.from_numpy(np.ascontiguousarray(feat))[None], i % 35


def main():
    args = cc.parser(__doc__).parse_args()
    dev = cc.torch_device(args)
    batch = 8 if args.smoke else 256
    blocks, ch = [], 1
    for out in (32, 64, 128, 128):
        blocks += [torch.nn.Conv2d(ch, out, 3, padding=1), torch.nn.BatchNorm2d(out), torch.nn.ReLU(), torch.nn.MaxPool2d(2)]
        ch = out
    model = torch.nn.Sequential(*blocks, torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(ch, 35)).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, fused=dev.type == "cuda")
    data = Clips(batch * 64)
    if args.fix:
        loader = DataLoader(data, batch_size=batch, shuffle=True, drop_last=True, num_workers=2 if args.smoke else cc.fix_workers(),
                            persistent_workers=True, pin_memory=dev.type == "cuda", prefetch_factor=4)
    else:
        loader = DataLoader(data, batch_size=batch, shuffle=True, drop_last=True,
                            num_workers=0)  # gpuwhy: plants C1 (log-mel features computed on the training thread)
    it = iter(loader)

    def step(i):
        nonlocal it
        try:
            x, y = next(it)
        except StopIteration:
            it = iter(loader)
            x, y = next(it)
        x, y = x.to(dev, non_blocking=True), y.to(dev, non_blocking=True)
        with torch.autocast(dev.type, dtype=torch.bfloat16):
            loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    cc.run("c1_torch_audio_numpy", args, step, batch)


if __name__ == "__main__":
    main()
