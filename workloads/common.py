"""Shared harness for the scenario workloads: argument parsing, a time-bounded
training loop, and one JSON line of results on stdout (the last line).

Every scenario plants one cause of docs/CAUSES.md and removes it
with --fix. Throughput is measured in steady state (after warm-up) inside the
program, in samples per second, so variants with different batch sizes compare.
"""
import argparse
import json
import os
import sys
import time


def parser(doc):
    p = argparse.ArgumentParser(description=doc.strip().splitlines()[0])
    p.add_argument("--fix", action="store_true", help="remove the planted cause")
    p.add_argument("--seconds", type=float, default=float(os.environ.get("GW_SECONDS", 6)),
                   help="steady-state seconds to run (default 6)")
    p.add_argument("--warmup", type=int, default=5, help="warm-up steps, not timed")
    return p


def sync():
    # only the framework the scenario already imported (importing torch in a
    # CuPy scenario would put seconds of import time inside its run)
    if "torch" in sys.modules:
        sys.modules["torch"].cuda.synchronize()
    elif "cupy" in sys.modules:
        sys.modules["cupy"].cuda.runtime.deviceSynchronize()


def run(name, args, step, samples_per_step, extra=None):
    """Runs step(i) for warm-up then for args.seconds; prints one JSON line."""
    for i in range(args.warmup):
        step(i)
    sync()
    t0 = time.perf_counter()
    n = 0
    while time.perf_counter() - t0 < args.seconds:
        step(args.warmup + n)
        n += 1
    sync()
    dt = time.perf_counter() - t0
    res = {"scenario": name, "fix": bool(args.fix), "steps": n, "seconds": round(dt, 4),
           "step_ms": round(dt / n * 1e3, 4), "samples_per_s": round(n * samples_per_step / dt, 2)}
    if extra:
        res.update(extra)
    sys.stdout.flush()
    print(json.dumps(res), flush=True)
    return res
