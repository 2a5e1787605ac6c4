"""C11 memory-bound elementwise chains (a complex-valued network's hand-written complex
BatchNorm, run op by op in eager PyTorch): training DCCRN (Hu et al., Interspeech 2020, the
DNS Challenge speech enhancement model) as huyanxin/DeepComplexCRN's complexnn.py and DCCRN.py
write it, in plain PyTorch. 16 kHz noisy speech, 2-second clips, STFT of 512 points (400-sample
window, hop 100; 321 frames, the 256 bins above DC as the real and imaginary input channels);
an encoder of six ComplexConv2d layers (channels 16-32-64-128-256-256 counted as real + imag
halves, kernel 5 x 2, stride 2 along frequency, causal padding in time; each a real and an
imaginary Conv2d applied to both halves, four convolutions combined by a subtraction and an
addition), each followed by ComplexBatchNorm and PReLU; a 2-layer LSTM of 256 units over the
1,024 bottleneck features and a projection back; a mirrored decoder of ComplexConvTranspose2d
layers with complex skip concatenations; the complex ratio mask of DCCRN-E (tanh of the mask's
magnitude, its phase added by atan2, cos and sin), the inverse STFT and the negative SI-SNR
loss (3.74 M parameters, random weights). bf16 autocast for the network, the STFT, mask and loss
in float32, Adam (lr 1e-3), batch 32 clips mixed on the GPU from synthetic voiced speech and
noise held there (a random SNR of -5 to 20 dB); the loss stays on the GPU and is read every 50
steps.

Plant: ComplexBatchNorm as complexnn.py writes it: the batch's complex means by repeated
.mean(d, keepdim=True), the centred parts, the 2 x 2 covariance (Vrr, Vri, Vii), its inverse
square root (tau, delta, s, t, rst, Urr, Uri, Uii) and the affine W (Zrr, Zri, Zir, Zii), the
whitened yr = Zrr*xr + Zri*xi, yi = Zir*xr + Zii*xi plus the biases and a torch.cat of the two
halves: about 17 kernels over the full activation forward and ~30 in the backward, eleven times
a step (6 encoder, 5 decoder layers), on activations of 32 x C x F x T with C x F = 2,048 for
every layer but the deepest (21 M values, 42 MB in bf16). Counted on a CPU-only machine at
batch 4: 2,823 aten operations forward and backward (772 mul, 583 add, 188 div, 166 mean, 100
sum), ~1.7 GB of elementwise outputs, 177 GFLOP of convolutions and LSTM (FlopCounterMode).
Estimated (not measured) at batch 32: ~35-45 GB of elementwise traffic a step (~13-18 ms at
2.5-3 TB/s, about two thirds of it in the batch norms), 1.4 TFLOP of small-channel
convolutions (~7-14 ms), the LSTM over 321 frames ~4-6 ms, ~3,000 kernels issued in ~15-20 ms
of host time under the GPU's ~30-40 ms: the unfused chains ~40-55% of a plain step, the
batch-norm chains the fix fuses ~30-40% (about 1.4-1.7x).

--fix: gpuwhy's C11 advice (fuse the chain: torch.compile the function that holds it): the same
complex batch-norm function (statistics, whitening, affine and PReLU of a layer) under
torch.compile (dynamic shapes, parameters' shapes not forced static: one compiled forward and
backward for every layer's width, a second for the decoder's sliced inputs), compiled in the
warm-up; model, data, loss and optimizer unchanged.

Written blind for the whiskey batch.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

import cc

SR = 16000


def complex_bn_prelu(x, wrr, wri, wii, br, bi, prelu_w, eps: float = 1e-5):
    """complexnn.ComplexBatchNorm.forward (training branch, affine) and the layer's PReLU."""
    xr, xi = x.unflatten(1, (2, -1)).unbind(1)                # torch.chunk(x, 2, 1)
    mr, mi = xr, xi
    for d in (3, 2, 0):                                       # redux: every dim but the channel one
        mr = mr.mean(d, keepdim=True)
        mi = mi.mean(d, keepdim=True)
    xr, xi = xr - mr, xi - mi
    vrr, vri, vii = xr * xr, xr * xi, xi * xi
    for d in (3, 2, 0):
        vrr = vrr.mean(d, keepdim=True)
        vri = vri.mean(d, keepdim=True)
        vii = vii.mean(d, keepdim=True)
    vrr = vrr + eps
    vii = vii + eps
    tau = vrr + vii
    delta = torch.addcmul(vrr * vii, vri, vri, value=-1)
    s = delta.sqrt()
    t = (tau + 2 * s).sqrt()
    rst = (s * t).reciprocal()
    urr, uii, uri = (s + vii) * rst, (s + vrr) * rst, -vri * rst
    vdim = (1, -1, 1, 1)
    wrr, wri, wii = wrr.view(vdim), wri.view(vdim), wii.view(vdim)
    zrr, zri = wrr * urr + wri * uri, wrr * uri + wri * uii
    zir, zii = wri * urr + wii * uri, wri * uri + wii * uii
    yr = zrr * xr + zri * xi + br.view(vdim)                                  # gpuwhy: plants C11 (the whitening and affine as separate full-size elementwise kernels, eleven layers a step)
    yi = zir * xr + zii * xi + bi.view(vdim)
    return F.prelu(torch.cat([yr, yi], 1), prelu_w)


class ComplexBNPReLU(nn.Module):
    fn = staticmethod(complex_bn_prelu)

    def __init__(self, channels):
        super().__init__()
        c = channels // 2
        self.wrr = nn.Parameter(torch.full((c,), 1 / math.sqrt(2)))
        self.wii = nn.Parameter(torch.full((c,), 1 / math.sqrt(2)))
        self.wri = nn.Parameter(torch.zeros(c))
        self.br, self.bi = nn.Parameter(torch.zeros(c)), nn.Parameter(torch.zeros(c))
        self.prelu = nn.Parameter(torch.full((1,), 0.25))

    def forward(self, x):
        return ComplexBNPReLU.fn(x, self.wrr, self.wri, self.wii, self.br, self.bi, self.prelu)


class ComplexConv2d(nn.Module):
    """complexnn.ComplexConv2d: causal in time (left pad 1), (real, imag) as channel halves."""

    def __init__(self, cin, cout, k=(5, 2), s=(2, 1), p=(2, 1)):
        super().__init__()
        self.p = p
        self.real_conv = nn.Conv2d(cin // 2, cout // 2, k, s, padding=(p[0], 0))
        self.imag_conv = nn.Conv2d(cin // 2, cout // 2, k, s, padding=(p[0], 0))

    def forward(self, x):
        x = F.pad(x, [self.p[1], 0, 0, 0])
        real, imag = torch.chunk(x, 2, 1)
        r2r, i2i = self.real_conv(real), self.imag_conv(imag)
        r2i, i2r = self.imag_conv(real), self.real_conv(imag)
        return torch.cat([r2r - i2i, r2i + i2r], 1)


class ComplexConvTranspose2d(nn.Module):
    def __init__(self, cin, cout, k=(5, 2), s=(2, 1), p=(2, 0), op=(1, 0)):
        super().__init__()
        self.real_conv = nn.ConvTranspose2d(cin // 2, cout // 2, k, s, padding=p, output_padding=op)
        self.imag_conv = nn.ConvTranspose2d(cin // 2, cout // 2, k, s, padding=p, output_padding=op)

    def forward(self, x):
        real, imag = torch.chunk(x, 2, 1)
        r2r, i2i = self.real_conv(real), self.imag_conv(imag)
        r2i, i2r = self.imag_conv(real), self.real_conv(imag)
        return torch.cat([r2r - i2i, r2i + i2r], 1)


def complex_cat(xs):
    reals, imags = zip(*(torch.chunk(x, 2, 1) for x in xs))
    return torch.cat(list(reals) + list(imags), 1)


class DCCRN(nn.Module):
    def __init__(self, kernel_num=(16, 32, 64, 128, 256, 256), rnn_units=256, fft_len=512):
        super().__init__()
        ks = (2,) + tuple(kernel_num)
        self.encoder = nn.ModuleList(nn.ModuleDict({"conv": ComplexConv2d(ks[i], ks[i + 1]), "bn": ComplexBNPReLU(ks[i + 1])})
                                     for i in range(len(ks) - 1))
        f = fft_len // 2 // 2 ** len(kernel_num)                # 4 bins left at the bottleneck
        self.enhance = nn.LSTM(ks[-1] * f, rnn_units, num_layers=2)
        self.transform = nn.Linear(rnn_units, ks[-1] * f)
        self.decoder = nn.ModuleList()
        for i in range(len(ks) - 1, 0, -1):
            block = {"conv": ComplexConvTranspose2d(ks[i] * 2, ks[i - 1] if i > 1 else 2)}
            if i > 1:
                block["bn"] = ComplexBNPReLU(ks[i - 1])
            self.decoder.append(nn.ModuleDict(block))

    def forward(self, x):
        skips = []
        for layer in self.encoder:
            x = layer["bn"](layer["conv"](x))
            skips.append(x)
        b, c, f, t = x.shape
        h = x.permute(3, 0, 1, 2).reshape(t, b, c * f)
        h, _ = self.enhance(h)
        x = self.transform(h).reshape(t, b, c, f).permute(1, 2, 3, 0)
        for k, layer in enumerate(self.decoder):
            x = layer["conv"](complex_cat([x, skips[-1 - k]]))[..., 1:]     # causal: drop the first frame
            if "bn" in layer:
                x = layer["bn"](x)
        return x


def si_snr(est, ref, eps=1e-8):
    est = est - est.mean(-1, keepdim=True)
    ref = ref - ref.mean(-1, keepdim=True)
    s = (est * ref).sum(-1, keepdim=True) * ref / (ref.pow(2).sum(-1, keepdim=True) + eps)
    n = est - s
    return 10 * torch.log10(s.pow(2).sum(-1) / (n.pow(2).sum(-1) + eps) + eps)


def synth_speech(n, length, dev, g):
    """Voiced syllables with drifting pitch and a few harmonics, pauses between them."""
    t = torch.arange(length, device=dev) / SR
    f0 = 100 + 120 * torch.rand(n, 1, device=dev, generator=g)
    drift = 1 + 0.1 * torch.sin(2 * math.pi * torch.rand(n, 1, device=dev, generator=g) * 2 * t)
    phase = 2 * math.pi * torch.cumsum(f0 * drift / SR * torch.ones_like(t), -1)
    x = sum(torch.sin(h * phase) / h for h in range(1, 8))
    env = (torch.sin(2 * math.pi * (2 + 3 * torch.rand(n, 1, device=dev, generator=g)) * t) > 0.2).float()
    return (0.3 * x * F.avg_pool1d(env[:, None], 401, 1, 200)[:, 0]).contiguous()


def main():
    args = cc.parser(__doc__, warmup=5).parse_args()
    dev = cc.torch_device(args)
    gpu = dev.type == "cuda"
    secs, batch, pool = (0.25, 2, 16) if args.smoke else (2.0, 32, 512)
    length = int(secs * SR)
    n_fft, win, hop = 512, 400, 100
    if args.fix:  # the advice: the chain compiled (Inductor fuses it); dynamic: one graph for every layer
        torch._dynamo.config.force_parameter_static_shapes = False      # the layers' BN weights differ in size too
        ComplexBNPReLU.fn = staticmethod(torch.compile(complex_bn_prelu, dynamic=True))
        if not getattr(args, "warmup_given", False):
            args.warmup = max(args.warmup, 5)

    g = torch.Generator(device=dev).manual_seed(0)
    clean_pool = synth_speech(pool, 2 * length, dev, g)
    noise_pool = torch.randn(pool, 2 * length, device=dev, generator=g)
    noise_pool = F.avg_pool1d(noise_pool[:, None], 5, 1, 2)[:, 0] * (0.5 + torch.rand(pool, 1, device=dev, generator=g))
    window = torch.hann_window(win, device=dev)

    torch.manual_seed(0)
    model = DCCRN().to(dev).train()
    params = sum(p.numel() for p in model.parameters())
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    amp = torch.autocast(dev.type, dtype=torch.bfloat16, enabled=gpu)
    st = {"acc": torch.zeros((), device=dev), "loss": None, "reads": 0, "frames": 0}

    def stft(x):
        return torch.stft(x, n_fft, hop, win, window, center=True, return_complex=True)

    def step(i):
        ci = torch.randint(0, pool, (batch,), device=dev, generator=g)
        ni = torch.randint(0, pool, (batch,), device=dev, generator=g)
        off = torch.randint(0, length, (batch, 1), device=dev, generator=g) + torch.arange(length, device=dev)
        clean = clean_pool[ci].gather(1, off)
        noise = noise_pool[ni].gather(1, off)
        snr = -5 + 25 * torch.rand(batch, 1, device=dev, generator=g)
        scale = clean.pow(2).mean(-1, keepdim=True).sqrt() / (noise.pow(2).mean(-1, keepdim=True).sqrt() * 10 ** (snr / 20) + 1e-8)
        noisy = clean + scale * noise
        spec = stft(noisy)                                                   # (B, 257, T)
        x = torch.stack([spec.real[:, 1:], spec.imag[:, 1:]], 1)              # (B, 2, 256, T)
        with amp:
            out = model(x)
        mr, mi = F.pad(out.float(), [0, 0, 1, 0]).unbind(1)                 # (B, 257, T)
        mags = torch.sqrt(mr ** 2 + mi ** 2)
        phase = torch.atan2(mi / (mags + 1e-8), mr / (mags + 1e-8))
        est_mag = torch.tanh(mags) * spec.abs()
        est_phase = spec.angle() + phase
        est = torch.istft(torch.polar(est_mag, est_phase), n_fft, hop, win, window, center=True, length=length)
        loss = -si_snr(est, clean).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        st["acc"] += loss.detach()
        st["frames"] = spec.shape[-1]
        if i % 50 == 49:
            st["loss"] = st["acc"].item() / 50
            st["acc"].zero_()
            st["reads"] += 1

    cc.run("c11_torch_dccrn_complex_batchnorm_eager", args, step, batch,
           extra=lambda: {"clip_s": secs, "frames": st["frames"], "params_m": round(params / 1e6, 2),
                          "complex_bn_layers": sum(isinstance(m, ComplexBNPReLU) for m in model.modules()),
                          "bn_compiled": bool(args.fix), "loss": st["loss"], "loss_reads": st["reads"]})


if __name__ == "__main__":
    main()
