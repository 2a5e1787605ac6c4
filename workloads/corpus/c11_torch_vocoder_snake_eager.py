"""C11 memory-bound elementwise chains (a neural vocoder's Snake activations, eager PyTorch):
training a BigVGAN-style vocoder generator in plain PyTorch during its mel-reconstruction
phase (the generator pre-trained on the multi-resolution STFT and mel losses before the
discriminators join, as ParallelWaveGAN-style recipes do): HiFi-GAN V1's layout (80 mel bands
at 22.05 kHz, hop 256, a 7-wide input convolution to 512 channels, transposed-convolution
upsampling by 8, 8, 2 and 2 to 256, 128, 64 and 32 channels, after each a multi-receptive-field
fusion of three residual blocks with kernels 3, 7 and 11 and dilations 1, 3 and 5, a 7-wide
output convolution and tanh; 14.0 M parameters, random weights) with BigVGAN's periodic
SnakeBeta activation (x + 1/beta * sin(alpha x)^2, per-channel alpha and beta in log scale)
written as BigVGAN's module writes it, without the anti-aliasing filters; bf16 autocast,
AdamW (lr 2e-4, betas 0.8/0.99, fused) with exponential decay, batch 32 segments of 8,192
samples cut on the GPU from 512 synthetic 3-second recordings made there at start (voiced
harmonic tones with vibrato, formant-like envelopes and noise), their log-mel spectrograms
computed on the GPU each step; loss: the mel L1 (weight 45) and the multi-resolution STFT
loss (FFT 512, 1,024 and 2,048; spectral convergence and log magnitude); the loss stays on
the device and is read every 50 steps.

Each SnakeBeta is five separate kernels over the whole activation (the multiply by the
float32 alpha, which also promotes the bf16 activation to float32, the sine, the square, the
multiply by 1/beta and the add), and autograd's backward about ten more (the cosine, the
products and the per-channel reductions for alpha and beta), so the 73 activations of a step,
each over 2.1-8.4 M values, move about 75-90 GB through DRAM (autocast's casts included),
more time on the GPU than the convolutions' 1.9 TFLOP.

--fix: gpuwhy's C11 advice (fuse the chain: torch.compile the function that holds it): the
same SnakeBeta function under torch.compile (dynamic shapes, one compiled forward and
backward for every stage's width and length; Inductor fuses each activation's forward into
one kernel and its backward into one or two), compiled in the warm-up; model, data, losses
and optimizer unchanged.

Written blind for the romeo batch.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

import cc


def snake_beta(x, alpha, beta):
    """BigVGAN's SnakeBeta forward (alpha and beta in log scale), as its module writes it."""
    alpha = alpha.unsqueeze(0).unsqueeze(-1)
    beta = beta.unsqueeze(0).unsqueeze(-1)
    alpha = torch.exp(alpha)
    beta = torch.exp(beta)
    return x + (1.0 / (beta + 0.000000001)) * torch.pow(torch.sin(x * alpha), 2)


class SnakeBeta(nn.Module):
    fn = staticmethod(snake_beta)

    def __init__(self, channels):
        super().__init__()
        self.alpha = nn.Parameter(torch.zeros(channels))
        self.beta = nn.Parameter(torch.zeros(channels))

    def forward(self, x):
        return SnakeBeta.fn(x, self.alpha, self.beta)  # gpuwhy: plants C11 (5 eager elementwise kernels over the activation forward, ~10 backward, 73 times a step)


class AMPBlock(nn.Module):
    """HiFi-GAN's ResBlock1 with SnakeBeta: per dilation act, conv(d), act, conv(1), residual."""

    def __init__(self, ch, k, dilations=(1, 3, 5)):
        super().__init__()
        self.convs1 = nn.ModuleList(nn.utils.parametrizations.weight_norm(
            nn.Conv1d(ch, ch, k, dilation=d, padding=(k * d - d) // 2)) for d in dilations)
        self.convs2 = nn.ModuleList(nn.utils.parametrizations.weight_norm(
            nn.Conv1d(ch, ch, k, padding=(k - 1) // 2)) for _ in dilations)
        self.acts = nn.ModuleList(SnakeBeta(ch) for _ in range(2 * len(dilations)))

    def forward(self, x):
        for c1, c2, a1, a2 in zip(self.convs1, self.convs2, self.acts[::2], self.acts[1::2]):
            xt = c2(a2(c1(a1(x))))
            x = xt + x
        return x


class Generator(nn.Module):
    def __init__(self, n_mels=80, ch=512, rates=(8, 8, 2, 2), kernels=(16, 16, 4, 4), res_kernels=(3, 7, 11)):
        super().__init__()
        wn = nn.utils.parametrizations.weight_norm
        self.conv_pre = wn(nn.Conv1d(n_mels, ch, 7, padding=3))
        self.ups, self.blocks = nn.ModuleList(), nn.ModuleList()
        for i, (u, k) in enumerate(zip(rates, kernels)):
            cin, cout = ch // 2 ** i, ch // 2 ** (i + 1)
            self.ups.append(wn(nn.ConvTranspose1d(cin, cout, k, u, padding=(k - u) // 2)))
            self.blocks.append(nn.ModuleList(AMPBlock(cout, rk) for rk in res_kernels))
        self.act_post = SnakeBeta(cout)
        self.conv_post = wn(nn.Conv1d(cout, 1, 7, padding=3, bias=False))

    def forward(self, mel):
        x = self.conv_pre(mel)
        for up, blocks in zip(self.ups, self.blocks):
            x = up(x)
            xs = None
            for b in blocks:
                xs = b(x) if xs is None else xs + b(x)
            x = xs / len(blocks)
        return torch.tanh(self.conv_post(self.act_post(x)))


def mel_filterbank(n_fft, n_mels, sr, fmin=0.0, fmax=8000.0):
    """Slaney-style triangular mel filters, (n_mels, n_fft // 2 + 1)."""
    mel = lambda f: 2595 * math.log10(1 + f / 700)          # noqa: E731
    imel = lambda m: 700 * (10 ** (m / 2595) - 1)            # noqa: E731
    edges = torch.tensor([imel(m) for m in torch.linspace(mel(fmin), mel(fmax), n_mels + 2).tolist()])
    freqs = torch.linspace(0, sr / 2, n_fft // 2 + 1)
    lo, mid, hi = edges[:-2, None], edges[1:-1, None], edges[2:, None]
    fb = torch.clamp(torch.minimum((freqs - lo) / (mid - lo), (hi - freqs) / (hi - mid)), min=0)
    return fb * (2 / (hi - lo))


def make_audio(n, length, sr, dev, seed=0):
    """n recordings: voiced harmonic tones (vibrato, formant-like envelope) with noise."""
    g = torch.Generator(device=dev).manual_seed(seed)
    out = torch.empty(n, length, device=dev)
    t = torch.arange(length, device=dev) / sr
    for s in range(0, n, 32):
        m = min(32, n - s)
        f0 = 90 + 250 * torch.rand(m, 1, device=dev, generator=g)
        vib = 1 + 0.02 * torch.sin(2 * math.pi * (4 + 3 * torch.rand(m, 1, device=dev, generator=g)) * t)
        phase = 2 * math.pi * torch.cumsum(f0 * vib / sr, 1)
        formant = 500 + 2000 * torch.rand(m, 1, 1, device=dev, generator=g)
        h = torch.arange(1, 25, device=dev)[None, :, None]
        amp = torch.exp(-((h * f0[:, :, None] - formant) / 800) ** 2)                 # (m, 24, 1)
        x = (amp * torch.sin(h * phase[:, None, :])).sum(1)
        env = 0.5 + 0.5 * torch.sin(2 * math.pi * 1.5 * t + 6.28 * torch.rand(m, 1, device=dev, generator=g))
        x = x * env + 0.02 * torch.randn(m, length, device=dev, generator=g)
        out[s:s + m] = 0.9 * x / x.abs().amax(1, keepdim=True)
    return out


def main():
    args = cc.parser(__doc__, warmup=5).parse_args()
    dev = cc.torch_device(args)
    gpu = dev.type == "cuda"
    sr, hop, n_mels = 22050, 256, 80
    if args.smoke:
        ch, batch, seg, n_rec, rec_len = 64, 2, 2048, 8, 8192
    else:
        ch, batch, seg, n_rec, rec_len = 512, 32, 8192, 512, 3 * sr
    if args.fix:  # the advice: the chain compiled (Inductor fuses it); dynamic: one graph for every stage
        SnakeBeta.fn = staticmethod(torch.compile(snake_beta, dynamic=True))
    audio = make_audio(n_rec, rec_len, sr, dev)
    fb = mel_filterbank(1024, n_mels, sr).to(dev)
    win = {n: torch.hann_window(n, device=dev) for n in (512, 1024, 2048)}
    torch.manual_seed(0)
    gen = Generator(n_mels, ch).to(dev).train()
    params = sum(p.numel() for p in gen.parameters())
    opt = torch.optim.AdamW(gen.parameters(), lr=2e-4, betas=(0.8, 0.99), fused=gpu)
    sched = torch.optim.lr_scheduler.ExponentialLR(opt, gamma=0.999)
    amp = torch.autocast(dev.type, dtype=torch.bfloat16, enabled=gpu)
    g = torch.Generator(device=dev).manual_seed(1)
    st = {"acc": torch.zeros((), device=dev), "loss": None, "reads": 0}

    def stft_mag(x, n_fft, hop_len):
        s = torch.stft(x, n_fft, hop_len, window=win[n_fft], return_complex=True)
        return torch.sqrt(s.real ** 2 + s.imag ** 2 + 1e-7)

    def log_mel(x):
        return torch.log(torch.clamp(fb @ stft_mag(x, 1024, hop), min=1e-5))

    def step(i):
        rec = torch.randint(0, n_rec, (batch,), device=dev, generator=g)
        off = torch.randint(0, rec_len - seg, (batch,), device=dev, generator=g)
        y = audio[rec[:, None], off[:, None] + torch.arange(seg, device=dev)[None]]          # (B, seg)
        mel = log_mel(y)[..., :seg // hop]
        with amp:
            y_hat = gen(mel).squeeze(1)
        y_hat = y_hat.float()
        loss = 45.0 * F.l1_loss(log_mel(y_hat)[..., :seg // hop], mel)
        for n_fft, hop_len in ((512, 128), (1024, 256), (2048, 512)):
            sm, sm_hat = stft_mag(y, n_fft, hop_len), stft_mag(y_hat, n_fft, hop_len)
            sc = torch.linalg.norm(sm - sm_hat) / torch.linalg.norm(sm)
            mag = F.l1_loss(torch.log(sm_hat), torch.log(sm))
            loss = loss + (sc + mag) / 3
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if i % 100 == 99:
            sched.step()
        st["acc"] += loss.detach()
        if i % 50 == 49:
            st["loss"] = st["acc"].item() / 50
            st["acc"].zero_()
            st["reads"] += 1

    cc.run("c11_torch_vocoder_snake_eager", args, step, batch,
           extra=lambda: {"segment": seg, "params_m": round(params / 1e6, 1), "snake_compiled": bool(args.fix),
                          "loss": st["loss"], "loss_reads": st["reads"]})


if __name__ == "__main__":
    main()
