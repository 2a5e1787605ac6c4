"""C11 memory-bound (PyTorch, eager): a 2D damped wave equation on a 8192x8192 float32 grid
(three 256 MB fields) stepped with torch.roll and elementwise arithmetic, op by op, the way
a simulation is first written in PyTorch: each operation reads and writes whole fields, so
the GPU streams DRAM for about twenty passes a step while computing little.

--fix: gpuwhy's C11 advice for PyTorch: the same step under torch.compile (Inductor fuses
the shifts and the arithmetic into a few kernels that read each field once); compiled in
the warm-up, outside the timed part.
"""
import torch

import cc

C2, DAMP = 0.2, 0.999


def wave_step(u, u_prev):
    lap = (torch.roll(u, 1, 0) + torch.roll(u, -1, 0) + torch.roll(u, 1, 1) + torch.roll(u, -1, 1) - 4.0 * u)
    u_next = (2.0 * u - u_prev + C2 * lap) * DAMP
    return u_next.clamp(-1.0, 1.0), u


def main():
    args = cc.parser(__doc__, warmup=5).parse_args()
    dev = cc.torch_device(args)
    n = 256 if args.smoke else 8192
    g = torch.Generator().manual_seed(0)
    u = (torch.rand(n, n, generator=g) * 0.01).to(dev)
    u_prev = u.clone()
    update = torch.compile(wave_step) if args.fix else wave_step
    state = [u, u_prev]

    def step(i):
        state[0], state[1] = update(state[0], state[1])  # gpuwhy: plants C11 (about 15 eager ops over 256 MB fields)

    cc.run("c11_torch_eager_wave", args, step, n * n)


if __name__ == "__main__":
    main()
