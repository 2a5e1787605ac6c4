#!/usr/bin/env bash
# Runs corpus scenarios on the GPU machine, each three times in its own process:
# under `gpuwhy record` (the recording, then `gpuwhy report --json` of it), then
# uninstrumented plain and with --fix (the timings).
#
# Usage: run.sh OUTDIR [SUBSET|NAME...]
#   SUBSET: all (default), calibration, evaluation, holdout (split.tsv), healthy (planted
#   none in manifest.tsv), a, b (alternate rows of manifest.tsv outside the batches
#   split later: two halves that each fit one call of the device tool), a batch's
#   halves (activities-calibration, activities-evaluation), the whole batch
#   (activities), activities-a, activities-b (alternate rows of the batch), a later
#   batch's half (echo-evaluation) or its alternate rows (echo-evaluation-a,
#   echo-evaluation-b: each sized for one call where the half is not), or scenario names.
# Writes OUTDIR/<name>.{rec,plain,fix}.json (the programs' last lines), .err,
# <name>.gwr, <name>.report.json and OUTDIR/summary.tsv; table.py turns them into
# the accuracy table.
# Environment: GW_SECONDS (steady seconds per run, default 2), GW_DEADLINE
# (seconds: a scenario that could not finish before it is skipped and listed as
# such, default 540), GW_RUN_TIMEOUT (seconds per run, default 60), GPUWHY,
# PYTHON, NVCC; GW_LIST=1 prints the scenario names of the subsets and runs nothing.
set -u
out=${1:?usage: run.sh OUTDIR [SUBSET|NAME...]}
shift
here=$(cd "$(dirname "$0")" && pwd)
gw=${GPUWHY:-$here/../../gpuwhy}
py=${PYTHON:-python3}
sec=${GW_SECONDS:-2}
deadline=${GW_DEADLINE:-540}
per_run=${GW_RUN_TIMEOUT:-60}
nvcc=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
begin=$SECONDS

# scenario names of the manifest (column 1, comments and header left out)
names() { awk -F'\t' 'NR > 1 && $1 !~ /^#/ && $1 != "" { print $1 }' "$here/manifest.tsv"; }
# the manifest's names in a batch split later (split.tsv half BATCH-*), or (no argument)
# in none of them
batch() {
  awk -F'\t' -v b="${1:-}" 'FNR == NR { if (FNR > 1) half[$1] = $2; next }
    FNR > 1 && $1 !~ /^#/ && $1 != "" {
      h = ($1 in half) ? half[$1] : ""
      inb = (h ~ /^[a-z]+-(calibration|evaluation)$/)
      if (b == "" ? !inb : index(h, b "-") == 1) print $1 }' "$here/split.tsv" "$here/manifest.tsv"
}
resolve() {
  case "$1" in
    all) names ;;
    calibration|evaluation|holdout|*-calibration|*-evaluation)
      [ -f "$here/split.tsv" ] || { echo "run.sh: no split.tsv (run split.py once)" >&2; return; }
      awk -F'\t' -v h="$1" 'NR > 1 && $2 == h { print $1 }' "$here/split.tsv" ;;
    *-calibration-a|*-evaluation-a) resolve "${1%-a}" | awk 'NR % 2 == 1' ;;
    *-calibration-b|*-evaluation-b) resolve "${1%-b}" | awk 'NR % 2 == 0' ;;
    healthy) awk -F'\t' 'NR > 1 && $1 !~ /^#/ && $3 == "none" { print $1 }' "$here/manifest.tsv" ;;
    a) batch | awk 'NR % 2 == 1' ;;
    b) batch | awk 'NR % 2 == 0' ;;
    activities) batch activities ;;
    activities-a) batch activities | awk 'NR % 2 == 1' ;;
    activities-b) batch activities | awk 'NR % 2 == 0' ;;
    *) echo "$1" ;;
  esac
}
list=""
for a in "${@:-all}"; do list="$list $(resolve "$a")"; done
if [ "${GW_LIST:-0}" = 1 ]; then  # the scenario names only, one a line; nothing run
  printf '%s\n' $list
  exit 0
fi
mkdir -p "$out"
out=$(cd "$out" && pwd)

# the CUDA C scenarios to run: built first (sm_90 for the H200, PTX for anything newer)
mkdir -p "$here/build"
for s in $list; do
  cu=$here/$s.cu
  [ -e "$cu" ] || continue
  b=$here/build/$(basename "$cu" .cu)
  if [ ! -x "$b" ] || [ "$cu" -nt "$b" ]; then
    "$nvcc" -O2 -std=c++17 -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90 \
      -o "$b" "$cu" || echo "== build of $(basename "$cu") failed"
  fi
done

printf 'scenario\tplain_samples_per_s\tfix_samples_per_s\tmeasured_speedup\trecorded_samples_per_s\trec_iterations\twall_s\n' >"$out/summary.tsv"
cd "$here"
for s in $list; do
  # skip rather than lose the call: a scenario takes up to about 30 s
  if [ $((SECONDS - begin + 30)) -gt "$deadline" ]; then
    echo "== $s skipped: it could not finish before the ${deadline}s deadline"
    printf '%s\tskipped\tskipped\tnan\tskipped\tnan\t0\n' "$s" >>"$out/summary.tsv"
    continue
  fi
  if [ -f "$s.cu" ]; then cmd=("$here/build/$s"); elif [ -f "$s.py" ]; then cmd=("$py" "$s.py"); else
    echo "== $s: no such scenario"; continue; fi
  t0=$SECONDS
  echo "== $s $(date +%T)"
  rm -f "$out/$s.gwr" "$out/$s.report.json"
  timeout "$per_run" "$gw" record -q -o "$out/$s.gwr" -- "${cmd[@]}" --seconds "$sec" >"$out/$s.rec.json" 2>"$out/$s.rec.err"
  echo "   record exit $?"
  [ -f "$out/$s.gwr" ] && "$gw" report --json "$out/$s.gwr" >"$out/$s.report.json" 2>>"$out/$s.rec.err"
  timeout "$per_run" "${cmd[@]}" --seconds "$sec" >"$out/$s.plain.json" 2>"$out/$s.plain.err"
  timeout "$per_run" "${cmd[@]}" --fix --seconds "$sec" >"$out/$s.fix.json" 2>"$out/$s.fix.err"
  "$py" - "$out" "$s" $((SECONDS - t0)) >>"$out/summary.tsv" <<'PY'
import json, sys
out, s, wall = sys.argv[1], sys.argv[2], sys.argv[3]
def last(kind):
    try:
        return json.loads(open(f"{out}/{s}.{kind}.json").read().strip().splitlines()[-1])
    except Exception:
        return {}
p, f, r = (last(k).get("samples_per_s", float("nan")) for k in ("plain", "fix", "rec"))
it = last("rec").get("iterations_total", float("nan"))
print(f"{s}\t{p}\t{f}\t{f / p if p == p and p else float('nan'):.3f}\t{r}\t{it}\t{wall}")
PY
  tail -n 1 "$out/summary.tsv"
done
echo "== corpus: $((SECONDS - begin)) s"
