#!/usr/bin/env bash
# Analysis speed on one core: a real recording (by default
# tests/fixtures/c4_launch_bound.gwr, a launch-bound loop on the H200 where
# every kernel is followed by an idle gap to attribute: the worst case)
# repeated N times back to back into one large file (bench/repeat.c), then
# `gpuwhy report --json` timed RUNS times (this machine's speed drifts by up
# to 40% between runs: the median and the best are given), with its peak memory.
# Usage: bench/analysis_speed.sh [N [FIXTURE [RUNS]]]   (FIXTURE: a name in
# tests/fixtures, or a path to a .gwr)
set -eu
n=${1:-20}
fx=${2:-c4_launch_bound}
runs=${3:-5}
cd "$(dirname "$0")/.."
case $fx in *.gwr) src=$fx ;; *) src=tests/fixtures/$fx.gwr ;; esac
big=$(mktemp /tmp/gw-big-XXXXXX.gwr)
trap 'rm -f "$big"' EXIT
kernels=$(./gpuwhy dump --type kernel "$src" | wc -l)
records=$(./gpuwhy dump "$src" | wc -l)
# the timeline repeated N times back to back (bench/repeat.c)
mkdir -p build
cc -std=c11 -D_GNU_SOURCE -O2 -Isrc -o build/repeat bench/repeat.c src/format/*.c -lz
build/repeat "$src" "$big" "$n"
size=$(stat -c %s "$big")
times=""
for _ in $(seq "$runs"); do
  /usr/bin/time -f "%e %M" -o /tmp/gw-time.txt taskset -c 0 ./gpuwhy report --json "$big" >/dev/null
  read -r secs kb </tmp/gw-time.txt
  times="$times $secs"
done
python3 - "$((kernels * n))" "$((records * n))" "$times" "$kb" "$size" "$n" "$(basename "$fx" .gwr)" <<'PY'
import statistics, sys
k, r, ts, kb, size, n, fx = int(sys.argv[1]), int(sys.argv[2]), [float(x) for x in sys.argv[3].split()], int(sys.argv[4]), int(sys.argv[5]), sys.argv[6], sys.argv[7]
med, best = statistics.median(ts), min(ts)
print(f"| {n}x {fx} | {k:,} kernel records ({r:,} in all) | {size / 1e6:.1f} MB | {med:.2f} s median, {best:.2f} s best of {len(ts)} "
      f"| {k / med / 1e6:.2f} M kernels/s median, {k / best / 1e6:.2f} best ({r / med / 1e6:.2f} M records/s) | {kb / 1024:.0f} MiB peak |")
PY
