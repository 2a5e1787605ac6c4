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
. tests/cli/lib.sh
has_flat() { # file, text, description: the text across the report's wrapped lines
  if tr '\n' ' ' < "$1" | tr -s ' ' | grep -qF -- "$2"; then ok; else ko "$3: '$2' not in $(head -c 400 "$1")"; fi
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

# a launcher's ranks, as srun starts them: one gpuwhy per rank, one file each, then one job report
mkdir launched
for r in 0 1; do
  env -u SLURM_PROCID RANK=$r WORLD_SIZE=2 LOCAL_RANK=$r "$gw" record -q -o "launched/run-%h-%r.gwr" -- sh -c 'sleep 0.2' &
done
wait
[ -f "launched/run-$host-0.gwr" ] && [ -f "launched/run-$host-1.gwr" ] && ok || ko "one file per rank: $(ls launched)"
expect_rc 0 "report of a folder of ranks" "$gw" report launched/
has "$tmp/out" "gpuwhy job report: 2 recordings, 2 analysed, world size 2" "the job report's header"
has "$tmp/out" "clocks: realtime pairs only" "no collectives: aligned by the realtime pairs"
grep -Eq "^ +1  $host " "$tmp/out" && ok || ko "rank 1's row names its host: $(cat "$tmp/out")"

# SYNTHETIC ranks (tests/unit/test_ranks.c): a slow rank 2, rank 0 checkpointing every 10 steps
mkdir job
"$synth" --write job 4 60
expect_rc 0 "report of a synthetic job" "$gw" report job
has "$tmp/out" "gpuwhy job report: 4 recordings, 4 analysed, world size 4" "4 ranks"
has "$tmp/out" "Rank 2 is the straggler: last into 9[0-9]% of the collectives" "the straggler named"
has_flat "$tmp/out" "Work on rank 0 only (checkpointing): the other ranks wait 27.0 ms for it, about every 10 steps" "rank 0's checkpoint named"
has "$tmp/out" "rank 0: \[[a-z]*\] \[C14\] Checkpointing" "rank 0's own finding grouped, with its severity"
res=$(sed -n 's/.*residual alignment error \([0-9.]*\) .*/\1/p' "$tmp/out")
python3 -c "import sys; sys.exit(0 if 0 <= float(sys.argv[1]) <= 10 else 1)" "${res:-99}" && ok || ko "residual under 10 us: '$res'"
"$gw" report job/synthetic-rank-*.gwr > files.txt 2>&1
cmp -s "$tmp/out" files.txt && ok || ko "files and their folder give the same job report"
expect_rc 0 "--rank 2" "$gw" report --rank 2 job
has "$tmp/out" "gpuwhy report: job/synthetic-rank-2.gwr" "--rank 2 prints rank 2's own report"
expect_rc 2 "--rank 9 of 4 (a bad argument)" "$gw" report --rank 9 job
has "$tmp/err" "no recording of rank 9" "a rank not recorded is said"
expect_rc 2 "--rank x" "$gw" report --rank x job
# --html of a job: its page (the ranks, the causes across them, each rank's findings)
expect_rc 0 "--html of a job" "$gw" report --html t.html job
grep -q "</html>" t.html && grep -q 'id="rank-table"' t.html && grep -q 'data-rule="X1.straggler"' t.html &&
  grep -q 'id="groups"' t.html && ok || ko "--html of a job: no page with the ranks and X1 ($(head -c 200 t.html))"
[ "$(grep -c 'id="rank-bar-' t.html)" -ge 2 ] && ok || ko "--html of a job: a step bar per rank"
expect_rc 0 "--html - of a job" "$gw" report --html - job
grep -q "</html>" "$tmp/out" && ! grep -q "^Across ranks" "$tmp/out" && ok ||
  ko "--html - of a job: the page alone on standard output"
echo keep > kept.html
expect_rc 1 "--html of a job over an existing file" "$gw" report --html kept.html job
[ "$(cat kept.html)" = keep ] && ok || ko "--html of a job wrote over an existing file"
expect_rc 4 "--fail-on warning" "$gw" report --fail-on warning job
"$gw" report --json job > job.json
python3 - job.json <<'PY' && ok || ko "the job's JSON: $(head -c 300 job.json)"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["schema"] == "gpuwhy.job/1" and d["world_size"] == 4 and [r["rank"] for r in d["ranks"]] == [0, 1, 2, 3]
x1 = [f for f in d["findings"] if f["cause"] == "X1"][0]
x3 = [f for f in d["findings"] if f["cause"] == "X3"][0]
assert x1["rank"] == 2 and 2.5 < x1["saved_per_step_ms"] < 3.5, x1
assert x3["rank"] == 0 and "checkpointing" in x3["title"], x3
assert d["alignment"]["by"] == "collectives" and d["alignment"]["residual_us"] <= 10
assert all(r["host"] == "synth-node0" and r["devices"] == [0] and r["steps"] > 50 for r in d["ranks"])
assert d["ranks"][0]["top_finding"]["cause"] == "C14"
PY
# damaged and missing ranks: named, the rest reported
cp -r job bad
rm bad/synthetic-rank-3.gwr
truncate -s -100 bad/synthetic-rank-1.gwr
expect_rc 3 "a rank cut short" "$gw" report bad
has "$tmp/out" "missing: rank 3 of 4" "the missing rank named"
has "$tmp/out" "damaged: rank 1 (bad/synthetic-rank-1.gwr): the recording is cut short" "the cut rank named"
has "$tmp/out" "Work on rank 0 only (checkpointing)" "the rest reported"
echo "not a recording" > bad/notes.gwr
expect_rc 1 "a file that is no recording" "$gw" report bad
has "$tmp/out" "unreadable: bad/notes.gwr" "the unreadable file named"
# recordings that record no rank stay one report each
"$gw" report "$OLDPWD/tests/fixtures/healthy.gwr" "$OLDPWD/tests/fixtures/c9_item_sync.gwr" > two.txt 2>/dev/null
[ "$(grep -c '^gpuwhy report: ' two.txt)" = 2 ] && ! grep -q "job report" two.txt && ok || ko "two recordings without ranks: two reports"
"$gw" report --job "$OLDPWD/tests/fixtures/healthy.gwr" "$OLDPWD/tests/fixtures/c9_item_sync.gwr" > two.txt 2>/dev/null
grep -q "gpuwhy job report: 2 recordings" two.txt && ok || ko "--job reports them as one job"
"$gw" report --help | grep -q -- '--rank N' && ok || ko "report --help documents --rank"

# one real recording of two DDP ranks (tests/fixtures/c15_ddp_straggler.gwr: rank 1 does 1.4x the work;
# measured with --fix 1.23x, tests/fixtures/timings): --job makes each GPU process a rank
c15=$OLDPWD/tests/fixtures/c15_ddp_straggler.gwr
expect_rc 0 "--job of one recording of two ranks" env TMPDIR="$tmp" "$gw" report --job "$c15"
has "$tmp/out" "gpuwhy job report: 2 recordings, 2 analysed, world size 2" "two GPU processes, two ranks"
has "$tmp/out" "numbered by GPU and pid" "ranks without RANK are numbered by GPU and pid"
has_flat "$tmp/out" "Rank 1 is the straggler" "the straggler of the real recording"
ls -d "$tmp"/gpuwhy-ranks-* >/dev/null 2>&1 && ko "the views' folder was left in TMPDIR" || ok
env TMPDIR="$tmp" "$gw" report --json --job "$c15" > c15.json
python3 - c15.json <<'PY' && ok || ko "c15 as a job: $(head -c 300 c15.json)"
import json, sys
d = json.load(open(sys.argv[1]))
f = {x["cause"]: x for x in d["findings"]}
assert [r["pid"] for r in d["ranks"]] == [959, 960] and [r["devices"] for r in d["ranks"]] == [[0], [1]]
assert f["X4"]["rank"] == 1 and 1.15 < f["X4"]["speedup"] < 1.35, f["X4"]  # measured 1.23x
assert f["X1"]["rank"] == 1 and f["X1"]["speedup"] < 1.35, f["X1"]
assert d["alignment"]["by"] == "collectives" and d["alignment"]["residual_us"] < 10
PY
expect_rc 0 "--rank 1 of one recording" env TMPDIR="$tmp" "$gw" report --rank 1 "$c15"
has "$tmp/out" "GPU 1 (NVIDIA H200)" "--rank 1 is the process on GPU 1"

# two jobs compared: the synthetic job against its fixed run (no slow rank, no checkpoint)
mkdir jobfix
"$synth" --write jobfix 4 60 --fix
expect_rc 0 "diff of two jobs" "$gw" diff job jobfix
has "$tmp/out" "step (median rank's mean): 12.6 ms -> 7.3 ms: 1.73x" "the job's speed-up"
has "$tmp/out" "predicted 1.75x for X2" "BEFORE's prediction beside it"
has "$tmp/out" "gone *\[X1\] Rank 2 is the straggler" "the straggler gone"
has "$tmp/out" "gone *\[X3\] Work on rank 0 only" "the rank-0 checkpoint gone"
expect_rc 4 "diff of two jobs, AFTER slower" "$gw" diff --fail-if-slower 5 jobfix job
expect_rc 2 "--html of two jobs" "$gw" diff --html p.html job jobfix
"$gw" diff --json job jobfix > jd.json
python3 -c "
import json, sys
d = json.load(open('jd.json'))
assert d['schema'] == 'gpuwhy.jobdiff/1' and 1.6 < d['speedup'] < 1.8 and len(d['ranks']) == 4
# the synthetic step runs its collective after its compute: X6 stays, fixed or not,
# a larger share of the shorter step (changed: its gain moved 5 points of the run or more)
assert {(f['cause'], f['state']) for f in d['findings']} == {('X1', 'gone'), ('X2', 'gone'), ('X3', 'gone'), ('X6', 'changed')}
" && ok || ko "diff --json of two jobs: $(head -c 300 jd.json)"

# the job's timeline: one group of processes per rank, on the common time line; the collectives of
# every rank end together there (within 10 us), on the synthetic job (every one) and on the real
# two-rank recording (the median: NCCL's own kernels end up to 50 us apart there, 3.6 us the median)
cat > nccl_ends.py <<'PY'
import json, re, sys
from collections import defaultdict
d = json.load(open(sys.argv[1])); n = int(sys.argv[2])
ev = d["traceEvents"]
assert d["otherData"]["job"] is True and d["otherData"]["ranks"] == n
names = [e["args"]["name"] for e in ev if e.get("name") == "process_name"]
assert all(re.match(r"rank \d+: ", x) for x in names) and len({x.split(":")[0] for x in names}) == n, names
assert all(e["ts"] >= 0 and re.fullmatch(r"\d+(\.\d{1,3})?", repr(e["ts"]).rstrip("0").rstrip(".") or "0")
           for e in ev if "ts" in e)
ends = defaultdict(list)
for e in ev:
    if e.get("ph") == "X" and "nccl" in e["name"].lower():
        ends[e["pid"] >> 23].append(e["ts"] + e["dur"])
groups = sorted(ends)
assert len(groups) == n, groups
m = min(len(v) for v in ends.values())
assert m >= 10
diffs = sorted(abs(a - b) for g in groups[1:] for a, b in zip(ends[g][:m], ends[groups[0]][:m]))
# synthetic: every pair within 10 us; real (sys.argv[3] == "median"): the median pair, as the report's residual
worst = diffs[len(diffs) // 2] if len(sys.argv) > 3 and sys.argv[3] == "median" else diffs[-1]
assert worst <= 10, "collective ends %.1f us apart" % worst
print("collective ends within %.1f us" % worst)
PY
expect_rc 0 "--trace of a job" "$gw" report --trace job.trace.json job
python3 nccl_ends.py job.trace.json 4 >/dev/null && ok || ko "the synthetic job's timeline: $(python3 nccl_ends.py job.trace.json 4 2>&1 | tail -2)"
expect_rc 0 "--trace of one recording's ranks" env TMPDIR="$tmp" "$gw" report --job --trace c15.trace.json.gz "$c15"
python3 - c15.trace.json.gz <<'PY' && ok || ko "the real recording's timeline is gzip"
import gzip, json, sys
json.load(gzip.open(sys.argv[1]))
PY
gunzip -c c15.trace.json.gz > c15.trace.json
python3 nccl_ends.py c15.trace.json 2 median >/dev/null && ok || ko "c15's timeline: $(python3 nccl_ends.py c15.trace.json 2 median 2>&1 | tail -2)"
expect_rc 2 "--trace - of a job" "$gw" report --trace - job
# the real two-rank checkpoint job (docs/gpu-runs/ranks.log): rank 0's
# checkpoint is X3's, and rank 0 is not also called the straggler (whose
# fix was to even out its data); the table's per-step columns are shares of
# the mean step it gives
rx=$OLDPWD/tests/fixtures/ranks
if [ -d "$rx/n2-ckpt" ]; then
  expect_rc 0 "report of n2-ckpt" "$gw" report -v "$rx/n2-ckpt"
  has "$tmp/out" "\[X3\]\|Work on rank 0 only" "n2-ckpt: X3 found"
  if grep -q "is the straggler" "$tmp/out"; then ko "n2-ckpt: rank 0's checkpoint also named a straggler (X1)"; else ok; fi
  has "$tmp/out" "mean step" "n2-ckpt: the table gives the mean step"
fi
echo "$pass passed, $fail failed"; [ "$fail" -eq 0 ]
