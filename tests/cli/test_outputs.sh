#!/usr/bin/env bash
# What gpuwhy writes: output files never destroy what gpuwhy did not create,
# write errors are never silent, text from a recording cannot drive the
# terminal, JSON is always valid, the timeline (--trace) is exact and valid
# on every fixture, and --fail-on gates. Prints "N passed, N failed".
set -u
cd "$(dirname "$0")/../.."
root=$PWD
gw=${GPUWHY:-$PWD/gpuwhy}
fx=$PWD/tests/fixtures
tmp=$(mktemp -d /tmp/gw-out-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
. tests/cli/lib.sh
hasnt() { # file, pattern, description
  if grep -q -- "$2" "$1"; then ko "$3: '$2' in $(head -c 300 "$1")"; else ok; fi
}
gpu=$fx/cuda_c_target.gwr
cd "$tmp"
"$gw" record -q -o cpu.gwr -- sh -c 'exit 0' || ko "a CPU-only recording"

# --trace never destroys a file: an existing one, an input, a device
echo keep > k.json
expect_rc 1 "--trace over an existing file, no GPU timeline: refused before the work" "$gw" report --trace k.json cpu.gwr
[ "$(cat k.json)" = keep ] && ok || ko "--trace without a timeline removed or truncated k.json"
expect_rc 1 "--trace over an existing file" "$gw" report --trace k.json "$gpu"
[ "$(cat k.json)" = keep ] && ok || ko "--trace overwrote k.json"
has "$tmp/err" "does not overwrite" "--trace over a file says why"
cp "$gpu" in.gwr
expect_rc 1 "--trace onto the recording it reads" "$gw" report --trace in.gwr in.gwr
cmp -s in.gwr "$gpu" && ok || ko "--trace F.gwr F.gwr overwrote the recording"
expect_rc 1 "--json=FILE onto the recording it reads" "$gw" report --json=in.gwr in.gwr
cmp -s in.gwr "$gpu" && ok || ko "--json=F.gwr F.gwr overwrote the recording"
if [ "$(id -u)" = 0 ] && mknod nulldev c 1 3 2>/dev/null; then
  # a private /dev/null: the old code unlinked the device it was given
  expect_rc 0 "--trace into a device, no timeline" "$gw" report --trace nulldev cpu.gwr
  [ -c nulldev ] && ok || ko "--trace removed a device node"
  expect_rc 0 "--trace into a device" "$gw" report --trace nulldev "$gpu"
  [ -c nulldev ] && ok || ko "--trace replaced a device node"
fi
expect_rc 0 "--trace -" "$gw" report --trace - "$gpu"
python3 -c 'import json,sys; json.load(open(sys.argv[1]))["traceEvents"]' "$tmp/out" && ok || ko "--trace - wrote no trace on stdout"
has "$tmp/err" "gpuwhy report" "--trace -: the report goes to stderr"
[ ! -e - ] && ok || ko "--trace - created a file named '-'"
expect_rc 0 "--trace NAME.gz" "$gw" report --trace tl.json.gz "$gpu"
gzip -dc tl.json.gz | python3 -c 'import json,sys; json.load(sys.stdin)["traceEvents"]' && ok || ko "--trace .gz is not gzip'd JSON"
expect_rc 2 "--trace - with --json on stdout" "$gw" report --json --trace - "$gpu"

# write errors are never silent (exit 1, a message)
if [ -w /dev/full ]; then
  "$gw" report "$gpu" >/dev/full 2>err.txt; rc=$?
  [ $rc -eq 1 ] && ok || ko "report >/dev/full: exit $rc"
  has err.txt "write error" "report >/dev/full says so"
  "$gw" report --json "$gpu" >/dev/full 2>err.txt; rc=$?
  [ $rc -eq 1 ] && ok || ko "report --json >/dev/full: exit $rc"
  "$gw" dump "$gpu" >/dev/full 2>err.txt; rc=$?
  [ $rc -eq 1 ] && ok || ko "dump >/dev/full: exit $rc"
  "$gw" dump --json "$gpu" >/dev/full 2>err.txt; rc=$?
  [ $rc -eq 1 ] && ok || ko "dump --json >/dev/full: exit $rc"
  "$gw" check --no-bandwidth >/dev/full 2>err.txt; rc=$?
  [ $rc -eq 1 ] && ok || ko "check >/dev/full: exit $rc"
  "$gw" check --json --no-bandwidth >/dev/full 2>err.txt; rc=$?
  [ $rc -eq 1 ] && ok || ko "check --json >/dev/full: exit $rc"
  "$gw" --help >/dev/full 2>err.txt; rc=$?
  [ $rc -eq 1 ] && ok || ko "--help >/dev/full: exit $rc"
  "$gw" report --trace /dev/full "$gpu" >/dev/null 2>err.txt; rc=$?
  [ $rc -eq 1 ] && ok || ko "--trace /dev/full: exit $rc"
  hasnt err.txt "timeline written" "--trace /dev/full claims success"
  "$gw" report --json=/dev/full "$gpu" >/dev/null 2>err.txt; rc=$?
  [ $rc -eq 1 ] && ok || ko "--json=/dev/full: exit $rc"
  "$gw" run --json=/dev/full -o run1.gwr -- sh -c 'exit 0' >/dev/null 2>err.txt; rc=$?
  [ $rc -eq 1 ] && ok || ko "run --json=/dev/full: exit $rc"
fi
expect_rc 1 "--trace into a missing folder" "$gw" report --trace /nonexistent/x.json "$gpu"
has "$tmp/err" "/nonexistent/x.json" "--trace into a missing folder names it"

# report --json out.json REC: the JSON's name is not read as a recording
expect_rc 2 "report --json out.json REC" "$gw" report --json out.json "$gpu"
has "$tmp/err" "--json=out.json" "report --json out.json says to write --json=out.json"
[ ! -e out.json ] && ok || ko "report --json out.json wrote out.json"
# ... nor when out.json exists already (not a recording)
echo '{}' > out2.json
expect_rc 2 "report --json out2.json REC, out2.json existing" "$gw" report --json out2.json "$gpu"
has "$tmp/err" "--json=out2.json" "an existing out2.json: the hint still comes"
# run --json=- and run --trace -: stdout is theirs too
"$gw" run --json=- -o runjd.gwr -- sh -c 'echo job-line' >runj4.out 2>runj4.err
python3 -c 'import json,sys; sys.exit(json.load(open("runj4.out"))["schema"] != "gpuwhy.report/1")' && ok ||
  ko "run --json=-: stdout is not the JSON report alone ($(head -c 200 runj4.out))"
"$gw" run --trace - -o runtd.gwr -- sh -c 'echo job-line' >runt5.out 2>runt5.err
if grep -q job-line runt5.out; then ko "run --trace -: the job's output is in the timeline's stdout"; else ok; fi
# run --json with stderr closed: the job's output goes nowhere, the JSON stays whole
"$gw" run --json -o runjc.gwr -- sh -c 'echo job-line' >runj6.out 2>&-
python3 -c 'import json,sys; sys.exit(json.load(open("runj6.out"))["schema"] != "gpuwhy.report/1")' && ok ||
  ko "run --json, stderr closed: stdout is not the JSON report alone ($(head -c 200 runj6.out))"
# run --json: stdout holds the JSON alone, the job's own output on stderr
"$gw" run --json -o run3.gwr -- sh -c 'echo job-line' >runj.out 2>runj.err; rc=$?
[ $rc -eq 0 ] && ok || ko "run --json: exit $rc"
python3 -c 'import json,sys; sys.exit(json.load(open("runj.out"))["schema"] != "gpuwhy.report/1")' && ok ||
  ko "run --json: stdout is not the JSON report alone ($(head -c 200 runj.out))"
grep -qx job-line runj.err && ok || ko "run --json: the job's output is not on stderr"
has runj.err "standard error" "run --json says where the job's output went"
# run --json=FILE: the report in a file, stdout the job's alone
"$gw" run -q --json=rep.json -o run2.gwr -- sh -c 'echo job-output' >run.out 2>run.err; rc=$?
[ $rc -eq 0 ] && ok || ko "run --json=FILE: exit $rc"
[ "$(cat run.out)" = job-output ] && ok || ko "run --json=FILE: stdout holds more than the job's ($(head -c 200 run.out))"
python3 -c 'import json,sys; sys.exit(json.load(open("rep.json"))["schema"] != "gpuwhy.report/1")' && ok || ko "run --json=FILE: no JSON report in the file"
echo keep > taken.json
expect_rc 2 "run --json=FILE over an existing file: refused before the job" "$gw" run --json=taken.json -o run3.gwr -- sh -c 'touch ran'
[ ! -e ran ] && [ "$(cat taken.json)" = keep ] && ok || ko "run --json=existing ran the job or overwrote the file"
expect_rc 2 "run --json FILE (the file as the command)" "$gw" run --json out.json -- true

# run --html FILE: the page as well as the terminal report after the job's output
"$gw" run -q --html run4.html -o run4.gwr -- sh -c 'echo job-output' >run4.out 2>run4.err; rc=$?
[ $rc -eq 0 ] && ok || ko "run --html FILE: exit $rc"
[ "$(head -1 run4.out)" = job-output ] && grep -q "^gpuwhy report: run4.gwr" run4.out && ok ||
  ko "run --html FILE: the job's output, then the report ($(head -c 200 run4.out))"
grep -q "</html>" run4.html && grep -q "sh -c" run4.html && ok || ko "run --html FILE: no page of the job ($(head -c 200 run4.html))"
expect_rc 2 "run --html over an existing file: refused before the job" "$gw" run --html taken.json -o run5.gwr -- sh -c 'touch ran5'
[ ! -e ran5 ] && [ "$(cat taken.json)" = keep ] && ok || ko "run --html existing ran the job or overwrote the file"
expect_rc 2 "run --html - (stdout is the job's)" "$gw" run --html - -o run6.gwr -- true
expect_rc 2 "run --json=X --html X: one name for two outputs, refused before the job" "$gw" run --json=same.out --html same.out -o run8.gwr -- sh -c 'touch ran8'
[ ! -e ran8 ] && [ ! -e same.out ] && ok || ko "run with one name for two outputs ran the job or wrote the file"
expect_rc 2 "record --html (a run option)" "$gw" record --html x.html -o run7.gwr -- true

# report outputs hold the command line and the working directory: mode 0600
# as recordings are, whatever the umask
mode_is() { # file, description
  local m; m=$(stat -c %a "$1" 2>/dev/null)
  [ "$m" = 600 ] && ok || ko "$2: mode ${m:-missing}, want 600"
}
c1=$fx/c1_data_loading.gwr c1f=$fx/c1_data_loading.fix.gwr
(umask 022
 "$gw" report --html m.html --json=m.json --trace m.trace.json "$gpu" >/dev/null 2>&1
 "$gw" report --trace m.trace.json.gz "$gpu" >/dev/null 2>&1
 "$gw" diff --html m-diff.html --json=m-diff.json "$c1" "$c1f" >/dev/null 2>&1
 "$gw" run -q --json=m-run.json --html m-run.html --trace m-run.trace -o m-run.gwr -- true >/dev/null 2>&1)
for f in m.html m.json m.trace.json m.trace.json.gz m-diff.html m-diff.json m-run.json m-run.html; do
  mode_is "$f" "$f"
done

# a full disk: the error says so (it said "Input/output error"), exit 1,
# nothing under the name, and a file --force would replace is kept whole
if [ -n "${FAILWRITE:-}" ] && [ -f "$FAILWRITE" ]; then
  pre=$FAILWRITE
  asan=$(ldd "$gw" 2>/dev/null | awk '/libasan/ {print $3}')
  [ -n "$asan" ] && pre="$asan $FAILWRITE"
  mkdir -p fulldisk
  full() { LD_PRELOAD=$pre GW_FAIL_PATH=/fulldisk/ GW_FAIL_AFTER=1000 "$@"; }
  for args in "report --html fulldisk/x.html $gpu" "report --trace fulldisk/t.json $gpu" \
              "report --trace fulldisk/t.json.gz $gpu" "report --json=fulldisk/r.json $gpu" \
              "diff --html fulldisk/d.html $c1 $c1f" "diff --json=fulldisk/d.json $c1 $c1f"; do
    read -r -a a <<< "$args"
    full "$gw" "${a[@]}" >/dev/null 2>nospc.err; rc=$?
    [ $rc -eq 1 ] && ok || ko "$args on a full disk: exit $rc, want 1"
    has nospc.err "no space left on the device" "$args on a full disk names the cause"
    hasnt nospc.err "Input/output error" "$args on a full disk"
  done
  [ -z "$(ls -A fulldisk)" ] && ok || ko "a full disk left files behind: $(ls -A fulldisk)"
  "$gw" report --trace fulldisk/keep.json "$gpu" >/dev/null 2>&1
  cp fulldisk/keep.json keep.orig
  full "$gw" report --force --trace fulldisk/keep.json "$gpu" >/dev/null 2>nospc.err; rc=$?
  [ $rc -eq 1 ] && cmp -s fulldisk/keep.json keep.orig && ok ||
    ko "--force on a full disk: exit $rc, the old file changed or lost"
  [ "$(ls -A fulldisk)" = keep.json ] && ok || ko "--force on a full disk left $(ls -A fulldisk)"
fi

# --force: outputs replaced whole (a new file, the old one until then),
# never through a symbolic link, onto a recording read, or a folder
"$gw" report --trace f.json "$gpu" >/dev/null 2>&1
expect_rc 1 "a second --trace f.json without --force" "$gw" report --trace f.json "$gpu"
has "$tmp/err" "add --force" "the refusal names --force"
echo old > f.json; ino=$(stat -c %i f.json)
expect_rc 0 "report --force --trace over a file" "$gw" report --force --trace f.json "$gpu"
python3 -c 'import json,sys; json.load(open("f.json"))["traceEvents"]' && [ "$(stat -c %i f.json)" != "$ino" ] && ok ||
  ko "--force --trace: f.json not replaced by a new trace"
mode_is f.json "a file replaced by --force"
echo old > f.html
expect_rc 0 "report --force --html --json=" "$gw" report --force --html f.html --json=f.rep.json "$gpu"
grep -q "</html>" f.html && ok || ko "--force --html did not replace the page"
echo target > tgt.json; ln -s tgt.json link.json
expect_rc 1 "--force --trace onto a symbolic link" "$gw" report --force --trace link.json "$gpu"
has "$tmp/err" "symbolic link" "--force onto a link says why"
[ "$(cat tgt.json)" = target ] && [ -L link.json ] && ok || ko "--force wrote through or replaced a symbolic link"
ln -s nowhere.json dangling.json
expect_rc 1 "--force --html onto a dangling link" "$gw" report --force --html dangling.json "$gpu"
[ ! -e nowhere.json ] && ok || ko "--force created a dangling link's target"
cp "$gpu" in2.gwr; ln in2.gwr in2-hard.gwr
expect_rc 1 "--force --json= onto the recording read" "$gw" report --force --json=in2.gwr in2.gwr
expect_rc 1 "--force --trace onto a hard link of the recording read" "$gw" report --force --trace in2-hard.gwr in2.gwr
cmp -s in2.gwr "$gpu" && ok || ko "--force overwrote the recording it read"
mkdir -p adir
expect_rc 1 "--force --trace onto a folder" "$gw" report --force --trace adir "$gpu"
# a recording is never replaced by an output, whatever its name and --force
# (`report --force --html old.gwr` reports the newest recording: old.gwr is
# the page's name)
cp "$gpu" other.gwr
expect_rc 1 "--force --html onto another recording" "$gw" report --force --html other.gwr cpu.gwr
cmp -s other.gwr "$gpu" && ok || ko "report --force --html replaced another recording"
has "$tmp/err" "is a gpuwhy recording" "the refusal says it is a recording"
has "$tmp/err" "nothing was written" "the refusal says nothing was written"
expect_rc 1 "--force --trace onto another recording" "$gw" report --force --trace other.gwr "$gpu"
expect_rc 1 "--force --json= onto another recording" "$gw" report --force --json=other.gwr "$gpu"
expect_rc 1 "diff --force --html onto a recording not compared" "$gw" diff --force --html other.gwr "$c1" "$c1f"
expect_rc 2 "run --force --json= onto a recording: refused before the job" "$gw" run -q --force --json=other.gwr -o orun.gwr -- sh -c 'touch ran-rec'
[ ! -e ran-rec ] && ok || ko "run ran its job with an output named onto a recording"
cmp -s other.gwr "$gpu" && ok || ko "an output replaced another recording"
expect_rc 2 "report: one name for two outputs" "$gw" report --force --json=two.out --html two.out "$gpu"
"$gw" diff --html fd.html "$c1" "$c1f" >/dev/null 2>&1
expect_rc 1 "a second diff --html without --force" "$gw" diff --html fd.html "$c1" "$c1f"
echo old > fd.html
expect_rc 0 "diff --force --html" "$gw" diff --force --html fd.html --json=fd.json "$c1" "$c1f"
grep -q "</html>" fd.html && ok || ko "diff --force did not replace the page"
expect_rc 1 "diff --force --json= onto a recording compared" "$gw" diff --force --json=in2.gwr in2.gwr "$c1f"
cmp -s in2.gwr "$gpu" && ok || ko "diff --force overwrote a recording compared"
echo old > frun.json
expect_rc 0 "run --force --json= over a file" "$gw" run -q --force --json=frun.json -o frun.gwr -- true
python3 -c 'import json,sys; sys.exit(json.load(open("frun.json"))["schema"] != "gpuwhy.report/1")' && ok ||
  ko "run --force --json=: the file is not the new report"
expect_rc 2 "run --force --html onto a link: refused before the job" "$gw" run --force --html link.json -o frun2.gwr -- sh -c 'touch ranf'
[ ! -e ranf ] && [ "$(cat tgt.json)" = target ] && ok || ko "run --force onto a link ran the job or wrote through it"
echo keep > frec.gwr
expect_rc 2 "record --force (recordings are never replaced)" "$gw" record --force -o frec.gwr -- true
[ "$(cat frec.gwr)" = keep ] && ok || ko "record --force touched the file"

# a file option's value must be a file name: '--', an option, or empty is
# refused with exit 2 and nothing is written (it wrote a file named '--')
for args in "report --html -- $gpu" "report --trace --json $gpu" "report --json=--x $gpu" \
            "report --trace= $gpu" "diff --html -- $c1 $c1f" "run --html -- true" \
            "run -o --json -- true" "check --data --json" "record -o - -- true" "check --data -"; do
  read -r -a a <<< "$args"
  expect_rc 2 "$args" "$gw" "${a[@]}"
  has "$tmp/err" "needs a file name" "$args says a file name is wanted"
done
[ ! -e -- ] && [ ! -e --json ] && [ ! -e --x ] && ok || ko "an option taken for a file name was written: $(ls -d -- -* 2>/dev/null)"
expect_rc 0 "a file named like an option, given as ./NAME" "$gw" report --trace ./--t.json "$gpu"
[ -f ./--t.json ] && ok || ko "--trace ./--t.json wrote no file"

# option errors: gpuwhy's own one line, the option escaped
"$gw" report "--$(printf '\033')]0;owned$(printf '\007')" "$gpu" >/dev/null 2>opt.err; rc=$?
[ $rc -eq 2 ] && ok || ko "an unknown option with escapes: exit $rc"
has opt.err "^gpuwhy: error: unrecognized option '--\\\\x1b]0;owned\\\\x07'" "an unknown option is named, escaped"
python3 -c 'import sys; b=open(sys.argv[1],"rb").read(); sys.exit(any(c < 32 and c != 10 or c == 127 for c in b))' opt.err && ok ||
  ko "an unknown option's bytes reach the terminal raw"
expect_rc 2 "an ambiguous option" "$gw" report --f high "$gpu"
has "$tmp/err" "ambiguous: it could be --fail-on, --force" "an ambiguous option lists the candidates"
expect_rc 2 "an option without its value" "$gw" report "$gpu" --html
has "$tmp/err" "^gpuwhy: error: option '--html' needs a file name" "a missing value is named"
expect_rc 2 "a value for an option that takes none" "$gw" report --verbose=3 "$gpu"
has "$tmp/err" "option '--verbose' takes no value" "a value where none is taken"
expect_rc 2 "an unknown short option" "$gw" record -qz -- true
has "$tmp/err" "unrecognized option '-z'" "an unknown short option is named"
expect_rc 0 "--col: one option under two spellings is no ambiguity" "$gw" report --col never "$gpu"

# dump --type: an empty list or name selects nothing; refused, the types listed
for t in "" "kernel," ",kernel" "kernel,,meta"; do
  expect_rc 2 "dump --type '$t'" "$gw" dump --type "$t" "$gpu"
  has "$tmp/err" "kernel memcpy" "dump --type '$t' lists the types"
done

# a file name's newline or escape cannot forge a line in a message or a header
nl=$(printf 'a\nforged: b.gwr')
expect_rc 1 "a missing file with a newline in its name" "$gw" report "$nl"
[ "$(wc -l < "$tmp/err")" -eq 1 ] && has "$tmp/err" 'a\\nforged: b.gwr' "the newline is shown escaped" ||
  ko "a newline in a file name split the error ($(cat "$tmp/err"))"
cp "$gpu" "$nl"
"$gw" report "$nl" >nl.out 2>&1
head -1 nl.out | grep -qF 'gpuwhy report: a\nforged: b.gwr' && ! grep -q '^forged' nl.out && ok ||
  ko "the report's header carries the file name's newline ($(head -2 nl.out))"
"$gw" diff "$nl" "$gpu" >nld.out 2>&1
! grep -q '^forged' nld.out && grep -qF 'a\nforged: b.gwr' nld.out && ok || ko "diff's header carries the file name's newline"
head -c 20000 "$c1" > "$nl.cut.gwr"
"$gw" dump "$nl.cut.gwr" >/dev/null 2>nlw.err
grep -qF 'gpuwhy: warning: a\nforged: b.gwr.cut.gwr: the recording is cut short' nlw.err && ! grep -q '^forged' nlw.err &&
  ok || ko "a warning carries the file name's newline ($(head -c 300 nlw.err))"
"$gw" report --trace "$(printf 'x\033[2Jy')/t.json" "$gpu" >/dev/null 2>esc.err
has esc.err 'x\\x1b\[2Jy/t.json' "an output path's escape is shown escaped"

# --fail-on: a CI gate with its own exit status
expect_rc 4 "--fail-on warning with findings" "$gw" report --fail-on warning "$fx/case_study.gwr"
expect_rc 4 "--fail-on high with a high finding" "$gw" report --fail-on high "$fx/case_study.gwr"
expect_rc 0 "--fail-on high on a healthy run" "$gw" report --fail-on high "$fx/healthy.gwr"
expect_rc 0 "no --fail-on: exit 0 with findings" "$gw" report "$fx/case_study.gwr"
expect_rc 2 "--fail-on junk" "$gw" report --fail-on junk "$gpu"
expect_rc 4 "--fail-on with --json" "$gw" report --json --fail-on warning "$fx/case_study.gwr"
expect_rc 4 "--fail-on critical with a critical finding" "$gw" report --fail-on critical "$fx/case_study.gwr"
expect_rc 0 "--fail-on critical with warnings alone (c15)" "$gw" report --fail-on critical "$fx/c15_ddp_straggler.gwr"
expect_rc 0 "--fail-on high (critical's old name) with warnings alone" "$gw" report --fail-on high "$fx/c15_ddp_straggler.gwr"
expect_rc 4 "--fail-on warning with warnings alone" "$gw" report --fail-on warning "$fx/c15_ddp_straggler.gwr"
expect_rc 0 "run --fail-on critical, a job with no GPU work" "$gw" run --fail-on critical -o fo.gwr -- sh -c 'exit 0'
expect_rc 2 "run --fail-on junk" "$gw" run --fail-on junk -o fo2.gwr -- sh -c 'exit 0'
has "$tmp/err" "wants warning or critical" "--fail-on junk says what it wants"

# --fixes: the combined line replays the fixes a user names, whatever their level
"$gw" report --fixes C1,C4 "$fx/case_study.gwr" >fx.txt 2>&1
has fx.txt "^Fixing C1 and C4 (--fixes): about 2\.[0-9][0-9]x faster overall" "--fixes names its findings in the combined line"
"$gw" report --json --fixes C4,C1 "$fx/case_study.gwr" 2>/dev/null | python3 -c '
import json, sys
d = json.load(sys.stdin)
sys.exit(not (d["combined_of"] == ["C1", "C4"] and d["combined_chosen"] and d["combined_speedup"] > 1))' &&
	ok || ko "JSON combined_of and combined_chosen under --fixes"
"$gw" report --json "$fx/case_study.gwr" 2>/dev/null | python3 -c '
import json, sys
d = json.load(sys.stdin)
warned = [f["cause"] for f in d["findings"] if f["severity"] in ("warning", "high")]
sys.exit(not (d["combined_of"] == warned and not d["combined_chosen"]))' &&
	ok || ko "JSON combined_of is the findings at warning and above by default"
# one chosen fix: its finding's own figures, range included
"$gw" report --json --fixes C14 "$fx/case_study.gwr" 2>/dev/null | python3 -c '
import json, sys
d = json.load(sys.stdin)
f = next(x for x in d["findings"] if x["cause"] == "C14")
sys.exit(not (d["combined_speedup"] == f["speedup"] and d["combined_speedup_range"] == f["speedup_range"]))' &&
	ok || ko "--fixes of one finding gives its own speed-up and range"
expect_rc 2 "--fixes of a cause the report lacks" "$gw" report --fixes C7 "$fx/case_study.gwr"
has "$tmp/err" "--fixes C7: no finding of this report" "--fixes C7 says the report has no such finding"
has "$tmp/err" "C1, C14, C4, C8" "--fixes C7 lists the report's findings"
expect_rc 2 "--fixes junk" "$gw" report --fixes c1 "$fx/case_study.gwr"
has "$tmp/err" "comma-separated (C1,C14)" "--fixes junk says what it wants"
expect_rc 2 "--fixes with a trailing comma" "$gw" report --fixes C1, "$fx/case_study.gwr"
expect_rc 2 "--fixes on a job's ranks" "$gw" report --fixes C1 "$fx/ranks/n2-ckpt"
has "$tmp/err" "add --rank N" "--fixes on a job says to name a rank"
expect_rc 2 "--fixes on one file of a job's ranks" "$gw" report --fixes C1 "$fx/ranks/n2-ckpt-one.gwr"
has "$tmp/err" "holds a job's ranks, add --rank N" "--fixes on a file of ranks says to name a rank"
expect_rc 2 "--fixes empty" "$gw" report --fixes '' "$fx/case_study.gwr"
"$gw" report --html - --fixes C1,C4 "$fx/case_study.gwr" >fx.html 2>/dev/null
has fx.html "Fixing C1 and C4 (--fixes): about 2\.[0-9][0-9]x faster overall" "the HTML page names the fixes chosen"

# severities rank at a glance: [critical] / [warning] / [info], never the
# confidence's word "high"; the JSON keeps "high" and names the label
"$gw" report -v "$fx/case_study.gwr" >sev.txt 2>&1
has sev.txt "^ 1\. \[critical\] Data loading" "the top finding is [critical]"
"$gw" report -v "$fx/c15_ddp_straggler.gwr" >sev15.txt 2>&1
has sev15.txt "^ 1\. \[warning\] GPU 1 is a straggler" "a warning stays [warning]"
# CUDA_LAUNCH_BLOCKING: the launch's hold on the host, said and in the JSON
LC_ALL=C.UTF-8 "$gw" report -v "$fx/c5_launch_blocking.gwr" >hold.txt 2>&1
has hold.txt "Each blocking launch holds the host 1[0-9]\.[0-9] µs beyond its kernel's run" "-v says a blocking launch's hold"
"$gw" report --json "$fx/c5_launch_blocking.gwr" 2>/dev/null |
	python3 -c 'import json,sys; h=json.load(sys.stdin)["replay"]["blocking_launch_us"]; sys.exit(not (h and 8 < h < 16))' &&
	ok || ko "JSON replay.blocking_launch_us of c5_launch_blocking"
"$gw" report --json "$fx/case_study.gwr" 2>/dev/null |
	python3 -c 'import json,sys; sys.exit(json.load(sys.stdin)["replay"]["blocking_launch_us"] is not None)' &&
	ok || ko "JSON replay.blocking_launch_us is null without CUDA_LAUNCH_BLOCKING"
"$gw" report -v "$fx/c14_validation.gwr" >sev14.txt 2>&1
has sev14.txt "^ *[0-9]*\. \[info\] " "-v shows [info] findings"
hasnt sev.txt "\[high\]" "no finding is marked [high]"
"$gw" report --json "$fx/case_study.gwr" | python3 -c '
import json, sys
d = json.load(sys.stdin)
lab = {"info": "info", "warning": "warning", "high": "critical"}
f = [x for x in d["findings"] if x["assessed"]]
assert f and all(x["severity_label"] == lab[x["severity"]] for x in f), f' && ok ||
  ko "JSON: severity_label is not the printed word of severity"
"$gw" report --html sev.html "$fx/case_study.gwr" >/dev/null 2>&1
has sev.html 'class="sev high">critical<' "the HTML page marks a high finding critical"

# info findings that would save 5% of the run at their point estimate are
# counted without -v, the largest named; with -v they are listed instead
"$gw" report "$fx/case_study.gwr" >quiet.txt 2>&1
has quiet.txt "A less certain gain, under 5% of the run at the low end of its range" "a less certain gain counted without -v"
tr '\n' ' ' <quiet.txt | grep -q "between tiny kernels (22% of the run) (C4), about 1.26x" && ok ||
  ko "the less certain gain named: $(tail -5 quiet.txt)"
"$gw" report -v "$fx/case_study.gwr" >quiet-v.txt 2>&1
hasnt quiet-v.txt "A less certain gain" "-v lists the info findings instead of counting them"
has quiet-v.txt "Fixing all the findings at warning and above: about 2.42x" "-v: the combined line says it fixes the findings at warning and above"
"$gw" report "$fx/corpus/h_jax_transformer_jit.gwr" >quiet-h.txt 2>&1
hasnt quiet-h.txt "less certain gain" "a healthy job with no gain worth a line says none"
# a warning finding and a less certain one of a larger point estimate: no
# combined line of one finding under -v, and the note does not call it smaller
"$gw" report -v "$fx/corpus/w_torch_sleep_poll.gwr" >quiet-w.txt 2>&1
hasnt quiet-w.txt "Fixing all" "-v with one finding at warning: no combined line"

# durations: µs in a UTF-8 locale, us otherwise; JSON the same in both
LC_ALL=C.UTF-8 "$gw" report -v "$fx/case_study.gwr" >utf8.txt 2>&1
LC_ALL=C "$gw" report -v "$fx/case_study.gwr" >c.txt 2>&1
LC_ALL= LC_CTYPE= LANG=C.UTF-8 "$gw" report -v "$fx/case_study.gwr" >lang.txt 2>&1
has utf8.txt "860.7 µs per step" "UTF-8 locale: µs"
hasnt utf8.txt "[0-9] us\b" "UTF-8 locale: no 'us' left"
has lang.txt "860.7 µs per step" "LANG=C.UTF-8 alone: µs"
has c.txt "860.7 us per step" "C locale: us"
hasnt c.txt "µ" "C locale: no µ"
[ "$(sed 's/µs/us/g' utf8.txt)" = "$(cat c.txt)" ] && ok || ko "the UTF-8 report differs from the C one beyond µs"
LC_ALL=C.UTF-8 "$gw" report --json "$fx/case_study.gwr" >utf8.json 2>/dev/null
LC_ALL=C "$gw" report --json "$fx/case_study.gwr" >c.json 2>/dev/null
cmp -s utf8.json c.json && ok || ko "the JSON report depends on the locale"
LC_ALL=C.UTF-8 "$gw" diff "$fx/c1_data_loading.gwr" "$fx/c1_data_loading.fix.gwr" >d-utf8.txt 2>&1
has d-utf8.txt "632.8 µs" "diff in a UTF-8 locale: µs"

# a recording's text cannot drive the terminal, and JSON stays valid
"$gw" record -q -o esc.gwr -- sh -c 'exit 0' "$(printf '\033]0;owned\007\033[2J')" "$(printf 'a\nb\377\376\r')" ||
  ko "recording a command line with escapes"
"$gw" report --color=always esc.gwr >rep.txt 2>&1
python3 - rep.txt <<'PY' && ok || ko "escape sequences from a recording reach the terminal"
import re, sys
b = open(sys.argv[1], "rb").read()
# only the report's own colours: ESC [ digits m
rest = re.sub(rb"\x1b\[[0-9;]*m", b"", b)
assert not re.search(rb"[\x00-\x08\x0b-\x1f\x7f]", rest), rest[:300]
assert b"\\x1b]0;owned" in b
PY
"$gw" dump esc.gwr >dump.txt 2>&1
n=$("$gw" dump --json esc.gwr | wc -l); m=$(wc -l <dump.txt)
[ "$n" -eq "$m" ] && ok || ko "dump: a newline in a value broke one line per record ($m lines, $n records)"
python3 -c 'import sys; b=open(sys.argv[1],"rb").read(); sys.exit(any(c < 32 and c != 10 or c == 127 for c in b))' dump.txt && ok ||
  ko "dump's text output carries control characters"
"$gw" dump --json esc.gwr | python3 -c '
import json, sys
for line in sys.stdin.buffer:
    json.loads(line.decode("utf-8"))  # strict: invalid UTF-8 fails here' && ok || ko "dump --json is not valid UTF-8 JSON"
"$gw" report --json esc.gwr | python3 -c 'import json,sys; json.loads(sys.stdin.buffer.read().decode("utf-8"))' && ok ||
  ko "report --json of a recording with invalid UTF-8"

# dump: one key once; --type checked
"$gw" dump --json --type kernel,memcpy "$gpu" | python3 -c '
import json, sys
def once(pairs):
    keys = [k for k, _ in pairs]
    assert len(keys) == len(set(keys)), keys
    return dict(pairs)
n = sum(1 for l in sys.stdin if json.loads(l, object_pairs_hook=once))
assert n > 100, n' && ok || ko "dump --json writes a key twice in one object"
expect_rc 2 "dump --type bogus" "$gw" dump --type kernel,bogus "$gpu"
has "$tmp/err" "kernel memcpy" "dump --type bogus lists the types"

# a healthy verdict says what ran once after the steps (a checkpoint the
# recording ended in), in the terminal and the HTML report; a healthy run
# without one says nothing of it
"$gw" report "$fx/corpus/c14_torch_http_ckpt_upload.gwr" >tail-h.txt 2>&1
"$gw" report --html tail-h.html "$fx/corpus/c14_torch_http_ckpt_upload.gwr" >/dev/null 2>&1
"$gw" report "$fx/healthy.gwr" >tail-none.txt 2>&1
grep -A2 '^No significant bottleneck' tail-h.txt | tr -s ' \n' ' ' |
  grep -q 'After the last step the training thread serialized a checkpoint for 384.8 ms, seen once' &&
  grep -q 'No significant bottleneck</b>.*After the last step the training thread serialized a checkpoint' tail-h.html &&
  grep -q '^No significant bottleneck' tail-none.txt && ! grep -q 'After the last step' tail-none.txt && ok ||
  ko "healthy verdict with a checkpoint after the steps: $(grep -A2 '^No significant' tail-h.txt | tr -s ' \n' ' ')"

# the combined gain reads as a saving, not a step time
"$gw" report "$fx/case_study.gwr" >cs.txt 2>&1
grep -Eq 'faster overall \(([0-9.]+x-[0-9.]+x; )?saves [0-9.]+ ms of [0-9.]+ ms per step\)' cs.txt && ok ||
  ko "combined gain: $(grep Fixing cs.txt)"

# the timeline of every job: valid trace-event JSON, exact times inside the
# recording, no overlapping slices on a track (trace_check.py). Not of a
# job's further recordings (NAME.r2, NAME.r3, NAME.6s: the same job's
# timeline). The plain build writes the timelines of the suite's recordings
# and of every eighth corpus job (n % 8 == 1, n its number among the corpus's
# jobs in order), and checks in Python the suite's and every sixteenth corpus
# job's (n % 16 == 1: the Python check of tens of MB costs three reports, and
# the writer's code is the same for all); a sanitizer build (GW_SANITIZED=1) writes the suite's
# recordings' timelines and those of every thirty-second more (n % 32 == 3) under the
# sanitizers and runs the Python check on the suite's only (the same check;
# the golden suite runs the analysis under the same sanitizers).
check_one() { # recording [its number among the corpus's jobs, from 1]
  local f=$1 b m s e p
  b=$(basename "$f" .gwr)
  local made=${GW_RENDERED:+$GW_RENDERED/${f#"$fx"/}}
  made=${made%.gwr}
  if [ -n "$made" ] && [ -f "$made.trace" ]; then  # written and checked by tests/render_fixtures.sh
    cat "$made.trace"
    return
  fi
  if [ "${GW_SANITIZED:-}" != 1 ] && [ -n "${2:-}" ] && [ $(($2 % 8)) -ne 1 ]; then
    return   # left out: no line, not counted
  fi
  if [ -n "${2:-}" ] && { [ "${GW_SANITIZED:-}" = 1 ] || [ $(($2 % 16)) -ne 1 ]; }; then
    # written (under the sanitizers, every thirty-second more), its exit status checked
    [ "${GW_SANITIZED:-}" = 1 ] && [ $(($2 % 32)) -ne 3 ] && return   # left out: no line, not counted
    if "$gw" report --trace "$tmp/tr-$b.json" "$f" >/dev/null 2>"$tmp/tr-$b.err" && [ -s "$tmp/tr-$b.json" ]; then
      echo "ok $b"
    else
      echo "FAIL trace of $b: $(tail -5 "$tmp/tr-$b.err")"
    fi
    rm -f "$tmp/tr-$b.json"
    return
  fi
  m=$("$gw" dump --type meta "$f" 2>/dev/null)
  s=$(printf '%s\n' "$m" | sed -n 's/.* record\.start_ns=//p' | head -1)
  e=$(printf '%s\n' "$m" | sed -n 's/.* record\.end_ns=//p' | head -1)
  p=$("$gw" dump --type process "$f" 2>/dev/null | sed -n 's/.* pid=\([0-9]*\) .*/\1/p' | sort -u | paste -sd, -)
  "$gw" report --trace "$tmp/tr-$b.json" "$f" >/dev/null 2>"$tmp/tr-$b.err"
  if python3 "$root/tests/cli/trace_check.py" "$tmp/tr-$b.json" "${s:-0}" "${e:-0}" "$p" >"$tmp/tr-$b.out" 2>&1; then
    echo "ok $b"
  else
    echo "FAIL trace of $b: $(tail -5 "$tmp/tr-$b.out")"
  fi
  rm -f "$tmp/tr-$b.json"
}
export -f check_one
export gw tmp root fx
while read -r line; do
  case $line in ok\ *) ok ;; *) ko "$line" ;; esac
done < <({ ls "$fx"/*.gwr | sed 's/$/\t/'
           ls "$fx"/corpus/*.gwr | grep -Ev '\.(r[0-9]|6s)\.gwr$' | awk '{print $0 "\t" NR}'; } |
         xargs -P 2 -d '\n' -I{} bash -c 'IFS=$(printf "\t") read -r f n <<<"$1"; check_one "$f" "$n"' _ {})
# the two-GPU recording: its second GPU started before the first (an
# unsigned underflow once put a copy at ts = 1.84e16 us)
"$gw" report --trace two.json "$fx/c15_ddp_straggler.gwr" >/dev/null 2>&1
python3 - two.json <<'PY' && ok || ko "two-GPU trace: events of both GPUs, none far out"
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
x = [e for e in ev if e["ph"] == "X"]
assert {e["pid"] for e in x if e["cat"] in ("kernel", "memcpy")} == {1 << 22, (1 << 22) + 1}  # GPUs 0, 1
assert max(e["ts"] + e["dur"] for e in x) < 60e6  # a 19 s recording
c = [e for e in ev if e["ph"] == "C"]
assert {e["name"] for e in c} >= {"SM clock (MHz)", "power (W)"}, {e["name"] for e in c}
PY
# past the event limit: steps, idle intervals, copies stay; the shortest kernels go
GPUWHY_TRACE_LIMIT=8000 "$gw" report --trace lim.json "$fx/c11_memory_bound.gwr" >/dev/null 2>lim.err
"$gw" report --trace full.json "$fx/c11_memory_bound.gwr" >/dev/null 2>&1
python3 - lim.json full.json <<'PY' && ok || ko "--trace past the event limit"
import json, sys
lim = json.load(open(sys.argv[1]))
full = json.load(open(sys.argv[2]))
def by(doc, cat):
    return [e for e in doc["traceEvents"] if e.get("cat") == cat]
for cat in ("step", "idle", "memcpy", "memset"):
    assert len(by(lim, cat)) == len(by(full, cat)), cat
kl, kf = by(lim, "kernel"), by(full, "kernel")
assert 0 < len(kl) < len(kf)
assert lim["otherData"]["kernels_left_out"] == len(kf) - len(kl)
assert min(round(e["dur"] * 1000) for e in kl) >= max(sorted(round(e["dur"] * 1000) for e in kf)[:len(kf) - len(kl)])
x = [e for e in lim["traceEvents"] if e["ph"] in ("X", "C")]
assert len(x) <= 8000, len(x)
PY
has lim.err "were left out" "--trace says how many events it left out"

# code sites: none listed below 1% of its finding's idle, in the terminal
# (-v: all ten), the HTML page and the JSON alike, and the same sites in each
# (under the sanitizers, GW_SANITIZED=1, every fourth recording: the three
# renderers' code is the same for all, and the plain build checks each)
k=0
for f in "$fx"/*.gwr; do
  k=$((k + 1))
  [ "${GW_SANITIZED:-}" = 1 ] && [ $((k % 4)) -ne 1 ] && continue
  b=$(basename "$f" .gwr)
  "$gw" report -v "$f" >"site-$b.txt" 2>/dev/null
  "$gw" report --html "site-$b.html" --json="site-$b.json" "$f" 2>/dev/null
  python3 - "site-$b.txt" "site-$b.html" "site-$b.json" <<'PY' && ok || ko "$b: a code site below 1% listed, or the outputs differ"
import json, re, sys
txt, html, doc = open(sys.argv[1]).read(), open(sys.argv[2]).read(), json.load(open(sys.argv[3]))
pct = re.compile(r"\((?:launched )?(\d+)% of (?:this idle|the waits|the time launching work|the time in pageable copies|the FP32/FP64 matrix kernels' time)[:)]")
t = [int(m) for m in pct.findall(txt)]
h = [int(m) for m in pct.findall(html)]
j = [s["share"] for x in doc["findings"] if x.get("assessed") for s in x.get("sites") or []]
assert all(v >= 1 for v in t + h), (t, h)
assert all(v >= 0.01 for v in j), j
assert len(h) == len(j), (h, j)  # the page lists every site of the JSON
assert [round(100 * v) for v in j] == h, (j, h)
assert t == h, (t, h)  # -v lists all ten, as the page does
PY
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
