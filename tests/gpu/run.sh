#!/usr/bin/env bash
# The GPU machine's test-and-measure pass (run from the repository root):
#   tests/gpu/run.sh OUT [scenarios]
# Builds gpuwhy there, checks the recording of a CUDA C target with known
# activity, records a PyTorch job with DataLoader workers and SIGKILLs it
# half-way, then runs the scenario suite. Results land in OUT.
set -u
out=${1:?usage: tests/gpu/run.sh OUT}
shift
mkdir -p "$out"
log="$out/gpu-run.log"
exec > >(tee -a "$log") 2>&1
echo "== machine $(date -u +%FT%TZ)"
nvidia-smi --query-gpu=name,driver_version,pcie.link.gen.current,pcie.link.gen.max,power.limit --format=csv
python3 -c 'import torch; print("torch", torch.__version__, torch.cuda.get_device_name())'
nproc

echo "== build"
tests/gpu/build.sh "$out" || exit 1
ls -la gpuwhy libgpuwhy-inject-cu*.so

pass=0; fail=0
ok() { echo "PASS $*"; pass=$((pass+1)); }
ko() { echo "FAIL $*"; fail=$((fail+1)); }

echo "== CUDA C target with known counts"
rm -f "$out/target.gwr"
./gpuwhy record -o "$out/target.gwr" -- build/gpu-target >"$out/target.json"
python3 tests/gpu/check_target.py ./gpuwhy "$out/target.gwr" "$out/target.json" && ok target-counts || ko target-counts

echo "== PyTorch with DataLoader workers, SIGKILLed half-way"
rm -f "$out/killed.gwr"
./gpuwhy record -o "$out/killed.gwr" -- python3 workloads/healthy.py --seconds 30 >/dev/null 2>"$out/killed.err" &
gwpid=$!
sleep 14
tpid=$(pgrep -P $gwpid | head -1)
kill -9 "$tpid"
wait $gwpid; rc=$?
[ $rc -eq 137 ] && ok "gpuwhy exits 137 after SIGKILL of the target" || ko "exit status $rc, want 137"
nk=$(./gpuwhy dump --type kernel "$out/killed.gwr" | wc -l)
np=$(./gpuwhy dump --type process "$out/killed.gwr" | wc -l)
[ "$nk" -gt 1000 ] && ok "killed recording readable: $nk kernels" || ko "killed recording has $nk kernels"
[ "$np" -ge 5 ] && ok "loader workers seen: $np processes" || ko "only $np processes seen"

echo "== scenarios"
# the suite needs two 10-minute calls: this pass runs these ten, check_and_kill.sh the rest
GPUWHY=$PWD/gpuwhy workloads/run-all.sh "$out/scen" "${@:-healthy c1_data_loading c2_storage c3_small_batch c4_launch_bound c5_launch_blocking c6_pageable c7_oversubscription c8_fp32 c10_rnn_loop}"
echo "== gpu tests: $pass passed, $fail failed"
