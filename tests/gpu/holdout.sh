#!/usr/bin/env bash
# On the GPU machine, in one call (under 10 minutes): the held-out scenarios
# of the corpus (split.tsv half "holdout": written after the analysis was
# tuned, recorded once, reported as they come out), and the NVTX check
# (tests/gpu/nvtx_steps.sh). Everything comes back as OUT/holdout-results.tgz.
#   tests/gpu/holdout.sh OUT [SCENARIO...]     (default: the holdout half)
out=${1:?usage: tests/gpu/holdout.sh OUT [SCENARIO...]}
shift
name=holdout
start=$SECONDS
. tests/gpu/harness.sh
res="$out/results"
mkdir -p "$res"
python3 -c 'import sys; print("python", sys.version)'
echo "== nvtx $(date -u +%T)"
tests/gpu/nvtx_steps.sh "$res/nvtx"
used=$((SECONDS - start))
echo "== holdout $(date -u +%T), ${used}s used"
GW_DEADLINE=$((540 - used)) workloads/corpus/run.sh "$res/corpus" "${@:-holdout}"
for r in "$res"/corpus/*.report.json; do
  [ -f "$r" ] || continue
  ./gpuwhy report "${r%.report.json}.gwr" 2>&1 | grep -E 'Steps:|^ *[0-9]+\. \[|No significant' | sed "s|^|$(basename "${r%.report.json}"): |"
done
echo "== done $(date -u +%T), $((SECONDS - start)) s"
cp "$out/$name.log" "$res/" 2>/dev/null
tar czf "$out/holdout-results.tgz" -C "$out" results && rm -rf "$res" "$out/build.log"
ls -la "$out"
