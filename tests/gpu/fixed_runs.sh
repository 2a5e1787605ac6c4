#!/usr/bin/env bash
# On the GPU machine: the suite's fixed runs (`--fix`) recorded the way the
# plain fixtures were (tests/gpu/corpus.sh's suite part: `gpuwhy record`,
# --seconds 3, one H200), so that `gpuwhy diff PLAIN FIXED` can be checked
# against the workloads' own timing (tests/diff/test_diff.sh) and the README
# can show the case study's before/after.
#   tests/gpu/fixed_runs.sh OUT [SCENARIO...]   (about 30 s a scenario)
out=${1:?usage: tests/gpu/fixed_runs.sh OUT [SCENARIO...]}
shift
name=fixed_runs
. tests/gpu/harness.sh
for s in ${*:-case_study c9_item_sync c1_data_loading c6_pageable}; do
  echo "== $s --fix $(date -u +%T)"
  (cd workloads && timeout 120 ../gpuwhy record -q -o "$out/$s.fixed.gwr" -- python3 "$s.py" --seconds 3 --fix \
     >"$out/$s.fixed.rec.json" 2>"$out/$s.fixed.rec.err")
  rc=$?
  [ $rc -eq 0 ] && ok "$s --fix recorded" || ko "$s --fix: exit $rc"
  tail -1 "$out/$s.fixed.rec.json"
  ./gpuwhy diff "tests/fixtures/$s.gwr" "$out/$s.fixed.gwr" 2>&1 | head -12
done
echo "== gpu tests: $pass passed, $fail failed"
