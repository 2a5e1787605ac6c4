#!/usr/bin/env bash
# Fuzz seeds: the real fixtures, uncompressed and cut to 64 KiB, in
# build-fuzz/seeds/ (made once; needs build-fuzz/recompress).
set -u
cd "$(dirname "$0")/../.."
dir=build-fuzz
mkdir -p "$dir/corpus" "$dir/seeds" "$dir/crashes"
for f in tests/fixtures/*.gwr; do
  b=$(basename "$f" .gwr)
  [ -f "$dir/seeds/$b" ] && continue
  "$dir/recompress" "$f" "$dir/seeds/$b.raw" && head -c 65536 "$dir/seeds/$b.raw" > "$dir/seeds/$b"
  rm -f "$dir/seeds/$b.raw"
done
# fuzz_merge: pieces of two fixtures as two stream files (tests/fuzz/fuzz_merge.c:
# each piece a name byte, then the file; pieces split at "\nGWPART\n")
mkdir -p "$dir/seeds-merge"
prev=
for f in "$dir"/seeds/*; do
  b=$(basename "$f")
  [ -f "$dir/seeds-merge/$b" ] || { printf '\000'; head -c 30000 "$f"; printf '\nGWPART\n\003'; head -c 30000 "${prev:-$f}"; } >"$dir/seeds-merge/$b"
  prev=$f
done
# fuzz_diff: two recordings in one input (tests/fuzz/fuzz_diff.c), each cut
# to 32 KiB: each scenario and its fix, and a few unrelated pairs
mkdir -p "$dir/seeds-diff"
for p in c1_data_loading:c1_data_loading.fix c6_pageable:c6_pageable.fix c9_item_sync:c9_item_sync.fix \
         case_study:case_study.fix healthy:c4_launch_bound c10_rnn_loop:c14_validation \
         c15_ddp_straggler:c11_memory_bound cuda_c_target:c2_storage; do
  a=${p%%:*} b=${p#*:}
  [ -f "$dir/seeds-diff/$a-$b" ] || [ ! -f "$dir/seeds/$a" ] || [ ! -f "$dir/seeds/$b" ] ||
    { head -c 32768 "$dir/seeds/$a"; head -c 32768 "$dir/seeds/$b"; } > "$dir/seeds-diff/$a-$b"
done
