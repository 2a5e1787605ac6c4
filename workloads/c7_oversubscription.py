"""C7 CPU thread oversubscription: per-step CPU preprocessing with 64 intra-op threads while
six helper processes each run their own 16-thread pools, on a 16-core machine.

--fix: threads bounded to the cores (main 4, helpers 1 each).
"""
import multiprocessing as mp
import os

import torch

import common


def helper(threads, stop):
    torch.set_num_threads(threads)
    a = torch.randn(384, 384)
    while not stop.is_set():
        a = torch.tanh(a @ a) * 0.5  # gpuwhy: plants C7 (6 processes of a thread per core each: they take the cores)


def main():
    args = common.parser(__doc__).parse_args()
    cores = os.cpu_count() or 16
    torch.set_num_threads(4 if args.fix else 4 * cores)
    ctx = mp.get_context("fork")
    stop = ctx.Event()
    procs = [ctx.Process(target=helper, args=(1 if args.fix else cores, stop), daemon=True) for _ in range(6)]
    for p in procs:
        p.start()
    w = torch.randn(2048, 2048, device="cuda")
    cpu_a = torch.randn(512, 512)

    def step(i):
        feats = torch.tanh(cpu_a @ cpu_a)  # host-side preprocessing that feeds the GPU, on 4 threads per core: it waits for a core
        x = feats.repeat(4, 4).cuda()
        for _ in range(4):
            x = torch.relu(x @ w)

    try:
        common.run("c7_oversubscription", args, step, 1)
    finally:
        stop.set()
        for p in procs:
            p.join(timeout=5)


if __name__ == "__main__":
    main()
