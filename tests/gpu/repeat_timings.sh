#!/usr/bin/env bash
# On the GPU machine (repository root):   tests/gpu/repeat_timings.sh OUT REPS NAME...
# A corpus scenario's measured speed-up taken again: plain and --fix run
# uninstrumented, alternating, REPS times each (--seconds GW_SECONDS,
# default 2, as the corpus), each in its own process; prints every run's
# samples/s and the ratio of the medians. No build, no recording: it says how
# far one plain/--fix pair (the corpus's timings) can be from the median.
out=${1:?usage: tests/gpu/repeat_timings.sh OUT REPS NAME...}
reps=${2:?usage: tests/gpu/repeat_timings.sh OUT REPS NAME...}
shift 2
mkdir -p "$out" && out=$(cd "$out" && pwd) || exit 1
secs=${GW_SECONDS:-2}
exec > >(tee -a "$out/repeat_timings.log") 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for s in "$@"; do
  : >"$out/$s.tsv"
  for r in $(seq "$reps"); do
    for v in plain fix; do
      flag=; [ "$v" = fix ] && flag=--fix
      line=$(cd workloads/corpus && timeout 150 python3 "$s.py" --seconds "$secs" $flag 2>/dev/null | grep '^{' | tail -1)
      sps=$(python3 -c 'import json, sys; print(json.loads(sys.argv[1])["samples_per_s"])' "$line" 2>/dev/null)
      echo "$s $v run $r: ${sps:-failed} samples/s"
      printf '%s\t%s\t%s\n' "$v" "$r" "${sps:-nan}" >>"$out/$s.tsv"
    done
  done
  python3 - "$out/$s.tsv" "$s" <<'PY'
import statistics, sys
rows = [l.split('\t') for l in open(sys.argv[1]).read().split('\n') if l]
v = {k: sorted(float(r[2]) for r in rows if r[0] == k and r[2] != 'nan') for k in ('plain', 'fix')}
if v['plain'] and v['fix']:
    p, f = statistics.median(v['plain']), statistics.median(v['fix'])
    print(f"{sys.argv[2]}: plain {v['plain']}, fix {v['fix']} samples/s; median fix / plain = {f / p:.3f}x")
else:
    print(f"{sys.argv[2]}: a variant failed every run")
PY
done
