#!/usr/bin/env bash
# What gpuwhy's tracing costs per kernel launch, two ways side by side, on the
# GPU machine, from the repository root:
#   bench/trace_cost.sh OUT [ROUNDS]
# Per round and loop (LOOPS, default "launch bf16-host"; bench/overhead.py):
# the loop uninstrumented, then under `gpuwhy record`. The difference per
# kernel is what tracing added; beside it, the figure the recorded process
# measured itself at its exit (inject/calibrate.c; `report --json`:
# steady.tracing_cost_per_launch_us) and the measurement's detail.
# Writes OUT/trace_cost.jsonl and prints a table of medians.
set -u
out=${1:?usage: bench/trace_cost.sh OUT [ROUNDS]}
rounds=${2:-3}
gw=$PWD/gpuwhy
mkdir -p "$out"
res="$out/trace_cost.jsonl"
: >"$res"
for r in $(seq 1 "$rounds"); do
  for loop in ${LOOPS:-launch bf16-host}; do
    rm -f "$out/t.gwr"
    plain=$(python3 bench/overhead.py --loop "$loop" | tail -1)
    rec=$(timeout 120 "$gw" record -q -o "$out/t.gwr" -- python3 bench/overhead.py --loop "$loop" | tail -1)
    "$gw" report --json "$out/t.gwr" >"$out/t.json" 2>/dev/null
    kernels=$("$gw" dump --type kernel "$out/t.gwr" | wc -l)
    "$gw" dump --json --type inject_event "$out/t.gwr" >"$out/t.ev"
    python3 - "$loop" "$r" "$plain" "$rec" "$kernels" "$out/t.json" "$out/t.ev" <<'PY' | tee -a "$res"
import json, sys
loop, rnd, plain, rec, kernels, rep, ev = sys.argv[1:]
plain, rec = json.loads(plain), json.loads(rec)
unit = "us_per_op" if loop == "launch" else "ms_per_step"
scale = 1.0 if loop == "launch" else 1000.0
# kernels per op: 1 for the launch loop; for bf16-host the recorded kernels
# over the steps run (the timed ones plus 20 warm-up steps)
per = 1.0 if loop == "launch" else int(kernels) / (rec["steps"] + 20)
steady = json.load(open(rep)).get("steady", {})
detail = ""
for line in open(ev):
    e = json.loads(line)
    if e.get("code") == 9:
        detail = e.get("detail", "")
print(json.dumps({"loop": loop, "round": int(rnd), "plain": plain[unit], "recorded": rec[unit],
                  "kernels_per_op": round(per, 2),
                  "added_us_per_kernel": round((rec[unit] - plain[unit]) * scale / per, 3),
                  "measured_us_per_launch": steady.get("tracing_cost_per_launch_us"),
                  "measured": steady.get("tracing_cost_measured"), "detail": detail}))
PY
  done
done
cp "$out/t.gwr" "$out/last.gwr" 2>/dev/null
python3 - "$res" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
print("| loop | uninstrumented | recorded | added per kernel (median) | measured at exit (median) | rounds |")
print("|---|---|---|---|---|---|")
for loop in dict.fromkeys(r["loop"] for r in rows):
    rs = [r for r in rows if r["loop"] == loop]
    m = [r["measured_us_per_launch"] for r in rs if r["measured"]]
    print("| %s | %.3f | %.3f | %+.2f us | %s | %d |" % (
        loop, statistics.median(r["plain"] for r in rs), statistics.median(r["recorded"] for r in rs),
        statistics.median(r["added_us_per_kernel"] for r in rs),
        "%.2f us" % statistics.median(m) if m else "not measured", len(rs)))
PY
