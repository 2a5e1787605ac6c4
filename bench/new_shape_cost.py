#!/usr/bin/env python3
"""The cost of a new input shape under recording: each iteration runs a
transformer encoder layer's forward and backward (bf16, SDPA) on a batch
padded to a length it has not seen before, then the same lengths again. The
first use of a length makes the libraries plan and load kernels for it
(cuDNN's attention builds and compiles them at run time); the second pass
finds them built. Prints one JSON line: per-iteration milliseconds of both
passes. Run plain and under `gpuwhy record` by bench/new_shape_cost.sh.
"""
import contextlib
import json
import sys
import time

import torch


def main():
    backend = sys.argv[1] if len(sys.argv) > 1 else "default"
    dev = torch.device("cuda")
    d, heads = 512, 8
    layer = torch.nn.TransformerEncoderLayer(d, heads, 4 * d, batch_first=True, norm_first=True).to(dev)
    lens = [64 + 24 * k for k in range(12)]
    def ctx():  # a context manager a call
        if backend == "cudnn":
            return torch.nn.attention.sdpa_kernel(torch.nn.attention.SDPBackend.CUDNN_ATTENTION)
        return contextlib.nullcontext()

    def one(n):
        x = torch.randn(32, n, d, device=dev, requires_grad=True)
        torch.cuda.synchronize()
        t = time.perf_counter()
        with ctx(), torch.autocast("cuda", dtype=torch.bfloat16):
            y = layer(x)
        y.float().sum().backward()
        torch.cuda.synchronize()
        return (time.perf_counter() - t) * 1e3

    one(32)  # libraries set up
    first = [one(n) for n in lens]
    again = [one(n) for n in lens]
    print(json.dumps({"backend": backend, "first_ms": [round(v, 2) for v in first],
                      "again_ms": [round(v, 2) for v in again],
                      "first_sum_ms": round(sum(first), 1), "again_sum_ms": round(sum(again), 1)}))


if __name__ == "__main__":
    main()
