"""healthy: a residual MLP (4 pre-norm blocks, d=1024, hidden 4096) trained on 32768 rows
of features already on the GPU; the loss function is wrapped in
torch.compile(mode="reduce-overhead"), so Inductor fuses the LayerNorm/GELU chains and the
forward and backward run as CUDA graphs (bf16 autocast, fused AdamW). Compilation and graph
capture happen in the warm-up (default 12 iterations).

--fix changes nothing: this is a control.
"""
import torch
import torch.nn.functional as F

import cc


class Block(torch.nn.Module):
    def __init__(self, d, h):
        super().__init__()
        self.ln = torch.nn.LayerNorm(d)
        self.up = torch.nn.Linear(d, h)
        self.down = torch.nn.Linear(h, d)

    def forward(self, x):
        return x + self.down(F.gelu(self.up(self.ln(x))))


def main():
    args = cc.parser(__doc__, warmup=12).parse_args()
    dev = cc.torch_device(args)
    d, hidden, blocks, rows, classes = (32, 64, 2, 64, 10) if args.smoke else (1024, 4096, 4, 32768, 1000)
    model = torch.nn.Sequential(*[Block(d, hidden) for _ in range(blocks)], torch.nn.LayerNorm(d),
                                torch.nn.Linear(d, classes)).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=dev.type == "cuda")
    xs = [torch.randn(rows, d, device=dev) for _ in range(4)]
    ys = [torch.randint(0, classes, (rows,), device=dev) for _ in range(4)]

    def loss_fn(x, y):
        with torch.autocast(dev.type, dtype=torch.bfloat16):
            return F.cross_entropy(model(x), y)

    if dev.type == "cuda":
        loss_fn = torch.compile(loss_fn, mode="reduce-overhead")
    else:  # CPU smoke test: no C++ toolchain needed, no CUDA graphs there anyway
        loss_fn = torch.compile(loss_fn, backend="aot_eager")

    def step(i):
        if dev.type == "cuda":
            torch.compiler.cudagraph_mark_step_begin()
        loss = loss_fn(xs[i % 4], ys[i % 4])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    cc.run("h_torch_compile_graphs", args, step, rows)


if __name__ == "__main__":
    main()
