"""C6 pageable copies: each step copies a 128 MB batch from pageable host memory.

--fix: the host buffers are pinned and copied with non_blocking=True.
"""
import torch

import common


def main():
    args = common.parser(__doc__).parse_args()
    n = 32 * 1024 * 1024  # 128 MB of float32
    bufs = [torch.randn(n) for _ in range(2)]
    if args.fix:
        bufs = [b.pin_memory() for b in bufs]
    w = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)

    def step(i):
        x = bufs[i % 2].to("cuda", non_blocking=args.fix).view(-1, 4096)  # gpuwhy: plants C6
        y = x[:4096].bfloat16() @ w
        y.relu_()

    common.run("c6_pageable", args, step, 1)


if __name__ == "__main__":
    main()
