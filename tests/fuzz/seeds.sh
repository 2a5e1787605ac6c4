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
