"""Turns bench/run.sh's overhead.jsonl into a Markdown table (medians over rounds)."""
import json
import statistics
import sys

rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
modes = ["plain", "record", "duty", "samplers", "kernels", "nocb", "profiler"]
names = {"plain": "uninstrumented", "record": "gpuwhy record", "duty": "gpuwhy record --duty 0.25/2.5",
         "samplers": "gpuwhy record --no-inject (samplers only)", "profiler": "torch.profiler (CPU+CUDA)",
         "kernels": "GPUWHY_KINDS=kernel GPUWHY_API_CALLBACKS=0", "nocb": "GPUWHY_API_CALLBACKS=0"}
print("| configuration | launch loop, us/op | overhead | bf16 loop, ms/step | overhead |")
print("|---|---|---|---|---|")
base = {}
for m in modes:
    cells = []
    for loop, key in (("launch", "us_per_op"), ("bf16", "ms_per_step")):
        vals = [r["result"][key] for r in rows if r["mode"] == m and r["result"].get("loop") == loop and key in r["result"]]
        if not vals:
            cells += ["-", "-"]
            continue
        med = statistics.median(vals)
        if m == "plain":
            base[loop] = med
        ov = (med / base[loop] - 1) * 100 if loop in base else float("nan")
        cells += [" / ".join(f"{v:.3f}" for v in vals), f"{ov:+.1f}%"]
    if all(c == "-" for c in cells):
        continue
    print(f"| {names[m]} | " + " | ".join(cells) + " |")
