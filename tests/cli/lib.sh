# The checks the CLI suites share (sourced after they set $tmp): ok and ko
# count, expect_rc runs a command and checks its exit status (its output in
# $tmp/out and $tmp/err), has checks a file for a pattern. The suite prints
# "$pass passed, $fail failed" at its end.
pass=0; fail=0
ok() { pass=$((pass+1)); }
ko() { echo "FAIL $*"; fail=$((fail+1)); }
expect_rc() { # want, description, command...
  local want=$1 desc=$2; shift 2
  "$@" >"$tmp/out" 2>"$tmp/err"; local rc=$?
  if [ "$rc" -eq "$want" ]; then ok; else ko "$desc: exit $rc, want $want ($(head -c 300 "$tmp/err"))"; fi
}
has() { # file, pattern, description
  if grep -q -- "$2" "$1"; then ok; else ko "$3: '$2' not in $(head -c 400 "$1")"; fi
}
