#!/usr/bin/env bash
# Where gpuwhy's tracing cost comes from, on the GPU machine, from the
# repository root:
#   bench/trace_cost_modes.sh OUT [ROUNDS]        (SCENARIOS="name ..." to choose)
# Each corpus scenario (workloads/corpus/NAME.py, 3 steady seconds) runs
# uninstrumented and under `gpuwhy record` in three configurations, the modes
# interleaved per round: --no-inject (NVML, /proc and Python stack samplers
# only, no CUPTI), --no-py (CUPTI only, no Python stacks), and the default
# (both). Prints per scenario and mode the median step time over the rounds,
# its cost against uninstrumented, and that cost per GPU operation of a step
# (the operations counted by the report of the default mode's first
# recording), the figure the analysis estimates as 3 us (docs/RULES.md).
set -u
out=${1:?usage: bench/trace_cost_modes.sh OUT [ROUNDS]}
rounds=${2:-2}
gw=$PWD/gpuwhy
scen=${SCENARIOS:-h_torch_bert_finetune_workers h_tv_channels_last_amp}
mkdir -p "$out" && out=$(cd "$out" && pwd)
res="$out/trace_cost_modes.jsonl"
: >"$res"
one() { # scenario mode round
  local s=$1 mode=$2 r=$3 line f="$out/$1.$2.$3.gwr"
  rm -f "$f"
  local pre=()
  case $mode in
    noinject) pre=("$gw" record -q --no-inject -o "$f" --) ;;
    nopy)     pre=("$gw" record -q --no-py -o "$f" --) ;;
    default)  pre=("$gw" record -q -o "$f" --) ;;
  esac
  line=$(cd workloads/corpus && timeout -k 10 120 "${pre[@]}" python3 "$s.py" --seconds 3 2>"$out/$s.$mode.$r.err" | tail -1)
  if [ "$mode" = default ] && [ "$r" = 1 ] && [ -f "$f" ]; then
    "$gw" report --json="$out/$s.report.json" "$f" >/dev/null 2>&1
  fi
  rm -f "$f"
  case $line in "{"*) ;; *) line='{}' ;; esac
  echo "{\"scenario\":\"$s\",\"mode\":\"$mode\",\"round\":$r,\"result\":$line}" | tee -a "$res"
}
for r in $(seq 1 "$rounds"); do
  for s in $scen; do
    for mode in plain noinject nopy default; do one "$s" "$mode" "$r"; done
  done
done
python3 - "$res" "$out" <<'PY'
import json, os, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
label = {"plain": "uninstrumented", "noinject": "record --no-inject (samplers only)",
         "nopy": "record --no-py (CUPTI only)", "default": "record (CUPTI and Python stacks)"}
print("| scenario | mode | ms per step (median of rounds) | vs uninstrumented | per GPU operation |")
print("|---|---|---|---|---|")
for s in dict.fromkeys(r["scenario"] for r in rows):
    ops = None
    rep = os.path.join(sys.argv[2], s + ".report.json")
    if os.path.exists(rep):
        st = json.load(open(rep)).get("steps") or {}
        ops = st.get("ops_per_step")
    med = {}
    for m in label:
        v = [r["result"]["step_ms"] for r in rows if r["scenario"] == s and r["mode"] == m and "step_ms" in r["result"]]
        if v:
            med[m] = statistics.median(v)
    for m in label:
        if m not in med:
            continue
        base = med.get("plain")
        d = med[m] - base if base and m != "plain" else None
        print(f'| {s} | {label[m]} | {med[m]:.3f} ({", ".join("%.2f" % r["result"]["step_ms"] for r in rows if r["scenario"] == s and r["mode"] == m and "step_ms" in r["result"])}) | '
              f'{"%+.1f%%" % (100 * d / base) if d is not None else "-"} | '
              f'{"%+.2f us" % (1000 * d / ops) if d is not None and ops else "-"} |')
PY
