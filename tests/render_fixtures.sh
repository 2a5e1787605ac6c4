#!/usr/bin/env bash
# Renders every bundled recording once, for the suites that read what the
# report makes of each (golden and schema its JSON, html its page, outputs
# its timeline): one `gpuwhy report --json=F --html F --trace F` a recording,
# side by side, one analysis where each suite used to make its own. The
# timeline, tens of MB a job, is checked here by tests/cli/trace_check.py and
# deleted; its verdict stays as a line. Timelines are made of the suite's
# recordings and of every eighth corpus job (n % 8 == 1, n its number among
# the corpus's jobs in order, from 1); the Python check reads the suite's and
# every sixteenth corpus job's (n % 16 == 1: its parse of tens of MB of JSON a
# job was 40% of this script's CPU time at every eighth), and of the others
# it keeps the writer's exit status.
# tests/run-tests.sh runs this before the suites and passes DIR on as
# GW_RENDERED; a suite run alone (make test T=golden) renders what it needs
# itself. Under the sanitizers
# (GW_SANITIZED=1) it makes what those suites check there: the JSON of the
# suite's recordings and of every sixteenth corpus job (n % 16 == 3; no
# further recording), and the timelines of the suite's recordings and of
# every thirty-second corpus job (n % 32 == 3), written but not checked by
# Python.
#
#   tests/render_fixtures.sh DIR [JOBS]
#
# For each recording tests/fixtures/REL.gwr it writes DIR/REL.json (the
# report's JSON, absent where it made none), and for a job's first recording
# (not NAME.rN or NAME.6s, the same job recorded again) DIR/REL.html,
# DIR/REL.gpu (its first GPU record, the page's check reads it), DIR/REL.rc
# (the report's exit status), DIR/REL.err (its messages) and, where its
# timeline is made, DIR/REL.trace ("ok NAME" or "FAIL trace of NAME: why").
set -u
cd "$(dirname "$0")/.."
dir=${1:?usage: tests/render_fixtures.sh DIR [JOBS]}
jobs=${2:-$(nproc 2>/dev/null || echo 2)}
gw=${GPUWHY:-$PWD/gpuwhy}
root=$PWD
mkdir -p "$dir/corpus"

written_verdict() { # OUT NAME: a timeline written but not checked by Python: the report's exit status and a file
  if [ "$(cat "$1.rc")" = 0 ] && [ -s "$1.trace.json" ]; then
    echo "ok $2" >"$1.trace"
  else
    echo "FAIL trace of $2: $(tail -5 "$1.err" | tr '\n' ' ')" >"$1.trace"
  fi
  rm -f "$1.trace.json"
}

render_one() { # recording path under tests/fixtures [its number among the corpus's jobs, from 1]
  local f=$1 n=${2:-} rel b m s e p out
  rel=${f#tests/fixtures/}; rel=${rel%.gwr}; b=$(basename "$rel")
  out="$dir/$rel"
  if [ "${GW_SANITIZED:-}" = 1 ]; then
    # the sanitizers' share: the suite's recordings and every sixteenth corpus
    # job (n % 16 == 3 by their order, none the plain build's timeline check
    # takes), their JSON for golden and their timelines for outputs, written
    # under the sanitizers (the Python check runs in the plain build). REL.rc
    # marks what was made: golden checks those and leaves the rest to the
    # plain build.
    case $b in *.r[0-9]|*.6s) return ;; esac
    if [ -n "$n" ] && [ $((n % 16)) -ne 3 ]; then return; fi
    local trace=(--trace "$out.trace.json")
    [ -n "$n" ] && [ $((n % 32)) -ne 3 ] && trace=()
    "$gw" report --json="$out.json" "${trace[@]}" "$f" >/dev/null 2>"$out.err"
    echo $? >"$out.rc"
    [ ${#trace[@]} -gt 0 ] || return
    written_verdict "$out" "$b"
    return
  fi
  case $b in
    *.r[0-9]|*.6s) # golden's checks of repeated and longer recordings read these too
      "$gw" report --json="$out.json" "$f" >/dev/null 2>&1
      return ;;
  esac
  # the timelines of seven corpus jobs in eight are left out, and the Python
  # check of every second one made: the check of one (tens of MB of JSON)
  # costs three reports, and the writer runs the same code over the suite's
  # recordings and the rest
  local trace=(--trace "$out.trace.json")
  [ -n "$n" ] && [ $((n % 8)) -ne 1 ] && trace=()
  "$gw" report --json="$out.json" --html "$out.html" "${trace[@]}" "$f" >/dev/null 2>"$out.err"
  echo $? >"$out.rc"
  "$gw" dump --type gpu "$f" 2>/dev/null | head -1 >"$out.gpu"
  [ ${#trace[@]} -gt 0 ] || return
  if [ -n "$n" ] && [ $((n % 16)) -ne 1 ]; then
    written_verdict "$out" "$b"
    return
  fi
  m=$("$gw" dump --type meta "$f" 2>/dev/null)
  s=$(printf '%s\n' "$m" | sed -n 's/.* record\.start_ns=//p' | head -1)
  e=$(printf '%s\n' "$m" | sed -n 's/.* record\.end_ns=//p' | head -1)
  p=$("$gw" dump --type process "$f" 2>/dev/null | sed -n 's/.* pid=\([0-9]*\) .*/\1/p' | sort -u | paste -sd, -)
  if python3 "$root/tests/cli/trace_check.py" "$out.trace.json" "${s:-0}" "${e:-0}" "$p" >"$out.trace.out" 2>&1; then
    echo "ok $b" >"$out.trace"
  else
    echo "FAIL trace of $b: $(tail -5 "$out.trace.out" | tr '\n' ' ')" >"$out.trace"
  fi
  rm -f "$out.trace.json" "$out.trace.out"
}
export -f render_one written_verdict
export gw dir root
{ ls tests/fixtures/*.gwr | sed 's/$/\t/'
  ls tests/fixtures/corpus/*.gwr | grep -Ev '\.(r[0-9]|6s)\.gwr$' | awk '{print $0 "\t" NR}'
  ls tests/fixtures/corpus/*.gwr | grep -E '\.(r[0-9]|6s)\.gwr$' | sed 's/$/\t/'; } |
  xargs -P "$jobs" -d '\n' -I{} bash -c 'IFS=$(printf "\t") read -r f n <<<"$1"; render_one "$f" "$n"' _ {}
