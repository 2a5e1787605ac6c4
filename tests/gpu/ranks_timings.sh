#!/usr/bin/env bash
# On the GPU machine (repository root):   tests/gpu/ranks_timings.sh OUT [REPS]
# The measured speed-ups of workloads/ranks/ddp_ranks.py's fixes, taken
# again: each configuration (as tests/gpu/ranks.sh: 2 ranks slow, 2 ranks
# ckpt, 4 ranks both) timed plain and --fix uninstrumented, alternating,
# REPS times each (default 3), with the median step of each variant and
# their ratio. No recording: the ratios to set beside the predictions made
# from tests/fixtures/ranks/.
out=${1:?usage: tests/gpu/ranks_timings.sh OUT [REPS]}
reps=${2:-3}
name=ranks_timings
. tests/gpu/harness.sh
py=${PYTHON:-python3}
torchrun=("$py" -m torch.distributed.run --standalone)
secs=${GW_SECONDS:-4}
for cfg in ${CONFIGS:-2:slow 2:ckpt 4:both}; do
  n=${cfg%%:*} plant=${cfg#*:}
  : >"$out/$n-$plant.tsv"
  for r in $(seq "$reps"); do
    for v in plain fix; do
      flag=; [ $v = fix ] && flag=--fix
      line=$(timeout 300 "${torchrun[@]}" --nproc-per-node "$n" workloads/ranks/ddp_ranks.py --seconds "$secs" \
        --plant "$plant" $flag 2>>"$out/$n-$plant.err" | tail -1)
      ms=$(echo "$line" | "$py" -c "import json,sys; print(json.loads(sys.stdin.read())['step_ms'])" 2>/dev/null)
      echo "$n ranks, $plant, $v, run $r: ${ms:-failed} ms"
      [ -n "$ms" ] && printf '%s\t%s\n' "$v" "$ms" >>"$out/$n-$plant.tsv"
    done
  done
  label="$n ranks, $plant"
  "$py" - "$out/$n-$plant.tsv" "$label" <<'PY' && ok "medians of plain and --fix ($label)" || ko "too few runs ($label)"
import statistics, sys
rows = [l.split("\t") for l in open(sys.argv[1]).read().split("\n") if l]
p = [float(b) for a, b in rows if a == "plain"]; f = [float(b) for a, b in rows if a == "fix"]
assert p and f
print("%s: plain %s ms, fix %s ms; median %.2f / %.2f ms = %.3fx" % (sys.argv[2], p, f, statistics.median(p),
      statistics.median(f), statistics.median(p) / statistics.median(f)))
PY
done
echo "== done $(date -u +%T): $pass passed, $fail failed"
