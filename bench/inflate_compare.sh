#!/usr/bin/env bash
# The report with libdeflate and with zlib alone, side by side: the same tree
# built twice (build-deflate/ and build-zlib/, the latter with DEFLATE_H= so
# that the Makefile leaves libdeflate out), alternating runs on one core on a
# real recording repeated N times (bench/repeat.c).
#   bench/inflate_compare.sh [N [FIXTURE [RUNS]]]
set -eu
n=${1:-20}; fx=${2:-c4_launch_bound}; runs=${3:-5}
cd "$(dirname "$0")/.."
[ -f /usr/include/libdeflate.h ] || { echo "libdeflate-dev is not installed: nothing to compare"; exit 1; }
make -s BUILD=build-deflate BIN=build-deflate build-deflate/gpuwhy
make -s BUILD=build-zlib BIN=build-zlib DEFLATE_H= build-zlib/gpuwhy
big=$(mktemp /tmp/gw-big-XXXXXX.gwr)
trap 'rm -f "$big"' EXIT
mkdir -p build
cc -std=c11 -D_GNU_SOURCE -O2 -Isrc -o build/repeat bench/repeat.c src/format/*.c -lz
build/repeat "tests/fixtures/$fx.gwr" "$big" "$n"
cmp -s <(build-zlib/gpuwhy report --json "$big") <(build-deflate/gpuwhy report --json "$big") ||
  { echo "the two builds disagree"; exit 1; }
one() { /usr/bin/time -f "%e" -o /tmp/gw-inf.txt taskset -c 0 "$1" report --json "$big" >/dev/null; cat /tmp/gw-inf.txt; }
z=""; d=""
for _ in $(seq "$runs"); do z="$z $(one build-zlib/gpuwhy)"; d="$d $(one build-deflate/gpuwhy)"; done
python3 - "$n" "$fx" "$z" "$d" <<'PY'
import statistics, sys
n, fx, z, d = sys.argv[1], sys.argv[2], [float(x) for x in sys.argv[3].split()], [float(x) for x in sys.argv[4].split()]
print(f"| {n}x {fx} | zlib: {' / '.join(f'{x:.2f}' for x in z)} s | libdeflate: {' / '.join(f'{x:.2f}' for x in d)} s "
      f"| {statistics.median(z) / statistics.median(d):.2f}x |")
PY
