#!/usr/bin/env bash
# What Python stacks cost, on the GPU machine, from the repository root:
#   bench/pystack_overhead.sh OUT [ROUNDS]
# On the realistic loops of bench/overhead.py (bf16: GPU-bound 4x Linear(4096) +
# AdamW step; bf16-host: the same on 512 rows, bound by the host), interleaved
# per round: uninstrumented; `gpuwhy record --no-py`; `gpuwhy record` (stacks
# at the default rate, and the exact sync sites); `gpuwhy record --py-rate 1000`;
# torch.profiler with with_stack=True. Prints the table bench/RESULTS.md keeps:
# step time per mode, its cost against uninstrumented and against --no-py (the
# stacks' own share), and the stack samples recorded with their bytes.
set -u
out=${1:?usage: bench/pystack_overhead.sh OUT [ROUNDS]}
rounds=${2:-3}
gw=$PWD/gpuwhy
mkdir -p "$out"
res="$out/pystack.jsonl"
: >"$res"
one() { # mode loop
  local mode=$1 loop=$2 line f="$out/p-$mode-$loop-$r.gwr" extra=
  rm -f "$f"
  case $mode in
    plain)    line=$(python3 bench/overhead.py --loop "$loop") ;;
    nopy)     line=$("$gw" record -q --no-py -o "$f" -- python3 bench/overhead.py --loop "$loop") ;;
    py)       line=$("$gw" record -q -o "$f" -- python3 bench/overhead.py --loop "$loop") ;;
    py1000)   line=$("$gw" record -q --py-rate 1000 -o "$f" -- python3 bench/overhead.py --loop "$loop") ;;
    profiler) line=$(python3 bench/overhead.py --loop "$loop" --profiler --stack) ;;
  esac
  if [ -f "$f" ]; then
    extra=",\"bytes\":$(stat -c %s "$f"),\"py_samples\":$("$gw" dump --type py_sample "$f" | grep -c tid=)"
    rm -f "$f"
  fi
  echo "{\"mode\":\"$mode\",\"loop\":\"$loop\",\"round\":$r,\"result\":$(echo "$line" | tail -1)$extra}" | tee -a "$res"
}
for r in $(seq 1 "$rounds"); do
  for loop in ${LOOPS:-bf16 bf16-host}; do
    for mode in ${MODES:-plain nopy py py1000 profiler}; do
      one "$mode" "$loop"
    done
  done
done
python3 - "$res" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
loops = sorted({r["loop"] for r in rows}, key=lambda l: ["bf16", "bf16-host"].index(l) if l in ("bf16", "bf16-host") else 9)
modes = ["plain", "nopy", "py", "py1000", "profiler"]
label = {"plain": "uninstrumented", "nopy": "gpuwhy record --no-py", "py": "gpuwhy record (stacks, 100 Hz)",
         "py1000": "gpuwhy record --py-rate 1000", "profiler": "torch.profiler with_stack=True"}
print("| loop | mode | ms per step (median of rounds) | vs uninstrumented | vs --no-py | stack samples | bytes per sample |")
print("|---|---|---|---|---|---|---|")
for loop in loops:
    med = {}
    for m in modes:
        v = [r["result"]["ms_per_step"] for r in rows if r["loop"] == loop and r["mode"] == m and "ms_per_step" in r.get("result", {})]
        if v:
            med[m] = statistics.median(v)
    for m in modes:
        if m not in med:
            continue
        base, nopy = med.get("plain"), med.get("nopy")
        rs = [r for r in rows if r["loop"] == loop and r["mode"] == m]
        smp = statistics.median([r.get("py_samples", 0) for r in rs]) if rs and "py_samples" in rs[0] else None
        per = None
        if m in ("py", "py1000") and smp:
            nb = [r["bytes"] for r in rows if r["loop"] == loop and r["mode"] == "nopy"]
            pb = [r["bytes"] for r in rs]
            if nb and pb:
                per = (statistics.median(pb) - statistics.median(nb)) / smp
        print(f'| {loop} | {label[m]} | {med[m]:.3f} | '
              f'{"%+.2f%%" % (100 * (med[m] / base - 1)) if base and m != "plain" else "-"} | '
              f'{"%+.2f%%" % (100 * (med[m] / nopy - 1)) if nopy and m in ("py", "py1000") else "-"} | '
              f'{int(smp) if smp is not None else "-"} | {"%.1f" % per if per else "-"} |')
PY
