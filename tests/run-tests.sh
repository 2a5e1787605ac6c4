#!/usr/bin/env bash
# Runs every test: unit binaries, CLI tests, golden tests on real recordings.
# Prints each suite's result and ends with the total "N passed, N failed".
set -u
cd "$(dirname "$0")/.."
build=${BUILD:-build}
pass=0; fail=0
run_suite() { # name, command...
  local name=$1; shift
  local out rc line p f
  out=$("$@" 2>&1); rc=$?
  line=$(printf '%s\n' "$out" | grep -E '^[0-9]+ passed, [0-9]+ failed' | tail -1)
  p=$(echo "$line" | awk '{print $1}'); f=$(echo "$line" | awk '{print $3}')
  if [ -z "$line" ]; then p=0; f=1; fi
  if [ "$rc" -ne 0 ] && [ "${f:-0}" -eq 0 ]; then f=1; fi
  pass=$((pass + p)); fail=$((fail + f))
  if [ "$f" -ne 0 ]; then
    printf '%s\n' "$out" | grep -v '^ok ' | tail -40
    echo "FAIL suite $name ($p passed, $f failed, exit $rc)"
  else
    echo "ok   suite $name ($p checks)"
  fi
}
for t in "$build"/tests/*; do
  case $t in *.so) continue ;; esac
  [ -x "$t" ] && run_suite "$(basename "$t")" "$t"
done
run_suite cli tests/cli/test_cli.sh
run_suite docs tests/cli/test_docs.sh
run_suite check tests/cli/test_check.sh
run_suite outputs tests/cli/test_outputs.sh
run_suite golden tests/golden/run.sh
run_suite corpus-tools tests/corpus/test_tools.sh
run_suite alloc-failures tests/faults/alloc_sweep.sh
run_suite layering tests/layering.sh
run_suite html tests/html/test_html.sh
run_suite diff tests/diff/test_diff.sh
run_suite install tests/packaging/test_install.sh
if command -v python3 >/dev/null; then run_suite pystack-verify tests/pystack/verify.sh python3; else echo "skip suite pystack-verify: no python3"; fi
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
