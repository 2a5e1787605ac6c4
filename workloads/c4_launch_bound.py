"""C4 launch-bound: 300 tiny elementwise ops per step; the host cannot keep the queue full.

--fix: the same step captured once in a CUDA graph and replayed.
"""
import torch

import common


def main():
    args = common.parser(__doc__).parse_args()
    x = torch.randn(4096, device="cuda")
    out = torch.empty_like(x)

    def body():
        y = x
        for _ in range(100):
            y = y * 1.0001
            y = y + 0.0001
            y = torch.relu(y)
        out.copy_(y)

    if args.fix:
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            body()
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            body()
        step = lambda i: g.replay()
    else:
        step = lambda i: body()
    common.run("c4_launch_bound", args, step, 1)


if __name__ == "__main__":
    main()
