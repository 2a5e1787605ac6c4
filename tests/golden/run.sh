#!/usr/bin/env bash
# Golden tests on real recordings (tests/fixtures): diagnoses, snapshots, the
# CUDA C target's exact counts; the corpus's recordings (tests/fixtures/corpus)
# against their snapshots (tests/golden/corpus). `run.sh --update` rewrites all
# snapshots after a change that alters diagnoses (review `git diff tests/golden`).
set -u
cd "$(dirname "$0")/../.."
gw=${GPUWHY:-./gpuwhy}
if [ "${1:-}" = --update ]; then
  python3 tests/golden/golden.py $gw --update
  exit
fi
p=0; f=0
for cmd in "python3 tests/golden/golden.py $gw" \
           "python3 tests/gpu/check_target.py $gw tests/fixtures/cuda_c_target.gwr tests/fixtures/timings/cuda_c_target.expected.json"; do
  out=$($cmd 2>&1)
  echo "$out" | grep -v '^PASS' | grep -v 'passed, .* failed'
  line=$(echo "$out" | grep -E '^[0-9]+ passed, [0-9]+ failed' | tail -1)
  [ -n "$line" ] || line="0 passed, 1 failed"
  p=$((p + $(echo "$line" | awk '{print $1}'))); f=$((f + $(echo "$line" | awk '{print $3}')))
done
echo "$p passed, $f failed"
[ $f -eq 0 ]
