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
