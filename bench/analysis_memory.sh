#!/usr/bin/env bash
# How the report's peak memory grows with the recording: a real recording
# repeated N times (bench/repeat.c) for several N, `gpuwhy report --json` on
# one core, its peak memory and time, and the memory added per extra kernel
# between consecutive sizes (flat: the timeline is not held).
#   bench/analysis_memory.sh [FIXTURE [N...]]   (FIXTURE: a name in tests/fixtures
#   or a path to a .gwr; default c4_launch_bound 5 20 80)
set -eu
fx=${1:-c4_launch_bound}; shift || true
sizes=${*:-5 20 80}
cd "$(dirname "$0")/.."
case $fx in *.gwr) src=$fx ;; *) src=tests/fixtures/$fx.gwr ;; esac
make -s gpuwhy >/dev/null
mkdir -p build
cc -std=c11 -D_GNU_SOURCE -O2 -Isrc -o build/repeat bench/repeat.c src/format/*.c -lz
big=$(mktemp /tmp/gw-mem-XXXXXX.gwr)
trap 'rm -f "$big"' EXIT
kernels=$(./gpuwhy dump --type kernel "$src" | wc -l)
records=$(./gpuwhy dump "$src" | wc -l)
prev_k=0; prev_m=0
echo "| input | kernel records (all records) | file | time | peak memory | per added kernel |"
echo "|---|---|---|---|---|---|"
for n in $sizes; do
  build/repeat "$src" "$big" "$n" >/dev/null
  /usr/bin/time -f "%e %M" -o /tmp/gw-mem.txt taskset -c 0 ./gpuwhy report --json "$big" >/dev/null
  read -r secs kb </tmp/gw-mem.txt
  k=$((kernels * n))
  slope="-"
  [ "$prev_k" -gt 0 ] && slope=$(python3 -c "print(f'{($kb - $prev_m) * 1024 / ($k - $prev_k):.2f} bytes')")
  awk -v n="$n" -v name="$(basename "$src" .gwr)" -v k="$k" -v r="$((records * n))" \
    -v size="$(stat -c %s "$big")" -v secs="$secs" -v kb="$kb" -v slope="$slope" \
    'BEGIN { printf "| %sx %s | %d (%d) | %.1f MB | %s s | %.0f MiB | %s |\n", n, name, k, r, size / 1e6, secs, kb / 1024, slope }'
  prev_k=$k; prev_m=$kb
done
