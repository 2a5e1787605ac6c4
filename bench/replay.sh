#!/usr/bin/env bash
# The replay's cost beside the report's own time: one SYNTHETIC recording
# (tests/unit/test_ranks.c --write: a step of 6 kernels) of STEPS steps,
# then `gpuwhy report --json` timed RUNS times on one core, with the CPU time
# the analysis spent building and replaying the graph (what
# GPUWHY_TIME_REPLAY=1 prints on stderr). Usage: bench/replay.sh [STEPS [RUNS]]  (default 166667 3:
# 1 M kernels)
set -eu
steps=${1:-166667}
runs=${2:-3}
cd "$(dirname "$0")/.."
make -s -j2 gpuwhy build/tests/test_ranks >/dev/null
dir=$(mktemp -d /tmp/gw-replay-bench-XXXXXX)
trap 'rm -rf "$dir"' EXIT
build/tests/test_ranks --write "$dir" 1 "$steps" >/dev/null
f=$(ls "$dir"/*.gwr | head -1)
times=""; replay=""
for _ in $(seq "$runs"); do
  GPUWHY_TIME_REPLAY=1 /usr/bin/time -f "%e %M" -o "$dir/time.txt" taskset -c 0 ./gpuwhy report --json "$f" \
    >"$dir/r.json" 2>"$dir/err.txt"
  read -r secs kb <"$dir/time.txt"
  times="$times $secs"
  replay="$replay $(awk '/replay .* ms CPU/ { print $3 }' "$dir/err.txt")"
done
python3 - "$steps" "$times" "$replay" "$kb" "$dir/r.json" <<'PY'
import json, statistics, sys
steps, ts, rs, kb, doc = int(sys.argv[1]), [float(x) for x in sys.argv[2].split()], [float(x) for x in sys.argv[3].split()], int(sys.argv[4]), sys.argv[5]
r = json.load(open(doc))["replay"]
print(f"| {steps * 6:,} kernels | {r['operations']:,} in the graph | report {statistics.median(ts):.2f} s median of {len(ts)} | "
      f"replay {statistics.median(rs) / 1e3:.2f} s CPU (graph, waits, every finding's and the combined replays) | "
      f"{kb / 1024:.0f} MiB peak | error {r['error_pct']:.3f}% |")
PY
