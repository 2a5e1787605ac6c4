#!/usr/bin/env bash
# On the GPU machine (repository root):   tests/gpu/repeat_timings.sh OUT REPS SPEC...
# A corpus scenario's measured speed-up taken again: plain and --fix run
# uninstrumented, alternating, REPS times each (--seconds GW_SECONDS,
# default 2, as the corpus), each in its own process; prints every run's
# samples/s and the ratio of the medians. No build, no recording: it says how
# far one plain/--fix pair (the corpus's timings) can be from the median, or
# (REPS 1) times a scenario again whose --fix changed.
# SPEC is NAME, or NAME:VAR=VALUE[,VAR=VALUE...] to run its --fix with those
# settings in the environment (values without commas or spaces; the plain
# runs have none), e.g. c1_torch_audio_numpy:OPENBLAS_NUM_THREADS=16.
# Writes OUT/TAG.tsv (variant, run, samples/s) and OUT/TAG.{plain,fix}.rN.json
# (each run's last JSON line), TAG being SPEC with ':', ',' and '=' as '.', '.', '_'.
out=${1:?usage: tests/gpu/repeat_timings.sh OUT REPS SPEC...}
reps=${2:?usage: tests/gpu/repeat_timings.sh OUT REPS SPEC...}
shift 2
mkdir -p "$out" && out=$(cd "$out" && pwd) || exit 1
secs=${GW_SECONDS:-2}
exec > >(tee -a "$out/repeat_timings.log") 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for spec in "$@"; do
  s=${spec%%:*}
  kv=(); [ "$s" != "$spec" ] && IFS=, read -ra kv <<<"${spec#*:}"
  tag=$(echo "$spec" | tr ':,=' '.._')
  : >"$out/$tag.tsv"
  for r in $(seq "$reps"); do
    for v in plain fix; do
      flag=; env=(); [ "$v" = fix ] && flag=--fix && env=("${kv[@]}")
      (cd workloads/corpus && env "${env[@]}" timeout 150 python3 "$s.py" --seconds "$secs" $flag 2>/dev/null) |
        grep '^{' | tail -1 >"$out/$tag.$v.r$r.json"
      sps=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["samples_per_s"])' \
              "$out/$tag.$v.r$r.json" 2>/dev/null)
      echo "$spec $v run $r: ${sps:-failed} samples/s"
      printf '%s\t%s\t%s\n' "$v" "$r" "${sps:-nan}" >>"$out/$tag.tsv"
    done
  done
  python3 - "$out/$tag.tsv" "$spec" <<'PY'
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
