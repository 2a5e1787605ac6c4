"""Turns bench/run.sh's overhead.jsonl into Markdown tables (medians over rounds):
step time per loop and configuration, then the main thread's CPU time."""
import json
import statistics
import sys

rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
names = {"plain": "uninstrumented", "record": "gpuwhy record", "duty": "gpuwhy record --duty 0.25/2.5",
         "samplers": "gpuwhy record --no-inject (samplers only)", "profiler": "torch.profiler (CPU+CUDA)",
         "kernels": "GPUWHY_KINDS=kernel GPUWHY_API_CALLBACKS=0", "nocb": "GPUWHY_API_CALLBACKS=0",
         "none": "GPUWHY_KINDS=none (injection, callbacks, no activity)",
         "nots": "GPUWHY_TS_CALLBACK=0 (CUPTI's clock)"}
modes = []
for r in rows:
    if r["mode"] not in modes:
        modes.append(r["mode"])
loops = []
for r in rows:
    if r["result"].get("loop") not in loops:
        loops.append(r["result"].get("loop"))
unit = {"launch": "us/op"}


def key(loop, cpu=False):
    return ("cpu_" if cpu else "") + ("us_per_op" if loop == "launch" else "ms_per_step")


def vals(m, loop, cpu=False):
    return [r["result"][key(loop, cpu)] for r in rows
            if r["mode"] == m and r["result"].get("loop") == loop and key(loop, cpu) in r["result"]]


def name(m):
    return names.get(m, f"GPUWHY_KINDS={m[6:]}" if m.startswith("kinds=") else m)


print("| configuration | " + " | ".join(f"{l}, {unit.get(l, 'ms/step')} | overhead" for l in loops) + " |")
print("|---|" + "---|---|" * len(loops))
base = {l: statistics.median(vals("plain", l)) for l in loops if vals("plain", l)}
for m in modes:
    cells = []
    for l in loops:
        v = vals(m, l)
        if not v:
            cells += ["-", "-"]
            continue
        ov = (statistics.median(v) / base[l] - 1) * 100 if l in base else float("nan")
        cells += [" / ".join(f"{x:.3f}" for x in v), f"{ov:+.1f}%"]
    print(f"| {name(m)} | " + " | ".join(cells) + " |")

# Main-thread CPU per unit: where the configuration's cost is paid.
if any(k.startswith("cpu_") for r in rows for k in r["result"]):
    print()
    print("| configuration | " + " | ".join(f"{l}, main-thread CPU {unit.get(l, 'ms/step')}" for l in loops) + " |")
    print("|---|" + "---|" * len(loops))
    for m in modes:
        cells = [f"{statistics.median(vals(m, l, True)):.3f}" if vals(m, l, True) else "-" for l in loops]
        print(f"| {name(m)} | " + " | ".join(cells) + " |")
