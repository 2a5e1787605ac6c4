#!/usr/bin/env bash
# The job report of many ranks: N SYNTHETIC rank recordings (tests/unit/
# test_ranks.c --write: a data-parallel step of 6 kernels, one of them the
# collective, a slow rank and a rank-0 checkpoint), STEPS steps each, then
# `gpuwhy report --json DIR` timed RUNS times on one core with its peak
# memory. Usage: bench/ranks.sh [N [STEPS [RUNS]]]   (default 64 2600 3:
# about 1 M kernels in all)
set -eu
n=${1:-64}
steps=${2:-2600}
runs=${3:-3}
cd "$(dirname "$0")/.."
make -s -j2 gpuwhy build/tests/test_ranks >/dev/null
dir=$(mktemp -d /tmp/gw-ranks-bench-XXXXXX)
trap 'rm -rf "$dir"' EXIT
t0=$(date +%s.%N)
build/tests/test_ranks --write "$dir" "$n" "$steps"
gen=$(python3 -c "import sys, time; print(f'{time.time() - float(sys.argv[1]):.1f}')" "$t0")
size=$(du -sb "$dir" | cut -f1)
times=""
for _ in $(seq "$runs"); do
  /usr/bin/time -f "%e %M" -o "$dir/time.txt" taskset -c 0 ./gpuwhy report --json "$dir" >"$dir/job.json"
  read -r secs kb <"$dir/time.txt"
  times="$times $secs"
done
python3 - "$n" "$steps" "$times" "$kb" "$size" "$gen" "$dir/job.json" <<'PY'
import json, statistics, sys
n, steps, ts, kb, size, gen, doc = int(sys.argv[1]), int(sys.argv[2]), [float(x) for x in sys.argv[3].split()], int(sys.argv[4]), int(sys.argv[5]), sys.argv[6], sys.argv[7]
d = json.load(open(doc))
x = {f["cause"]: f["rank"] for f in d["findings"]}
med, best = statistics.median(ts), min(ts)
print(f"| {n} ranks x {steps} steps | {n * steps * 6:,} kernels | {size / 1e6:.1f} MB (written in {gen} s) | "
      f"{med:.2f} s median, {best:.2f} s best of {len(ts)} | {kb / 1024:.0f} MiB peak | "
      f"residual {d['alignment']['residual_us']:.1f} us, X1 rank {x.get('X1')}, X3 rank {x.get('X3')} |")
PY
