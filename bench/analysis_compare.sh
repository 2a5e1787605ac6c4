#!/usr/bin/env bash
# Analysis speed and memory of two builds side by side, alternating runs on
# one core (this machine's speed drifts, so only same-sitting ratios count):
#   bench/analysis_compare.sh OLD_REV [N [FIXTURE [RUNS]]]
# Builds OLD_REV in a temporary worktree, repeats tests/fixtures/FIXTURE.gwr
# (or FIXTURE itself, a path to a .gwr) N times (bench/repeat.c) and times
# `gpuwhy report --json` of both builds.
set -eu
old=${1:?usage: bench/analysis_compare.sh OLD_REV [N [FIXTURE [RUNS]]]}
n=${2:-20}; fx=${3:-c4_launch_bound}; runs=${4:-3}
cd "$(dirname "$0")/.."
wt=$(mktemp -d /tmp/gw-old-XXXXXX); big=$(mktemp /tmp/gw-big-XXXXXX.gwr)
trap 'git worktree remove --force "$wt" >/dev/null 2>&1; rm -f "$big"' EXIT
git worktree add -f "$wt" "$old" >/dev/null 2>&1
make -s -C "$wt" gpuwhy >/dev/null 2>&1
make -s gpuwhy >/dev/null
mkdir -p build
cc -std=c11 -D_GNU_SOURCE -O2 -Isrc -o build/repeat bench/repeat.c src/format/*.c -lz
case $fx in *.gwr) src=$fx ;; *) src=tests/fixtures/$fx.gwr ;; esac
build/repeat "$src" "$big" "$n"
one() { /usr/bin/time -f "%e %M" -o /tmp/gw-cmp.txt taskset -c 0 "$1" report --json "$big" >/dev/null; cat /tmp/gw-cmp.txt; }
o_t=""; n_t=""; o_m=0; n_m=0
for _ in $(seq "$runs"); do
  read -r t m < <(one "$wt/gpuwhy"); o_t="$o_t $t"; o_m=$m
  read -r t m < <(one ./gpuwhy); n_t="$n_t $t"; n_m=$m
done
python3 - "$n" "$(basename "$fx" .gwr)" "$old" "$o_t" "$n_t" "$o_m" "$n_m" <<'PY'
import statistics, sys
n, fx, old, ot, nt, om, nm = sys.argv[1:]
ot, nt = [float(x) for x in ot.split()], [float(x) for x in nt.split()]
ratio = statistics.median(ot) / statistics.median(nt)
print(f"| {n}x {fx} | {old[:7]}: {' / '.join(f'{x:.2f}' for x in ot)} s | this tree: {' / '.join(f'{x:.2f}' for x in nt)} s "
      f"({ratio:.2f}x) | {int(om) / 1024:.0f} -> {int(nm) / 1024:.0f} MiB |")
PY
