#!/usr/bin/env bash
# On the GPU machine: FP32 jobs whose replayed C8 fix is held by the host's own time
# recorded under a full GPU queue, recorded plain and with --fix (bf16 autocast) by
# `gpuwhy record`, so that the host's time between its waits can be compared where the
# queue was full (plain) and where it is not (fixed): bench/RESULTS.md, "The host's time
# under a full queue", with each recording's GPU time an iteration by kind of kernel
# (tests/gpu/kernel_time.py). Runs after tests/gpu/harness.sh has built gpuwhy.
#   tests/gpu/host_floor.sh OUT [SCENARIO...]   (about 20 s a scenario and mode)
out=${1:?usage: tests/gpu/host_floor.sh OUT [SCENARIO...]}
shift
mkdir -p "$out/host_floor"
for s in ${*:-c8_timm_fp32_gallery_embed c8_hf_t5_fp32 c8_lightning_float64_debug}; do
  for mode in plain fix; do
    flag=; [ $mode = fix ] && flag=--fix
    echo "== $s $mode $(date -u +%T)"
    (cd workloads/corpus && timeout 120 ../../gpuwhy record -q -o "$out/host_floor/$s.$mode.gwr" -- \
       python3 "$s.py" --seconds 2 $flag >"$out/host_floor/$s.$mode.json" 2>"$out/host_floor/$s.$mode.err")
    echo "   record exit $?"
    tail -1 "$out/host_floor/$s.$mode.json"
    python3 tests/gpu/kernel_time.py ./gpuwhy "$out/host_floor/$s.$mode.gwr" "$out/host_floor/$s.$mode.json"
  done
done
