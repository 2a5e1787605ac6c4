#!/usr/bin/env bash
# What the report holds per recording (bench/held.c): GPU operations, their
# lateness and the reorder buffer's peak, thread samples and their bytes, and
# the per-operation records it only sums.
#   bench/held.sh [FILE...]     (default: every tests/fixtures/*.gwr)
set -eu
cd "$(dirname "$0")/.."
make -s gpuwhy
deflate=""
[ -f /usr/include/libdeflate.h ] && deflate=-ldeflate # as the Makefile decides
[ -f /usr/include/libiberty/demangle.h ] && deflate="$deflate -liberty"
objs=$(ls build/src/analyze/*.o build/src/analyze/rules/*.o build/src/format/*.o build/src/util/*.o build/src/report/*.o)
cc -std=c11 -D_GNU_SOURCE -O1 -Wall -Wextra -Isrc -o build/held bench/held.c $objs -lz $deflate -lm
echo "| recording | operations | lateness | held at most | not in a sorted run | thread samples | bytes a sample | command-buffer waits (MiB if held) | NVML samples (MiB if held) |"
echo "|---|---|---|---|---|---|---|---|---|"
[ $# -gt 0 ] || set -- tests/fixtures/*.gwr
build/held "$@"
