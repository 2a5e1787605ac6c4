"""C9 sync points: loss.item() and a print every step stall the host on the GPU.

--fix: the loss stays on the GPU and is read every 100 steps.
"""
import torch

import common


def main():
    args = common.parser(__doc__).parse_args()
    # GPU time per step close to the host's launch time per step: then each sync
    # serializes the two instead of letting the host run ahead.
    batch = 8192
    model = torch.nn.Sequential(*[m for _ in range(12) for m in (torch.nn.Linear(1024, 1024), torch.nn.GELU())]).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, foreach=True)
    x = torch.randn(batch, 1024, device="cuda")
    total = torch.zeros((), device="cuda")
    log = open("/dev/null", "w")

    def step(i):
        nonlocal total
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
            print(f"step {i} loss {loss.item():.4f}", file=log)
            if loss.item() != loss.item():  # a NaN check on the host: a second sync
                raise SystemExit("nan")

    common.run("c9_item_sync", args, step, batch)


if __name__ == "__main__":
    main()
