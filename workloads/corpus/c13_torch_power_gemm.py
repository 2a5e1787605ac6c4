"""C13 power/thermal (load only): a wide MLP (8192 x 8192 layers, batch 16384, bf16) trained
flat out: dense tensor-core GEMMs back to back, the load that drives an H200 to its 700 W
power limit, where the driver lowers clocks (NVML clock event reason: software power cap).
A program cannot plant a power or thermal fault (limits and clocks must not be changed on the
test machine): whether the cap is reached is the card's and the room's business.

--fix changes nothing (the remedies are cooling and the power limit, outside the program):
gpuwhy should report C13 if NVML saw the cap, else nothing at warning or above.
"""
import torch

import cc


def main():
    args = cc.parser(__doc__).parse_args()
    dev = cc.torch_device(args)
    d, depth, batch = (64, 2, 32) if args.smoke else (8192, 4, 16384)
    model = torch.nn.Sequential(*[m for _ in range(depth) for m in (torch.nn.Linear(d, d, bias=False), torch.nn.ReLU())])
    model = model.to(dev, torch.bfloat16)
    opt = torch.optim.SGD(model.parameters(), lr=1e-4, foreach=True)
    x = torch.randn(batch, d, device=dev, dtype=torch.bfloat16)

    def step(i):
        loss = model(x).float().pow(2).mean()  # gpuwhy: plants C13 (sustained full-power load)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    cc.run("c13_torch_power_gemm", args, step, batch)


if __name__ == "__main__":
    main()
