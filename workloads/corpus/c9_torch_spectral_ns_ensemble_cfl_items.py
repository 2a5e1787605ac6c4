"""C9 host reads every time step (an adaptive CFL time step read member by member): generating
training data for a neural operator with a pseudo-spectral 2-D Navier-Stokes solver, the
vorticity form on the unit torus as the FNO data generator writes it
(zongyi-li/fourier_neural_operator, data_generation/navier_stokes/ns_2d.py: Crank-Nicolson for
the viscous term, explicit advection, 2/3 dealiasing, the Kolmogorov-like forcing
0.1 (sin 2 pi (x + y) + cos 2 pi (x + y))), in plain PyTorch, float32, as PDEBench-style
parameter sweeps run it: an ensemble of 64 trajectories at 256 x 256, each with its own
viscosity (1e-4 .. 1e-3) and forcing amplitude, from Gaussian-random-field initial vorticity
made on the GPU; one harness step is one solver time step of all 64 members (4 inverse and 1
forward real FFT, ~20 elementwise kernels on 16.9 MB fields).

Plant: ns_2d.py uses a fixed step; this script took the adaptive step of hand-written solvers
(the CFL rule of Dedalus's flow_tools.CFL and jax-cfd's stable_time_step), per member since
the members' velocities differ, and wrote it the Python way: the velocity maximum of each
member is computed on the GPU, then `dts = [min(dt_max, cfl * dx / float(u)) for u in umax]`
iterates over the CUDA tensor, one blocking 4-byte device-to-host read per member (64 a step;
the first one waits for the whole step), the Python floats sent back with torch.tensor(dts,
device=...) and each member's time advanced in a Python list. The GPU idles through the 64
reads and until the host has issued the next step's first kernels.
Estimated (not measured): ~0.4-0.5 ms of GPU work a step (FFTs ~25-35 us each, elementwise
~12-15 us each over 17 MB at ~3 TB/s), ~0.25 ms of host issue; the 64 reads ~8-15 us each,
0.5-1 ms a step with the GPU idle: plain ~1-1.5 ms a step, the reads ~50-70% of it; fixed
~0.45-0.5 ms (GPU-bound): about 2-3x.

--fix: gpuwhy's C9 advice (keep values on the GPU, read them every N steps): the per-member
time step computed on the GPU as torch.clamp(cfl * dx / umax, max=dt_max), each member's
time kept in a GPU tensor, and the progress (the slowest member's time) read every 100 steps.
The solver, the ensemble, the CFL rule and its values are unchanged.

Written blind for the xray batch.
"""
import math

import torch

import cc


def grf_vorticity(b, n, dev, g, alpha=2.5, tau=7.0):
    """Gaussian random field as the FNO generator draws it: N(0, tau^(alpha-1) (-lap + tau^2)^-alpha)."""
    k = torch.fft.fftfreq(n, d=1.0 / n, device=dev)
    kx, ky = torch.meshgrid(k, k, indexing="ij")
    sqrt_eig = n * n * math.sqrt(2.0) * tau ** (0.5 * (alpha - 1)) * \
        ((4 * math.pi ** 2) * (kx ** 2 + ky ** 2) + tau ** 2) ** (-alpha / 2.0)
    sqrt_eig[0, 0] = 0.0
    coef = torch.complex(torch.randn(b, n, n, device=dev, generator=g), torch.randn(b, n, n, device=dev, generator=g))
    return torch.fft.ifftn(sqrt_eig * coef, dim=(-2, -1)).real


def main():
    args = cc.parser(__doc__, warmup=5).parse_args()
    dev = cc.torch_device(args)
    b, n = (4, 32) if args.smoke else (64, 256)
    cfl, dt_max = 0.5, 1e-2
    dx = 1.0 / n
    g = torch.Generator(device=dev).manual_seed(0)

    # wavenumbers for the real FFT (last axis halved), as ns_2d.py builds them
    k_max = n // 2
    ky_1d = torch.cat([torch.arange(0, k_max, device=dev), torch.arange(-k_max, 0, device=dev)]).float()
    k_x = ky_1d[:, None].expand(n, k_max + 1)                     # first axis
    k_y = torch.arange(0, k_max + 1, device=dev).float()[None, :].expand(n, k_max + 1)
    lap = 4 * math.pi ** 2 * (k_x ** 2 + k_y ** 2)
    lap[0, 0] = 1.0
    dealias = ((k_x.abs() <= (2.0 / 3.0) * k_max) & (k_y.abs() <= (2.0 / 3.0) * k_max)).float()
    d_dx = (2j * math.pi) * k_x.to(torch.complex64)                # spectral derivatives
    d_dy = (2j * math.pi) * k_y.to(torch.complex64)

    xs = torch.linspace(0, 1, n + 1, device=dev)[:-1]
    X, Y = torch.meshgrid(xs, xs, indexing="ij")
    amp = torch.empty(b, 1, 1, device=dev).uniform_(0.05, 0.2, generator=g)
    visc = torch.exp(torch.empty(b, 1, 1, device=dev).uniform_(math.log(1e-4), math.log(1e-3), generator=g))
    f_h = torch.fft.rfft2(amp * (torch.sin(2 * math.pi * (X + Y)) + torch.cos(2 * math.pi * (X + Y))))
    w_h = torch.fft.rfft2(grf_vorticity(b, n, dev, g))
    half_visc_lap = 0.5 * visc * lap                               # (b, n, n/2+1)

    st = {"w_h": w_h, "t_host": [0.0] * b, "t_dev": torch.zeros(b, device=dev),
          "host_reads": 0, "t_min": 0.0, "dt_last": None}

    def step(i):
        w_h = st["w_h"]
        psi_h = w_h / lap
        u = torch.fft.irfft2(d_dy * psi_h, s=(n, n))               # u =  d psi / dy
        v = torch.fft.irfft2(-d_dx * psi_h, s=(n, n))              # v = -d psi / dx
        w_x = torch.fft.irfft2(d_dx * w_h, s=(n, n))
        w_y = torch.fft.irfft2(d_dy * w_h, s=(n, n))
        F_h = torch.fft.rfft2(u * w_x + v * w_y) * dealias        # nonlinear term, dealiased
        umax = torch.maximum(u.abs().amax(dim=(1, 2)), v.abs().amax(dim=(1, 2)))
        if args.fix:
            dt = torch.clamp(cfl * dx / umax, max=dt_max)         # stays on the GPU
            st["t_dev"] += dt
            if i % 100 == 99:                                     # progress read every 100 steps
                st["t_min"] = st["t_dev"].min().item()
                st["host_reads"] += 1
            dt = dt.view(b, 1, 1)
        else:
            dts = [min(dt_max, cfl * dx / float(um)) for um in umax]  # gpuwhy: plants C9 (one blocking read per member, 64 a step)
            st["host_reads"] += len(dts)
            for m, d in enumerate(dts):
                st["t_host"][m] += d
            st["t_min"] = min(st["t_host"])
            st["dt_last"] = dts[0]
            dt = torch.tensor(dts, device=dev).view(b, 1, 1)
        # Crank-Nicolson
        st["w_h"] = (-dt * F_h + dt * f_h + (1.0 - dt * half_visc_lap) * w_h) / (1.0 + dt * half_visc_lap)

    steps = {"n": 0}

    def counted(i):
        steps["n"] += 1
        step(i)

    cc.run("c9_torch_spectral_ns_ensemble_cfl_items", args, counted, b,
           extra=lambda: {"members": b, "grid": n, "host_reads_per_step": round(st["host_reads"] / max(steps["n"], 1), 2),
                          "t_min": round(st["t_min"], 5)})


if __name__ == "__main__":
    main()
