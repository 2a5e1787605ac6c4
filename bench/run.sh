#!/usr/bin/env bash
# Overhead benchmark, on the GPU machine, from the repository root:
#   bench/run.sh OUT [ROUNDS]
# Interleaves, per round and loop: uninstrumented, `gpuwhy record`,
# `gpuwhy record --duty 0.25/2.5` (10% duty cycle), `gpuwhy record --no-inject`
# (samplers only) and torch.profiler. Writes OUT/overhead.jsonl and a table.
# MODES="plain record kernels nocb profiler" adds the diagnostic variants:
# kernels = CONCURRENT_KERNEL only, no callbacks; nocb = all kinds, no callbacks;
# none = injection and callbacks but no activity kind; nots = everything but
# CUPTI's own clock instead of gpuwhy's timestamp callback; launches = record
# --launches (a callback pair on every kernel launch); kinds=kernel,sync
# records only the activity kinds listed. LOOPS="launch bf16 bf16-host" picks
# the loops (bench/overhead.py).
set -u
out=${1:?usage: bench/run.sh OUT [ROUNDS]}
rounds=${2:-2}
gw=$PWD/gpuwhy
mkdir -p "$out"
res="$out/overhead.jsonl"
: >"$res"
one() { # mode loop
  local mode=$1 loop=$2 line
  case $mode in
    plain)    line=$(python3 bench/overhead.py --loop "$loop") ;;
    record)   line=$("$gw" record -q -o "$out/b.gwr" -- python3 bench/overhead.py --loop "$loop"); rm -f "$out/b.gwr" ;;
    launches) line=$("$gw" record -q --launches -o "$out/b.gwr" -- python3 bench/overhead.py --loop "$loop"); rm -f "$out/b.gwr" ;;
    duty)     line=$("$gw" record -q --duty 0.25/2.5 -o "$out/b.gwr" -- python3 bench/overhead.py --loop "$loop"); rm -f "$out/b.gwr" ;;
    samplers) line=$("$gw" record -q --no-inject -o "$out/b.gwr" -- python3 bench/overhead.py --loop "$loop"); rm -f "$out/b.gwr" ;;
    kernels)  line=$(GPUWHY_KINDS=kernel GPUWHY_API_CALLBACKS=0 "$gw" record -q -o "$out/b.gwr" -- python3 bench/overhead.py --loop "$loop"); rm -f "$out/b.gwr" ;;
    none)     line=$(GPUWHY_KINDS=none "$gw" record -q -o "$out/b.gwr" -- python3 bench/overhead.py --loop "$loop"); rm -f "$out/b.gwr" ;;
    nots)     line=$(GPUWHY_TS_CALLBACK=0 "$gw" record -q -o "$out/b.gwr" -- python3 bench/overhead.py --loop "$loop"); rm -f "$out/b.gwr" ;;
    nocb)     line=$(GPUWHY_API_CALLBACKS=0 "$gw" record -q -o "$out/b.gwr" -- python3 bench/overhead.py --loop "$loop"); rm -f "$out/b.gwr" ;;
    profiler) line=$(python3 bench/overhead.py --loop "$loop" --profiler) ;;
    kinds=*)  line=$(GPUWHY_KINDS=${mode#kinds=} "$gw" record -q -o "$out/b.gwr" -- python3 bench/overhead.py --loop "$loop"); rm -f "$out/b.gwr" ;;
  esac
  echo "{\"mode\":\"$mode\",\"round\":$r,\"result\":$(echo "$line" | tail -1)}" | tee -a "$res"
}
for r in $(seq 1 "$rounds"); do
  for loop in ${LOOPS:-launch bf16 bf16-host}; do
    for mode in ${MODES:-plain record duty samplers profiler}; do
      one $mode $loop
    done
  done
done
python3 bench/table.py "$res" | tee "$out/overhead.md"
