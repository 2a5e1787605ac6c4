"""C14 periodic audio synthesis with Griffin-Lim on the CPU (text-to-speech training that logs a
sample every 20 steps): training FastSpeech 2 (Ren et al. 2021) on LJSpeech-style data in the
layout of its popular PyTorch port (ming024/FastSpeech2), in plain PyTorch: a phoneme encoder of
4 FFT blocks and a mel decoder of 6 (d 256, 2 heads, a 1-D convolutional feed-forward of 1,024
with kernels 9 and 1, post-LN, dropout 0.2), the variance adaptor (duration, phoneme-level
pitch and energy predictors of two 3-wide convolutions each; pitch and energy quantized into
256 bins and embedded; the length regulator expanding the phonemes by their durations with a
cumulative-sum alignment, no host read), an 80-band mel projection and the 5-layer
convolutional PostNet of 512 channels with BatchNorm and tanh (34.6 M parameters, random
weights); mel L1 before and after the PostNet plus the pitch, energy and log-duration MSEs,
masked; Adam (0.9, 0.98, eps 1e-9) with the warm-up schedule, gradient clipping at 1 (foreach),
bf16 autocast, batch 32 utterances bucketed to 128 phonemes and 640 frames, drawn from 2,048
synthetic utterances held on the GPU (phonemes, durations, pitch, energy and their log-mel
spectrograms); the loss stays on the GPU and is read every 50 steps.

The script keeps the port's logging habit with its synthesis interval set to 20 steps (the
config's synth_step, lowered while checking the alignment and left there) and no neural
vocoder: every 20 steps it synthesizes the held-out sentence (one utterance of 533 frames,
6.2 s), copies the predicted mel to the host, inverts the mel filterbank with its pseudo-inverse
and runs Griffin-Lim in NumPy (32 iterations with librosa's momentum 0.99, n_fft 1,024, hop
256, at 22,050 Hz), then writes the 16-bit WAV under GW_CORPUS_CACHE for TensorBoard: some
hundreds of milliseconds of single-threaded FFTs on the training thread every 20 steps while
the GPU idles.

--fix: gpuwhy's C14 advice (do the periodic evaluation-like work less often): the sample
synthesized every 1,000 steps instead of 20, outside the measured window; model, data, batch,
loss and optimizer unchanged.

Written blind for the uniform batch.
"""
import math
import os
import wave

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

import cc

SR, N_FFT, HOP, N_MELS = 22050, 1024, 256, 80
N_SYMBOLS, N_BINS = 80, 256


# ---- audio on the host (librosa-style, NumPy) ---------------------------------

def mel_filterbank(sr=SR, n_fft=N_FFT, n_mels=N_MELS, fmin=0.0, fmax=8000.0):
    """librosa.filters.mel (Slaney scale and norm)."""
    def hz_to_mel(f):
        f = np.asarray(f, float)
        return np.where(f >= 1000, 15 + np.log(np.maximum(f, 1e-9) / 1000) / (np.log(6.4) / 27), f / (200.0 / 3))

    def mel_to_hz(m):
        m = np.asarray(m, float)
        return np.where(m >= 15, 1000 * np.exp((np.log(6.4) / 27) * (m - 15)), m * (200.0 / 3))

    freqs = np.linspace(0, sr / 2, n_fft // 2 + 1)
    pts = mel_to_hz(np.linspace(hz_to_mel(fmin), hz_to_mel(fmax), n_mels + 2))
    fd, ramps = np.diff(pts), pts[:, None] - freqs[None]
    w = np.maximum(0, np.minimum(-ramps[:-2] / fd[:-1, None], ramps[2:] / fd[1:, None]))
    return w * (2.0 / (pts[2:n_mels + 2] - pts[:n_mels]))[:, None]


WINDOW = np.hanning(N_FFT + 1)[:-1]


def stft(y):
    y = np.pad(y, N_FFT // 2, mode="reflect")
    n = 1 + (len(y) - N_FFT) // HOP
    frames = np.lib.stride_tricks.as_strided(y, (n, N_FFT), (y.strides[0] * HOP, y.strides[0]))
    return np.fft.rfft(frames * WINDOW, axis=1)


def istft(spec):
    frames = np.fft.irfft(spec, n=N_FFT, axis=1) * WINDOW
    t, r = frames.shape[0], N_FFT // HOP
    out, wss = np.zeros((t + r - 1) * HOP), np.zeros((t + r - 1) * HOP)
    f4, w4 = frames.reshape(t, r, HOP), (WINDOW ** 2).reshape(r, HOP)
    for k in range(r):                                     # overlap-add
        out[k * HOP:(k + t) * HOP] += f4[:, k].reshape(-1)
        wss[k * HOP:(k + t) * HOP] += np.tile(w4[k], t)
    out /= np.maximum(wss, 1e-8)
    return out[N_FFT // 2:N_FFT // 2 + (t - 1) * HOP]


def griffin_lim(mag, n_iter=32, momentum=0.99, seed=0):
    """librosa.griffinlim's fast Griffin-Lim; mag is (frames, bins)."""
    angles = np.exp(2j * np.pi * np.random.default_rng(seed).random(mag.shape))
    rebuilt = 0.0
    for _ in range(n_iter):
        tprev = rebuilt
        rebuilt = stft(istft(mag * angles))
        angles = rebuilt - (momentum / (1 + momentum)) * tprev
        angles /= np.abs(angles) + 1e-16
    return istft(mag * angles)


# ---- FastSpeech 2 ---------------------------------------------------------------

class FFTBlock(nn.Module):
    def __init__(self, d=256, heads=2, ff=1024, kernels=(9, 1), dropout=0.2):
        super().__init__()
        self.attn = nn.MultiheadAttention(d, heads, dropout=dropout, batch_first=True)
        self.norm1, self.norm2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.w1 = nn.Conv1d(d, ff, kernels[0], padding=kernels[0] // 2)
        self.w2 = nn.Conv1d(ff, d, kernels[1], padding=kernels[1] // 2)
        self.drop = nn.Dropout(dropout)

    def forward(self, x, pad):
        a, _ = self.attn(x, x, x, key_padding_mask=pad, need_weights=False)
        x = self.norm1(x + self.drop(a)).masked_fill(pad[..., None], 0)
        h = self.w2(F.relu(self.w1(x.transpose(1, 2)))).transpose(1, 2)
        return self.norm2(x + self.drop(h)).masked_fill(pad[..., None], 0)


class VariancePredictor(nn.Module):
    def __init__(self, d=256, filt=256, k=3, dropout=0.5):
        super().__init__()
        self.c1, self.c2 = nn.Conv1d(d, filt, k, padding=k // 2), nn.Conv1d(filt, filt, k, padding=k // 2)
        self.n1, self.n2 = nn.LayerNorm(filt), nn.LayerNorm(filt)
        self.drop = nn.Dropout(dropout)
        self.out = nn.Linear(filt, 1)

    def forward(self, x, pad):
        x = self.drop(self.n1(F.relu(self.c1(x.transpose(1, 2))).transpose(1, 2)))
        x = self.drop(self.n2(F.relu(self.c2(x.transpose(1, 2))).transpose(1, 2)))
        return self.out(x).squeeze(-1).masked_fill(pad, 0.0)


class FastSpeech2(nn.Module):
    def __init__(self, d=256, enc_layers=4, dec_layers=6, ff=1024, postnet=512, max_len=1000):
        super().__init__()
        self.emb = nn.Embedding(N_SYMBOLS, d, padding_idx=0)
        pos = torch.arange(max_len).float()[:, None]
        div = torch.exp(torch.arange(0, d, 2).float() * -(math.log(10000.0) / d))
        pe = torch.zeros(max_len, d)
        pe[:, 0::2], pe[:, 1::2] = torch.sin(pos * div), torch.cos(pos * div)
        self.register_buffer("pe", pe)
        self.encoder = nn.ModuleList(FFTBlock(d, 2, ff) for _ in range(enc_layers))
        self.decoder = nn.ModuleList(FFTBlock(d, 2, ff) for _ in range(dec_layers))
        self.duration, self.pitch, self.energy = VariancePredictor(d), VariancePredictor(d), VariancePredictor(d)
        self.register_buffer("pitch_bins", torch.linspace(-3, 3, N_BINS - 1))
        self.register_buffer("energy_bins", torch.linspace(-3, 3, N_BINS - 1))
        self.pitch_emb, self.energy_emb = nn.Embedding(N_BINS, d), nn.Embedding(N_BINS, d)
        self.mel = nn.Linear(d, N_MELS)
        chans = [N_MELS] + [postnet] * 4 + [N_MELS]
        layers = []
        for k in range(5):
            layers += [nn.Conv1d(chans[k], chans[k + 1], 5, padding=2), nn.BatchNorm1d(chans[k + 1])]
            if k < 4:
                layers += [nn.Tanh()]
            layers += [nn.Dropout(0.5)]
        self.postnet = nn.Sequential(*layers)

    def forward(self, text, src_pad, durations, pitch, energy, mel_len, max_frames):
        x = self.emb(text) + self.pe[:text.shape[1]]
        for blk in self.encoder:
            x = blk(x, src_pad)
        log_d = self.duration(x, src_pad)
        p_pred, e_pred = self.pitch(x, src_pad), self.energy(x, src_pad)
        x = x + self.pitch_emb(torch.bucketize(pitch, self.pitch_bins)) \
              + self.energy_emb(torch.bucketize(energy, self.energy_bins))
        # length regulator: frame f takes the phoneme whose cumulative duration first exceeds f
        cum = durations.cumsum(1)
        frames = torch.arange(max_frames, device=text.device)
        idx = torch.searchsorted(cum, frames.expand(text.shape[0], -1).contiguous(), right=True)
        idx = idx.clamp(max=text.shape[1] - 1)
        y = x.gather(1, idx[..., None].expand(-1, -1, x.shape[-1]))
        mel_pad = frames[None] >= mel_len[:, None]
        y = y + self.pe[:max_frames]
        for blk in self.decoder:
            y = blk(y, mel_pad)
        mel = self.mel(y)
        post = mel + self.postnet(mel.transpose(1, 2)).transpose(1, 2)
        return mel, post, log_d, p_pred, e_pred, mel_pad


def make_corpus(n, n_ph, n_frames, dev, seed=0, full=False):
    """LJSpeech-like utterances on the GPU: phoneme ids, durations (frames), normalized pitch and
    energy per phoneme, and a log-mel target built from per-phoneme spectral envelopes with a
    pitch-dependent ripple and noise."""
    g = torch.Generator(device=dev).manual_seed(seed)
    lens = torch.randint(n_ph // 2, n_ph + 1, (n,), device=dev, generator=g)
    pad = torch.arange(n_ph, device=dev)[None] >= lens[:, None]
    text = torch.randint(1, N_SYMBOLS, (n, n_ph), device=dev, generator=g).masked_fill(pad, 0)
    dur = torch.randint(1, 9, (n, n_ph), device=dev, generator=g).float().masked_fill(pad, 0)
    target = torch.randint(n_frames * 3 // 5, n_frames + 1, (n, 1), device=dev, generator=g).float()
    if full:
        target.fill_(n_frames)
    dur = torch.floor(dur * target / dur.sum(1, keepdim=True)).long()               # fits n_frames
    mel_len = dur.sum(1)
    pitch = torch.randn(n, n_ph, device=dev, generator=g).masked_fill(pad, 0)
    energy = torch.randn(n, n_ph, device=dev, generator=g).masked_fill(pad, 0)
    env = torch.randn(N_SYMBOLS, N_MELS, device=dev, generator=g).cumsum(1) * 0.3 - 4
    mels = torch.empty(n, n_frames, N_MELS, dtype=torch.bfloat16, device=dev)
    frames = torch.arange(n_frames, device=dev)
    bands = torch.arange(N_MELS, device=dev).float()
    for s in range(0, n, 256):
        sl = slice(s, s + 256)
        idx = torch.searchsorted(dur[sl].cumsum(1), frames.expand(dur[sl].shape[0], -1).contiguous(), right=True)
        idx = idx.clamp(max=n_ph - 1)
        ph, p = text[sl].gather(1, idx), pitch[sl].gather(1, idx)
        m = env[ph] + 0.5 * torch.cos(bands * (0.6 + 0.1 * p[..., None])) + 0.2 * torch.randn(
            ph.shape[0], n_frames, N_MELS, device=dev, generator=g)
        m = m.masked_fill((frames[None] >= mel_len[sl, None])[..., None], math.log(1e-5))
        mels[sl] = m.to(torch.bfloat16)
    return text, pad, dur, pitch, energy, mel_len, mels


def write_wav(path, y):
    pcm = (np.clip(y / max(1e-8, np.abs(y).max()), -1, 1) * 32767 * 0.95).astype(np.int16)
    with wave.open(path, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(SR)
        w.writeframes(pcm.tobytes())


def main():
    args = cc.parser(__doc__, warmup=5).parse_args()
    dev = cc.torch_device(args)
    gpu = dev.type == "cuda"
    if args.smoke:
        n_utt, batch, n_ph, n_frames, d, ff, enc_l, dec_l, post, synth_frames, n_iter = 64, 4, 32, 160, 64, 128, 1, 1, 64, 120, 4
    else:
        n_utt, batch, n_ph, n_frames, d, ff, enc_l, dec_l, post, synth_frames, n_iter = 2048, 32, 128, 640, 256, 1024, 4, 6, 512, 560, 32
    synth_step = 1000 if args.fix else (4 if args.smoke else 20)   # the config's synth_step
    text, pad, dur, pitch, energy, mel_len, mels = make_corpus(n_utt, n_ph, n_frames, dev)
    held = make_corpus(1, n_ph, synth_frames, dev, seed=7, full=True)  # the held-out sentence
    out_dir = os.path.join(cc.CACHE, "fastspeech2_samples")
    os.makedirs(out_dir, exist_ok=True)
    inv_mel = np.linalg.pinv(mel_filterbank())                       # (513, 80), once

    torch.manual_seed(0)
    model = FastSpeech2(d, enc_l, dec_l, ff, post).to(dev).train()
    params = sum(p.numel() for p in model.parameters())
    opt = torch.optim.Adam(model.parameters(), lr=1.0, betas=(0.9, 0.98), eps=1e-9, fused=gpu)
    warm = 4000
    amp = torch.autocast(dev.type, dtype=torch.bfloat16, enabled=gpu)
    g = torch.Generator(device=dev).manual_seed(1)
    st = {"acc": torch.zeros((), device=dev), "loss": None, "reads": 0, "synths": 0, "n": 0}

    def synth_one_sample(i):
        model.eval()
        with torch.no_grad(), amp:
            t, p_, du, pi, en, ml, _ = held
            _, post_mel, *_ = model(t, p_, du, pi, en, ml, synth_frames)
        model.train()
        logmel = post_mel[0, :int(ml[0])].float().cpu().numpy()     # device-to-host copy
        lin = np.maximum(1e-10, np.exp(logmel) @ inv_mel.T)         # (frames, 513)
        wav = griffin_lim(lin ** 1.5, n_iter=n_iter)  # gpuwhy: plants C14 (Griffin-Lim on the training thread every 20 steps, the GPU idle)
        write_wav(os.path.join(out_dir, f"step_{i:06d}_prediction.wav"), wav)
        st["synths"] += 1

    def step(i):
        st["n"] += 1
        k = st["n"]
        opt.param_groups[0]["lr"] = d ** -0.5 * min(k ** -0.5, k * warm ** -1.5)
        idx = torch.randint(0, n_utt, (batch,), device=dev, generator=g)
        sp, ml = pad[idx], mel_len[idx]
        with amp:
            mel, post_mel, log_d, p_pred, e_pred, mel_pad = model(text[idx], sp, dur[idx], pitch[idx], energy[idx], ml,
                                                                  n_frames)
        keep_f, keep_p = (~mel_pad)[..., None].float(), (~sp).float()
        tgt = mels[idx].float()
        nf, np_ = keep_f.sum() * N_MELS, keep_p.sum()
        loss = ((mel.float() - tgt).abs() * keep_f).sum() / nf + ((post_mel.float() - tgt).abs() * keep_f).sum() / nf \
            + (((log_d.float() - torch.log(dur[idx].float() + 1)) ** 2) * keep_p).sum() / np_ \
            + (((p_pred.float() - pitch[idx]) ** 2) * keep_p).sum() / np_ \
            + (((e_pred.float() - energy[idx]) ** 2) * keep_p).sum() / np_
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0, foreach=True)
        opt.step()
        st["acc"] += loss.detach()
        if i % 50 == 49:
            st["loss"] = st["acc"].item() / 50
            st["acc"].zero_()
            st["reads"] += 1
        if (i + 1) % synth_step == 0:
            synth_one_sample(i + 1)

    try:
        cc.run("c14_torch_fastspeech2_griffinlim_audio_every_n", args, step, batch,
               extra=lambda: {"params_m": round(params / 1e6, 1), "synth_step": synth_step, "synths": st["synths"],
                              "synth_frames": int(held[5][0]), "griffin_lim_iters": n_iter, "loss": st["loss"],
                              "loss_reads": st["reads"]})
    finally:
        for f in os.listdir(out_dir):
            os.remove(os.path.join(out_dir, f))


if __name__ == "__main__":
    main()
