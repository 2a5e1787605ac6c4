#!/usr/bin/env bash
# Runs every scenario three ways on the GPU machine: plain (timed), under
# `gpuwhy record`, and with --fix (timed). Writes OUTDIR/<scenario>.{plain,rec,fix}.json,
# OUTDIR/<scenario>.gwr, and OUTDIR/summary.tsv. Usage: run-all.sh OUTDIR [SCENARIO...]
set -u
out=${1:?usage: run-all.sh OUTDIR [SCENARIO...]}
shift
here=$(cd "$(dirname "$0")" && pwd)
gw=${GPUWHY:-$here/../gpuwhy}
py=${PYTHON:-python3}
sec=${GW_SECONDS:-4}
mkdir -p "$out"
all="healthy c1_data_loading c2_storage c3_small_batch c4_launch_bound c5_launch_blocking
c6_pageable c7_oversubscription c8_fp32 c9_item_sync c10_rnn_loop c11_memory_bound
c14_validation case_study"
# c15_ddp_straggler needs two GPUs (kind nvidia-h200-x2): run-all.sh OUT c15_ddp_straggler
list=${*:-$all}
printf 'scenario\tplain_samples_per_s\tfix_samples_per_s\tmeasured_speedup\trecorded_samples_per_s\n' >"$out/summary.tsv"
cd "$here"
for s in $list; do
  echo "== $s $(date +%T)"
  timeout 120 $py "$s.py" --seconds "$sec" >"$out/$s.plain.json" 2>"$out/$s.plain.err"
  rm -f "$out/$s.gwr"
  timeout 120 "$gw" record -q -o "$out/$s.gwr" -- $py "$s.py" --seconds "$sec" >"$out/$s.rec.json" 2>"$out/$s.rec.err"
  echo "   record exit $?"
  timeout 120 $py "$s.py" --fix --seconds "$sec" >"$out/$s.fix.json" 2>"$out/$s.fix.err"
  $py - "$out" "$s" >>"$out/summary.tsv" <<'PY'
import json, sys
out, s = sys.argv[1], sys.argv[2]
def sps(kind):
    try:
        return json.loads(open(f"{out}/{s}.{kind}.json").read().strip().splitlines()[-1])["samples_per_s"]
    except Exception:
        return float("nan")
p, f, r = sps("plain"), sps("fix"), sps("rec")
print(f"{s}\t{p}\t{f}\t{f / p if p == p and p else float('nan'):.3f}\t{r}")
PY
  tail -1 "$out/summary.tsv"
done
