"""C3 small batch: batch 8 on a mid-sized MLP leaves the GPU mostly empty.

--fix: batch 1024 (same model, same data per sample).
"""
import torch

import common


def main():
    args = common.parser(__doc__).parse_args()
    batch = 1024 if args.fix else 8
    model = torch.nn.Sequential(torch.nn.Linear(512, 2048), torch.nn.ReLU(),
                                torch.nn.Linear(2048, 2048), torch.nn.ReLU(),
                                torch.nn.Linear(2048, 10)).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    x = torch.randn(batch, 512, device="cuda")
    y = torch.randint(0, 10, (batch,), device="cuda")

    def step(i):
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    common.run("c3_small_batch", args, step, batch)


if __name__ == "__main__":
    main()
