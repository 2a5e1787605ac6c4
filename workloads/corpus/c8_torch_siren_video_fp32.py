"""C8 float32 matrix products without tensor cores (an implicit neural representation fitted
in full precision): a SIREN (Sitzmann et al. 2020) fitting a video, written as the paper's
explore_siren / train_video code writes it: SineLayer modules (nn.Linear, then
sin(omega_0 * x) with omega_0 = 30 and SIREN's initialization), 3 -> 1,024, three hidden
layers of 1,024, a linear output to RGB (3.16 M parameters), MSE against the pixels, Adam
(lr 1e-4), in float32 throughout as the paper's code runs (no autocast, PyTorch's default
float32 matmul precision "highest", so every GEMM runs on the FP32 SIMT units). The video is
300 frames of 512 x 512 RGB (the cat video's size; synthetic here: moving blobs and gratings
over a drifting background, made on the GPU at start as uint8, 236 MB), and each step samples
SIREN's sample_frac of 38e-4 of its pixels, 298,844 (t, y, x) coordinates in [-1, 1] and
their colours, on the GPU (the Implicit3DWrapper's sampler); PSNR is read every 50 steps.

About 5.6 TFLOP a step (3 x 1,024 x 1,024 x 2 FLOP a coordinate forward, three times that
with the backward), all of it in three 298,844 x 1,024 x 1,024 GEMMs a pass, which run at the
FP32 rate (~50 TFLOP/s on an H100) instead of a tensor core's, plus the sines' elementwise
passes over 1.2 GB activations.

--fix: gpuwhy's C8 advice, the part that keeps the sines' phases in float32: allow TF32 for
the matrix products (torch.set_float32_matmul_precision("high"), cuBLAS's TF32 tensor-core
GEMMs); parameters, activations and sines stay float32, the bf16 autocast is not taken
(omega_0 = 30 multiplies the first layer's rounding error); model, sampling, loss and optimizer
unchanged.

Written blind for the uniform batch.
"""
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

import cc


class SineLayer(nn.Module):
    """SIREN's layer: sin(omega_0 * (W x + b)), with the paper's initialization."""

    def __init__(self, in_features, out_features, bias=True, is_first=False, omega_0=30.0):
        super().__init__()
        self.omega_0 = omega_0
        self.is_first = is_first
        self.in_features = in_features
        self.linear = nn.Linear(in_features, out_features, bias=bias)
        self.init_weights()

    def init_weights(self):
        with torch.no_grad():
            if self.is_first:
                self.linear.weight.uniform_(-1 / self.in_features, 1 / self.in_features)
            else:
                bound = np.sqrt(6 / self.in_features) / self.omega_0
                self.linear.weight.uniform_(-bound, bound)

    def forward(self, x):
        return torch.sin(self.omega_0 * self.linear(x))


class Siren(nn.Module):
    def __init__(self, in_features, hidden_features, hidden_layers, out_features, outermost_linear=True,
                 first_omega_0=30.0, hidden_omega_0=30.0):
        super().__init__()
        net = [SineLayer(in_features, hidden_features, is_first=True, omega_0=first_omega_0)]
        for _ in range(hidden_layers):
            net.append(SineLayer(hidden_features, hidden_features, omega_0=hidden_omega_0))
        if outermost_linear:
            final = nn.Linear(hidden_features, out_features)
            with torch.no_grad():
                bound = np.sqrt(6 / hidden_features) / hidden_omega_0
                final.weight.uniform_(-bound, bound)
            net.append(final)
        else:
            net.append(SineLayer(hidden_features, out_features, omega_0=hidden_omega_0))
        self.net = nn.Sequential(*net)

    def forward(self, coords):
        return self.net(coords)


@torch.no_grad()
def make_video(frames, size, dev, seed=0):
    """A synthetic clip as uint8 (T, H, W, 3): a drifting smooth background, five moving
    coloured blobs and a rotating grating, made a chunk of frames at a time on the device."""
    g = torch.Generator(device=dev).manual_seed(seed)
    lin = torch.linspace(-1, 1, size, device=dev)
    yy, xx = torch.meshgrid(lin, lin, indexing="ij")
    c0 = torch.rand(5, 2, generator=g, device=dev) * 1.4 - 0.7
    vel = (torch.rand(5, 2, generator=g, device=dev) - 0.5) * 1.2
    col = torch.rand(5, 3, generator=g, device=dev)
    rad = torch.rand(5, generator=g, device=dev) * 0.25 + 0.1
    out = torch.empty(frames, size, size, 3, dtype=torch.uint8, device=dev)
    for f0 in range(0, frames, 50):
        t = torch.arange(f0, min(f0 + 50, frames), device=dev, dtype=torch.float32)[:, None, None] / frames
        bg = torch.stack([0.5 + 0.25 * torch.sin(3 * xx + 2 * t * 6.28), 0.5 + 0.25 * torch.cos(2 * yy - t * 6.28),
                          0.4 + 0.2 * torch.sin(2 * (xx + yy) + t * 3.0)], -1)
        ang = t * 3.14
        grating = 0.15 * torch.sin(25 * (xx * torch.cos(ang) + yy * torch.sin(ang)))
        img = bg + grating[..., None]
        for k in range(5):
            cx = torch.remainder(c0[k, 0] + vel[k, 0] * t + 1, 2) - 1
            cy = torch.remainder(c0[k, 1] + vel[k, 1] * t + 1, 2) - 1
            blob = torch.sigmoid((rad[k] - torch.sqrt((xx - cx) ** 2 + (yy - cy) ** 2)) * 40)
            img = img * (1 - blob[..., None]) + col[k] * blob[..., None]
        out[f0:f0 + t.shape[0]] = (img.clamp(0, 1) * 255).to(torch.uint8)
    return out


def main():
    args = cc.parser(__doc__, warmup=3).parse_args()
    dev = cc.torch_device(args)
    gpu = dev.type == "cuda"
    if args.smoke:
        frames, size, hidden, layers = 8, 32, 64, 3
    else:
        frames, size, hidden, layers = 300, 512, 1024, 3
    sample_frac = 38e-4
    n_samples = int(sample_frac * frames * size * size) if not args.smoke else 2048
    if args.fix:
        torch.set_float32_matmul_precision("high")        # TF32 tensor cores for the float32 GEMMs
    torch.manual_seed(0)
    video = make_video(frames, size, dev)
    model = Siren(3, hidden, layers, 3).to(dev)  # gpuwhy: plants C8 (float32 GEMMs at "highest" precision: no tensor cores)
    opt = torch.optim.Adam(model.parameters(), lr=1e-4)
    shape = torch.tensor([frames, size, size], device=dev)
    st = {"acc": torch.zeros((), device=dev), "psnr": None, "reads": 0}

    def step(i):
        # Implicit3DWrapper: sample_frac of the video's pixels, at random
        idx = torch.randint(0, frames * size * size, (n_samples,), device=dev)
        t = torch.div(idx, size * size, rounding_mode="floor")
        rem = idx - t * size * size
        y = torch.div(rem, size, rounding_mode="floor")
        x = rem - y * size
        coords = torch.stack([t, y, x], -1).float() / (shape - 1).float() * 2 - 1
        target = video[t, y, x].float() / 127.5 - 1
        out = model(coords)
        loss = F.mse_loss(out, target)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        st["acc"] += loss.detach()
        if i % 50 == 49:
            mse = st["acc"].item() / 50
            st["psnr"] = round(10 * math.log10(4.0 / max(mse, 1e-12)), 3)    # pixels in [-1, 1]
            st["acc"].zero_()
            st["reads"] += 1

    n_params = sum(p.numel() for p in model.parameters())
    flop = 6 * n_samples * sum(m.in_features * m.out_features for m in model.modules() if isinstance(m, nn.Linear))
    cc.run("c8_torch_siren_video_fp32", args, step, n_samples,
           extra=lambda: {"params_m": round(n_params / 1e6, 2), "coords_per_step": n_samples,
                          "tflop_per_step": round(flop / 1e12, 3), "matmul_precision": torch.get_float32_matmul_precision(),
                          "psnr": st["psnr"], "psnr_reads": st["reads"], "gpu": gpu})


if __name__ == "__main__":
    main()
