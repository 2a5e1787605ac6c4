"""C8 no mixed precision: an FP32 matmul-heavy model, tensor cores idle.

--fix: bf16 autocast.
"""
import torch

import common


def main():
    args = common.parser(__doc__).parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    batch = 2048
    model = torch.nn.Sequential(*[m for _ in range(4) for m in (torch.nn.Linear(4096, 4096), torch.nn.ReLU())]).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    x = torch.randn(batch, 4096, device="cuda")

    def step(i):
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=args.fix):
            loss = model(x).float().pow(2).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    common.run("c8_fp32", args, step, batch)


if __name__ == "__main__":
    main()
