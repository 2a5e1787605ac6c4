#!/usr/bin/env bash
# The recorder never harms the job or a file it did not make: the parts
# folder swapped for a link, files of the job's in it, signals meant for the
# job, a closed pipe, the file size limit, no descriptor or disk left, an
# output folder that is missing. Prints "N passed, N failed".
set -u
cd "$(dirname "$0")/../.."
gw=${GPUWHY:-$PWD/gpuwhy}
fixture=$PWD/tests/fixtures/c11_memory_bound.gwr
tmp=$(mktemp -d /tmp/gw-harm-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
pass=0; fail=0
ok() { pass=$((pass+1)); }
ko() { echo "FAIL $*"; fail=$((fail+1)); }
has() { # file, pattern, description
  if grep -q -- "$2" "$1"; then ok; else ko "$3: '$2' not in $(head -c 400 "$1")"; fi
}
complete() { "$gw" dump --type meta "$1" 2>/dev/null | grep -q "record.complete=1"; }
# an ASan build needs its runtime first in a preload list
pre=${FAILWRITE:-}
asan=$(ldd "$gw" 2>/dev/null | awk '/libasan/ {print $3}')
[ -n "$asan" ] && [ -n "$pre" ] && pre="$asan $pre"
cd "$tmp"

# --- the parts folder: only what gpuwhy made is read or deleted -------------

# the job swaps OUTPUT.parts for a link to a folder of the user's: nothing
# there is touched, the link is left, and gpuwhy says so
mkdir -p v && echo x >v/precious
"$gw" record -q -o r.gwr -- sh -c 'rm -r r.gwr.parts; ln -s "$PWD/v" r.gwr.parts; exit 3' 2>r.err; rc=$?
[ $rc -eq 3 ] && ok || ko "parts folder swapped for a link: exit $rc, want 3"
[ "$(cat v/precious 2>/dev/null)" = x ] && ok || ko "parts folder swapped for a link: the linked folder's file was deleted"
[ -L r.gwr.parts ] && ok || ko "parts folder swapped for a link: the link was removed"
has r.err "renamed or replaced while the job ran" "parts folder swapped: the warning"
complete r.gwr && ok || ko "parts folder swapped: the recording is not finalized"

# the folder moved away with a traced stream in it, a link put in its place:
# the stream is merged from the folder gpuwhy made, the link's folder untouched
mkdir -p w && echo y >w/keep
"$gw" record -q -o mv.gwr -- sh -c "cp '$fixture' mv.gwr.parts/inject-\$\$.gws; mv mv.gwr.parts moved;
  ln -s '$PWD/w' mv.gwr.parts" 2>mv.err; rc=$?
[ $rc -eq 0 ] && ok || ko "parts folder moved: exit $rc"
"$gw" dump --type meta mv.gwr 2>/dev/null | grep -q "record.inject_streams=1" && ok ||
  ko "parts folder moved: its stream was not merged through the held folder"
[ -z "$(ls moved 2>/dev/null)" ] && ok || ko "parts folder moved: the merged stream is still in it ($(ls moved))"
[ "$(ls w)" = keep ] && [ "$(cat w/keep)" = y ] && ok || ko "parts folder moved: the linked folder changed ($(ls w))"
"$gw" report mv.gwr >mv.rep 2>&1
has mv.rep "^Steps: [0-9]" "parts folder moved: the report reads the merged stream"

# files the job writes into the folder, a link and a hard link named like
# streams: none is read or deleted; the folder stays; each kind is said once
echo keep >outside
"$gw" record -q -o own.gwr -- sh -c "echo mine >own.gwr.parts/notes.txt;
  ln -s '$PWD/outside' own.gwr.parts/inject-1.gws; ln '$PWD/outside' own.gwr.parts/inject-2.gws;
  cp '$fixture' own.gwr.parts/inject-\$\$.gws; exit 5" 2>own.err; rc=$?
[ $rc -eq 5 ] && ok || ko "the job's files in the parts folder: exit $rc, want 5"
[ "$(cat own.gwr.parts/notes.txt 2>/dev/null)" = mine ] && ok || ko "a file the job wrote into the parts folder was deleted"
[ -L own.gwr.parts/inject-1.gws ] && [ "$(cat outside)" = keep ] && ok ||
  ko "a link named like a stream was followed or deleted"
[ -f own.gwr.parts/inject-2.gws ] && [ "$(stat -c %h outside)" = 2 ] && ok ||
  ko "a hard link named like a stream was deleted"
[ "$(ls own.gwr.parts | wc -l)" = 3 ] && ok || ko "the parts folder holds $(ls own.gwr.parts | tr '\n' ' '), want the job's 3 entries"
has own.err "holds 3 entries gpuwhy did not make" "the job's files: the warning counts them"
has own.err "and so is the folder" "the job's files: the warning says the folder stays"
"$gw" dump --type meta own.gwr 2>/dev/null | grep -q "record.inject_streams=1" && ok ||
  ko "the job's files: the real stream beside them was not merged"
complete own.gwr && ok || ko "the job's files: the recording is not finalized"

# a stream file of another user's (as root: the job hands one over) is
# neither merged nor deleted
if [ "$(id -u)" = 0 ] && id nobody >/dev/null 2>&1; then
  "$gw" record -q -o other.gwr -- sh -c "cp '$fixture' other.gwr.parts/inject-7.gws; chown nobody other.gwr.parts/inject-7.gws" 2>other.err
  [ "$(stat -c %U other.gwr.parts/inject-7.gws 2>/dev/null)" = nobody ] && cmp -s other.gwr.parts/inject-7.gws "$fixture" && ok ||
    ko "another user's stream file in the parts folder was deleted or changed"
  "$gw" dump --type meta other.gwr 2>/dev/null | grep -q "record.inject_streams=0" && ok ||
    ko "another user's stream file was merged"
fi
# a FIFO named like a stream is never opened (the merge would wait on it)
timeout 20 "$gw" record -q -o fifo.gwr -- sh -c 'mkfifo fifo.gwr.parts/inject-9.gws' 2>/dev/null; rc=$?
[ $rc -eq 0 ] && [ -p fifo.gwr.parts/inject-9.gws ] && ok || ko "a FIFO in the parts folder: exit $rc (124: the merge waited on it)"
# a stop file the job made keeps the folder, and gpuwhy says so
"$gw" record -q -o stop.gwr -- sh -c 'touch stop.gwr.parts/stop' 2>stop.err
[ -f stop.gwr.parts/stop ] && ok || ko "a stop file the job made was deleted"
has stop.err "stop.gwr.parts is left" "a stop file the job made: the folder left is said"

# gpuwhy's stop file (--duration) and ring segments are removed with the folder
"$gw" record -q --duration 0.3 -o dur.gwr -- sh -c 'sleep 1.5' && [ ! -e dur.gwr.parts ] && ok ||
  ko "--duration: the parts folder (stop file) was left: $(ls dur.gwr.parts 2>&1)"
"$gw" record -q --ring --max-size 1M -o ring.gwr -- sh -c 'sleep 1.2' && [ ! -e ring.gwr.parts ] && ok ||
  ko "--ring: the parts folder was left: $(ls ring.gwr.parts 2>&1)"

# --- signals meant for the job reach it; gpuwhy never dies of them ----------

# each signal a job may rely on (SIGUSR1 and SIGUSR2: Slurm --signal,
# submitit, Lightning's preemption warnings), sent to gpuwhy, reaches the
# job's handler; the job's status is returned and the recording finalized
# (a signal this shell ignores, as under nohup, stays ignored in the job, as
# it would without gpuwhy, and a shell cannot trap it: then that is checked)
ignored() { # signal name: whether this shell's SigIgn mask holds it
  local n mask
  n=$(kill -l "$1") && mask=$(awk '/^SigIgn:/ { print $2 }' /proc/$$/status) &&
    [ $(( (16#$mask >> (n - 1)) & 1 )) = 1 ]
}
for s in USR1 USR2 ALRM VTALRM PROF XCPU PWR PIPE HUP RTMIN+3; do
  rm -f sig.gwr sig.txt
  if ignored "$s"; then
    n=$(kill -l "$s")
    "$gw" record -q -o sig.gwr -- sh -c 'awk "/^SigIgn:/ { print \$2 }" /proc/$$/status >sig.txt'
    m=$(cat sig.txt 2>/dev/null || echo 0)
    [ $(( (16#$m >> (n - 1)) & 1 )) = 1 ] && ok ||
      ko "SIG$s ignored here (nohup) is not ignored in the job: its SigIgn is $m"
    continue
  fi
  "$gw" record -q -o sig.gwr -- bash -c "trap 'echo got >sig.txt; exit 9' $s; touch sig.ready; sleep 20 & wait" &
  p=$!
  i=0; while [ ! -e sig.ready ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done; sleep 0.2
  kill -s "$s" $p 2>/dev/null || kill "-$s" $p
  wait $p; rc=$?
  rm -f sig.ready
  [ $rc -eq 9 ] && [ "$(cat sig.txt 2>/dev/null)" = got ] && complete sig.gwr && ok ||
    ko "SIG$s to gpuwhy: exit $rc (want 9, the job's), job handler ran: $(cat sig.txt 2>/dev/null || echo no)"
done
# a job without a handler dies of the signal, as it would alone: 128+N
"$gw" record -q -o usr2.gwr -- sh -c 'touch u.ready; sleep 20' &
p=$!
i=0; while [ ! -e u.ready ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done; sleep 0.2
kill -USR2 $p; wait $p; rc=$?
[ $rc -eq $((128 + $(kill -l USR2))) ] && complete usr2.gwr && ok ||
  ko "SIGUSR2, no handler in the job: exit $rc, want $((128 + $(kill -l USR2))) and a finalized recording"

# the job starts with the caller's ignored signals and blocked mask, nothing
# of gpuwhy's (SIGPIPE and SIGXFSZ, which gpuwhy ignores for itself, at their
# default unless the caller ignored them)
cat >mask.py <<'PY'
import os, signal, sys
signal.signal(signal.SIGPIPE, signal.SIG_DFL)
for s in (signal.SIGUSR2, signal.SIGALRM):
    signal.signal(s, signal.SIG_IGN)
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGWINCH, signal.SIGUSR1})
os.execvp(sys.argv[1], sys.argv[1:])
PY
python3 mask.py grep -E '^Sig(Ign|Blk)' /proc/self/status >mask.want
python3 mask.py "$gw" record -q -o mask.gwr -- grep -E '^Sig(Ign|Blk)' /proc/self/status >mask.out 2>&1
[ -s mask.want ] && cmp -s mask.want mask.out && ok ||
  ko "the job's ignored and blocked signals: $(tr '\n' ' ' <mask.out), want $(tr '\n' ' ' <mask.want)"

# --- a closed pipe, the file size limit -------------------------------------

# stdout closed before gpuwhy run prints the report: the job's status, and
# one line about the write error (before: 141, SIGPIPE)
"$gw" run -o pipe1.gwr -- sh -c 'sleep 0.5; exit 7' 2>pipe1.err | true
rc=${PIPESTATUS[0]}
[ $rc -eq 7 ] && ok || ko "run into a closed pipe: exit $rc, want 7 (the job's)"
[ "$(grep -c 'write error on standard output' pipe1.err)" = 1 ] && ok ||
  ko "run into a closed pipe: the write error said $(grep -c 'write error' pipe1.err) times, want once"
complete pipe1.gwr && ok || ko "run into a closed pipe: the recording is not finalized"
# the job ended well but its report could not be written: 1
"$gw" run -o pipe2.gwr -- sh -c 'sleep 0.5' 2>/dev/null | true
rc=${PIPESTATUS[0]}
[ $rc -eq 1 ] && ok || ko "run into a closed pipe, job exit 0: exit $rc, want 1 (the report was lost)"
# stderr the closed pipe: gpuwhy's notes find it closed
"$gw" run -o pipe3.gwr -- sh -c 'sleep 0.5; exit 7' 2>&1 >/dev/null | true
rc=${PIPESTATUS[0]}
[ $rc -eq 7 ] && ok || ko "stderr a closed pipe: exit $rc, want 7"
"$gw" record -o pipe4.gwr -- sh -c 'sleep 0.5; exit 6' 2>&1 | true
rc=${PIPESTATUS[0]}
[ $rc -eq 6 ] && complete pipe4.gwr && ok || ko "record, stderr a closed pipe: exit $rc, want 6"

# ulimit -f: gpuwhy's writes past the limit fail (EFBIG) as on a full disk;
# the job runs to its end and its status is returned (before: 153, SIGXFSZ)
(ulimit -f 1; exec "$gw" record -q -o fsz.gwr -- sh -c 'sleep 1; echo ran; exit 5') >fsz.out 2>fsz.err; rc=$?
[ $rc -eq 5 ] && ok || ko "ulimit -f 1: exit $rc, want 5"
has fsz.out "^ran$" "ulimit -f 1: the job ran to its end"
has fsz.err "File too large" "ulimit -f 1: says why records were lost"
"$gw" dump fsz.gwr >/dev/null 2>&1; rc=$?
[ $rc -eq 0 ] || [ $rc -eq 3 ] && ok || ko "ulimit -f 1: the part written reads back (dump exit $rc)"
# not even the header fits: the job runs untraced
# (read through a pipe: under the limit the job could not write a file either)
(ulimit -f 0; exec "$gw" record -q -o fsz0.gwr -- sh -c 'echo ran; exit 5') 2>&1 | cat >fsz0.out
rc=${PIPESTATUS[0]}
[ $rc -eq 5 ] && grep -q '^ran$' fsz0.out && ok || ko "ulimit -f 0: exit $rc, want 5 and the job's output"
has fsz0.out "the job runs untraced" "ulimit -f 0: the warning"
[ ! -e fsz0.gwr ] && [ ! -e fsz0.gwr.parts ] && ok || ko "ulimit -f 0: an empty recording was left"

# --- the recording cannot be set up: the job runs all the same --------------

for n in 4 5 6 7 8 10 16; do
  rm -rf nofd.gwr nofd.gwr.parts
  (ulimit -n $n; exec "$gw" record -q -o nofd.gwr -- sh -c 'echo ran; exit 3') >nofd.out 2>nofd.err; rc=$?
  [ $rc -eq 3 ] && grep -q '^ran$' nofd.out && ok ||
    ko "ulimit -n $n: exit $rc, want 3 (the job's) ($(head -c 300 nofd.err))"
done
(ulimit -n 4; exec "$gw" record -q -o nofd4.gwr -- true) 2>nofd4.err
[ "$(grep -c . nofd4.err)" = 1 ] && grep -q "the job runs untraced" nofd4.err && ok ||
  ko "ulimit -n 4: want one line of warning, got: $(cat nofd4.err)"
if [ -n "$pre" ] && [ -f "${FAILWRITE:-}" ]; then
  # a disk 100% full: not even the file's header is written
  LD_PRELOAD=$pre GW_FAIL_PATH=full0.gwr GW_FAIL_AFTER=0 \
    "$gw" run -o full0.gwr -- sh -c 'echo ran; exit 6' >full0.out 2>full0.err; rc=$?
  [ $rc -eq 6 ] && grep -q '^ran$' full0.out && ok || ko "a full disk: exit $rc, want 6 and the job's output ($(cat full0.err))"
  has full0.err "No space left on device): the job runs untraced" "a full disk: the warning says why"
  [ ! -e full0.gwr ] && [ ! -e full0.gwr.parts ] && ok || ko "a full disk: files were left behind"
  # no block left for the parts folder
  LD_PRELOAD=$pre GW_FAIL_MKDIR=mk.gwr.parts "$gw" record -q -o mk.gwr -- sh -c 'exit 4' 2>mk.err; rc=$?
  [ $rc -eq 4 ] && [ ! -e mk.gwr ] && ok || ko "no room for the parts folder: exit $rc, want 4, nothing left"
  has mk.err "cannot create .*mk.gwr.parts: No space left on device" "no room for the parts folder: the warning"
fi
# the line: a name the user chose that cannot be used is refused before the job
echo keep >taken.gwr
"$gw" record -q -o taken.gwr -- touch ran1 2>/dev/null; rc=$?
[ $rc -eq 125 ] && [ ! -e ran1 ] && [ "$(cat taken.gwr)" = keep ] && ok || ko "an existing output: exit $rc, want 125, job not run"
"$gw" record -q -o nodir/x.gwr -- touch ran2 2>/dev/null; rc=$?
[ $rc -eq 125 ] && [ ! -e ran2 ] && ok || ko "an output in a missing folder: exit $rc, want 125, job not run"

# --- the report's outputs are checked before the job ------------------------

for opt in --json=nodir/x.json "--trace nodir/t.json" "--html nodir/h.html"; do
  rm -f ran3 out3.gwr
  "$gw" run -o out3.gwr $opt -- touch ran3 >/dev/null 2>out3.err; rc=$?
  [ $rc -eq 2 ] && [ ! -e ran3 ] && [ ! -e out3.gwr ] && ok ||
    ko "run $opt: exit $rc, want 2 before the job runs (it ran: $([ -e ran3 ] && echo yes || echo no))"
  has out3.err "nodir does not exist" "run $opt: the message names the missing folder"
done
mkdir -p adir
"$gw" run -o out4.gwr --html adir -- touch ran4 >/dev/null 2>out4.err; rc=$?
[ $rc -eq 2 ] && [ ! -e ran4 ] && ok || ko "run --html onto a folder: exit $rc, want 2 before the job"
# a device is written into, not refused (its folder need not be writable)
"$gw" run -q -o dev.gwr --json=/dev/null -- true >/dev/null 2>&1 && ok || ko "run --json=/dev/null was refused"

echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
