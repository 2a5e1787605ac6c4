#!/usr/bin/env python3
"""GPU time an iteration by kind of kernel, from a recording's kernel records (`gpuwhy dump
--demangle --type kernel`), warm-up included: its total over the program's iterations (its JSON
line's iterations_total). Kinds by name: matrix (gemm, cutlass, xmma, sm80_/sm90_ kernels),
attention (fmha, flash, attention), softmax and norms, elementwise (PyTorch's vectorized and
unrolled elementwise kernels), reductions, the rest. tests/gpu/host_floor.sh runs it on each
recording it makes (bench/RESULTS.md, "The host's time under a full queue").

    tests/gpu/kernel_time.py GPUWHY RECORDING PROGRAM_JSON
"""
import collections, json, re, subprocess, sys

gw, rec, prog = sys.argv[1:4]
iters = json.loads(open(prog).read().strip().splitlines()[-1])["iterations_total"]
kinds = (("matrix", ("gemm", "cutlass", "xmma", "sm90_", "sm80_")), ("attention", ("fmha", "flash", "attention")),
         ("softmax/norm", ("softmax", "norm")), ("elementwise", ("elementwise", "vectorized", "unrolled")),
         ("reduce", ("reduce",)))
ns = collections.Counter()
out = subprocess.run([gw, "dump", "--demangle", "--type", "kernel", rec], capture_output=True, text=True).stdout
for line in out.splitlines():
    m = re.search(r"start=(\d+) end=(\d+) name=(.*?) device=", line)
    if not m:
        continue
    name = m.group(3).lower()
    kind = next((k for k, pats in kinds if any(p in name for p in pats)), "other")
    ns[kind] += int(m.group(2)) - int(m.group(1))
per = {k: round(v / iters / 1e6, 1) for k, v in ns.most_common()}
print(f"{rec}: ms an iteration over {iters} iterations: {per}, all {sum(ns.values()) / iters / 1e6:.1f}")
