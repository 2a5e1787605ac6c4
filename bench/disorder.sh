#!/usr/bin/env bash
# Out-of-order arrival of GPU operations in real recordings (bench/disorder.c):
#   bench/disorder.sh [FILE...]     (default: every tests/fixtures/*.gwr)
# Prints a markdown row per file: operations, how many arrive behind the
# latest start already seen on their GPU, and by how much at most.
set -eu
cd "$(dirname "$0")/.."
make -s gpuwhy
deflate=""
[ -f /usr/include/libdeflate.h ] && deflate=-ldeflate # as the Makefile decides
[ -f /usr/include/libiberty/demangle.h ] && deflate="$deflate -liberty"
objs=$(ls build/src/analyze/*.o build/src/analyze/rules/*.o build/src/format/*.o build/src/util/*.o build/src/report/*.o)
cc -std=c11 -D_GNU_SOURCE -O1 -Wall -Wextra -Isrc -o build/disorder bench/disorder.c $objs -lz $deflate -lm
echo "| recording | operations | behind the latest start | of kernels / copies / memsets | at most |"
echo "|---|---|---|---|---|"
[ $# -gt 0 ] || set -- tests/fixtures/*.gwr
build/disorder "$@"
