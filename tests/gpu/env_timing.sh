#!/usr/bin/env bash
# On the GPU machine: one corpus scenario timed plain, uninstrumented, once
# with each value of an environment variable, one after another on the same
# GPU, to measure an advice that is an environment switch (C8's CUPY_TF32=1):
#   tests/gpu/env_timing.sh SCENARIO VAR VALUE...
# Prints each run's JSON line (samples_per_s) under "VAR=VALUE". The C8 check
# in docs/RULES.md (kernel families) is
#   tests/gpu/env_timing.sh c10_cupy_kalman_track_loop CUPY_TF32 0 1
# (its output at the end of docs/gpu-runs/mike.log).
set -u
name=${1:?usage: tests/gpu/env_timing.sh SCENARIO VAR VALUE...}
var=${2:?usage: tests/gpu/env_timing.sh SCENARIO VAR VALUE...}
shift 2
cd "$(dirname "$0")/../../workloads/corpus"
for v in "$@"; do
  echo "$var=$v"
  env "$var=$v" timeout "${GW_RUN_TIMEOUT:-100}" python3 "$name.py" --seconds "${GW_SECONDS:-2}" 2>&1 | tail -1
done
