#!/usr/bin/env bash
# On the GPU machine: long real recordings for the streamed
# analysis (issue 3). Records the launch-bound scenario (kernels arrive in
# order) and the RNN loop (half its operations arrive out of order, up to
# 0.35 s late) for tens of seconds each, so that each holds millions of
# operations, more than the step finder's prefix; then times `gpuwhy
# report --json` on them with this tree's binary and, side by side, the
# binary of commit 2e5daf0 (the in-memory analysis, built without libdeflate on the development
# machine and carried in .gpudeps/), with peak memory, and checks `gpuwhy
# run` still ends with its report. The recordings come back split in 15 MB
# parts (the device tool returns files up to 16 MiB).
#   tests/gpu/long_recordings.sh OUT        (about 4 minutes)
out=${1:?usage: tests/gpu/long_recordings.sh OUT}
name=long_recordings
start=$SECONDS
. tests/gpu/harness.sh
old=.gpudeps/gpuwhy-2e5daf0
gw=$PWD/gpuwhy
record() { # NAME SECONDS
  echo "== record $1 for $2 s $(date -u +%T)"
  (cd workloads && timeout 200 "$gw" record -q -o "$out/$1.gwr" -- python3 "$1.py" --seconds "$2" \
    >"$out/$1.rec.json" 2>"$out/$1.rec.err")
  echo "   exit $?, $(stat -c %s "$out/$1.gwr") bytes, $(./gpuwhy dump --type kernel "$out/$1.gwr" | wc -l) kernels"
}
record c4_launch_bound 40
record c10_rnn_loop 50
for s in c4_launch_bound c10_rnn_loop; do
  f=$out/$s.gwr
  for b in "$gw" "$old"; do
    [ -x "$b" ] || { echo "   $b missing"; continue; }
    for r in 1 2 3; do
      /usr/bin/time -f "$s $(basename "$b") %e s %M KB" -a -o "$out/times.txt" \
        taskset -c 2 "$b" report --json "$f" >"$out/$s.$(basename "$b").json"
    done
  done
  if cmp -s "$out/$s.gpuwhy.json" "$out/$s.gpuwhy-2e5daf0.json"; then
    ok "$s: same report as the in-memory analysis binary"
  else
    echo "   $s: reports differ:"; diff "$out/$s.gpuwhy.json" "$out/$s.gpuwhy-2e5daf0.json" | head -40
  fi
  "$gw" report "$f" | head -30
done
cat "$out/times.txt"
echo "== gpuwhy run ends with its report $(date -u +%T)"
(cd workloads && timeout 120 "$gw" run -o "$out/run.gwr" -- python3 c9_item_sync.py --seconds 3) >"$out/run.txt" 2>&1
grep -q "Findings" "$out/run.txt" && grep -q "C9" "$out/run.txt" && ok "gpuwhy run: report with C9" \
  || { ko "gpuwhy run: no report"; tail -30 "$out/run.txt"; }
rm -f "$out/run.gwr"
for s in c4_launch_bound c10_rnn_loop; do
  split -b 15000000 -d "$out/$s.gwr" "$out/$s.gwr.part" && rm -f "$out/$s.gwr"
done
echo "== gpu tests: $pass passed, $fail failed"
echo "== done $(date -u +%T), $((SECONDS - start)) s"
# the device tool returns 8 files at most: everything but the parts and
# this log in one archive (made aside: the log is still being written)
(cd "$out" && tar czf /tmp/$name-logs.tgz --exclude='*.part*' --exclude="$name.log" .;
  find . -maxdepth 1 -type f ! -name '*.part*' ! -name "$name.log" -delete;
  mv /tmp/$name-logs.tgz logs.tgz)
ls -la "$out"
