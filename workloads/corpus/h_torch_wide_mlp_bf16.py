"""Healthy control (GEMM-bound): a wide residual MLP (4 blocks of LayerNorm, 4096 -> 16384 ->
4096 with GELU, bf16 autocast) trained on 16384 tokens a step with fused AdamW, data
already on the GPU: the matrix multiplications fill the chip and the host runs far ahead.

--fix: nothing (control).
"""
import torch

import cc


class Block(torch.nn.Module):
    def __init__(self, d):
        super().__init__()
        self.norm = torch.nn.LayerNorm(d)
        self.up = torch.nn.Linear(d, 4 * d)
        self.down = torch.nn.Linear(4 * d, d)

    def forward(self, x):
        return x + self.down(torch.nn.functional.gelu(self.up(self.norm(x))))


def main():
    args = cc.parser(__doc__).parse_args()
    dev = cc.torch_device(args)
    tokens, d = (64, 64) if args.smoke else (16384, 4096)
    model = torch.nn.Sequential(*[Block(d) for _ in range(4)], torch.nn.Linear(d, 256)).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=dev.type == "cuda")
    g = torch.Generator().manual_seed(0)
    xs = [torch.randn(tokens, d, generator=g).to(dev) for _ in range(2)]
    ys = [torch.randint(0, 256, (tokens,), generator=g).to(dev) for _ in range(2)]

    def step(i):
        with torch.autocast(dev.type, dtype=torch.bfloat16):
            loss = torch.nn.functional.cross_entropy(model(xs[i % 2]), ys[i % 2])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    cc.run("h_torch_wide_mlp_bf16", args, step, tokens)


if __name__ == "__main__":
    main()
