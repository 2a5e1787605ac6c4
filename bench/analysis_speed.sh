#!/usr/bin/env bash
# Analysis speed on one core: a real recording (by default
# tests/fixtures/c4_launch_bound.gwr, a launch-bound loop on the H200 where
# every kernel is followed by an idle gap to attribute: the worst case)
# repeated N times back to back into one large file (bench/repeat.c), then
# `gpuwhy report --json` timed, with its peak memory.
# Usage: bench/analysis_speed.sh [N [FIXTURE]]   (FIXTURE: a name in tests/fixtures)
set -eu
n=${1:-20}
fx=${2:-c4_launch_bound}
cd "$(dirname "$0")/.."
src=tests/fixtures/$fx.gwr
big=$(mktemp /tmp/gw-big-XXXXXX.gwr)
trap 'rm -f "$big"' EXIT
kernels=$(./gpuwhy dump --type kernel "$src" | wc -l)
# the timeline repeated N times back to back (bench/repeat.c)
mkdir -p build
cc -std=c11 -D_GNU_SOURCE -O2 -Isrc -o build/repeat bench/repeat.c src/format/*.c -lz
build/repeat "$src" "$big" "$n"
size=$(stat -c %s "$big")
/usr/bin/time -f "%e s %M KB" -o /tmp/gw-time.txt taskset -c 0 ./gpuwhy report --json "$big" >/dev/null
read -r secs _ kb _ </tmp/gw-time.txt
total=$((kernels * n))
python3 - "$total" "$secs" "$kb" "$size" "$n" "$fx" <<'PY'
import sys
k, s, kb, size, n, fx = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5], sys.argv[6]
print(f"| {n}x {fx} | {k:,} kernel records | {size / 1e6:.1f} MB | {s:.2f} s | {k / s / 1e6:.2f} M kernels/s | {kb / 1024:.0f} MiB peak |")
PY
