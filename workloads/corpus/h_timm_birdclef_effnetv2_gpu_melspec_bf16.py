"""Healthy control (timm, bioacoustics): bird-call classification in the BirdCLEF 2023 setting
(264 species, 32 kHz soundscape recordings) the way the Kaggle competition's top solutions
train it: a timm tf_efficientnetv2_s (random weights, in_chans=1, 264 outputs; 20.5 M
parameters) on log-mel spectrograms of random 5-second crops, with the whole input pipeline on
the GPU. 2,048 synthetic recordings of 10 s (calls: chirps and trills of a species' own
frequency band and rate, on pink-ish background noise; 1.3 GB of float16) are made at start and
held on the GPU with their labels; each step takes 128 random recordings, a random 5-s crop of
each (a gather), a random gain, mixes in a second recording with a Beta(1.5, 1.5) weight (mixup
of waveforms and targets), and computes the log-mel spectrogram on the GPU (torch.stft: n_fft
2,048, hop 512, Hann window; 128 mel bands 50 Hz - 14 kHz by one matmul with the filterbank;
power to dB with a top_db of 80; per-clip standardization), then SpecAugment (two frequency and
two time masks made by comparison with random bounds, no host read). The model runs
channels_last under bf16 autocast with cudnn.benchmark, BCEWithLogitsLoss on the mixed
targets, fused AdamW (lr 1e-3, weight decay 1e-2) with a cosine LambdaLR; the loss stays on the
GPU and is read every 50 steps.

Counted on a CPU-only machine: 4.6 GFLOP a clip forward at 128 x 313 (FlopCounterMode), so
~1.8 TFLOP a step forward and backward at batch 128; 1,995 aten operations forward and
backward. Estimated (not measured): ~18-30 ms of GPU work a step (EfficientNetV2's fused-MBConv
stages run as ordinary convolutions at 100-200 TFLOP/s, the later depthwise, squeeze-excite,
BatchNorm and SiLU layers are memory-bound), ~11-15 ms of host issue (~2,100 kernels with the
front end and the fused optimizer), the front end (crops, mixup, STFT, mel, masks) ~1 ms of GPU
work: GPU-bound, nothing to fix; ~8-12 GB of GPU memory (1.3 GB of it the recordings).

--fix: nothing (control).

Written blind for the whiskey batch.
"""
import math

import timm
import torch
import torch.nn.functional as F

import cc

SR = 32000


def mel_filterbank(n_fft, n_mels, fmin, fmax, dev):
    """librosa-style Slaney mel filterbank (n_fft // 2 + 1, n_mels), area-normalized."""
    def hz_to_mel(f):
        return 2595.0 * math.log10(1.0 + f / 700.0)
    mels = torch.linspace(hz_to_mel(fmin), hz_to_mel(fmax), n_mels + 2, device=dev)
    hz = 700.0 * (10 ** (mels / 2595.0) - 1.0)
    freqs = torch.linspace(0, SR / 2, n_fft // 2 + 1, device=dev)
    lo, ce, hi = hz[:-2, None], hz[1:-1, None], hz[2:, None]
    fb = torch.clamp(torch.minimum((freqs - lo) / (ce - lo), (hi - freqs) / (hi - ce)), min=0.0)
    fb = fb * (2.0 / (hi - lo))
    return fb.T.contiguous()


def synth_recordings(n, length, n_classes, dev, g):
    """Calls of each recording's species (its band and call rate) on coloured noise, float16."""
    out = torch.empty(n, length, dtype=torch.float16, device=dev)
    labels = torch.randint(0, n_classes, (n,), device=dev, generator=g)
    band = 1000 + 7000 * torch.rand(n_classes, device=dev, generator=g)
    rate = 1 + 6 * torch.rand(n_classes, device=dev, generator=g)
    t = torch.arange(length, device=dev) / SR
    for s in range(0, n, 128):
        lab = labels[s:s + 128]
        f0 = band[lab][:, None] * (1 + 0.3 * torch.sin(2 * math.pi * 3 * t))        # chirps
        phase = 2 * math.pi * torch.cumsum(f0 / SR * torch.ones_like(t), -1)
        gate = (torch.sin(2 * math.pi * rate[lab][:, None] * t) > 0.6).float()
        noise = torch.randn(lab.shape[0], length, device=dev, generator=g)
        noise = F.avg_pool1d(noise[:, None], 9, 1, 4)[:, 0]
        out[s:s + 128] = (0.5 * torch.sin(phase) * gate + 0.3 * noise).half()
    return out, labels


def main():
    args = cc.parser(__doc__, warmup=10).parse_args()
    dev = cc.torch_device(args)
    gpu = dev.type == "cuda"
    n_rec, rec_s, crop_s, batch, n_classes = (32, 2.0, 1.0, 4, 264) if args.smoke else (2048, 10.0, 5.0, 128, 264)
    n_fft, hop, n_mels = 2048, 512, 128
    if gpu:
        torch.backends.cudnn.benchmark = True
    g = torch.Generator(device=dev).manual_seed(0)
    rec, labels = synth_recordings(n_rec, int(rec_s * SR), n_classes, dev, g)
    crop = int(crop_s * SR)
    fb = mel_filterbank(n_fft, n_mels, 50.0, 14000.0, dev)
    window = torch.hann_window(n_fft, device=dev)
    beta = torch.distributions.Beta(torch.tensor(1.5, device=dev), torch.tensor(1.5, device=dev))

    torch.manual_seed(0)
    model = timm.create_model("tf_efficientnetv2_s", pretrained=False, in_chans=1, num_classes=n_classes,
                              drop_rate=0.2, drop_path_rate=0.2)
    model = model.to(dev).to(memory_format=torch.channels_last).train()
    params = sum(p.numel() for p in model.parameters())
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=1e-2, fused=gpu)
    total = 10_000
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 0.5 * (1 + math.cos(math.pi * min(s, total) / total)))
    crit = torch.nn.BCEWithLogitsLoss()
    amp = torch.autocast(dev.type, dtype=torch.bfloat16, enabled=gpu)
    st = {"acc": torch.zeros((), device=dev), "loss": None, "reads": 0, "frames": 0}

    def logmel(wav):
        spec = torch.stft(wav, n_fft, hop, n_fft, window, center=True, return_complex=True)
        power = spec.real ** 2 + spec.imag ** 2                             # (B, 1025, T)
        mel = torch.matmul(fb.T, power)                                     # (B, 128, T)
        db = 10.0 * torch.log10(torch.clamp(mel, min=1e-10))
        db = torch.maximum(db, db.amax(dim=(1, 2), keepdim=True) - 80.0)
        return (db - db.mean(dim=(1, 2), keepdim=True)) / (db.std(dim=(1, 2), keepdim=True) + 1e-5)

    def spec_augment(x):
        b, f, t = x.shape
        fr, tr = torch.arange(f, device=dev), torch.arange(t, device=dev)
        keep = torch.ones_like(x, dtype=torch.bool)
        for _ in range(2):
            f0 = torch.randint(0, f - 16, (b, 1, 1), device=dev, generator=g)
            fw = torch.randint(0, 16, (b, 1, 1), device=dev, generator=g)
            keep &= ~((fr[None, :, None] >= f0) & (fr[None, :, None] < f0 + fw))
            t0 = torch.randint(0, t - 32, (b, 1, 1), device=dev, generator=g)
            tw = torch.randint(0, 32, (b, 1, 1), device=dev, generator=g)
            keep &= ~((tr[None, None, :] >= t0) & (tr[None, None, :] < t0 + tw))
        return x * keep

    def step(i):
        a = torch.randint(0, n_rec, (batch,), device=dev, generator=g)
        b = torch.randint(0, n_rec, (batch,), device=dev, generator=g)
        off = torch.randint(0, rec.shape[1] - crop, (2, batch, 1), device=dev, generator=g) + torch.arange(crop, device=dev)
        wa = rec[a].gather(1, off[0]).float()
        wb = rec[b].gather(1, off[1]).float()
        gain = 10 ** ((torch.rand(batch, 1, device=dev, generator=g) * 12 - 6) / 20)
        lam = beta.sample((batch, 1))
        wav = gain * (lam * wa + (1 - lam) * wb)
        y = lam * F.one_hot(labels[a], n_classes).float() + (1 - lam) * F.one_hot(labels[b], n_classes).float()
        x = spec_augment(logmel(wav))[:, None].contiguous(memory_format=torch.channels_last)
        with amp:
            logits = model(x)
        loss = crit(logits.float(), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        st["acc"] += loss.detach()
        st["frames"] = x.shape[-1]
        if i % 50 == 49:
            st["loss"] = st["acc"].item() / 50
            st["acc"].zero_()
            st["reads"] += 1

    cc.run("h_timm_birdclef_effnetv2_gpu_melspec_bf16", args, step, batch,
           extra=lambda: {"recordings": n_rec, "crop_s": crop_s, "mel_frames": st["frames"], "n_mels": n_mels,
                          "params_m": round(params / 1e6, 1), "loss": st["loss"], "loss_reads": st["reads"]})


if __name__ == "__main__":
    main()
