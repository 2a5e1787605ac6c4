#!/usr/bin/env bash
# What recording costs a job, part by part: each corpus scenario run plain,
# under `gpuwhy record` with everything on, and with one part of the
# recording switched off at a time. The job's own throughput (its last JSON
# line, samples_per_s over its steady steps) is the measure; the ratio of the
# medians to the plain runs' median is the cost. ROUNDS rounds (default 1),
# the configurations in a rotated order each round (round 2 starts with the
# second), so that a first run's cost (a cold page cache, a first
# compilation) falls on every configuration in turn; all in one call, so the
# ratios are side by side on one machine.
#   bench/recording_cost.sh OUT [SCENARIO...]   (on the GPU machine)
# Parts switched off: --no-py (stack sampler and sync-site stacks),
# GPUWHY_PY_SITES=0 (sync-site stacks only), GPUWHY_API_CALLBACKS=0 (host
# call callbacks), GPUWHY_KINDS=kernel (kernel activity only), --no-inject.
# Environment: CONFIGS (default all seven), ROUNDS, GW_DEADLINE (seconds: a
# run that could not finish before it is skipped, default 540).
# Writes OUT/recording_cost.tsv (every run) and OUT/recording_cost.medians.tsv.
set -u
out=${1:?usage: bench/recording_cost.sh OUT [SCENARIO...]}
shift
mkdir -p "$out"
out=$(cd "$out" && pwd)
here=$(cd "$(dirname "$0")/.." && pwd)
gw=$here/gpuwhy
scen=${*:-c9_torch_mask_index}
read -ra configs <<<"${CONFIGS:-plain full no-py no-sites no-api kernels-only no-inject}"
rounds=${ROUNDS:-1}
deadline=${GW_DEADLINE:-540}
tsv=$out/recording_cost.tsv
printf 'scenario\tround\tconfig\tsamples_per_s\tsteps\n' >"$tsv"
cd "$here/workloads/corpus"
for r in $(seq "$rounds"); do
  for s in $scen; do
    n=${#configs[@]}
    for k in $(seq 0 $((n - 1))); do
      c=${configs[$(((k + r - 1) % n))]}
      if [ "$SECONDS" -gt "$deadline" ]; then
        echo "== $s $c round $r skipped: past the ${deadline}s deadline"
        continue
      fi
      f=$out/$s.$c.r$r.gwr
      rec=(timeout 120 "$gw" record -q -o "$f" --)
      env=()
      case $c in
        plain) rec=(timeout 120) ;;
        full) ;;
        no-py) rec=(timeout 120 "$gw" record -q --no-py -o "$f" --) ;;
        no-sites) env=(GPUWHY_PY_SITES=0) ;;
        no-api) env=(GPUWHY_API_CALLBACKS=0) ;;
        kernels-only) env=(GPUWHY_KINDS=kernel) ;;
        no-inject) rec=(timeout 120 "$gw" record -q --no-inject -o "$f" --) ;;
      esac
      env "${env[@]}" "${rec[@]}" python3 "$s.py" >"$out/$s.$c.r$r.json" 2>"$out/$s.$c.r$r.err"
      rm -f "$f"
      grep '"samples_per_s"' "$out/$s.$c.r$r.json" | tail -1 | python3 -c 'import json, sys
try:
    d = json.loads(sys.stdin.read())
    print("%s\t%s" % (d["samples_per_s"], d["steps"]))
except Exception:
    print("nan\tnan")' | sed "s/^/$s\t$r\t$c\t/" | tee -a "$tsv"
    done
  done
done
python3 - "$tsv" "$out/recording_cost.medians.tsv" <<'PY'
import statistics, sys
rows = [l.split('\t') for l in open(sys.argv[1]).read().splitlines()[1:] if l]
out = open(sys.argv[2], 'w')
out.write('scenario\tconfig\truns\tmedian_samples_per_s\tratio_to_plain\tspread\n')
for s in dict.fromkeys(r[0] for r in rows):
    med = {}
    for c in dict.fromkeys(r[2] for r in rows if r[0] == s):
        v = sorted(float(r[3]) for r in rows if r[0] == s and r[2] == c and r[3] != 'nan')
        if v:
            med[c] = (statistics.median(v), len(v), v[-1] / v[0])
    p = med.get('plain', (float('nan'),))[0]
    for c, (m, n, spread) in med.items():
        line = '%s\t%s\t%d\t%.2f\t%.3f\t%.2f' % (s, c, n, m, m / p if p == p and p > 0 else float('nan'), spread)
        out.write(line + '\n')
        print(line)
PY
