#!/usr/bin/env bash
# On the GPU machine, best on the two-GPU kind (nvidia-h200-x2; on one
# GPU the C15 part is skipped):   tests/gpu/c15_and_overhead.sh OUT
# C15_ONLY=1 stops after C15.
# C15 (DDP with a straggler rank) plain / recorded / fixed; the overhead table
# with the realistic loop (4096 rows, GPU-bound) beside the host-bound
# one; recordings that calibrate the launch-bound estimate (c4 --fix, a CUDA
# graph) and count the bench loop's work; then which activity kind costs what.
out=${1:?usage: tests/gpu/c15_and_overhead.sh OUT}
name=c15_and_overhead
. tests/gpu/harness.sh
echo "== machine $(date -u +%FT%TZ)"
nvidia-smi --query-gpu=index,name,driver_version,pcie.link.gen.current --format=csv
nproc

if [ "$(nvidia-smi -L | wc -l)" -ge 2 ]; then
  echo "== C15 two-GPU DDP straggler $(date -u +%T)"
  GPUWHY=$PWD/gpuwhy GW_SECONDS=5 timeout 180 workloads/run-all.sh "$out/scen" c15_ddp_straggler
  ./gpuwhy report "$out/scen/c15_ddp_straggler.gwr" >"$out/c15.report" 2>&1; echo "report exit $?"
  head -40 "$out/c15.report"
  [ "${C15_ONLY:-0}" = 1 ] && exit 0
  split_rounds=3
else
  echo "== one GPU: C15 skipped"
  split_rounds=5
fi

echo "== calibration recordings $(date -u +%T)"
./gpuwhy record -q -o "$out/c4fix.gwr" -- python3 workloads/c4_launch_bound.py --fix --seconds 3 >"$out/c4fix.json"
./gpuwhy record -q -o "$out/bf16host.gwr" -- python3 bench/overhead.py --loop bf16-host --seconds 1 >"$out/bf16host.json"
./gpuwhy record -q -o "$out/bf16.gwr" -- python3 bench/overhead.py --loop bf16 --seconds 1 >"$out/bf16.json"

echo "== overhead table $(date -u +%T)"
MODES="plain record duty samplers profiler" timeout 210 bench/run.sh "$out/bench" 2
echo "== which kind costs (host-bound loop) $(date -u +%T)"
LOOPS=bf16-host MODES="kinds=kernel kinds=kernel,memcpy kinds=kernel,memset kinds=kernel,sync kinds=kernel,marker kinds=kernel,overhead record" \
  timeout $((split_rounds * 50)) bench/run.sh "$out/split" $split_rounds
echo "== done $(date -u +%T)"
