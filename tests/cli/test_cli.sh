#!/usr/bin/env bash
# Command-line behaviour without a GPU: help, errors, exit statuses, signal
# forwarding, secrets, file modes, damaged input. Prints "N passed, N failed".
set -u
cd "$(dirname "$0")/../.."
gw=${GPUWHY:-$PWD/gpuwhy}
tmp=$(mktemp -d /tmp/gw-cli-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
pass=0; fail=0
ok() { pass=$((pass+1)); }
ko() { echo "FAIL $*"; fail=$((fail+1)); }
expect_rc() { # want, description, command...
  local want=$1 desc=$2; shift 2
  "$@" >"$tmp/out" 2>"$tmp/err"; local rc=$?
  if [ "$rc" -eq "$want" ]; then ok; else ko "$desc: exit $rc, want $want ($(head -c 300 "$tmp/err"))"; fi
}
has() { # file, pattern, description
  if grep -q -- "$2" "$1"; then ok; else ko "$3: '$2' not in $(head -c 300 "$1")"; fi
}

# help and version
expect_rc 0 "gpuwhy --help" "$gw" --help
has "$tmp/out" "record" "--help lists commands"
expect_rc 0 "--version" "$gw" --version
has "$tmp/out" "gpuwhy 0" "--version prints the version"
for c in run record report dump check stack; do
  expect_rc 0 "$c --help" "$gw" "$c" --help
  has "$tmp/out" "usage: gpuwhy $c" "$c --help shows usage"
done
expect_rc 2 "no command" "$gw"
expect_rc 2 "unknown command" "$gw" frobnicate
has "$tmp/err" "unknown command" "unknown command message"
expect_rc 2 "unknown flag" "$gw" report --frobnicate
expect_rc 0 "prefix match" "$gw" rep --help

cd "$tmp"
# record: argument errors leave nothing behind
expect_rc 2 "record without a command" "$gw" record
expect_rc 2 "bad --max-size" "$gw" record --max-size lots -- true
expect_rc 127 "missing program" "$gw" record -o missing.gwr -- /nonexistent/prog
has "$tmp/err" "cannot run" "missing program message"
[ ! -e missing.gwr ] && [ ! -e missing.gwr.parts ] && ok || ko "missing program left files behind"
expect_rc 2 "bad --py-rate" "$gw" record --py-rate 0 -- true
has "$tmp/err" "py-rate wants a rate" "--py-rate error says what it wants"
expect_rc 2 "--py-rate not a number" "$gw" record --py-rate fast -- true
expect_rc 0 "record --no-py" "$gw" record -q --no-py -o nopy.gwr -- sh -c 'exit 0'
"$gw" dump --type meta,py_status nopy.gwr | grep -q 'record.py=off' && ok || ko "--no-py noted in the recording"
"$gw" dump --type py_sample,py_status nopy.gwr | grep -q . && ko "--no-py wrote Python stack records" || ok
echo keep > exists.gwr
expect_rc 125 "existing output" "$gw" record -o exists.gwr -- true
[ "$(cat exists.gwr)" = keep ] && ok || ko "existing output was overwritten"
expect_rc 125 "unwritable output" "$gw" record -o /nonexistent/dir/x.gwr -- true
has "$tmp/err" "cannot create" "unwritable output message"

# record a CPU-only command: exit status, stdio pass-through, mode 0600, no secrets
export GW_TEST_SECRET_TOKEN=hunter2-sekrit OMP_NUM_THREADS=3
echo "input line" | "$gw" record -q -o cpu.gwr -- sh -c 'read x; echo "got $x"; echo err >&2; exit 7' >out.txt 2>err.txt
rc=$?
[ $rc -eq 7 ] && ok || ko "exit status passed through: $rc"
grep -q "got input line" out.txt && ok || ko "stdin/stdout pass through"
grep -q "^err$" err.txt && ok || ko "stderr passes through"
[ "$(stat -c %a cpu.gwr)" = 600 ] && ok || ko "recording mode $(stat -c %a cpu.gwr), want 600"
grep -q hunter2-sekrit cpu.gwr && ko "a secret from the environment is in the recording" || ok
"$gw" dump cpu.gwr >dump.txt 2>&1 && ok || ko "dump of a CPU-only recording"
grep -q hunter2 dump.txt && ko "secret visible in dump" || ok
has dump.txt "env.OMP_NUM_THREADS=3" "allowlisted variable recorded"
has dump.txt "record.complete=1" "recording finalized"
has dump.txt "^process " "process record"
"$gw" dump --json --type meta cpu.gwr | python3 -c 'import json,sys; [json.loads(l) for l in sys.stdin]' && ok || ko "dump --json is valid JSON lines"
"$gw" report cpu.gwr >rep.txt 2>&1; rc=$?
[ $rc -eq 0 ] && ok || ko "report of a host-only recording: exit $rc"
has rep.txt "no GPU" "report explains the missing GPU timeline"

# run = record + report
"$gw" run -o run.gwr -- sh -c 'exit 0' >run.out 2>&1; rc=$?
[ $rc -eq 0 ] && ok || ko "run: exit $rc"
grep -q "gpuwhy report: run.gwr" run.out && ok || ko "run prints the report ($(head -c 200 run.out))"
"$gw" run --json -o runj.gwr -- sh -c 'exit 0' 2>/dev/null | python3 -c 'import json,sys; d=json.load(sys.stdin); sys.exit(d["schema"] != "gpuwhy.report/1")' && ok || ko "run --json prints a JSON report"

# --sync-records asks the injection library for CUPTI's sync records; the
# recording says which way it was made
"$gw" record -q --sync-records -o syncrec.gwr -- sh -c 'exit 0'
"$gw" dump --type meta syncrec.gwr | grep -q 'record.sync_records.*on request' && ok || ko "--sync-records noted in the recording"
"$gw" dump --type meta cpu.gwr | grep -q 'record.sync_records.*only without host calls' && ok || ko "default sync records noted"

# --redact keeps command lines out
"$gw" record -q --redact -o red.gwr -- sh -c 'exit 0' secret-arg-xyz
grep -q secret-arg-xyz red.gwr && ko "--redact left the command line in" || ok

# signals: SIGTERM to gpuwhy reaches the target; the recording is finalized
"$gw" record -q -o term.gwr -- sh -c 'trap "exit 42" TERM; sleep 30 & wait' &
gpid=$!
sleep 1
kill -TERM $gpid
wait $gpid; rc=$?
[ $rc -eq 42 ] && ok || ko "SIGTERM forwarded: exit $rc, want 42"
"$gw" dump term.gwr | grep -q "record.signal=15" && ok || ko "recording notes the signal"
# the target killed by a signal: gpuwhy exits 128+N
"$gw" record -q -o killed.gwr -- sh -c 'kill -9 $$'; rc=$?
[ $rc -eq 137 ] && ok || ko "SIGKILLed target: exit $rc, want 137"
"$gw" dump killed.gwr | grep -q "record.complete=1" && ok || ko "recording finalized after SIGKILL"
# a crashing target (segfault): 128+11, recording finalized
"$gw" record -q -o segv.gwr -- sh -c 'kill -SEGV $$'; rc=$?
[ $rc -eq 139 ] && ok || ko "segfaulting target: exit $rc, want 139"
"$gw" dump segv.gwr | grep -q "record.complete=1" && ok || ko "recording finalized after a crash"
# --duration bounds the recording, not the job
"$gw" record -q --duration 0.5 -o dur.gwr -- sh -c 'sleep 2; exit 3'; rc=$?
[ $rc -eq 3 ] && ok || ko "--duration: the job ran to its end (exit $rc)"
"$gw" dump dur.gwr | grep -q "record.stopped_early=duration" && ok || ko "--duration noted"

# a full disk while recording: the job runs on unharmed, gpuwhy says what was
# lost, and what was written before reads back
if [ -n "${FAILWRITE:-}" ] && [ -f "$FAILWRITE" ]; then
  # the first two chunks (about 1 KB: header, metadata, first samples) fit;
  # an ASan build needs its runtime first in the preload list
  pre=$FAILWRITE
  asan=$(ldd "$gw" 2>/dev/null | awk '/libasan/ {print $3}')
  [ -n "$asan" ] && pre="$asan $FAILWRITE"
  LD_PRELOAD=$pre GW_FAIL_PATH=full.gwr GW_FAIL_AFTER=1100 \
    "$gw" record -o full.gwr -- sh -c 'sleep 2.5; echo done-ok; exit 5' >full.out 2>full.err
  rc=$?
  [ $rc -eq 5 ] && ok || ko "disk full: the job's exit status was lost ($rc)"
  grep -q done-ok full.out && ok || ko "disk full: the job did not run to its end"
  grep -q "records were lost" full.err && ok || ko "disk full: no message ($(cat full.err))"
  "$gw" dump full.gwr >/dev/null 2>&1; rc=$?
  [ $rc -eq 0 ] || [ $rc -eq 3 ] && ok || ko "disk full: partial recording unreadable ($rc)"
  "$gw" dump full.gwr 2>/dev/null | grep -q "target.cmdline" && ok || ko "disk full: metadata written before the failure is gone"
fi

# a target that forks a hundred short-lived children
"$gw" record -q -o forks.gwr -- sh -c 'for i in $(seq 1 100); do (sleep 0.01) & done; wait; exit 0'; rc=$?
[ $rc -eq 0 ] && ok || ko "100 children: exit $rc"
"$gw" report forks.gwr >/dev/null 2>&1 && ok || ko "100 children: report failed"
n=$("$gw" dump --type process forks.gwr | wc -l)
[ "$n" -ge 2 ] && ok || ko "100 children: only $n processes recorded"

# ring mode: needs a budget; records and finalizes
expect_rc 2 "--ring without --max-size" "$gw" record --ring -- true
"$gw" record -q --ring --max-size 1M -o ring.gwr -- sh -c 'sleep 1.2; exit 4'; rc=$?
[ $rc -eq 4 ] && ok || ko "--ring: exit $rc"
"$gw" dump ring.gwr 2>/dev/null | grep -q "record.ring_bytes=1048576" && ok || ko "--ring noted"
n=$("$gw" dump --type sys_cpu ring.gwr 2>/dev/null | wc -l)
[ "$n" -ge 20 ] && ok || ko "--ring: samples merged from the segments ($n)"
[ ! -e ring.gwr.parts ] && ok || ko "--ring: segments left behind"

# gpuwhy check on this machine's real /proc and /sys (no GPU here: the GPU
# section must say so, and the exit status stays 0)
"$gw" check --json --data "$OLDPWD/tests/fixtures" --pid $$ >check.json 2>check.err; rc=$?
[ $rc -eq 0 ] && ok || ko "check: exit $rc ($(head -c 200 check.err))"
python3 - check.json $$ "$(getconf _NPROCESSORS_ONLN)" <<'PY' && ok || ko "check: JSON content ($(head -c 300 check.json))"
import json, sys
d = json.load(open(sys.argv[1]))
c = {(x["scope"], x["name"]): x for x in d["checks"]}
assert d["schema"] == "gpuwhy.check/1"
assert f'{sys.argv[3]} cores online' in c[("host", "cpu.cores")]["measured"]
assert c[("host", "memory")]["status"] in ("pass", "warn") and "GiB total" in c[("host", "memory")]["measured"]
assert c[("data", "storage.read")]["status"] in ("pass", "warn") and "MB/s" in c[("data", "storage.read")]["measured"]
assert c[(f"pid {sys.argv[2]}", "threads")]["status"] != "fail"
gpu = [x for x in d["checks"] if x["scope"].startswith("gpu")]
assert gpu and (gpu[0]["status"] == "not-assessed" and "NVIDIA driver" in gpu[0]["measured"] or len(gpu) > 3)
PY
expect_rc 2 "check --pid junk" "$gw" check --pid junk
expect_rc 2 "check --data on a file" "$gw" check --data /etc/hostname

# timeline export (Chrome trace format) of a real recording
if [ -f "$OLDPWD/tests/fixtures/cuda_c_target.gwr" ]; then
  "$gw" report --trace tl.json "$OLDPWD/tests/fixtures/cuda_c_target.gwr" >/dev/null 2>&1
  python3 - tl.json <<'PY' && ok || ko "--trace: timeline wrong"
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
k = sum(1 for e in ev if e.get("cat") == "kernel" and "gw_scale" in e["name"])
st = sum(1 for e in ev if e.get("cat") == "step")
sys.exit(0 if k == 100 and st == 3 and all(e["dur"] >= 0 for e in ev if e.get("ph") == "X") else 1)
PY
  "$gw" report --trace none.json cpu.gwr >/dev/null 2>&1
  [ ! -e none.json ] && ok || ko "--trace without a GPU timeline left a file"
fi

# damaged and wrong input
expect_rc 1 "report of a directory" "$gw" report "$tmp"
has "$tmp/err" "directory" "directory message"
expect_rc 1 "report of a missing file" "$gw" report nothere.gwr
echo "not a recording" > junk.gwr
expect_rc 1 "report of a non-recording" "$gw" report junk.gwr
has "$tmp/err" "not a gpuwhy recording" "non-recording message"
fixture=$(ls "$OLDPWD"/tests/fixtures/*.gwr 2>/dev/null | head -1)
if [ -n "$fixture" ]; then
  head -c $(( $(stat -c %s "$fixture") / 2 )) "$fixture" > half.gwr
  expect_rc 3 "report of a truncated recording" "$gw" report half.gwr
  has "$tmp/out" "damaged" "truncation warning in the report"
  # the report reads a file twice: a pipe is copied aside first, same report
  "$gw" report --json "$fixture" | grep -v '"file"' >file.json
  cat "$fixture" | "$gw" report --json /dev/stdin | grep -v '"file"' >pipe.json
  cmp -s file.json pipe.json && ok || ko "report of a pipe differs from the file's"
  cat "$fixture" | TMPDIR=/nonexistent "$gw" report /dev/stdin >"$tmp/out" 2>"$tmp/err"
  [ $? -eq 1 ] && ok || ko "report of a pipe with no writable TMPDIR: not exit 1"
  has "$tmp/err" "TMPDIR" "a pipe with no writable TMPDIR: the message says what to set"
fi
expect_rc 1 "report with no recording here" sh -c "cd /tmp && mkdir -p $tmp/empty && cd $tmp/empty && $gw report"
has "$tmp/err" "gpuwhy record" "no-recording message says what to do"

# inputs the fuzzer once crashed on (tests/fuzz/regressions): a report or a
# clear error, never a crash (exit codes 0, 1 and 3 only; ASan builds abort otherwise)
for f in "$OLDPWD"/tests/fuzz/regressions/*; do
  "$gw" report "$f" >/dev/null 2>&1; rc=$?
  case $rc in 0|1|3) ok ;; *) ko "fuzz regression $(basename "$f"): exit $rc" ;; esac
done

# gpuwhy stack: a clear error for a process that is not Python, and bad ids
sleep 30 & spid=$!
expect_rc 1 "stack of a non-Python process" "$gw" stack "$spid"
has "$tmp/err" "not a Python process" "stack says the process is not Python"
kill "$spid"; wait "$spid" 2>/dev/null
expect_rc 2 "stack of a non-number" "$gw" stack abc
expect_rc 2 "stack without a PID" "$gw" stack
if command -v python3 >/dev/null; then
  python3 -c 'import time
def waiting():
    time.sleep(30)
print("ready", flush=True)
waiting()' >"$tmp/py.out" & ppid=$!
  for _ in $(seq 50); do grep -q ready "$tmp/py.out" && break; sleep 0.1; done
  expect_rc 0 "stack of a Python process" "$gw" stack "$ppid"
  has "$tmp/out" "waiting (<string>:3)" "stack shows the sleeping function and line"
  has "$tmp/out" "<module> (<string>:5)" "stack shows the module line"
  kill "$ppid"; wait "$ppid" 2>/dev/null
fi

# Python stacks while recording (no GPU here: the sampler still samples)
if command -v python3 >/dev/null; then
  cat > prog.py <<'PY'
import time
def work(n):
    s = 0
    for i in range(n):
        s += i * i  # the hot line
    return s
def main():
    t = time.time()
    while time.time() - t < 1.5:
        work(10000)
main()
PY
  hot=$(grep -n "the hot line" prog.py | cut -d: -f1)
  expect_rc 0 "record a Python program" "$gw" record -q --duration 2 -o py.gwr -- python3 prog.py
  "$gw" dump --type py_status py.gwr | grep -q "code=0 detail=Python 3" && ok || ko "py_status: the program's stacks were read ($("$gw" dump --type py_status py.gwr))"
  n=$("$gw" dump --type py_sample py.gwr | grep -c "tid=")
  [ "$n" -ge 5 ] && ok || ko "py_sample records: $n"
  "$gw" dump --type py_frame py.gwr | grep -q "prog.py function=work line=$hot" && ok || ko "a frame names prog.py:$hot in work ($("$gw" dump --type py_frame py.gwr | head -5))"
  "$gw" report py.gwr >"$tmp/out" 2>&1
  has "$tmp/out" "no GPU timeline" "report of the Python program says there is no GPU timeline"
  grep -q "note: no Python stacks" "$tmp/out" && ko "stacks were read, yet the report says none" || ok
  # a target that is not Python: one status with the reason, no error
  expect_rc 0 "record a shell" "$gw" record -q -o sh.gwr -- sh -c 'sleep 0.5'
  "$gw" dump --type py_status sh.gwr | grep -q "code=1 " && ok || ko "non-Python target: status code 1 ($("$gw" dump --type py_status sh.gwr))"
  "$gw" report sh.gwr >"$tmp/out" 2>&1
  has "$tmp/out" "note: no Python stacks for pid" "non-Python target: one note line"
fi

# the injection library exports InitializeInjection only
if [ -f "${INJECT_LIB:-$OLDPWD/libgpuwhy-inject.so}" ]; then
  syms=$(nm -D --defined-only "${INJECT_LIB:-$OLDPWD/libgpuwhy-inject.so}" | awk '{print $3}' | sort | tr '\n' ' ')
  [ "$syms" = "InitializeInjection " ] && ok || ko "injection library exports: $syms"
fi

echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
