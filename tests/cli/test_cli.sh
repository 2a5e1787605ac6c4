#!/usr/bin/env bash
# Command-line behaviour without a GPU: help, errors, exit statuses, signal
# forwarding, secrets, file modes, damaged input. Prints "N passed, N failed".
set -u
cd "$(dirname "$0")/../.."
gw=${GPUWHY:-$PWD/gpuwhy}
synth=$PWD/${BUILD:-build}/tests/test_steps # writes a synthetic recording (--write FILE)
tmp=$(mktemp -d /tmp/gw-cli-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
. tests/cli/lib.sh

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
has "$tmp/err" "py-rate wants a whole number of Hz" "--py-rate error says what it wants"
expect_rc 2 "--py-rate not a number" "$gw" record --py-rate fast -- true
expect_rc 0 "record --no-py" "$gw" record -q --no-py -o nopy.gwr -- sh -c 'exit 0'
"$gw" dump --type meta,py_status nopy.gwr | grep -q 'record.py=off' && ok || ko "--no-py noted in the recording"
"$gw" dump --type py_sample,py_status nopy.gwr | grep -q . && ko "--no-py wrote Python stack records" || ok
echo keep > exists.gwr
expect_rc 125 "existing output" "$gw" record -o exists.gwr -- true
[ "$(cat exists.gwr)" = keep ] && ok || ko "existing output was overwritten"
expect_rc 125 "unwritable output" "$gw" record -o /nonexistent/dir/x.gwr -- true
has "$tmp/err" "cannot create" "unwritable output message"
has "$tmp/err" "nothing was run" "unwritable output: says the job was not run"
# a Python job too short to sample is not called "not a Python process"
# (the reader looked once, between the fork and the exec)
for i in 1 2 3; do
  "$gw" run -q -o short$i.gwr -- python3 -c 'raise SystemExit("boom")' >short.out 2>&1
  if grep -q "not a Python process" short.out; then ko "a short python3 job: $(grep note short.out)"; else ok; fi
done
has "$tmp/err" "-o DIR/NAME.gwr" "unwritable output: says where to record"

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
# the host's CPU model, as /proc/cpuinfo names it (gpuwhy diff compares machines by it)
model=$(sed -n 's/^model name[[:space:]]*:[[:space:]]*//p' /proc/cpuinfo | head -1)
if [ -n "$model" ]; then
  "$gw" dump --type meta cpu.gwr | grep -qF "host.cpu_model=$model" && ok || ko "host.cpu_model recorded ($model)"
fi

# --redact keeps command lines out; no secret-bearing variable is stored,
# with or without it (the rule: docs/gpuwhy.1, FILES)
"$gw" record -q --redact -o red.gwr -- sh -c 'exit 0' secret-arg-xyz
grep -q secret-arg-xyz red.gwr && ko "--redact left the command line in" || ok
"$gw" dump red.gwr | grep -q secret-arg-xyz && ko "--redact left the command line in the dump" || ok
env NCCL_PASS=sek1-pass NCCL_NET_PLUGIN_CONFIG='{"key":"sek2-cfg"}' NCCL_IB_PASSWORD=sek3-pw \
  NCCL_SOCKET_IFNAME=https://u:sek4-url@h/ AWS_SECRET_ACCESS_KEY=sek5-aws HF_TOKEN=sek6-hf \
  DATABASE_URL=postgres://u:sek7-db@h/db http_proxy=http://u:sek8-proxy@p:3128 \
  WANDB_API_KEY=sek9-wandb NCCL_DEBUG=WARN \
  "$gw" record -q --redact -o red2.gwr -- sh -c 'exit 0'
"$gw" dump red2.gwr >red2.txt 2>&1
grep -o 'sek[0-9]-[a-z]*' red2.txt | sort -u | tr '\n' ' ' >red2.leak
[ ! -s red2.leak ] && ok || ko "secret-bearing variables stored: $(cat red2.leak)"
has red2.txt "env.NCCL_DEBUG=WARN" "a performance variable under NCCL_ is still stored"
# secrets on command lines, without --redact: the values of options and
# assignments named like secrets are replaced, in the job's command line and
# its children's (sampled from /proc), so in the dump, the JSON and the HTML
"$gw" record -q -o argsec.gwr -- sh -c "sh -c 'sleep 0.6; true' --token sekA-child password=sekB-child; true" \
  --api-key=sekC-job password=sekD-job --token sekE-job https://u:sekF-url@h/x
"$gw" dump argsec.gwr >argsec.txt 2>&1
"$gw" report --json argsec.gwr >argsec.json 2>/dev/null
"$gw" report --html argsec.html argsec.gwr >/dev/null 2>&1
grep -o 'sek[A-F]-[a-z]*' argsec.txt argsec.json argsec.html | sort -u | tr '\n' ' ' >argsec.leak
[ ! -s argsec.leak ] && ok || ko "secrets from command lines stored: $(cat argsec.leak)"
has argsec.txt "target.cmdline=sh -c .* --api-key=\[redacted\] password=\[redacted\] --token \[redacted\] https://\[redacted\]@h/x" "the job's command line is kept, its secrets out"
# the child is sampled once, with the command line it has then: its own, or,
# where the sampler came between its fork and its exec (a loaded machine),
# its parent's; both kept, their secrets out
grep -qE "cmdline=sh -c (sleep 0.6; true --token \[redacted\] password=\[redacted\]|sh -c 'sleep 0.6; true' --token \[redacted\] password=\[redacted\]; true --api-key=\[redacted\].*) is_target=0" argsec.txt &&
  ok || ko "a child's command line is kept, its secrets out: $(grep 'is_target=0' argsec.txt | head -2)"
has argsec.json '"cmdline": "sh -c sh -c .*--token \[redacted\] password=\[redacted\]' "the JSON report's command line, secrets out"
grep -q 'password=\[redacted\]' argsec.html && ok || ko "the HTML report's job line: $(grep -o 'job.\{0,80\}' argsec.html | head -2)"

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
  # the disk fills (a short write leaves part of a chunk) and then frees:
  # the partial chunk is cut away, and what is written after it (the job's
  # exit status, the end of the recording) reads back
  LD_PRELOAD=$pre GW_FAIL_PATH=refill.gwr GW_FAIL_AFTER=1100 GW_FAIL_COUNT=1 \
    "$gw" record -o refill.gwr -- sh -c 'sleep 1.5; exit 6' >refill.out 2>refill.err
  rc=$?
  [ $rc -eq 6 ] && ok || ko "disk full then freed: exit $rc, want 6"
  "$gw" dump refill.gwr >refill.dump 2>refill.derr; rc=$?
  [ $rc -eq 0 ] && ok || ko "disk full then freed: dump exit $rc, want 0 ($(cat refill.derr))"
  has refill.dump "record.exit_status=6" "disk full then freed: the exit status written after it reads back"
  has refill.dump "record.complete=1" "disk full then freed: the recording is complete"
fi

# every numeric option takes a whole, finite number in range, or exits 2
# with a message naming the option; nothing is recorded and no job runs
while IFS='|' read -r opt val; do
  rm -f num.gwr ran.txt
  "$gw" record -o num.gwr $opt "$val" -- touch ran.txt >num.out 2>num.err; rc=$?
  [ $rc -eq 2 ] && grep -q -- "$opt wants" num.err && [ ! -e ran.txt ] && [ ! -e num.gwr ] && ok ||
    ko "record $opt '$val': exit $rc, want 2 and a message ($(head -c 200 num.err))"
done <<'TABLE'
--duration|nan
--duration|inf
--duration|5abc
--duration|0
--duration|-1
--duration|
--duty|1e10/1e11
--duty|0.0001/0.0002
--duty|nan/nan
--duty|5/inf
--duty|5/5
--duty|60/5
--duty|5
--duty|5/60x
--max-size|nan
--max-size|inf
--max-size|1e30
--max-size|-1G
--max-size|10Q
--proc-hz|50abc
--proc-hz|0
--proc-hz|1001
--gpu-hz|1e2
--gpu-hz| 50
--py-rate|100.5
TABLE
expect_rc 2 "check --pid past int" "$gw" check --pid 4294967297
has "$tmp/err" "pid wants a process id" "check --pid 4294967297 is refused, not read as pid 1"
expect_rc 2 "check --pid 1x" "$gw" check --pid 1x
# a pid that is no process is a wrong argument (exit 2), not a failed check (1)
expect_rc 2 "check --pid of no process" "$gw" check --pid 999999999
has "$tmp/err" "no such process" "check --pid of no process says so"
expect_rc 2 "stack past int" "$gw" stack 99999999999999999999
# and the good forms still work
expect_rc 0 "good numbers" "$gw" record -q -o goodnum.gwr --duration 30 --duty 0.5/2 --max-size 1.5G \
  --proc-hz 20 --gpu-hz 10 --py-rate 50 -- true

# closed standard descriptors: gpuwhy keeps 0-2 occupied, so the recording
# never becomes fd 2 and no message of gpuwhy's lands in it; the job gets
# them back closed, as given
for fd in 0 1 2; do
  rm -rf std$fd.gwr
  eval '"$gw" record -o std$fd.gwr -- sh -c "[ -e /proc/\$\$/fd/$fd ] && echo open >&3 || echo closed >&3" \
    3>std$fd.txt '"$fd>&-"; rc=$?
  [ $rc -eq 0 ] && ok || ko "fd $fd closed: exit $rc"
  "$gw" dump std$fd.gwr >std$fd.dump 2>std$fd.err && ok || ko "fd $fd closed: the recording is damaged ($(head -c 200 std$fd.err))"
  has std$fd.dump "record.complete=1" "fd $fd closed: recording finalized"
  [ "$(cat std$fd.txt)" = closed ] && ok || ko "fd $fd closed for gpuwhy but open in the job"
done
"$gw" record -o stdall.gwr -- true <&- >&- 2>&-; rc=$?
"$gw" dump stdall.gwr >/dev/null 2>&1 && [ $rc -eq 0 ] && ok || ko "fds 0-2 closed: exit $rc or damaged recording"
"$gw" report stdall.gwr >&- 2>&- && ok || ko "report with stdout and stderr closed failed"

# signals ignored where gpuwhy was started (nohup, '&' in a script) stay
# ignored in the job: the job's ignored set is the caller's, and a hangup
# does not kill a nohup'ed job
(trap '' HUP INT QUIT PIPE USR1 TERM; grep SigIgn /proc/self/status >ign.want
 exec "$gw" record -q -o ign.gwr -- grep SigIgn /proc/self/status) >ign.out 2>&1
[ -s ign.want ] && cmp -s ign.want ign.out && ok || ko "the job's ignored signals differ: $(cat ign.out), want $(cat ign.want)"
nohup "$gw" record -q -o hup.gwr -- sh -c 'sleep 1; exit 0' >hup.out 2>&1 &
p=$!
# the hangup once nohup has made it ignored and become gpuwhy (exec, same
# pid): before that, on a loaded machine, it would reach the shell's child
i=0; while [ "$(readlink /proc/$p/exe 2>/dev/null)" != "$(readlink -f "$gw")" ] && [ $i -lt 200 ]; do
  sleep 0.05; i=$((i+1)); done
sleep 0.2; kill -HUP $p; wait $p; rc=$?
[ $rc -eq 0 ] && ok || ko "nohup + SIGHUP: the job ended with $rc, want 0"
"$gw" dump hup.gwr 2>/dev/null | grep -q "record.complete=1" && ok || ko "nohup + SIGHUP: recording not finalized"

# a signal sent to gpuwhy alone, or to its process group, reaches the job
# exactly once (docs/RELIABILITY.md, "Signals"). The job counts every SIGINT
# the kernel delivers to it (one byte each through the wakeup descriptor)
# while it spins, so that a second delivery is not merged into a pending one.
cat >cnt.py <<'PY'
import os, signal, sys, time
r, w = os.pipe()
os.set_blocking(w, False); os.set_blocking(r, False)
signal.signal(signal.SIGINT, lambda s, f: None)
signal.set_wakeup_fd(w, warn_on_full_buffer=False)
open(sys.argv[1] + ".ready", "w").close()
# until the first SIGINT (at most 20 s: a loaded machine forwards late),
# then 1 s more, in which a second delivery would arrive
n, end, first = 0, time.time() + 20.0, None
while time.time() < end and (first is None or time.time() < first + 1.0):
    try:
        n += os.read(r, 100).count(bytes([signal.SIGINT]))
    except BlockingIOError:
        pass
    if n and first is None:
        first = time.time()
grp = "own" if os.getpgrp() == os.getpid() else "shared"
open(sys.argv[1], "w").write("%d %s\n" % (n, grp))
PY
# started as a batch system starts it: no terminal, SIGINT not ignored
cat >detach.py <<'PY'
import os, signal, sys
signal.signal(signal.SIGINT, signal.SIG_DFL)
os.setsid()
os.execvp(sys.argv[1], sys.argv[1:])
PY
wait_ready() { local i=0; while [ ! -e "$1.ready" ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done; sleep 0.2; }
for how in group group group alone; do
  rm -f cnt.txt cnt.txt.ready cnt.gwr
  python3 detach.py "$gw" record -q -o cnt.gwr -- python3 cnt.py cnt.txt & p=$!
  wait_ready cnt.txt
  if [ $how = group ]; then kill -INT -- -$p; else kill -INT $p; fi
  wait $p
  [ "$(cat cnt.txt 2>/dev/null)" = "1 own" ] && ok ||
    ko "SIGINT to gpuwhy's $how, no terminal: the job got '$(cat cnt.txt 2>/dev/null)', want '1 own' (once, in its own group)"
done
# in the foreground of a terminal the job shares gpuwhy's group: Ctrl-C
# reaches it from the kernel once, and a kill of gpuwhy is forwarded once
cat >term.py <<'PY'
import os, pty, signal, sys, time
gw, how = sys.argv[1], sys.argv[2]
pid, fd = pty.fork()
if pid == 0:
    # as a terminal's shell starts it: SIGINT not ignored (a test run in the
    # background of a script inherits it ignored, and an ignored signal is
    # rightly never forwarded)
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    os.execvp(gw, [gw, "record", "-q", "-o", "tty.gwr", "--", "python3", "cnt.py", "tty.txt"])
def drain():
    try:
        os.read(fd, 4096)
    except OSError:
        pass
end = time.time() + 10
while not os.path.exists("tty.txt.ready") and time.time() < end:
    time.sleep(0.05)
time.sleep(0.2)
if how == "key":
    os.write(fd, b"\x03")
else:
    os.kill(pid, signal.SIGINT)
while True:
    drain()
    p, st = os.waitpid(pid, os.WNOHANG)
    if p:
        break
    time.sleep(0.05)
PY
for how in key kill; do
  rm -f tty.txt tty.txt.ready tty.gwr
  python3 term.py "$gw" $how >/dev/null 2>&1
  [ "$(cat tty.txt 2>/dev/null)" = "1 shared" ] && ok ||
    ko "SIGINT by $how in a terminal: the job got '$(cat tty.txt 2>/dev/null)', want '1 shared'"
done

# a FILE.parts folder that gpuwhy did not make is never removed
mkdir mine.gwr.parts
expect_rc 125 "parts folder in the way" "$gw" record -o mine.gwr -- true
[ -d mine.gwr.parts ] && [ ! -e mine.gwr ] && ok || ko "a folder gpuwhy did not make was removed"

# an output name too long for NAME.parts beside it is refused before the job
# runs, with the reason; the longest name that fits records
long=$(printf 'n%.0s' $(seq 1 245)) # + .gwr: 249 characters
rm -f ran.txt
expect_rc 125 "250-character output name" "$gw" record -o "${long}x.gwr" -- touch ran.txt
has "$tmp/err" "at most 249" "a too long output name: the message says why"
[ ! -e ran.txt ] && [ ! -e "${long}x.gwr" ] && ok || ko "a too long output name: the job ran or a file was left"
expect_rc 0 "249-character output name" "$gw" record -q -o "${long}.gwr" -- true
"$gw" dump "${long}.gwr" 2>/dev/null | grep -q "record.complete=1" && [ ! -e "${long}.gwr.parts" ] && ok ||
  ko "a 249-character output name did not record"
# a parts folder in the way, with a file of the user's in it, is left whole
mkdir theirs.gwr.parts && echo mine >theirs.gwr.parts/note
expect_rc 125 "parts folder with a file in the way" "$gw" record -o theirs.gwr -- touch ran.txt
[ "$(cat theirs.gwr.parts/note 2>/dev/null)" = mine ] && [ ! -e ran.txt ] && ok ||
  ko "a parts folder gpuwhy did not make was changed, or the job ran"

# a traced stream that cannot be merged (the disk filled at the end) is kept
# in FILE.parts, not deleted, and the report reads it (the stream here is a
# real recording the job copies into the parts folder)
fx=$(ls -S "$OLDPWD"/tests/fixtures/*.gwr 2>/dev/null | sed -n 1p)
if [ -n "${FAILWRITE:-}" ] && [ -f "$FAILWRITE" ] && [ -n "$fx" ]; then
  pre=$FAILWRITE
  asan=$(ldd "$gw" 2>/dev/null | awk '/libasan/ {print $3}')
  [ -n "$asan" ] && pre="$asan $FAILWRITE"
  LD_PRELOAD=$pre GW_FAIL_PATH=big.gwr GW_FAIL_AFTER=200000 "$gw" record -q -o big.gwr -- \
    sh -c "env -u LD_PRELOAD cp '$fx' big.gwr.parts/inject-\$\$.gws; exit 4" >big.out 2>big.err; rc=$?
  [ $rc -eq 4 ] && ok || ko "unmerged stream: exit $rc, want 4"
  kept=$(ls big.gwr.parts/inject-*.gws 2>/dev/null | head -1)
  [ -n "$kept" ] && cmp -s "$kept" "$fx" && ok || ko "a stream that could not be merged was deleted"
  has big.err "kept in" "unmerged stream: the message says where it is"
  "$gw" report big.gwr >big.rep 2>&1
  has big.rep "^Steps: [0-9]" "the report reads the unmerged stream's GPU timeline"
fi

# the job's environment and descriptors as on a machine with a driver (a
# stand-in libcuda.so.1): paths that do not depend on the working directory,
# a CUDA_INJECTION64_PATH the user set left as it is, and no descriptor that
# gpuwhy's libraries opened
lib=${INJECT_LIB:-$OLDPWD/libgpuwhy-inject-cu13.so}
if [ -f "${FAKECUDA:-}/libcuda.so.1" ] && [ -f "$lib" ]; then
  mkdir -p rel && cp "$lib" rel/libinj.so
  LD_LIBRARY_PATH=$FAKECUDA GPUWHY_INJECT_LIB=rel/libinj.so "$gw" record -q -o env.gwr -- \
    sh -c 'env; ls -l /proc/$$/fd/' >env.out 2>env.err
  has env.out "^GPUWHY_PARTS_DIR=$PWD/env.gwr.parts$" "the parts folder handed to the job is absolute"
  has env.out "^CUDA_INJECTION64_PATH=$PWD/rel/libinj.so$" "the injection library handed to the job is absolute"
  has env.out "^NVTX_INJECTION64_PATH=$PWD/rel/libinj.so$" "NVTX goes through the injection library (to its CUPTI)"
  grep -q /dev/zero env.out && ko "a descriptor opened by the driver library reached the job" || ok
  CUDA_INJECTION64_PATH=/opt/tool/libother.so LD_LIBRARY_PATH=$FAKECUDA GPUWHY_INJECT_LIB=$lib \
    "$gw" record -q -o env2.gwr -- env >env2.out 2>env2.err
  has env2.out "^CUDA_INJECTION64_PATH=/opt/tool/libother.so$" "the user's CUDA_INJECTION64_PATH kept"
  grep -q GPUWHY_PARTS_DIR env2.out && ko "gpuwhy injected over the user's CUDA_INJECTION64_PATH" || ok
  has env2.err "already set" "the user's CUDA_INJECTION64_PATH: the message says so"
  # a damaged injection stream (synthetic: a real fixture with bytes
  # overwritten in its middle) handed over by the job: the merge keeps the
  # valid chunks after the damage too, and its note says so
  cp "$OLDPWD/tests/fixtures/c11_memory_bound.gwr" dmg.gws
  sz=$(stat -c %s dmg.gws)
  printf 'synthetic-damage-synthetic-damage-synthetic-damage-synthetic-damage' |
    dd of=dmg.gws bs=1 seek=$((sz / 2)) conv=notrunc 2>/dev/null
  LD_LIBRARY_PATH=$FAKECUDA GPUWHY_INJECT_LIB=$lib "$gw" record -o dmg.gwr -- \
    sh -c 'test -d "$GPUWHY_PARTS_DIR" && cp dmg.gws "$GPUWHY_PARTS_DIR/inject-999.gws"' >dmg.out 2>dmg.err
  has dmg.err "inject-999.gws was damaged (.*): its damaged bytes were left out, every valid chunk before and after them was kept" \
    "a damaged injection stream: the merge note says the chunks after the damage are kept"
  head -c $((sz / 2)) dmg.gws >dmg-head.gws
  nk=$("$gw" dump --type kernel dmg.gwr 2>/dev/null | wc -l); nh=$("$gw" dump --type kernel dmg-head.gws 2>/dev/null | wc -l)
  [ "$nk" -gt $((nh + 1000)) ] && ok || ko "a damaged injection stream: $nk kernels merged, $nh before the damage"
fi

# a target that forks a hundred short-lived children
"$gw" record -q -o forks.gwr -- sh -c 'for i in $(seq 1 100); do (sleep 0.01) & done; wait; exit 0'; rc=$?
[ $rc -eq 0 ] && ok || ko "100 children: exit $rc"
"$gw" report forks.gwr >/dev/null 2>&1 && ok || ko "100 children: report failed"
n=$("$gw" dump --type process forks.gwr | wc -l)
[ "$n" -ge 2 ] && ok || ko "100 children: only $n processes recorded"

# a job that starts and ends thousands of threads over its run: threads
# started late are still sampled (the thread table drops the gone ones)
cat >churn.py <<'PY'
import threading, time
def live(): time.sleep(0.06)
for b in range(50):
    ts = [threading.Thread(target=live) for _ in range(100)]
    for t in ts: t.start()
    for t in ts: t.join()
def late():
    print(threading.get_native_id(), flush=True); time.sleep(0.5)
t = threading.Thread(target=late); t.start(); t.join()
PY
"$gw" record -q -o churn.gwr -- python3 churn.py >churn.out 2>&1
late=$(tail -1 churn.out)
"$gw" dump --type thread_name churn.gwr | grep -q "tid=$late " && ok || ko "a thread started after 5000 others was never sampled"

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
# names with control characters: a data folder and a file in it named with
# ESC and newline; the table shows them escaped, on one line
dd=$'dd\033]0;pwn\a\nx'
mkdir "$dd" && head -c 1100000 /dev/zero >"$dd/"$'f\033[31m\nz'
"$gw" check --no-bandwidth --data "$dd" >ck-esc.out 2>&1
grep -q $'\033' ck-esc.out && ko "check --data: a raw ESC from a folder name reached the output" || ok
has ck-esc.out 'storage.device .*dd\\x1b]0;pwn\\x07\\nx on ' "check --data: the folder name escaped on one line"
rm -rf "$dd"

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

# a speed-up at the 95% cap is printed as a cap, never as an estimate (eager JAX,
# launch-bound: CUDA graphs would cut its steps past the cap)
if [ -f "$OLDPWD/tests/fixtures/corpus/c4_jax_no_jit.gwr" ]; then
  "$gw" report "$OLDPWD/tests/fixtures/corpus/c4_jax_no_jit.gwr" >capped.txt 2>&1
  grep -q '>= 20x faster overall (capped' capped.txt && ! grep -q '20\.00x' capped.txt && ok ||
    ko "capped estimate: $(grep -i 'gain:' capped.txt)"
  "$gw" report --json "$OLDPWD/tests/fixtures/corpus/c4_jax_no_jit.gwr" | python3 -c '
import json, sys
d = json.load(sys.stdin)
f = [x for x in d["findings"] if x["assessed"]]
ok = d["combined_capped"] is True and abs(d["combined_speedup"] - 20) < 1e-6
ok = ok and any(x["capped"] is True and abs(x["speedup"] - 20) < 1e-6 for x in f)
ok = ok and all(abs(x["saved_idle_ms"] + x["saved_busy_ms"] - x["saved_ms"]) <= 1e-5 * max(1, x["saved_ms"]) for x in f)
sys.exit(0 if ok else 1)' && ok || ko "capped in JSON: combined_capped, capped, the saving's parts"
fi

# kernel names: short where a person reads them, recorded and demangled beside
c9="$OLDPWD/tests/fixtures/c9_item_sync.gwr"
# JAX calls CUDA from runtime threads without Python frames: the sites come from
# the main process's main thread, and the report says so (a real recording)
jx="$OLDPWD/tests/fixtures/corpus/c1_jax_tokenize_main.gwr"
if [ -f "$jx" ]; then
  "$gw" report --json "$jx" | python3 -c '
import json, sys
d = json.load(sys.stdin)
c1 = [f for f in d["findings"] if f["cause"] == "C1"][0]
assert c1["sites"] and c1["sites"][0]["file"].endswith("c1_jax_tokenize_main.py"), c1["sites"][:1]' && ok || ko "JAX: no code sites from the main thread"
  "$gw" report "$jx" >jx.txt 2>&1
  has jx.txt "which ran no Python (a runtime's own thread)" "JAX: the note names the thread the sites come from"
fi
# one line of code is one site, however many callers reach it (exact sync sites too)
if [ -f "$c9" ]; then
  "$gw" report --json "$c9" | python3 -c '
import json, sys
for f in json.load(sys.stdin)["findings"]:
    keys = [(s["file"], s["line"], s["function"], s["library_function"]) for s in f.get("sites", [])]
    assert len(keys) == len(set(keys)), (f["cause"], keys)' && ok || ko "a line listed twice among a finding's sites"
fi
if [ -f "$c9" ]; then
  "$gw" dump --demangle --type string "$OLDPWD/tests/fixtures/cuda_c_target.gwr" >names.txt 2>&1
  # every build demangles (src/util/demangle.c), libiberty or not
  has names.txt "value=gw_scale(float\*, int, float)$" "dump --demangle: gw_scale demangled"
  op=" (pow_tensor_scalar)"
  "$gw" report "$c9" >c9.txt 2>&1
  has c9.txt "each starts with operation vectorized_elementwise_kernel$op\$" "step marker line: the short kernel name"
  grep -q "_ZN" c9.txt && ko "a mangled name in the terminal report" || ok
  "$gw" report --json --trace c9.json "$c9" >c9r.json 2>/dev/null
  OP="$op" python3 - c9r.json c9.json <<'PY' && ok || ko "JSON marker / --trace kernel names wrong"
import json, os, sys
steps = json.load(open(sys.argv[1]))["steps"]
full = "_ZN2at6native29vectorized_elementwise_kernelILi4EZNS0_51_GLOBAL__N__b1108092_12_PowKernel_cu_751192d7_2139629pow_tensor_scalar_kernel_implIffEEvRNS_18TensorIteratorBaseET0_EUlfE_St5arrayIPcLm2EEEEviS6_T1_"
short = "vectorized_elementwise_kernel" + os.environ["OP"]
assert steps["marker"] == full, steps["marker"]          # as recorded, whole
assert steps["marker_short"] == short, steps["marker_short"]
ev = [e for e in json.load(open(sys.argv[2]))["traceEvents"] if e.get("cat") == "kernel"]
assert ev and not any(e["name"].startswith("_Z") for e in ev)
pow_ = [e for e in ev if e["name"] == short]
assert len(pow_) >= steps["count"], (len(pow_), steps["count"])
# the demangled name once per kernel name: on its first slice
named = [e for e in pow_ if "name" in e.get("args", {})]
assert len(named) == 1, len(named)
assert named[0]["args"]["name"].startswith("void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous namespace)::pow_tensor_scalar_kernel_impl")
PY
fi
# the demangler against GNU's c++filt on every C++ name of the bundled
# recordings (c++filt comes with binutils, which the compiler needs): each
# recording's string table, as stored and as `dump --demangle` shows it (the
# kernel names are strings of it, demangled by the same cache). The plain
# build reads the suite's recordings and every second corpus job's, a
# sanitizer build (GW_SANITIZED=1) every sixteenth: reading a whole recording is
# the cost, the demangler's code the same. A job's further recordings are
# left out: they hold the same names.
if command -v c++filt >/dev/null && c++filt --no-recurse-limit </dev/null >/dev/null 2>&1; then
  python3 -u - "$gw" "$OLDPWD/tests/fixtures" "${GW_SANITIZED:-}" 2>&1 <<'PY'; rc=$?
import subprocess, sys, glob, re
got = {}
# a job's further recordings (NAME.r2, NAME.6s) hold its names again
corpus = sorted(f for f in glob.glob(sys.argv[2] + "/corpus/*.gwr") if not re.search(r"\.(r[0-9]+|6s)\.gwr$", f))
sanitized = sys.argv[3] == "1"
corpus = corpus[::16] if sanitized else corpus[::2]
for f in glob.glob(sys.argv[2] + "/*.gwr") + corpus:
    p = subprocess.run([sys.argv[1], "dump", "--type", "string", f], capture_output=True, text=True)
    d = subprocess.run([sys.argv[1], "dump", "--demangle", "--type", "string", f], capture_output=True, text=True)
    plain, dem = p.stdout.splitlines(), d.stdout.splitlines()
    if p.returncode or d.returncode or len(plain) != len(dem):
        print("  %s: dump exit %d and %d, %d and %d lines: %s" % (f, p.returncode, d.returncode, len(plain),
                                                                 len(dem), (p.stderr + d.stderr)[:300]))
        sys.exit(1)
    for a, b in zip(plain, dem):
        m = re.search(r" value=(_Z\S*)$", a)
        if m:
            got[m.group(1)] = b[b.index(" value=") + 7:]
names = sorted(got)
# enough names that the comparison checks something (every sixteenth job's: 378)
if len(names) < (300 if sanitized else 400):
    print("  only %d kernel names compared" % len(names))
    sys.exit(1)
want = subprocess.run(["c++filt", "--no-recurse-limit"], input="\n".join(names) + "\n",
                      capture_output=True, text=True).stdout.splitlines()
ref = dict(zip(names, want))
bad = [n for n in names if got.get(n) != ref[n]]
print("  %d kernel names, %d demangled otherwise than c++filt" % (len(names), len(bad)))
for n in bad[:3]:
    print("  %s\n    got  %s\n    want %s" % (n[:120], got.get(n, "")[:200], ref[n][:200]))
sys.exit(1 if bad else 0)
PY
  [ "$rc" = 0 ] && ok || ko "kernel names demangled otherwise than c++filt does (exit $rc)"
else
  echo "note: no c++filt with --no-recurse-limit: the demangler was not compared with it"
  ok
fi

# a folder of recordings that record no rank (a run and its fix, another
# job) is not one job: each recording is reported on its own, with a note
mkdir -p "$tmp/unranked"
cp "$OLDPWD"/tests/fixtures/c9_item_sync.gwr "$OLDPWD"/tests/fixtures/c1_data_loading.gwr "$tmp/unranked/"
expect_rc 0 "report of a folder of unranked recordings" "$gw" report "$tmp/unranked"
[ "$(grep -c '^gpuwhy report: ' "$tmp/out")" = 2 ] && ok || ko "a folder of unranked recordings: not two reports ($(head -c 200 "$tmp/out"))"
has "$tmp/err" "records a rank" "a folder of unranked recordings: the note says why"
if grep -q "job report" "$tmp/out"; then ko "a folder of unranked recordings reported as one job"; else ok; fi
# ... and with one ranked recording among them: still file by file
RANK=0 WORLD_SIZE=2 "$gw" record -q -o "$tmp/unranked/r0.gwr" -- true 2>/dev/null
expect_rc 0 "report of a folder mixing ranked and unranked recordings" "$gw" report "$tmp/unranked"
[ "$(grep -c '^gpuwhy report: ' "$tmp/out")" = 3 ] && ok || ko "a mixed folder: not three reports ($(head -c 200 "$tmp/out"))"
# --trace=OUT of a folder of two: OUT.0 and OUT.1, checked before the work
echo keep > "$tmp/t.json"
expect_rc 0 "report --trace=OUT of a folder of several, OUT taken: OUT.N written" "$gw" report --trace "$tmp/t.json" "$tmp/unranked"
echo keep > "$tmp/t2.json.1"
expect_rc 1 "report --trace=OUT of a folder, OUT.1 taken: refused before the work" "$gw" report --trace "$tmp/t2.json" "$tmp/unranked"
has "$tmp/err" "t2.json.1" "the refusal names OUT.1"
[ ! -s "$tmp/out" ] && ok || ko "a refused --trace of a folder still printed reports"
# damaged and wrong input
# a folder is the job of its *.gwr (tests/cli/test_ranks.sh); one without any says so
mkdir -p "$tmp/empty-folder"
expect_rc 1 "report of a folder without recordings" "$gw" report "$tmp/empty-folder"
has "$tmp/err" "holds no recording" "a folder without recordings is said"
expect_rc 1 "report of a missing file" "$gw" report nothere.gwr
echo "not a recording" > junk.gwr
expect_rc 1 "report of a non-recording" "$gw" report junk.gwr
has "$tmp/err" "not a gpuwhy recording" "non-recording message"
fixture=$(ls "$OLDPWD"/tests/fixtures/*.gwr 2>/dev/null | head -1)
if [ -n "$fixture" ]; then
  head -c $(( $(stat -c %s "$fixture") / 2 )) "$fixture" > half.gwr
  expect_rc 3 "report of a truncated recording" "$gw" report half.gwr
  has "$tmp/out" "cut short" "truncation warning in the report"
  sed -n 2p "$tmp/out" | grep -q "warning: the recording is cut short" && ok ||
    ko "a truncated recording: the report's second line does not warn ($(sed -n 2p "$tmp/out"))"
  # a diff of it: exit 3, warned on stderr, under BEFORE's name, and in JSON
  expect_rc 3 "diff of a truncated recording" "$gw" diff half.gwr "$fixture"
  has "$tmp/err" "cut short" "diff of a truncated recording: stderr warns"
  has "$tmp/out" "BEFORE (half.gwr) is cut short" "diff of a truncated recording: the text warns under its name"
  "$gw" diff --json half.gwr "$fixture" 2>/dev/null | python3 -c 'import json,sys; d=json.load(sys.stdin); sys.exit(not (d["before"]["read"] == "truncated" and d["after"]["read"] == "ok"))' &&
    ok || ko "diff --json of a truncated recording: before.read is not truncated"
  # cut at a chunk boundary: the one verdict (cut short, exit 3) from dump
  # and report alike, never "no CUDA calls" or "another profiler" for what
  # the cut removed. Boundaries: before the first traced process's chunk
  # (stream != 0, appended at the end) and in the middle of those chunks.
  read -r before middle < <(python3 - "$fixture" <<'PY'
import struct, sys
d = open(sys.argv[1], "rb").read()
off, ends = 16, []
while off + 24 <= len(d):
    stream, stored = struct.unpack_from("<II", d, off + 8)
    ends.append((off, stream))
    off += 24 + stored
inj = [o for o, s in ends if s != 0]
print(inj[0], inj[len(inj) // 2])
PY
)
  head -c "$before" "$fixture" > nocuda.gwr
  head -c "$middle" "$fixture" > midcut.gwr
  for f in nocuda midcut; do
    expect_rc 3 "report of a recording cut at a chunk boundary ($f)" "$gw" report $f.gwr
    has "$tmp/out" "cut short" "cut at a chunk boundary ($f): said"
    grep -q "made no CUDA calls\|another profiler" "$tmp/out" && ko "cut at a chunk boundary ($f): blamed on the program or a profiler" || ok
    expect_rc 3 "dump of a recording cut at a chunk boundary ($f)" "$gw" dump $f.gwr
    has "$tmp/err" "cut short" "dump: cut at a chunk boundary ($f): said"
  done
  "$gw" report --json midcut.gwr > midcut.json 2>/dev/null
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))["damage"]; sys.exit(d["verdict"] != "truncated")' midcut.json \
    && ok || ko "report --json: damage.verdict of a cut recording is not 'truncated'"
  # a bad copy that repeats one chunk of the real recording (a traced
  # process's, in the middle of them), right after itself and at the end:
  # damaged (exit 3), the copy named, its kernels counted once
  python3 - "$fixture" <<'PY'
import struct, sys
d = open(sys.argv[1], "rb").read()
off, chunks = 16, []
while off + 24 <= len(d):
    stream, stored = struct.unpack_from("<II", d, off + 8)
    chunks.append((off, 24 + stored, stream))
    off += 24 + stored
inj = [c for c in chunks if c[2] != 0]
o, n, _ = inj[len(inj) // 2]
open("dup-next.gwr", "wb").write(d[:o + n] + d[o:o + n] + d[o + n:])
open("dup-end.gwr", "wb").write(d + d[o:o + n])
PY
  kernels() { "$gw" report --json "$1" 2>/dev/null | python3 -c 'import json,sys; d=json.load(sys.stdin); print(sum(g["kernels"] for g in d["gpus"]), d["damage"]["verdict"], d["damage"]["chunks_repeated"], d["damage"]["chunks_skipped"])'; }
  orig=$(kernels "$fixture")
  for f in dup-next dup-end; do
    expect_rc 3 "report of a repeated chunk ($f)" "$gw" report $f.gwr
    has "$tmp/out" "1 repeated chunk skipped" "report: the repeated chunk is said ($f)"
    got=$(kernels $f.gwr)
    [ "${got%% *}" = "${orig%% *}" ] && [ "${got#* }" = "damaged 1 0" ] && [ "${orig#* }" = "ok 0 0" ] && ok \
      || ko "repeated chunk ($f): kernels, verdict, repeated, skipped: $got (the recording: $orig)"
    expect_rc 3 "dump of a repeated chunk ($f)" "$gw" dump $f.gwr
    has "$tmp/err" "repeats the one at byte" "dump: the repeated chunk is named ($f)"
  done
  # a FIFO in the parts folder of an unfinished recording: skipped, said, never waited on
  mkdir midcut.gwr.parts && mkfifo midcut.gwr.parts/inject-1.gws
  timeout 20 "$gw" report --json midcut.gwr >fifo.out 2>&1; rc=$?
  [ $rc -eq 3 ] && ok || ko "report with a FIFO in the parts folder: exit $rc (124: it hung)"
  has fifo.out "inject-1.gws is not a regular file (a FIFO)" "the skipped FIFO is named"
  rm -rf midcut.gwr.parts
  # the report reads a file twice: a pipe is copied aside first, same report
  "$gw" report --json "$fixture" | grep -v '"file"' >file.json
  cat "$fixture" | "$gw" report --json /dev/stdin | grep -v '"file"' >pipe.json
  cmp -s file.json pipe.json && ok || ko "report of a pipe differs from the file's"
  cat "$fixture" | TMPDIR=/nonexistent "$gw" report /dev/stdin >"$tmp/out" 2>"$tmp/err"
  [ $? -eq 1 ] && ok || ko "report of a pipe with no writable TMPDIR: not exit 1"
  has "$tmp/err" "TMPDIR" "a pipe with no writable TMPDIR: the message says what to set"
fi
# a SYNTHETIC recording (made here, not recorded) whose second kernel record
# is malformed in a field the report's first pass does not decode: dump and
# report give the same verdict (damaged, exit 3) and say what was skipped
python3 - synth-malformed.gwr <<'PY'
import struct, sys, zlib
def uv(x):
    out = b""
    while x >= 0x80:
        out += bytes([x & 0x7f | 0x80]); x >>= 7
    return out + bytes([x])
def rec(t, body): return uv(t) + uv(len(body)) + body
def meta(k, v): return rec(2, uv(len(k)) + k + v)
good = uv(2 * 2000000000) + uv(1000) + uv(1) + b"".join(uv(x) for x in (0, 1, 7, 64, 1, 1, 256, 1, 1, 1, 32, 0, 0))
bad = uv(2 * 1000000) + uv(1000) + uv(1) + b"".join(uv(x) for x in (0, 1, 7, 64, 1, 1, 256)) + b"\x80" * 11 + b"\x01"
raw = meta(b"record.end_ns", b"1") + meta(b"record.complete", b"1") + rec(1, uv(1) + b"k") + rec(10, good) + rec(10, bad)
chunk = struct.pack("<IBBHIIII", 0x31435747, 1, 0, 0, 0, len(raw), len(raw), zlib.crc32(raw)) + raw
open(sys.argv[1], "wb").write(b"GPUWHY\x1a\n" + bytes([1, 0, 0, 0, 0, 0, 0, 0]) + chunk)
PY
expect_rc 3 "dump of a malformed kernel record" "$gw" dump synth-malformed.gwr
has "$tmp/err" "malformed kernel record" "dump: the malformed record is named"
expect_rc 3 "report of a malformed kernel record" "$gw" report --json synth-malformed.gwr
has "$tmp/out" "1 malformed record" "report: the malformed record is named"
expect_rc 1 "report with no recording here" sh -c "cd /tmp && mkdir -p $tmp/empty && cd $tmp/empty && $gw report"
has "$tmp/err" "gpuwhy record" "no-recording message says what to do"

# inputs the fuzzer once crashed on (tests/fuzz/regressions): a report or a
# clear error, never a crash (exit codes 0, 1 and 3 only; ASan builds abort otherwise)
for f in "$OLDPWD"/tests/fuzz/regressions/*; do
  "$gw" report "$f" >/dev/null 2>&1; rc=$?
  case $rc in 0|1|3) ok ;; *) ko "fuzz regression $(basename "$f"): exit $rc" ;; esac
  # the timeline too, with a small event limit (as the fuzz target draws it)
  GPUWHY_TRACE_LIMIT=64 "$gw" report --trace - "$f" >/dev/null 2>&1; rc=$?
  case $rc in 0|1|3) ok ;; *) ko "fuzz regression $(basename "$f") --trace: exit $rc" ;; esac
done
# the diff target's (tests/fuzz/fuzz_diff.c): split into two recordings and
# compared with the options it chose, in every output (2: a --steps NAME a
# recording lacks)
if command -v python3 >/dev/null; then
  mkdir -p fuzzdiff
  for f in "$OLDPWD"/tests/fuzz/regressions/diff-*; do
    opts=$(python3 "$OLDPWD/tests/fuzz/diff_split.py" "$f" fuzzdiff)
    for out in "" --json "--html -"; do
      "$gw" diff $opts $out fuzzdiff/before.gwr fuzzdiff/after.gwr >/dev/null 2>&1; rc=$?
      case $rc in 0|1|2|3) ok ;; *) ko "fuzz regression $(basename "$f") (diff $opts $out): exit $rc" ;; esac
    done
  done
fi

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
  for _ in $(seq 300); do grep -q ready "$tmp/py.out" && break; sleep 0.1; done
  expect_rc 0 "stack of a Python process" "$gw" stack "$ppid"
  has "$tmp/out" "waiting (<string>:3)" "stack shows the sleeping function and line"
  has "$tmp/out" "<module> (<string>:5)" "stack shows the module line"
  kill "$ppid"; wait "$ppid" 2>/dev/null
  # frame names from the other process with control characters: escaped
  python3 -c 'import time
ns = {"time": time}
exec(compile("def f():\n    print(\"ready\", flush=True)\n    time.sleep(30)\n", "ev\x1b[31m\nil.py", "exec"), ns)
f = ns["f"]
n = "fu\x1b]0;pwn\x07nc"
f.__code__ = f.__code__.replace(co_name=n, **({"co_qualname": n} if hasattr(f.__code__, "co_qualname") else {}))
f()' >"$tmp/py2.out" & ppid=$!
  for _ in $(seq 300); do grep -q ready "$tmp/py2.out" && break; sleep 0.1; done
  expect_rc 0 "stack of a Python process with control characters in names" "$gw" stack "$ppid"
  grep -q $'\033' "$tmp/out" && ko "stack: a raw ESC from a frame name reached the output" || ok
  has "$tmp/out" 'fu\\x1b]0;pwn\\x07nc (ev\\x1b\[31m\\nil.py:3)' "stack: frame and file names escaped on one line"
  kill "$ppid"; wait "$ppid" 2>/dev/null
  # A file named like libpython mapped before the interpreter, unlinked, and
  # a FIFO (or a link to one, or to a device) left under its "(deleted)"
  # name: stack reads the mapping or skips the name, never opens what is
  # there now (an open of a FIFO blocks for ever).
  cat >"$tmp/mapfifo.py" <<'EOF'
import ctypes, os, sys, time
d, kind = sys.argv[1], sys.argv[2]
p = os.path.join(d, "libpython3.11.so")
with open(p, "wb") as f:
    f.write(b"\x7fELF" + bytes(4092))
fd = os.open(p, os.O_RDONLY)
libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long)
# PROT_READ, MAP_SHARED | MAP_FIXED_NOREPLACE at 1 MiB: first in the maps
a = libc.mmap(1 << 20, 4096, 1, 1 | 0x100000, fd, 0)
os.close(fd)
os.unlink(p)
name = p + " (deleted)"
if kind == "fifo":
    os.mkfifo(name)
elif kind == "link":
    os.mkfifo(os.path.join(d, "fifo"))
    os.symlink(os.path.join(d, "fifo"), name)
else:
    os.symlink("/dev/zero", name)
def holding():
    print("ready", hex(a or 0), flush=True)
    time.sleep(float(sys.argv[3]))
holding()
EOF
  for kind in fifo link dev; do
    mkdir "$tmp/maps-$kind"
    # one output file per kind: the child's shell truncates it only once it
    # runs, and the last kind's "ready" must not end this kind's wait
    python3 "$tmp/mapfifo.py" "$tmp/maps-$kind" "$kind" 30 >"$tmp/py3-$kind.out" & ppid=$!
    for _ in $(seq 300); do grep -q ready "$tmp/py3-$kind.out" 2>/dev/null && break; sleep 0.1; done
    has "$tmp/py3-$kind.out" "ready 0x100000" "stack $kind: the file is mapped at 1 MiB"
    grep -q "^00100000-.*libpython3.11.so (deleted)" "/proc/$ppid/maps" && ok || ko "stack $kind: the mapping is not in the maps"
    expect_rc 0 "stack with a $kind under a mapped file's name" timeout 10 "$gw" stack "$ppid"
    has "$tmp/out" "holding (.*mapfifo.py:" "stack $kind: the interpreter was found past the name"
    # without CAP_SYS_ADMIN (a container's root), where the mapping cannot be opened: the name
    nocap="setpriv --bounding-set=-sys_admin,-checkpoint_restore"
    if [ "$(id -u)" = 0 ] && $nocap true 2>/dev/null; then
      expect_rc 0 "stack without CAP_SYS_ADMIN, a $kind under the name" timeout 10 $nocap "$gw" stack "$ppid"
      has "$tmp/out" "holding (.*mapfifo.py:" "stack $kind without CAP_SYS_ADMIN: the interpreter was found past the name"
    fi
    kill "$ppid"; wait "$ppid" 2>/dev/null
  done
fi

# --steps on a SYNTHETIC recording (30 iterations of 102 operations, each
# starting with an input copy; written by the step tests' helper)
if [ -x "$synth" ] && "$synth" --write "$tmp/synth.gwr"; then
  steps_json() { "$gw" report --json "$@" "$tmp/synth.gwr" | python3 -c 'import json,sys; s=json.load(sys.stdin)["steps"]; print(s["count"], s["source"], s["confidence"], s["ops_per_step"], s["marker"])'; }
  [ "$(steps_json)" = "29 auto high 102 [memcpy HtoD pinned]" ] && ok || ko "--steps auto: $(steps_json)"
  [ "$(steps_json --steps auto)" = "29 auto high 102 [memcpy HtoD pinned]" ] && ok || ko "--steps auto given: $(steps_json --steps auto)"
  [ "$(steps_json --steps none)" = "0 none user None None" ] && ok || ko "--steps none: $(steps_json --steps none)"
  [ "$(steps_json --steps kernel:fused_adam)" = "29 kernel user None fused_adam" ] && ok || ko "--steps kernel:fused_adam: $(steps_json --steps kernel:fused_adam)"
  expect_rc 0 "report --steps none" "$gw" report --steps none "$tmp/synth.gwr"
  has "$tmp/out" "Steps: none, as asked (--steps none); analysed in 1.00 s windows" "--steps none says how the run was analysed"
  expect_rc 0 "report -v" "$gw" report -v "$tmp/synth.gwr"
  has "$tmp/out" "Steps: 29, a repeating unit of 102 operations (confidence high)" "the Steps line gives count, source, confidence"
  has "$tmp/out" "how: a repeating unit of 102 operations: 29 of its 29 occurrences" "-v says how the steps were found"
  expect_rc 2 "--steps nvtx: unknown range" "$gw" report --steps nvtx:train_step "$tmp/synth.gwr"
  has "$tmp/err" "fewer than 3 NVTX ranges named 'train_step'" "an unknown NVTX range is named in the error"
  expect_rc 2 "--steps kernel: unknown name" "$gw" report --steps kernel:no_such_kernel "$tmp/synth.gwr"
  has "$tmp/err" "most frequent operations there: 'layernorm_fwd' (360)" "an unknown kernel name lists candidates"
  expect_rc 2 "--steps kernel: ambiguous" "$gw" report --steps kernel:gemm "$tmp/synth.gwr"
  has "$tmp/err" "matches several operation names" "an ambiguous kernel name is refused"
  expect_rc 2 "--steps with a bad value" "$gw" report --steps sometimes "$tmp/synth.gwr"
  has "$tmp/err" "auto, none, nvtx:NAME or kernel:NAME" "--steps says what it takes"
  expect_rc 2 "record --steps" "$gw" record --steps none -o x.gwr -- true
  expect_rc 2 "run --steps with a bad value" "$gw" run --steps kernel: -o x.gwr -- true
  "$gw" run --json --steps none -o runsteps.gwr -- sh -c 'exit 0' 2>/dev/null | python3 -c 'import json,sys; d=json.load(sys.stdin); sys.exit(d["schema"] != "gpuwhy.report/1")' && ok || ko "run --steps reports"
else
  ko "no synthetic recording from $synth"
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
  # the thread's state is read with its stack: on the CPU in the hot loop,
  # asleep in time.sleep (a new sample when only the state changes)
  "$gw" dump --type py_sample py.gwr | grep -q "state=1" && ok || ko "a busy thread's samples say running (state=1)"
  expect_rc 0 "record a sleeping Python program" "$gw" record -q -o sl.gwr -- python3 -c 'import time; time.sleep(1.6)'
  "$gw" dump --type py_sample sl.gwr | grep -q "stack=[1-9][0-9]* state=2" && ok || ko "a sleeping thread's samples say asleep (state=2): $("$gw" dump --type py_sample sl.gwr | head -3)"
  # a target that is not Python: one status with the reason, no error
  expect_rc 0 "record a shell" "$gw" record -q -o sh.gwr -- sh -c 'sleep 0.5'
  "$gw" dump --type py_status sh.gwr | grep -q "code=1 " && ok || ko "non-Python target: status code 1 ($("$gw" dump --type py_status sh.gwr))"
  "$gw" report sh.gwr >"$tmp/out" 2>&1
  has "$tmp/out" "note: no Python stacks for pid" "non-Python target: one note line"
  # the job maps a file named like libpython, unlinks it and leaves a FIFO
  # under the name: the sampler never opens it (it blocked, and record
  # with it, past the job's end and a SIGTERM)
  mkdir "$tmp/maps-rec"
  expect_rc 0 "record a job with a FIFO under a mapped file's name" timeout -k 5 30 "$gw" record -q -o fifo.gwr -- python3 "$tmp/mapfifo.py" "$tmp/maps-rec" fifo 1.5
  "$gw" dump --type py_status fifo.gwr | grep -q "code=0 detail=Python 3" && ok || ko "FIFO under a mapped name: the job's stacks were not read ($("$gw" dump --type py_status fifo.gwr))"
  "$gw" dump --type py_frame fifo.gwr | grep -q "mapfifo.py function=holding" && ok || ko "FIFO under a mapped name: no frame in holding"
  # python3 behind a shell-script shim, as pyenv installs it: one that
  # exec()s the interpreter after a moment (pyenv's), one that runs it as
  # its child. The interpreter is sampled either way, and the report never
  # calls the job "not a Python process" for the shim's sake.
  real=$(python3 -c 'import sys; print(sys.executable)')
  mkdir -p shim-exec shim-child
  printf '#!/bin/sh\nsleep 0.3\nexec "%s" "$@"\n' "$real" > shim-exec/python3
  printf '#!/bin/sh\n"%s" "$@"\n' "$real" > shim-child/python3
  chmod +x shim-exec/python3 shim-child/python3
  busy='import time
t = time.time()
while time.time() - t < 1.5: pass'
  PATH=$PWD/shim-exec:$PATH "$gw" record -q -o shim1.gwr -- python3 -c "$busy" 2>"$tmp/shim1.err"
  tpid=$("$gw" dump --type process shim1.gwr | awk '/is_target=1/ { sub("pid=", "", $4); print $4 }')
  "$gw" dump --type py_status shim1.gwr | grep -qE "pid=$tpid code=0 detail=Python 3.* samples=([5-9]|[1-9][0-9]+) " && ok ||
    ko "exec'ing shim: the interpreter (pid $tpid) was not sampled: $("$gw" dump --type py_status shim1.gwr)
$("$gw" dump --type process shim1.gwr | head -8)
record said: $(tail -5 "$tmp/shim1.err")"
  "$gw" report shim1.gwr > "$tmp/out" 2>&1
  grep -q "not a Python process" "$tmp/out" && ko "exec'ing shim: the report blames the shim: $(grep note "$tmp/out")" || ok
  PATH=$PWD/shim-child:$PATH "$gw" record -q -o shim2.gwr -- python3 -c "$busy" 2>/dev/null
  tpid=$("$gw" dump --type process shim2.gwr | awk '/is_target=1/ { sub("pid=", "", $4); print $4 }')
  cpid=$("$gw" dump --type py_status shim2.gwr | awk '/code=0 / { sub("pid=", "", $4); print $4; exit }')
  exe=$(readlink -f "$real")
  "$gw" report shim2.gwr > "$tmp/out" 2>&1
  [ -n "$cpid" ] && [ "$cpid" != "$tpid" ] && ok || ko "shim with a child interpreter: sampled pid '$cpid', shim $tpid: $("$gw" dump --type py_status shim2.gwr)"
  has "$tmp/out" "note: Python stacks from pid $cpid (Python 3\.[0-9.]*, $exe; [0-9]* samples)" "shim with a child interpreter: the note names what was sampled"
  has "$tmp/out" "pid $tpid, the command gpuwhy started, runs no Python itself" "shim with a child interpreter: the note names the shim"
  grep -q "not a Python process" "$tmp/out" && ko "shim with a child interpreter: the report blames the shim" || ok
fi

# each injection library exports InitializeInjection only, and none links
# CUPTI: it is found when the job runs
for l in "$lib" "$(dirname "$lib")/libgpuwhy-inject-cu12.so"; do
  [ -f "$l" ] || continue
  syms=$(nm -D --defined-only "$l" | awk '{print $3}' | sort | tr '\n' ' ')
  [ "$syms" = "InitializeInjection InitializeInjectionNvtx2 " ] && ok || ko "$(basename "$l") exports: $syms"
  readelf -d "$l" | grep -q 'NEEDED.*libcupti' && ko "$(basename "$l") links CUPTI" || ok
done

# the injection library in a host program (no GPU needed): the job's signals
# never run on its flush thread, and the job's exit never waits on a flush
# thread stuck in a write (GW_FAIL_MODE=hang: its writes block for good)
if [ -f "$lib" ] && [ -x "${INJHOST:-}" ] && [ -f "${FAILWRITE:-}" ]; then
  mkdir -p inj1 inj2
  # an ASan build of the library needs its runtime loaded first
  asan=$(ldd "$lib" 2>/dev/null | awk '/libasan/ {print $3}')
  out=$(LD_PRELOAD=$asan GPUWHY_PARTS_DIR=$PWD/inj1 "$INJHOST" "$lib" signal)
  [ "$out" = main ] && ok || ko "a signal blocked by the job's threads ran on the injection's thread ($out)"
  # the exact-sync-site reader is opened by the flush thread, not in a
  # callback of the job: its status is there though no call synchronized
  "$gw" dump --type py_status inj1/* | grep -q "code=1 .*not a Python process" && ok ||
    ko "injection: the stack reader was not opened off the job's calls ($("$gw" dump --type py_status inj1/*))"
  pre=$FAILWRITE
  [ -n "$asan" ] && pre="$asan $FAILWRITE"
  LD_PRELOAD=$pre GW_FAIL_MODE=hang GW_FAIL_PATH=inject- GPUWHY_PARTS_DIR=$PWD/inj2 \
    timeout 30 "$INJHOST" "$lib" exit; rc=$?
  [ $rc -eq 7 ] && ok || ko "a flush stuck in a write held up the job's exit (exit $rc, want 7; 124: hung)"
  n=$(ls inj2 | wc -l)
  [ "$n" -eq 1 ] && ok || ko "injection in a host program: $n streams, want 1"
fi

# CUPTI at run time, in a host program (no GPU): the stream names the CUPTI
# used; a library finding the other CUDA major's CUPTI hands over to its
# sibling; with none usable the job runs on and the report says why in a line
if [ -f "$lib" ] && [ -x "${INJHOST:-}" ]; then
  mkdir -p cup1 cup2 cup3
  asan=$(ldd "$lib" 2>/dev/null | awk '/libasan/ {print $3}')
  out=$(LD_PRELOAD=$asan GPUWHY_CUPTI=/nonexistent/libcupti.so.13 GPUWHY_PARTS_DIR=$PWD/cup1 "$INJHOST" "$lib" signal)
  [ "$out" = main ] && ok || ko "no CUPTI: the host program did not run on as before ($out)"
  "$gw" report cup1/*.gws >cup1.rep 2>&1
  has cup1.rep "no GPU timeline from pid [0-9]*, host-side data only" "no CUPTI: the report says so"
  has cup1.rep "GPUWHY_CUPTI=/nonexistent/libcupti.so.13 is not a CUPTI" "no CUPTI: and why"
  grep -q "made no CUDA calls" cup1.rep && ko "no CUPTI reported as a program without CUDA calls" || ok
  tk=$(ls /usr/local/cuda/lib64/libcupti.so.1[3-9] 2>/dev/null | head -1)
  lib12=$(dirname "$lib")/libgpuwhy-inject-cu12.so
  if [ -n "$tk" ] && [ -f "$lib12" ]; then
    # the CUDA 12 library given the toolkit's CUPTI 13: the CUDA 13 one records
    LD_PRELOAD=$asan GPUWHY_CUPTI=$tk GPUWHY_PARTS_DIR=$PWD/cup2 "$INJHOST" "$lib12" signal >/dev/null
    "$gw" report --json cup2/*.gws >cup2.json 2>/dev/null
    python3 - "$tk" cup2.json <<'PY' && ok || ko "hand-over to the CUDA 13 library: $(head -c 300 cup2.json)"
import json, sys
d = json.load(open(sys.argv[2]))
c = d["cupti"]
assert c["path"] == sys.argv[1] and c["version"].startswith("13.") and c["source"] == "GPUWHY_CUPTI", c
PY
    n=$(ls cup2 | wc -l)
    [ "$n" -eq 1 ] && ok || ko "hand-over: $n streams, want 1"
    cu12=$(ls "$OLDPWD"/.gpudeps/cu12-*/nvidia/cuda_cupti/lib/libcupti.so.12 2>/dev/null | head -1)
    if [ -n "$cu12" ]; then # and back: the CUDA 13 library given CUPTI 12
      LD_PRELOAD=$asan GPUWHY_CUPTI=$cu12 GPUWHY_PARTS_DIR=$PWD/cup3 "$INJHOST" "$lib" signal >/dev/null
      "$gw" report -v cup3/*.gws >cup3.rep 2>&1
      has cup3.rep "^  CUPTI: 12\.[0-9] (API [0-9]*), $cu12 (from GPUWHY_CUPTI)" "hand-over to the CUDA 12 library"
      # no sibling to hand over to (a renamed library): the next CUPTI of its own major
      mkdir -p cup4 lone && cp "$lib" lone/libinj.so
      LD_PRELOAD=$asan GPUWHY_CUPTI_DIRS=$(dirname "$cu12") GPUWHY_PARTS_DIR=$PWD/cup4 "$INJHOST" lone/libinj.so signal >/dev/null
      "$gw" report -v cup4/*.gws >cup4.rep 2>&1
      has cup4.rep "^  CUPTI: 13\.[0-9]* (API [0-9]*), " "no sibling: a CUPTI 13 further on"
    fi
  fi
fi

# NVTX reaches the CUPTI the library traces with: the recorder points
# NVTX_INJECTION64_PATH at the library, which hands NVTX's call to the CUPTI
# its search finds, here before CUDA initializes (a job's NVTX range at
# import). A CUPTI lacking an entry point gpuwhy uses is named in the report.
if [ -f "$lib" ] && [ -x "${INJHOST:-}" ] && [ -f "${FAKECUPTI:-}" ]; then
  mkdir -p nvtx1
  asan=$(ldd "$lib" 2>/dev/null | awk '/libasan/ {print $3}')
  out=$(LD_PRELOAD=$asan FAKECUPTI_OUT=$PWD/nvtx1.out GPUWHY_CUPTI=$FAKECUPTI GPUWHY_PARTS_DIR=$PWD/nvtx1 \
        "$INJHOST" "$lib" nvtx)
  [ "$out" = "nvtx 1" ] && ok || ko "NVTX's injection call: $out (want nvtx 1)"
  grep -q "^nvtx 0x5eed" nvtx1.out 2>/dev/null && ok || ko "NVTX was not handed to the CUPTI found: $(cat nvtx1.out 2>&1)"
  "$gw" report --json nvtx1/*.gws >nvtx1.json 2>/dev/null
  has nvtx1.json "is CUPTI 13 but lacks cupti[A-Za-z]*, which gpuwhy uses" "a CUPTI lacking an entry point: named"
  out=$(LD_PRELOAD=$asan GPUWHY_CUPTI=/nonexistent/libcupti.so.13 GPUWHY_PARTS_DIR=$PWD/nvtx1 "$INJHOST" "$lib" nvtx)
  [ "$out" = "nvtx 0" ] && ok || ko "no CUPTI: NVTX's call must fail and the job run on ($out)"
fi

echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
