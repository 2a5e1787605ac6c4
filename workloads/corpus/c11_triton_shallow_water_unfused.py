"""C11 memory-bound (one Triton kernel per term of the equations): a tsunami-style shallow-water
solver ported from its NumPy reference to Triton term by term, as a first port is written
(each kernel checked against its NumPy line): the conservative shallow-water equations for
the height h and the momenta hu, hv on a periodic 8192 x 8192 float32 grid (256 MB a field),
Lax-Friedrichs scheme with a fixed time step (Courant number about 0.33), a few Gaussian
humps at rest as the initial state. One time step launches five Triton kernels: the x
fluxes (reads h, hu, hv, writes three flux fields), the y fluxes (the same), and the
Lax-Friedrichs update once per field (reads the field's four neighbours, the two flux
fields' neighbours, writes the new field): 24 full-field passes through DRAM, about
6.4 GB a step, with a handful of flops per element. The GPU is busy all the time, bound
by memory traffic, every intermediate written out and read back. The total mass is read
every 200 steps (it must stay constant).

--fix: gpuwhy's C11 advice (fuse the chain into one kernel): one Triton kernel computes
the fluxes of the four neighbours on the fly and writes the three new fields: 6
full-field passes a step; same grid, scheme, time step, block size and initial state
(both paths checked against each other at start).

Written blind for the canyon batch.
"""
import os
import sys

if "--device" in sys.argv and "cpu" in sys.argv:
    os.environ["TRITON_INTERPRET"] = "1"  # smoke test on the CPU: Triton's interpreter

import torch
import triton
import triton.language as tl

import cc

G = 9.81


@triton.jit
def _neighbours(row, cols, H, W):
    up = ((row + H - 1) % H) * W
    down = ((row + 1) % H) * W
    left = tl.where(cols == 0, W - 1, cols - 1)
    right = tl.where(cols == W - 1, 0, cols + 1)
    return up, down, left, right


@triton.jit
def flux_x_kernel(h_ptr, hu_ptr, hv_ptr, fh_ptr, fhu_ptr, fhv_ptr, W, g, BLOCK: tl.constexpr):
    """F = (hu, hu^2/h + g h^2/2, hu hv/h)"""
    cols = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    ok = cols < W
    idx = tl.program_id(1) * W + cols
    h = tl.load(h_ptr + idx, mask=ok, other=1.0)
    hu = tl.load(hu_ptr + idx, mask=ok, other=0.0)
    hv = tl.load(hv_ptr + idx, mask=ok, other=0.0)
    tl.store(fh_ptr + idx, hu, mask=ok)
    tl.store(fhu_ptr + idx, hu * hu / h + 0.5 * g * h * h, mask=ok)
    tl.store(fhv_ptr + idx, hu * hv / h, mask=ok)


@triton.jit
def flux_y_kernel(h_ptr, hu_ptr, hv_ptr, gh_ptr, ghu_ptr, ghv_ptr, W, g, BLOCK: tl.constexpr):
    """G = (hv, hu hv/h, hv^2/h + g h^2/2)"""
    cols = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    ok = cols < W
    idx = tl.program_id(1) * W + cols
    h = tl.load(h_ptr + idx, mask=ok, other=1.0)
    hu = tl.load(hu_ptr + idx, mask=ok, other=0.0)
    hv = tl.load(hv_ptr + idx, mask=ok, other=0.0)
    tl.store(gh_ptr + idx, hv, mask=ok)
    tl.store(ghu_ptr + idx, hu * hv / h, mask=ok)
    tl.store(ghv_ptr + idx, hv * hv / h + 0.5 * g * h * h, mask=ok)


@triton.jit
def lax_friedrichs_kernel(q_ptr, f_ptr, g_ptr, out_ptr, H, W, cx, cy, BLOCK: tl.constexpr):
    """q' = mean of the 4 neighbours - cx (F[j+1] - F[j-1]) - cy (G[i+1] - G[i-1])"""
    row = tl.program_id(1)
    cols = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    ok = cols < W
    up, down, left, right = _neighbours(row, cols, H, W)
    here = row * W
    avg = 0.25 * (tl.load(q_ptr + up + cols, mask=ok, other=0.0) + tl.load(q_ptr + down + cols, mask=ok, other=0.0)
                  + tl.load(q_ptr + here + left, mask=ok, other=0.0)
                  + tl.load(q_ptr + here + right, mask=ok, other=0.0))
    dfx = tl.load(f_ptr + here + right, mask=ok, other=0.0) - tl.load(f_ptr + here + left, mask=ok, other=0.0)
    dgy = tl.load(g_ptr + down + cols, mask=ok, other=0.0) - tl.load(g_ptr + up + cols, mask=ok, other=0.0)
    tl.store(out_ptr + here + cols, avg - cx * dfx - cy * dgy, mask=ok)


@triton.jit
def _state(h_ptr, hu_ptr, hv_ptr, at, ok):
    return (tl.load(h_ptr + at, mask=ok, other=1.0), tl.load(hu_ptr + at, mask=ok, other=0.0),
            tl.load(hv_ptr + at, mask=ok, other=0.0))


@triton.jit
def shallow_water_fused_kernel(h_ptr, hu_ptr, hv_ptr, nh_ptr, nhu_ptr, nhv_ptr, H, W, g, cx, cy,
                               BLOCK: tl.constexpr):
    """The whole Lax-Friedrichs step: fluxes of the four neighbours computed in registers."""
    row = tl.program_id(1)
    cols = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    ok = cols < W
    up, down, left, right = _neighbours(row, cols, H, W)
    here = row * W
    hU, huU, hvU = _state(h_ptr, hu_ptr, hv_ptr, up + cols, ok)
    hD, huD, hvD = _state(h_ptr, hu_ptr, hv_ptr, down + cols, ok)
    hL, huL, hvL = _state(h_ptr, hu_ptr, hv_ptr, here + left, ok)
    hR, huR, hvR = _state(h_ptr, hu_ptr, hv_ptr, here + right, ok)
    # x fluxes at the right and left neighbours, y fluxes at the lower and upper ones (one division each)
    rR, rL, rD, rU = 1.0 / hR, 1.0 / hL, 1.0 / hD, 1.0 / hU
    dfh = huR - huL
    dfhu = (huR * huR * rR + 0.5 * g * hR * hR) - (huL * huL * rL + 0.5 * g * hL * hL)
    dfhv = huR * hvR * rR - huL * hvL * rL
    dgh = hvD - hvU
    dghu = huD * hvD * rD - huU * hvU * rU
    dghv = (hvD * hvD * rD + 0.5 * g * hD * hD) - (hvU * hvU * rU + 0.5 * g * hU * hU)
    out = here + cols
    tl.store(nh_ptr + out, 0.25 * (hU + hD + hL + hR) - cx * dfh - cy * dgh, mask=ok)
    tl.store(nhu_ptr + out, 0.25 * (huU + huD + huL + huR) - cx * dfhu - cy * dghu, mask=ok)
    tl.store(nhv_ptr + out, 0.25 * (hvU + hvD + hvL + hvR) - cx * dfhv - cy * dghv, mask=ok)


class Solver:
    def __init__(self, h, hu, hv, dt, dx, block, fused):
        self.q = [h, hu, hv]
        self.nq = [torch.empty_like(h) for _ in range(3)]
        self.fused = fused
        if not fused:
            self.fx = [torch.empty_like(h) for _ in range(3)]
            self.fy = [torch.empty_like(h) for _ in range(3)]
        self.H, self.W = h.shape
        self.c = 0.5 * dt / dx
        self.block = block
        self.grid = (triton.cdiv(self.W, block), self.H)

    def step(self):
        q, nq, H, W, c, B = self.q, self.nq, self.H, self.W, self.c, self.block
        if self.fused:
            shallow_water_fused_kernel[self.grid](*q, *nq, H, W, G, c, c, BLOCK=B, num_warps=4)
        else:  # gpuwhy: plants C11 (five kernels a step, every flux written to DRAM and read back)
            flux_x_kernel[self.grid](*q, *self.fx, W, G, BLOCK=B, num_warps=4)
            flux_y_kernel[self.grid](*q, *self.fy, W, G, BLOCK=B, num_warps=4)
            for k in range(3):
                lax_friedrichs_kernel[self.grid](q[k], self.fx[k], self.fy[k], nq[k], H, W, c, c, BLOCK=B,
                                                 num_warps=4)
        self.q, self.nq = nq, q


def initial_state(n, dev):
    y, x = torch.meshgrid(torch.arange(n, device=dev, dtype=torch.float32),
                          torch.arange(n, device=dev, dtype=torch.float32), indexing="ij")
    h = torch.ones(n, n, device=dev)
    for cy_, cx_, amp, w in ((0.3, 0.3, 0.12, 0.04), (0.7, 0.55, 0.08, 0.06), (0.45, 0.8, 0.1, 0.03)):
        h += amp * torch.exp(-((x - cx_ * n) ** 2 + (y - cy_ * n) ** 2) / (2 * (w * n) ** 2))
    return h, torch.zeros(n, n, device=dev), torch.zeros(n, n, device=dev)


def main():
    args = cc.parser(__doc__).parse_args()
    dev = cc.torch_device(args)
    n, block = (64, 32) if args.smoke else (8192, 1024)
    dt, dx = 0.1, 1.0
    # both paths against each other once, outside the timed part
    a = Solver(*(t.clone() for t in initial_state(n, dev)), dt, dx, block, fused=False)
    b = Solver(*(t.clone() for t in initial_state(n, dev)), dt, dx, block, fused=True)
    for _ in range(2):
        a.step()
        b.step()
    err = max((x - y).abs().max().item() for x, y in zip(a.q, b.q))
    if err > 1e-4:
        raise SystemExit(f"fused and unfused steps disagree: max error {err}")
    del a, b
    solver = Solver(*initial_state(n, dev), dt, dx, block, fused=args.fix)
    mass0 = solver.q[0].double().sum().item()
    checks = {"reads": 0, "mass_drift": 0.0}

    def step(i):
        solver.step()
        if i % 200 == 199:
            checks["mass_drift"] = abs(solver.q[0].double().sum().item() - mass0) / mass0
            checks["reads"] += 1

    cc.run("c11_triton_shallow_water_unfused", args, step, 1,
           extra=lambda: {"grid": n, "kernels_per_step": 1 if args.fix else 5,
                          "field_passes_per_step": 6 if args.fix else 24,
                          "gb_per_step": round((6 if args.fix else 24) * n * n * 4 / 1e9, 2),
                          "check_max_err": err, "mass_reads": checks["reads"],
                          "mass_drift": checks["mass_drift"]})


if __name__ == "__main__":
    main()
