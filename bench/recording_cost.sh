#!/usr/bin/env bash
# What recording costs a job, part by part: each corpus scenario run plain,
# then under `gpuwhy record` with everything on, then with one part of the
# recording switched off at a time. The job's own throughput (its last JSON
# line, samples_per_s over its steady steps) is the measure; the ratio to
# the plain run is the cost. One round each, in one call, so the ratios are
# side by side on one machine.
#   bench/recording_cost.sh OUT [SCENARIO...]   (on the GPU machine)
# Parts switched off: --no-py (stack sampler and sync-site stacks),
# GPUWHY_PY_SITES=0 (sync-site stacks only), GPUWHY_API_CALLBACKS=0 (host
# call callbacks), GPUWHY_KINDS=kernel (kernel activity only), --no-inject.
set -u
out=${1:?usage: bench/recording_cost.sh OUT [SCENARIO...]}
shift
mkdir -p "$out"
out=$(cd "$out" && pwd)
here=$(cd "$(dirname "$0")/.." && pwd)
gw=$here/gpuwhy
scen=${*:-c9_torch_mask_index}
configs=${CONFIGS:-plain full no-py no-sites no-api kernels-only no-inject}
tsv=$out/recording_cost.tsv
printf 'scenario\tconfig\tsamples_per_s\tratio_to_plain\tsteps\n' >"$tsv"
cd "$here/workloads/corpus"
for s in $scen; do
  plain=""
  for c in $configs; do
    rec=(timeout 120 "$gw" record -q -o "$out/$s.$c.gwr" --)
    env=()
    case $c in
      plain) rec=(timeout 120) ;;
      full) ;;
      no-py) rec=(timeout 120 "$gw" record -q --no-py -o "$out/$s.$c.gwr" --) ;;
      no-sites) env=(GPUWHY_PY_SITES=0) ;;
      no-api) env=(GPUWHY_API_CALLBACKS=0) ;;
      kernels-only) env=(GPUWHY_KINDS=kernel) ;;
      no-inject) rec=(timeout 120 "$gw" record -q --no-inject -o "$out/$s.$c.gwr" --) ;;
    esac
    env "${env[@]}" "${rec[@]}" python3 "$s.py" >"$out/$s.$c.json" 2>"$out/$s.$c.err"
    line=$(grep '"samples_per_s"' "$out/$s.$c.json" | tail -1)
    sps=$(printf '%s' "$line" | python3 -c 'import json,sys
try: print(json.loads(sys.stdin.read())["samples_per_s"])
except Exception: print("nan")')
    steps=$(printf '%s' "$line" | python3 -c 'import json,sys
try: print(json.loads(sys.stdin.read())["steps"])
except Exception: print("nan")')
    [ "$c" = plain ] && plain=$sps
    ratio=$(python3 -c "import math,sys; a,b=float('$sps'),float('${plain:-nan}'); print('%.3f'%(a/b) if b==b and b>0 and a==a else 'nan')")
    printf '%s\t%s\t%s\t%s\t%s\n' "$s" "$c" "$sps" "$ratio" "$steps" | tee -a "$tsv"
  done
done
