#!/usr/bin/env bash
# The test runner itself (tests/run-tests.sh) on stand-in suites in a
# scratch copy of the tree: a suite that ran nothing is shown as "skip" and
# counted as skipped, never as "ok"; suites run side by side with their
# lines in the list's order; the final line is
# "N passed, N failed, N skipped" and .ci/run's count() adds it up; one
# suite or unit binary runs by name (make test T=NAME). Prints
# "N passed, N failed".
set -u
cd "$(dirname "$0")/.."
# the pass that runs this may leave suites out (.ci/run's sanitizer passes):
# the stand-ins below are run whole
unset GW_TEST_SKIP
root=$PWD
tmp=$(mktemp -d /tmp/gw-runner-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
pass=0; fail=0
ok() { pass=$((pass+1)); }
ko() { echo "FAIL $*"; fail=$((fail+1)); }

# every suite script the runner names, as a stand-in that passes
mkdir -p "$tmp/tree/tests" "$tmp/build/tests"
cp tests/run-tests.sh "$tmp/tree/tests/"
grep -oE 'tests/[A-Za-z0-9_/-]+\.sh' tests/run-tests.sh | sort -u | while read -r s; do
  [ "$s" = tests/run-tests.sh ] && continue
  mkdir -p "$tmp/tree/$(dirname "$s")"
  printf '#!/bin/sh\necho "1 passed, 0 failed"\n' > "$tmp/tree/$s"
  chmod +x "$tmp/tree/$s"
done
# html ran nothing (no browser); docs skipped one of its checks; golden fails
printf '#!/bin/sh\necho "skipped: chromium not installed"\necho "0 passed, 0 failed, 1 skipped"\n' > "$tmp/tree/tests/html/test_html.sh"
printf '#!/bin/sh\necho "skip NO_COLOR on a terminal: no script(1)"\necho "4 passed, 0 failed, 1 skipped"\n' > "$tmp/tree/tests/cli/test_docs.sh"
printf '#!/bin/sh\necho "FAIL something"\necho "2 passed, 1 failed"\nexit 1\n' > "$tmp/tree/tests/golden/run.sh"
# a unit binary
printf '#!/bin/sh\necho "3 passed, 0 failed"\n' > "$tmp/build/tests/test_demo"
chmod +x "$tmp/build/tests/test_demo"

BUILD=$tmp/build "$tmp/tree/tests/run-tests.sh" > "$tmp/all" 2>&1; rc=$?
[ $rc -ne 0 ] && ok || ko "a failing suite: the runner exits 0"
grep -qE '^skip suite html \([0-9]+ s; chromium not installed\)$' "$tmp/all" && ok ||
  ko "a suite that ran nothing is not shown as skipped: $(grep 'suite html' "$tmp/all")"
grep -q '^ok   suite html' "$tmp/all" && ko "a suite that ran nothing is shown as ok" || ok
grep -qE '^ok   suite docs \(4 checks, [0-9]+ s, 1 skipped: NO_COLOR on a terminal: no script\(1\)\)$' "$tmp/all" && ok ||
  ko "a suite's own skips are not shown: $(grep 'suite docs' "$tmp/all")"
grep -qE '^FAIL suite golden \(2 passed, 1 failed, exit 1, [0-9]+ s\)$' "$tmp/all" && ok || ko "golden: $(grep 'suite golden' "$tmp/all")"
grep -qE '^ok   suite test_demo \(3 checks, [0-9]+ s\)$' "$tmp/all" && ok || ko "the unit binary: $(grep 'test_demo' "$tmp/all")"
nsuites=$(BUILD=$tmp/build "$tmp/tree/tests/run-tests.sh" --list | wc -l)
# every stand-in passes 1 but docs (4), golden (2), test_demo (3), html (0)
want="$((nsuites - 4 + 4 + 2 + 3)) passed, 1 failed, 2 skipped"
last=$(tail -1 "$tmp/all")
[ "$last" = "$want" ] && ok || ko "final line '$last', want '$want'"

# .ci/run's count() adds the final line up, skipped included
sed -n '/^count() {/,/^}/p' .ci/run > "$tmp/count.sh"
[ -s "$tmp/count.sh" ] && ok || ko ".ci/run has no count() function"
got=$(log=$tmp/all; total_p=0; total_f=0; total_s=0; . "$tmp/count.sh"; count; count; echo "$total_p $total_f $total_s")
[ "$got" = "$((2 * (nsuites + 5))) 2 4" ] && ok || ko ".ci/run's count() on the final line twice: $got"
printf 'x\n7 passed, 0 failed\n' > "$tmp/old"
got=$(log=$tmp/old; total_p=0; total_f=0; total_s=0; . "$tmp/count.sh"; count; echo "$total_p $total_f $total_s")
[ "$got" = "7 0 0" ] && ok || ko ".ci/run's count() on a line without skipped: $got"

# side by side, the lines still in the list's order: the first suite (the
# unit binary) ends last; and one at a time (GW_TEST_JOBS=1) the same lines
printf '#!/bin/sh\nsleep 1\necho "3 passed, 0 failed"\n' > "$tmp/build/tests/test_demo"
BUILD=$tmp/build "$tmp/tree/tests/run-tests.sh" > "$tmp/par" 2>&1
BUILD=$tmp/build GW_TEST_JOBS=1 "$tmp/tree/tests/run-tests.sh" > "$tmp/seq" 2>&1
[ "$(grep -n 'suite test_demo' "$tmp/par" | cut -d: -f1)" -lt "$(grep -n 'suite cli ' "$tmp/par" | cut -d: -f1)" ] && ok ||
  ko "the suites' lines are not in the list's order: $(head -5 "$tmp/par")"
# (the seconds each suite took left out: they differ from run to run)
secs() { sed -E 's/, [0-9]+ s([,)])/\1/; s/\([0-9]+ s; /(/' "$1"; }
cmp -s <(secs "$tmp/par") <(secs "$tmp/seq") && cmp -s <(secs "$tmp/par") <(secs "$tmp/all") && ok ||
  ko "side by side and one at a time print different lines: $(diff <(secs "$tmp/par") <(secs "$tmp/seq") | head -5)"

# one suite by name, and a unit binary by name
BUILD=$tmp/build "$tmp/tree/tests/run-tests.sh" html > "$tmp/one" 2>&1
[ "$(grep -c suite "$tmp/one")" = 1 ] && [ "$(tail -1 "$tmp/one")" = "0 passed, 0 failed, 1 skipped" ] && ok ||
  ko "run-tests.sh html: $(cat "$tmp/one")"
BUILD=$tmp/build "$tmp/tree/tests/run-tests.sh" test_demo docs > "$tmp/two" 2>&1
[ "$(grep -c suite "$tmp/two")" = 2 ] && [ "$(tail -1 "$tmp/two")" = "7 passed, 0 failed, 1 skipped" ] && ok ||
  ko "run-tests.sh test_demo docs: $(cat "$tmp/two")"
BUILD=$tmp/build "$tmp/tree/tests/run-tests.sh" nosuch > "$tmp/bad" 2>&1; rc=$?
[ $rc -eq 2 ] && grep -q "no test suite named 'nosuch'; the suites are:" "$tmp/bad" && grep -q " test_demo" "$tmp/bad" && ok ||
  ko "run-tests.sh nosuch: exit $rc, $(cat "$tmp/bad")"
# GW_TEST_SKIP leaves suites out, each shown and counted as skipped
BUILD=$tmp/build GW_TEST_SKIP="html golden" "$tmp/tree/tests/run-tests.sh" test_demo golden html > "$tmp/skip" 2>&1; rc=$?
[ $rc -eq 0 ] && grep -q '^skip suite golden (0 s; left out of this pass (GW_TEST_SKIP))$' "$tmp/skip" &&
  [ "$(tail -1 "$tmp/skip")" = "3 passed, 0 failed, 2 skipped" ] && ok || ko "GW_TEST_SKIP: exit $rc, $(cat "$tmp/skip")"
# make test T=NAME passes the names on to the runner
grep -qE 'tests/run-tests\.sh .*\$\(T\)' Makefile && ok || ko "the Makefile's test target does not pass \$(T) to tests/run-tests.sh"
grep -q 'make test T=' README.md && ok || ko "README does not say how to run one suite (make test T=NAME)"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
