"""C9 sync points: loss.item() every step makes the host wait for the GPU, so the
host's own per-step work (here 3 ms of CPU preprocessing) can no longer overlap
the GPU's step.

--fix: the loss stays on the GPU and is read every 100 steps.
"""
import numpy as np
import torch

import common


def main():
    args = common.parser(__doc__).parse_args()
    batch = 8192
    model = torch.nn.Sequential(*[m for _ in range(4) for m in (torch.nn.Linear(4096, 4096), torch.nn.ReLU())]).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    x = torch.randn(batch, 4096, device="cuda")
    total = torch.zeros((), device="cuda")
    rng = np.random.default_rng(0)
    log = open("/dev/null", "w")

    def host_work():
        # per-step CPU work of the training thread (metrics, bookkeeping, next batch)
        return float(np.sort(rng.random(300_000)).sum())

    def step(i):
        nonlocal total
        host_work()
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(x).float().pow(2).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if args.fix:
            total += loss.detach()
            if i % 100 == 0:
                print(f"step {i} loss {total.item() / 100:.4f}", file=log)
                total.zero_()
        else:
            print(f"step {i} loss {loss.item():.4f}", file=log)  # gpuwhy: plants C9

    common.run("c9_item_sync", args, step, batch)


if __name__ == "__main__":
    main()
