#!/usr/bin/env bash
# Several ranks of one job, without a GPU: the per-rank output names of
# record -o (%r %l %h %p %%), the rank and clock meta, and the job report
# of SYNTHETIC rank recordings (written by build/tests/test_ranks --write):
# the rank table, the cross-rank findings, damaged and missing ranks,
# --rank N, --json. Prints "N passed, N failed".
set -u
cd "$(dirname "$0")/../.."
gw=${GPUWHY:-$PWD/gpuwhy}
synth=$PWD/${BUILD:-build}/tests/test_ranks # writes synthetic rank recordings (--write DIR ...)
tmp=$(mktemp -d /tmp/gw-ranks-XXXXXX)
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
  if grep -q -- "$2" "$1"; then ok; else ko "$3: '$2' not in $(head -c 400 "$1")"; fi
}
meta() { "$gw" dump --type meta "$1" | sed -n "s/^meta  *0  *$2=//p" | head -1; }

cd "$tmp"
host=$(hostname); host=${host%%.*}
# -o with %r: the launchers' variables, first set wins
for v in RANK SLURM_PROCID OMPI_COMM_WORLD_RANK PMI_RANK; do
  env -u RANK -u SLURM_PROCID -u OMPI_COMM_WORLD_RANK -u PMI_RANK "$v=5" \
    "$gw" record -q -o "r-$v-%r.gwr" -- true
  [ -f "r-$v-5.gwr" ] && ok || ko "%r from $v: $(ls)"
  [ "$(meta "r-$v-5.gwr" job.rank)" = 5 ] && [ "$(meta "r-$v-5.gwr" job.rank_from)" = "$v" ] && ok ||
    ko "job.rank and job.rank_from from $v"
done
RANK=1 SLURM_PROCID=7 "$gw" record -q -o first-%r.gwr -- true
[ -f first-1.gwr ] && ok || ko "RANK comes before SLURM_PROCID"
# srun's variables: rank, local rank, world size, host, pid, a percent sign
env -u RANK -u LOCAL_RANK -u WORLD_SIZE SLURM_PROCID=3 SLURM_LOCALID=1 SLURM_NTASKS=8 \
  "$gw" record -q -o 'run-%h-%r-%l-%%.gwr' -- true
f="run-$host-3-1-%.gwr"
[ -f "$f" ] && ok || ko "%h-%r-%l-%%: $(ls)"
[ "$(meta "$f" job.rank)" = 3 ] && [ "$(meta "$f" job.local_rank)" = 1 ] && [ "$(meta "$f" job.world_size)" = 8 ] &&
  [ "$(meta "$f" host.name)" = "$host" ] && ok || ko "rank, local rank, world size and host in the meta"
"$gw" record -q -o 'p-%p.gwr' -- true
ls p-[0-9]*.gwr >/dev/null 2>&1 && ok || ko "%p: $(ls)"
# both clock pairs, the end after the start, the realtime offset the same within 1 ms
sm=$(meta "$f" clock.start_mono_ns); sr=$(meta "$f" clock.start_real_ns)
em=$(meta "$f" clock.end_mono_ns); er=$(meta "$f" clock.end_real_ns)
python3 -c "import sys; sm,sr,em,er=map(int,sys.argv[1:]); sys.exit(0 if em>sm and abs((sr-sm)-(er-em))<1e6 else 1)" \
  "${sm:-0}" "${sr:-0}" "${em:-0}" "${er:-0}" && ok || ko "clock pairs at start and end: $sm $sr $em $er"
[ -n "$(meta "$f" clock.start_err_ns)" ] && ok || ko "clock.start_err_ns"
# %r with no rank variable: an error naming them, nothing run or made
expect_rc 125 "%r without a rank" env -u RANK -u SLURM_PROCID -u OMPI_COMM_WORLD_RANK -u PMI_RANK \
  "$gw" record -o 'x-%r.gwr' -- sh -c 'touch ran'
has "$tmp/err" "RANK, SLURM_PROCID, OMPI_COMM_WORLD_RANK, PMI_RANK" "the error names the variables"
[ ! -e ran ] && [ ! -e 'x-%r.gwr' ] && ok || ko "%r without a rank ran the command or made a file"
expect_rc 125 "%l without a local rank" env -u LOCAL_RANK -u SLURM_LOCALID -u OMPI_COMM_WORLD_LOCAL_RANK -u MPI_LOCALRANKID \
  "$gw" record -o 'x-%l.gwr' -- true
has "$tmp/err" "LOCAL_RANK, SLURM_LOCALID" "the %l error names the variables"
expect_rc 125 "an unknown %q" "$gw" record -o 'x-%q.gwr' -- true
has "$tmp/err" "not a field" "an unknown field is named"
# run takes -o too
RANK=2 "$gw" run -q -o run2-%r.gwr -- true >/dev/null 2>&1
[ -f run2-2.gwr ] && ok || ko "run -o expands %r"
"$gw" record --help | grep -q '%r the rank' && ok || ko "record --help documents %r"
echo "$pass passed, $fail failed"; [ "$fail" -eq 0 ]
