#!/usr/bin/env bash
# Analysis time and peak memory on SYNTHETIC crafted recordings (written by
# bench/crafted.c from tests/unit/crafted.h): shapes that make an analysis
# that is not near-linear slow, or make it allocate far beyond the file's
# size. One `gpuwhy report` each, on one core, at most LIMIT seconds.
# Usage: bench/crafted.sh [GPUWHY [LIMIT]]   (GPUWHY: the binary to time,
# ./gpuwhy by default; give another build's to compare)
set -eu
cd "$(dirname "$0")/.."
gw=${1:-./gpuwhy}
limit=${2:-120}
mkdir -p build
cc -std=c11 -D_GNU_SOURCE -O2 -Isrc -Itests/unit -o build/crafted bench/crafted.c src/format/*.c -lz
tmp=$(mktemp -d /tmp/gw-crafted-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
echo "| recording | file | time | peak memory | exit |"
echo "|---|---|---|---|---|"
for c in "descending 20000" "descending 60000" "streams 2000" "streams 8000" "processes 50000" \
         "processes 200000" "py_ids 4" "markers 100000" "syncs 100000"; do
  set -- $c
  f=$tmp/$1-$2.gwr
  build/crafted "$1" "$2" "$f"
  size=$(stat -c %s "$f")
  rc=0
  /usr/bin/time -f "%e %M" -o "$tmp/time" timeout "$limit" taskset -c 0 "$gw" report "$f" >/dev/null 2>&1 || rc=$?
  read -r secs kb < <(tail -1 "$tmp/time")
  [ "$rc" -eq 124 ] && secs=">$limit"
  printf '| %s %s | %.0f kB | %s s | %.0f MiB | %s |\n' "$1" "$2" "$(echo "$size / 1000" | bc -l)" \
    "$secs" "$(echo "$kb / 1024" | bc -l)" "$rc"
done
