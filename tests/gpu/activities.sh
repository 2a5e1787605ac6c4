#!/usr/bin/env bash
# On the GPU machine, in one call (under 9 minutes of wall time): one half of the corpus's
# activities batch (issue 22's scenarios, split.tsv halves activities-calibration and
# activities-evaluation; README there), each recorded, reported and timed plain and with
# --fix by workloads/corpus/run.sh, then each healthy one recorded twice more
# (<name>.r2.gwr, <name>.r3.gwr and their .report.json, .rec.json), then table.py's
# tables of what ran. Everything comes back as OUT/activities-results.tgz (split into
# 15 MB parts, activities-results.tgz.NN, where it is larger: cat them to unpack).
#   tests/gpu/activities.sh OUT a|b|SCENARIO...
# a, b: alternate rows of the batch in manifest.tsv (run.sh's activities-a, activities-b),
# each sized for one call; the whole batch is both calls. A later batch's half
# (BATCH-evaluation) or its alternate rows (BATCH-evaluation-a, -b: run.sh's subsets, one
# call each where the half does not fit one). Carry .gpudeps (tests/gpu/build.sh).
# Environment: GW_SECONDS (default 2), GW_RUN_TIMEOUT (per run, default 100: a first
# compilation on a fresh machine is slow), GW_BUDGET (seconds for the call, default 540),
# GW_AGAIN (the healthy scenarios to record twice more; default: each healthy one run).
out=${1:?usage: tests/gpu/activities.sh OUT a|b|SCENARIO...}
shift
part=${1:-a}
case $part in a|b) sel=(activities-"$part"); name=activities-$part ;; *) sel=("$@"); name=activities ;; esac
start=$SECONDS
budget=${GW_BUDGET:-540}
export GW_SECONDS=${GW_SECONDS:-2} GW_RUN_TIMEOUT=${GW_RUN_TIMEOUT:-100}
. tests/gpu/harness.sh
res="$out/results"
corpus="$res/corpus"
mkdir -p "$corpus"
python3 - <<'PY'
import sys
from importlib import metadata
have = []
for p in ("torch", "torchvision", "transformers", "lightning", "jax", "jaxlib", "optax", "cupy-cuda13x",
          "triton", "scikit-learn", "torchmetrics", "numpy"):
    try:
        have.append(f"{p} {metadata.version(p)}")
    except metadata.PackageNotFoundError:
        have.append(f"{p} missing")
print("python", sys.version.split()[0], "|", ", ".join(have))
PY

list=$(GW_LIST=1 workloads/corpus/run.sh "$corpus" "${sel[@]}")
healthy=$(for s in $list; do awk -F'\t' -v n="$s" '$1 == n && $3 == "none" { print $1 }' workloads/corpus/manifest.tsv; done)
healthy=${GW_AGAIN-$healthy}
n_healthy=$(echo $healthy | wc -w)
# each further recording of a control: about 25 s (its interpreter, imports, compilation)
reserve=$((n_healthy * 2 * 25))
used=$((SECONDS - start))
echo "== activities $part: $(echo $list | wc -w) scenarios ($n_healthy healthy, ${reserve}s kept for their" \
  "further recordings), ${used}s used $(date -u +%T)"
GW_DEADLINE=$((budget - used - reserve)) workloads/corpus/run.sh "$corpus" "${sel[@]}"

gw=$PWD/gpuwhy
for s in $healthy; do
  for r in 2 3; do
    if [ $((SECONDS - start + 30)) -gt "$budget" ]; then
      echo "== $s.r$r skipped: it could not finish before the ${budget}s budget"
      continue
    fi
    echo "== $s.r$r $(date -u +%T)"
    (cd workloads/corpus && timeout "$GW_RUN_TIMEOUT" "$gw" record -q -o "$corpus/$s.r$r.gwr" -- \
       python3 "$s.py" --seconds "$GW_SECONDS" >"$corpus/$s.r$r.rec.json" 2>"$corpus/$s.r$r.rec.err")
    echo "   record exit $?"
    [ -f "$corpus/$s.r$r.gwr" ] && "$gw" report --json "$corpus/$s.r$r.gwr" >"$corpus/$s.r$r.report.json" 2>>"$corpus/$s.r$r.rec.err"
  done
done

cat "$corpus/summary.tsv" 2>/dev/null
for r in "$corpus"/*.report.json; do
  [ -f "$r" ] || continue
  "$gw" report "${r%.report.json}.gwr" 2>&1 | grep -E 'Steps:|^ *[0-9]+\. \[|No significant|too little' \
    | sed "s|^|$(basename "${r%.report.json}"): |"
done
tbatch=activities
case $part in
  *-calibration|*-evaluation) tbatch=${part%-*} ;;
  *-calibration-[ab]|*-evaluation-[ab]) tbatch=${part%-*-?} ;;
esac
python3 workloads/corpus/table.py "$corpus" --batch "$tbatch" >"$res/table.md" 2>&1
cat "$res/table.md"
echo "== done $(date -u +%T), $((SECONDS - start)) s"
cp "$out/$name.log" "$res/" 2>/dev/null
tar czf "$out/activities-results.tgz" -C "$out" results && rm -rf "$res" "$out/build.log"
if [ "$(stat -c %s "$out/activities-results.tgz")" -gt $((15 * 1024 * 1024)) ]; then
  split -b 15M -d "$out/activities-results.tgz" "$out/activities-results.tgz." && rm -f "$out/activities-results.tgz"
fi
ls -la "$out"
