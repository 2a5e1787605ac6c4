"""C14 periodic stall: every 10 steps a validation pass blocks training
(40 forward batches, each checked on the host with .item()).

--fix: validation every 1000 steps (outside the timed window).
"""
import torch

import common


def main():
    args = common.parser(__doc__).parse_args()
    batch = 4096  # GPU-bound training step (~5 ms), so the stall is the only problem
    model = torch.nn.Sequential(*[m for _ in range(8) for m in (torch.nn.Linear(4096, 4096), torch.nn.ReLU())]).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    x = torch.randn(batch, 4096, device="cuda")
    val = torch.randn(batch, 4096, device="cuda")
    every = 1000 if args.fix else 10

    def validate():
        model.eval()
        with torch.no_grad(), torch.autocast("cuda", dtype=torch.bfloat16):
            acc = 0.0
            for k in range(40):
                acc += model(val).float().mean().item()  # gpuwhy: plants C14
        model.train()
        return acc

    def step(i):
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(x).float().pow(2).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if i % every == every - 1:
            validate()

    common.run("c14_validation", args, step, batch)


if __name__ == "__main__":
    main()
