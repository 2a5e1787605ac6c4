"""C6 + C14 (pageable per-window copies and a whole-night validation every 10 steps): sleep
staging from polysomnography in the Sleep-EDF setting with U-Time (Perslev et al. 2019),
ported to plain PyTorch: a fully convolutional 1-D U-Net over sequences of 35 consecutive
30-s epochs of 3 channels at 100 Hz (EEG Fpz-Cz, EEG Pz-Oz, horizontal EOG; 105,000 samples a
sequence), four encoder levels of two 5-wide convolutions of dilation 9 (Conv, ReLU,
BatchNorm, U-Time's order) with max-pools of 10, 6, 5 and 5, filters 16-128, a 256-filter
bottom, a mirrored decoder (nearest upsampling, a convolution as wide as the pool, the skip
concatenated, two convolutions) and U-Time's segment classifier (a tanh 1 x 1 convolution,
the mean over each 30-s epoch's 3,000 samples, a 1 x 1 convolution to the 5 stages W, N1, N2,
N3, REM); cross-entropy per epoch, bf16 autocast, Adam (lr 5e-6, fused), batch 32 sequences;
the loss is read every 50 steps.

The recordings are held in host memory as the preprocessing script leaves them (one
float32 NumPy array a night, (epochs, channels, 3,000), standardized per recording, and its
hypnogram): 40 training nights and 12 validation nights of 840-1,020 epochs (1.7 GB;
synthetic: a Markov hypnogram and stage-dependent delta, theta, alpha, spindle and beta
rhythms, eye movements and noise, made on the GPU at start and copied to the host). U-Time's
sequence sampler draws a random night and a random start for each of the 32 sequences; each
window (35 epochs, 1.26 MB, contiguous) and its labels are copied to the GPU on their own.

Planted:
- C6: each window's copy is `torch.from_numpy(night[o:o + 35]).to(device)` from pageable
  memory: 64 copies and 40 MB a step, each waiting for the GPU to finish the work before it,
  the GPU idle while the driver stages the next one;
- C14: the training loop validates after every "epoch" of 10 steps (steps_per_epoch left at
  a debug config's 10): model.eval(), each validation night copied whole from pageable memory
  (~33 MB), predicted in sequences of 35 epochs, the stages read back with .cpu() and scored
  per night with NumPy (confusion matrix, Cohen's kappa, macro F1), then model.train().

--fix: gpuwhy's C6 and C14 advice: the nights and hypnograms pinned once at start
(pin_memory()) and the windows copied with .to(device, non_blocking=True); and the
validation every 1,000 steps (never in the timed part); recordings, sampler, model, loss,
optimizer and the validation itself unchanged.

Written blind for the uniform batch.
"""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

import cc

STAGES = ("W", "N1", "N2", "N3", "REM")
# stage transition matrix of a 30-s epoch (rows: from), as fitted on Sleep-EDF hypnograms
TRANS = np.array([[0.900, 0.080, 0.015, 0.000, 0.005],
                  [0.060, 0.600, 0.300, 0.000, 0.040],
                  [0.010, 0.020, 0.920, 0.035, 0.015],
                  [0.010, 0.000, 0.080, 0.910, 0.000],
                  [0.020, 0.030, 0.030, 0.000, 0.920]])
# amplitude of each rhythm per stage (delta, theta, alpha, sigma, beta, slow / rapid eye movements)
AMP = torch.tensor([[0.3, 0.3, 1.0, 0.0, 0.6, 0.5, 1.0],     # W
                    [0.5, 0.9, 0.3, 0.0, 0.3, 1.0, 0.0],     # N1
                    [0.8, 0.6, 0.1, 0.8, 0.2, 0.1, 0.0],     # N2
                    [2.0, 0.4, 0.0, 0.2, 0.1, 0.0, 0.0],     # N3
                    [0.4, 0.9, 0.2, 0.0, 0.4, 0.0, 1.2]])    # REM
BANDS = ((0.5, 2.0), (4.0, 7.0), (8.0, 12.0), (12.0, 14.0), (16.0, 28.0), (0.2, 0.5), (1.0, 3.0))


def hypnograms(lengths, rng):
    """One Markov-chain hypnogram a night (all nights advanced together), starting awake."""
    n, t_max = len(lengths), max(lengths)
    out = np.zeros((n, t_max), np.int64)
    cum = np.cumsum(TRANS, 1)
    for t in range(1, t_max):
        u = rng.random(n)
        out[:, t] = (u[:, None] > cum[out[:, t - 1]]).sum(1).clip(0, 4)
    return [out[i, :m] for i, m in enumerate(lengths)]


@torch.no_grad()
def night_signals(hyp, fs, epoch_s, dev, g):
    """(epochs, 3, samples) float32 for one night: per epoch a few sinusoids in each band at
    the stage's amplitudes (spindles in bursts), EOG from the eye-movement bands, plus noise;
    standardized per channel over the recording."""
    e, n = hyp.shape[0], fs * epoch_s
    t = torch.arange(n, device=dev, dtype=torch.float32) / fs
    amp = AMP.to(dev)[hyp]                                                      # (E, 7)
    x = 0.4 * torch.randn(e, 3, n, device=dev, generator=g)
    for b, (lo, hi) in enumerate(BANDS):
        f = lo + (hi - lo) * torch.rand(e, 3, 1, device=dev, generator=g)
        ph = 6.283 * torch.rand(e, 3, 1, device=dev, generator=g)
        wave = torch.sin(6.283 * f * t + ph) * amp[:, b, None, None]
        if b == 3:                                                              # spindles: 1-2 s bursts
            c = torch.rand(e, 1, 1, device=dev, generator=g) * epoch_s
            wave = wave * torch.exp(-((t - c) / 0.7) ** 2)
        if b >= 5:
            wave = wave * torch.tensor([0.2, 0.1, 1.5], device=dev)[:, None]      # eye movements: mostly EOG
        x += wave
    x = (x - x.mean((0, 2), keepdim=True)) / x.std((0, 2), keepdim=True)
    return x


class ConvReLUBN(nn.Sequential):
    """U-Time's convolution block (Keras order: Conv1D, ReLU, BatchNormalization)."""

    def __init__(self, cin, cout, k=5, dilation=1):
        super().__init__(nn.Conv1d(cin, cout, k, padding="same", dilation=dilation), nn.ReLU(inplace=True),
                         nn.BatchNorm1d(cout))


class UTime(nn.Module):
    def __init__(self, channels, classes, epoch_samples, filters=(16, 32, 64, 128), bottom=256,
                 pools=(10, 6, 5, 5), dilation=9):
        super().__init__()
        self.epoch_samples = epoch_samples
        self.enc = nn.ModuleList()
        cin = channels
        for f in filters:
            self.enc.append(nn.Sequential(ConvReLUBN(cin, f, dilation=dilation), ConvReLUBN(f, f, dilation=dilation)))
            cin = f
        self.pools = pools
        self.bottom = nn.Sequential(ConvReLUBN(cin, bottom, dilation=dilation), ConvReLUBN(bottom, bottom, dilation=dilation))
        self.up, self.dec = nn.ModuleList(), nn.ModuleList()
        cin = bottom
        for f, p in zip(reversed(filters), reversed(pools)):
            self.up.append(ConvReLUBN(cin, f, k=p))
            self.dec.append(nn.Sequential(ConvReLUBN(2 * f, f), ConvReLUBN(f, f)))
            cin = f
        self.dense = nn.Conv1d(cin, classes, 1)
        self.out = nn.Conv1d(classes, classes, 1)

    def forward(self, x):                           # x: (B, C, epochs * epoch_samples)
        skips = []
        for blk, p in zip(self.enc, self.pools):
            x = blk(x)
            skips.append(x)
            x = F.max_pool1d(x, p)
        x = self.bottom(x)
        for up, dec, p, skip in zip(self.up, self.dec, reversed(self.pools), reversed(skips)):
            x = up(F.interpolate(x, scale_factor=p, mode="nearest"))
            x = dec(torch.cat([skip, x], 1))
        x = torch.tanh(self.dense(x))
        b, c, n = x.shape
        x = x.view(b, c, n // self.epoch_samples, self.epoch_samples).mean(-1)   # segment classifier
        return self.out(x)                          # (B, classes, epochs)


def kappa_f1(y, p, k=5):
    cm = np.bincount(k * y + p, minlength=k * k).reshape(k, k).astype(np.float64)
    n = cm.sum()
    po = np.trace(cm) / n
    pe = (cm.sum(0) * cm.sum(1)).sum() / n ** 2
    f1 = 2 * np.diag(cm) / np.maximum(cm.sum(0) + cm.sum(1), 1)
    return (po - pe) / max(1 - pe, 1e-12), f1.mean()


def main():
    args = cc.parser(__doc__, warmup=5).parse_args()
    dev = cc.torch_device(args)
    gpu = dev.type == "cuda"
    if args.smoke:
        fs, epoch_s, seq, n_train, n_val, ep_lo, ep_hi, batch = 10, 30, 5, 4, 2, 30, 40, 4
        filters, bottom, pools = (4, 8, 8, 8), 16, (5, 3, 2, 2)
    else:
        fs, epoch_s, seq, n_train, n_val, ep_lo, ep_hi, batch = 100, 30, 35, 40, 12, 840, 1020, 32
        filters, bottom, pools = (16, 32, 64, 128), 256, (10, 6, 5, 5)
    ns = fs * epoch_s
    val_every = 1000 if args.fix else 10
    rng = np.random.default_rng(0)
    lengths = rng.integers(ep_lo, ep_hi + 1, n_train + n_val).tolist()
    hyps = hypnograms(lengths, rng)
    g = torch.Generator(device=dev).manual_seed(0)
    nights = [night_signals(torch.from_numpy(h).to(dev), fs, epoch_s, dev, g).cpu().numpy() for h in hyps]
    train_x, train_y = nights[:n_train], hyps[:n_train]
    val_x, val_y = nights[n_train:], hyps[n_train:]
    if args.fix and gpu:
        train_x = [torch.from_numpy(a).pin_memory() for a in train_x]
        train_y = [torch.from_numpy(a).pin_memory() for a in train_y]
        val_x = [torch.from_numpy(a).pin_memory() for a in val_x]
    else:
        train_x = [torch.from_numpy(a) for a in train_x]
        train_y = [torch.from_numpy(a) for a in train_y]
        val_x = [torch.from_numpy(a) for a in val_x]
    nb = bool(args.fix)
    torch.manual_seed(0)
    model = UTime(3, len(STAGES), ns, filters, bottom, pools).to(dev).train()
    opt = torch.optim.Adam(model.parameters(), lr=5e-6, fused=gpu)
    amp = torch.autocast(dev.type, dtype=torch.bfloat16, enabled=gpu)
    weights = np.asarray(lengths[:n_train], np.float64) - seq + 1
    weights /= weights.sum()
    st = {"acc": torch.zeros((), device=dev), "loss": None, "reads": 0, "vals": 0, "kappa": None, "f1": None}

    @torch.no_grad()
    def validate():
        model.eval()
        kappas, f1s = [], []
        for x_host, y in zip(val_x, val_y):
            x = x_host.to(dev, non_blocking=nb)             # the whole night (C6 in the plain run)
            e = x.shape[0] // seq * seq
            xs = x[:e].view(-1, seq, 3, ns).permute(0, 2, 1, 3).reshape(-1, 3, seq * ns)
            preds = []
            for s in range(0, xs.shape[0], batch):
                with amp:
                    preds.append(model(xs[s:s + batch]).argmax(1).flatten())
            p = torch.cat(preds).cpu().numpy()
            k, f = kappa_f1(y[:e], p)
            kappas.append(k)
            f1s.append(f)
        model.train()
        st["kappa"], st["f1"] = round(float(np.mean(kappas)), 4), round(float(np.mean(f1s)), 4)
        st["vals"] += 1

    def step(i):
        picks = rng.choice(n_train, batch, p=weights)
        xs, ys = [], []
        for n in picks:
            o = int(rng.integers(0, lengths[n] - seq + 1))
            xs.append(train_x[n][o:o + seq].to(dev, non_blocking=nb))  # gpuwhy: plants C6 (plain: 32 windows of 1.26 MB a step from pageable memory)
            ys.append(train_y[n][o:o + seq].to(dev, non_blocking=nb))
        x = torch.stack(xs).permute(0, 2, 1, 3).reshape(batch, 3, seq * ns)
        y = torch.stack(ys)
        with amp:
            logits = model(x)
        loss = F.cross_entropy(logits.float(), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        st["acc"] += loss.detach()
        if i % 50 == 49:
            st["loss"] = round(st["acc"].item() / 50, 5)
            st["acc"].zero_()
            st["reads"] += 1
        if (i + 1) % val_every == 0:
            validate()  # gpuwhy: plants C14 (plain: every 10 steps, 12 whole nights predicted and scored)

    n_params = sum(p.numel() for p in model.parameters())
    mb = batch * seq * 3 * ns * 4 / 2 ** 20
    cc.run("m_torch_utime_eeg_pageable_val_every_n", args, step, batch,
           extra=lambda: {"params_m": round(n_params / 1e6, 3), "pinned": nb, "h2d_mb_per_step": round(mb, 1),
                          "copies_per_step": 2 * batch, "val_every": val_every, "validations": st["vals"],
                          "val_kappa": st["kappa"], "val_macro_f1": st["f1"], "loss": st["loss"],
                          "loss_reads": st["reads"]})


if __name__ == "__main__":
    main()
