#!/usr/bin/env bash
# Runs every test: unit binaries, CLI tests, golden tests on real recordings.
# Prints each suite's result and ends with the total
# "N passed, N failed, N skipped".
#
#   tests/run-tests.sh            every suite (make check)
#   tests/run-tests.sh NAME...    the named suites only (make test T=NAME):
#                                 a unit binary (test_sites) or a suite (docs)
#   tests/run-tests.sh --list     the suites' names
#
# The suites run side by side, GW_TEST_JOBS at a time (default: the CPUs);
# GW_TEST_JOBS=1 runs them one after another. Either way their lines come
# in the list's order, once all have ended. GW_TEST_SKIP="NAME..." leaves
# those suites out, each shown as skipped (.ci/run's sanitizer passes: the
# suites whose work is a browser's, Python's or pip's).
#
# A suite ends with "N passed, N failed" and may add ", N skipped" (checks
# it could not run here, each with a line saying why). A suite that ran
# nothing at all (chromium missing) prints "0 passed, 0 failed, 1 skipped":
# it is shown as "skip", never as "ok", and counted in the skipped total.
set -u
cd "$(dirname "$0")/.."
build=${BUILD:-build}
pass=0; fail=0; skip=0

# name and command of every suite, in the order they run
suites=()
for t in "$build"/tests/*; do
  case $t in *.so) continue ;; esac
  [ -x "$t" ] && [ -f "$t" ] && suites+=("$(basename "$t")|$t")
done
suites+=("cli|tests/cli/test_cli.sh" "docs|tests/cli/test_docs.sh" "check|tests/cli/test_check.sh" "thresholds|tests/cli/test_thresholds.sh"
  "outputs|tests/cli/test_outputs.sh" "ranks|tests/cli/test_ranks.sh" "gloo|tests/cli/test_ranks_gloo.sh" "harm|tests/cli/test_harm.sh" "golden|tests/golden/run.sh"
  "corpus-tools|tests/corpus/test_tools.sh"
  "alloc-failures|tests/faults/alloc_sweep.sh" "layering|tests/layering.sh"
  "html|tests/html/test_html.sh" "diff|tests/diff/test_diff.sh"
  "schema|tests/schema/test_schema.sh" "install|tests/packaging/test_install.sh"
  "runner|tests/test_runner.sh" "pystack-verify|tests/pystack/verify.sh python3")

if [ "${1:-}" = --list ]; then
  for s in "${suites[@]}"; do echo "${s%%|*}"; done
  exit 0
fi

# the suites asked for (all without arguments); an unknown name is an error
want=("$@")
for w in "${want[@]}"; do
  found=0
  for s in "${suites[@]}"; do [ "${s%%|*}" = "$w" ] && found=1; done
  if [ "$found" -eq 0 ]; then
    echo "gpuwhy: error: no test suite named '$w'; the suites are:" >&2
    for s in "${suites[@]}"; do printf ' %s' "${s%%|*}"; done >&2
    echo >&2
    exit 2
  fi
done
wanted() {
  [ "${#want[@]}" -eq 0 ] && return 0
  local w
  for w in "${want[@]}"; do [ "$w" = "$1" ] && return 0; done
  return 1
}

# A suite's result from its output file and exit status: counted, and
# its line printed (a failure with the output's last lines).
report_suite() { # name, output file, exit status, seconds
  local name=$1 outf=$2 rc=$3 secs=${4:-?} line p f s
  line=$(grep -E '^[0-9]+ passed, [0-9]+ failed(, [0-9]+ skipped)?$' "$outf" | tail -1)
  p=$(echo "$line" | awk '{print $1}'); f=$(echo "$line" | awk '{print $3}')
  s=$(echo "$line" | awk '{print $5}'); s=${s:-0}
  if [ -z "$line" ]; then p=0; f=1; s=0; fi
  if [ "$rc" -ne 0 ] && [ "${f:-0}" -eq 0 ]; then f=1; fi
  pass=$((pass + p)); fail=$((fail + f)); skip=$((skip + s))
  if [ "$f" -ne 0 ]; then
    grep -v '^ok ' "$outf" | tail -40
    echo "FAIL suite $name ($p passed, $f failed, exit $rc, ${secs} s)"
  elif [ "$p" -eq 0 ] && [ "$s" -gt 0 ]; then
    # the reasons the suite gave, on one line
    echo "skip suite $name (${secs} s; $(grep -E '^skip' "$outf" | head -3 | sed 's/^skip[a-z]*:* *//' | paste -sd ';' -))"
  elif [ "$s" -gt 0 ]; then
    echo "ok   suite $name ($p checks, ${secs} s, $s skipped: $(grep -E '^skip' "$outf" | head -3 | sed 's/^skip[a-z]*:* *//' | paste -sd ';' -))"
  else
    echo "ok   suite $name ($p checks, ${secs} s)"
  fi
}

# The suites run side by side, GW_TEST_JOBS at a time (default: the CPUs),
# each into its own file; their lines come in the list's order. Suites
# that build with make (docs, install) run alone, after the others, so
# that no build races another suite's reading of it.
jobs=${GW_TEST_JOBS:-$(nproc 2>/dev/null || echo 2)}
outd=$(mktemp -d "${TMPDIR:-/tmp}/gw-tests-XXXXXX")
trap 'rm -rf "$outd"' EXIT
alone=" docs install "
start_suite() { # index, command...: its output, exit status and seconds
  local i=$1; shift
  ( t0=$SECONDS; "$@" >"$outd/$i.out" 2>&1; echo $? >"$outd/$i.rc"; echo $((SECONDS - t0)) >"$outd/$i.s" ) &
}
names=(); cmds=()
for s in "${suites[@]}"; do
  name=${s%%|*}
  wanted "$name" || continue
  names+=("$name"); cmds+=("${s#*|}")
done
# Four suites read what the report makes of every bundled recording (golden
# and schema its JSON, html its page, outputs its timeline): each recording
# is analysed once for all four (tests/render_fixtures.sh), in the background
# while the other suites run; those four start once it has ended.
rendered=" golden schema html outputs "
render_pid=
if [ -z "${GW_RENDERED:-}" ]; then
  for i in "${!names[@]}"; do
    case "$rendered" in *" ${names[$i]} "*)
      case " ${GW_TEST_SKIP:-} " in *" ${names[$i]} "*) continue ;; esac
      ( t0=$SECONDS; tests/render_fixtures.sh "$outd/rendered" "$jobs" >"$outd/rendered.log" 2>&1
        echo $((SECONDS - t0)) >"$outd/rendered.s" ) &
      render_pid=$!
      export GW_RENDERED="$outd/rendered"
      break ;;
    esac
  done
fi
# The longest suites start first, so that no long one is left running
# alone at the end (their output still comes in the list's order); those
# that read the rendered recordings after the others.
long=" outputs html cli golden test_analysis schema diff "
order=()
for dep in 0 1; do
  for i in "${!names[@]}"; do
    case "$rendered" in *" ${names[$i]} "*) [ $dep -eq 1 ] || continue ;; *) [ $dep -eq 0 ] || continue ;; esac
    case "$long" in *" ${names[$i]} "*) order+=("$i") ;; esac
  done
  for i in "${!names[@]}"; do
    case "$rendered" in *" ${names[$i]} "*) [ $dep -eq 1 ] || continue ;; *) [ $dep -eq 0 ] || continue ;; esac
    case "$long" in *" ${names[$i]} "*) ;; *) order+=("$i") ;; esac
  done
done
for pass_no in 1 2; do
  for i in "${order[@]}"; do
    name=${names[$i]}
    read -r -a cmd <<< "${cmds[$i]}"
    case "$alone" in *" $name "*) [ $pass_no -eq 2 ] || continue ;; *) [ $pass_no -eq 1 ] || continue ;; esac
    case " ${GW_TEST_SKIP:-} " in *" $name "*)
      echo "0 passed, 0 failed, 1 skipped" >"$outd/$i.out"; echo "skip: left out of this pass (GW_TEST_SKIP)" >>"$outd/$i.out"
      echo 0 >"$outd/$i.rc"; echo 0 >"$outd/$i.s"; continue ;;
    esac
    if [ "$name" = pystack-verify ] && ! command -v python3 >/dev/null; then
      echo "0 passed, 0 failed, 1 skipped" >"$outd/$i.out"; echo "skip: no python3" >>"$outd/$i.out"
      echo 0 >"$outd/$i.rc"; echo 0 >"$outd/$i.s"; continue
    fi
    if [ ! -e "${cmd[0]}" ]; then
      echo "${cmd[0]} does not exist" >"$outd/$i.out"; echo 1 >"$outd/$i.rc"; echo 0 >"$outd/$i.s"; continue
    fi
    if [ $pass_no -eq 2 ]; then
      t0=$SECONDS; "${cmd[@]}" >"$outd/$i.out" 2>&1; echo $? >"$outd/$i.rc"; echo $((SECONDS - t0)) >"$outd/$i.s"
      continue
    fi
    case "$rendered" in *" $name "*)
      if [ -n "$render_pid" ]; then
        wait "$render_pid"
        render_pid=
      fi ;;
    esac
    while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n 2>/dev/null || true; done
    start_suite "$i" "${cmd[@]}"
  done
  wait
done
[ -s "$outd/rendered.s" ] &&
  echo "(every bundled recording rendered once for golden, schema, html and outputs, $(cat "$outd/rendered.s") s)"
for i in "${!names[@]}"; do
  report_suite "${names[$i]}" "$outd/$i.out" "$(cat "$outd/$i.rc" 2>/dev/null || echo 1)" \
    "$(cat "$outd/$i.s" 2>/dev/null || echo '?')"
done
echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
