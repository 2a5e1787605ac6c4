#!/usr/bin/env bash
# On the GPU machine: the whole scenario suite in one call
# (workloads/run-all.sh: each scenario recorded, then timed plain and fixed),
# timed end to end; then `record --sync-records` on the CUDA C target (CUPTI's
# sync records come back on request) and, in what is left of the call, duty
# mode on the host-bound loop (bench/run.sh).
#   tests/gpu/suite.sh OUT        (about 9 minutes)
out=${1:?usage: tests/gpu/suite.sh OUT}
name=suite
start=$SECONDS
. tests/gpu/harness.sh
echo "== scenario suite $(date -u +%T)"
GW_SECONDS=${GW_SECONDS:-3} workloads/run-all.sh "$out/suite"
cat "$out/suite/summary.tsv"
echo "== --sync-records $(date -u +%T)"
./gpuwhy record -q --sync-records -o "$out/sr.gwr" -- build/gpu-target >/dev/null
ns=$(./gpuwhy dump --type sync "$out/sr.gwr" | wc -l)
[ "$ns" -ge 5 ] && ok "--sync-records: $ns sync records" || ko "--sync-records: $ns sync records, want 5+"
rm -f "$out/sr.gwr"
if [ $((SECONDS - start)) -lt 420 ]; then
  echo "== duty mode, host-bound loop $(date -u +%T)"
  LOOPS=bf16-host MODES="plain record duty" timeout $((560 - (SECONDS - start))) bench/run.sh "$out/duty" 2
else
  echo "== duty mode skipped: $((SECONDS - start)) s used"
fi
echo "== gpu tests: $pass passed, $fail failed"
echo "== done $(date -u +%T), $((SECONDS - start)) s"
