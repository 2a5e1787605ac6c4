#!/usr/bin/env bash
# Runs every scenario on the GPU machine: under `gpuwhy record` (the
# recording), then uninstrumented plain and with --fix (the timings), each in
# its own process. (Timing both variants in one process saves a start-up each
# but measured c4's speed-up 20% low: tests/gpu/RESULTS.md, "The whole suite in one call".)
#
# Writes OUTDIR/<scenario>.{plain,fix,rec}.json (the throughput lines),
# OUTDIR/<scenario>.gwr, <scenario>.*.err, and OUTDIR/summary.tsv.
# Usage: run-all.sh OUTDIR [SCENARIO...]
# Environment: GW_SECONDS (steady-state seconds per run, default 3),
# GW_DEADLINE (seconds: scenarios that would start after it are skipped and
# listed as such, default 540), GPUWHY, PYTHON; GW_RECORD_FIX=1 also records
# the fixed variant (OUTDIR/<scenario>.fix.gwr and .fix.rec.json: the pairs
# tests/diff/test_diff.sh compares with `gpuwhy diff`).
set -u
out=${1:?usage: run-all.sh OUTDIR [SCENARIO...]}
shift
here=$(cd "$(dirname "$0")" && pwd)
gw=${GPUWHY:-$here/../gpuwhy}
py=${PYTHON:-python3}
sec=${GW_SECONDS:-3}
deadline=${GW_DEADLINE:-540}
mkdir -p "$out"
out=$(cd "$out" && pwd)
ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
all="healthy c1_data_loading c2_storage c3_small_batch c4_launch_bound c5_launch_blocking
c6_pageable c7_oversubscription c8_fp32 c9_item_sync c10_rnn_loop c11_memory_bound
c14_validation case_study"
# the two-GPU scenario joins the default list where there are two GPUs
if [ "$ngpu" -ge 2 ]; then
  all="c15_ddp_straggler $all"
elif [ $# -eq 0 ]; then
  echo "== c15_ddp_straggler left out: it needs two GPUs (nvidia-smi lists $ngpu)"
fi
list=${*:-$all}
printf 'scenario\tplain_samples_per_s\tfix_samples_per_s\tmeasured_speedup\trecorded_samples_per_s\twall_s\n' >"$out/summary.tsv"
cd "$here"
begin=$SECONDS
for s in $list; do
  if [ $((SECONDS - begin)) -gt "$deadline" ]; then
    echo "== $s skipped: past the ${deadline}s deadline"
    printf '%s\tskipped\tskipped\tnan\tskipped\t0\n' "$s" >>"$out/summary.tsv"
    continue
  fi
  t0=$SECONDS
  echo "== $s $(date +%T)"
  rm -f "$out/$s.gwr"
  timeout 120 "$gw" record -q -o "$out/$s.gwr" -- $py "$s.py" --seconds "$sec" >"$out/$s.rec.json" 2>"$out/$s.rec.err"
  echo "   record exit $?"
  timeout 120 $py "$s.py" --seconds "$sec" >"$out/$s.plain.json" 2>"$out/$s.plain.err"
  timeout 120 $py "$s.py" --fix --seconds "$sec" >"$out/$s.fix.json" 2>"$out/$s.fix.err"
  if [ "${GW_RECORD_FIX:-0}" = 1 ]; then
    rm -f "$out/$s.fix.gwr"
    timeout 120 "$gw" record -q -o "$out/$s.fix.gwr" -- $py "$s.py" --fix --seconds "$sec" \
      >"$out/$s.fix.rec.json" 2>"$out/$s.fix.rec.err"
    echo "   record --fix exit $?"
  fi
  $py - "$out" "$s" $((SECONDS - t0)) >>"$out/summary.tsv" <<'PY'
import json, sys
out, s, wall = sys.argv[1], sys.argv[2], sys.argv[3]
def sps(kind):
    try:
        return json.loads(open(f"{out}/{s}.{kind}.json").read().strip().splitlines()[-1])["samples_per_s"]
    except Exception:
        return float("nan")
p, f, r = sps("plain"), sps("fix"), sps("rec")
print(f"{s}\t{p}\t{f}\t{f / p if p == p and p else float('nan'):.3f}\t{r}\t{wall}")
PY
  tail -1 "$out/summary.tsv"
done
echo "== suite: $((SECONDS - begin)) s"
