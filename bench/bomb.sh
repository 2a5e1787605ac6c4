#!/usr/bin/env bash
# `gpuwhy report` time and peak memory on SYNTHETIC compression bombs
# (written by bench/bomb.c from tests/unit/bomb.h): 10, 40 and 160 chunks of
# about 10 KB that inflate to 4 MiB each, with rising times ("distinct") or
# all copies of the first ("repeated"), and 1600 (16 MB). One run each, on
# one core, at most LIMIT seconds: wall time and (CPU time), peak resident
# memory, exit status. Figures: docs/RELIABILITY.md.
# Usage: bench/bomb.sh [GPUWHY [LIMIT [CHUNKS]]]   (GPUWHY: the binary to
# time, ./gpuwhy by default; give another build's to compare; CHUNKS: the
# sizes, "10 40 160 1600" by default: a build without the bound needs about
# 18 GB for 1600)
set -eu
cd "$(dirname "$0")/.."
gw=${1:-./gpuwhy}
limit=${2:-120}
sizes=${3:-10 40 160 1600}
mkdir -p build
cc -std=c11 -D_GNU_SOURCE -O2 -Isrc -Itests/unit -o build/bomb bench/bomb.c src/format/*.c -lz
tmp=$(mktemp -d /tmp/gw-bomb-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
echo "| bomb | file | time (CPU) | peak memory | exit |"
echo "|---|---|---|---|---|"
for kind in distinct repeated; do
  for n in $sizes; do
    f=$tmp/$kind-$n.gwr
    build/bomb "$n" "$f" $([ $kind = repeated ] && echo repeat)
    size=$(stat -c %s "$f")
    rc=0
    /usr/bin/time -f "%e %U %S %M" -o "$tmp/time" timeout "$limit" taskset -c 0 "$gw" report "$f" >/dev/null 2>&1 || rc=$?
    read -r secs user sys kb < <(tail -1 "$tmp/time")
    [ "$rc" -eq 124 ] && secs=">$limit"
    printf '| %s, %s chunks | %.0f kB | %s s (%.2f s) | %.0f MiB | %s |\n' "$kind" "$n" "$(echo "$size / 1000" | bc -l)" \
      "$secs" "$(echo "$user + $sys" | bc -l)" "$(echo "$kb / 1024" | bc -l)" "$rc"
  done
done
