#!/usr/bin/env bash
# On the GPU machine: `gpuwhy check` against an independent bandwidth
# measurement (within 10%), and a SIGKILL half-way through a PyTorch job with
# loader workers (exit 137, the recording readable, every process seen).
#   tests/gpu/check_and_kill.sh OUT
set -u
out=${1:?usage: tests/gpu/check_and_kill.sh OUT}
mkdir -p "$out"
exec > >(tee -a "$out/check_and_kill.log") 2>&1
echo "== build $(date -u +%T)"
tests/gpu/build.sh "$out" || exit 1
echo "== gpuwhy check $(date -u +%T)"
./gpuwhy check --json --data workloads --pid $$ >"$out/check.json"; echo "check exit $?"
./gpuwhy check --data workloads >"$out/check.txt" 2>&1
python3 tests/gpu/bandwidth.py >"$out/bandwidth-torch.json"
python3 tests/gpu/compare_bandwidth.py "$out/check.json" "$out/bandwidth-torch.json"
echo "== SIGKILL half-way $(date -u +%T)"
rm -rf "$out/killed.gwr" "$out/killed.gwr.parts"
./gpuwhy record -o "$out/killed.gwr" -- python3 workloads/healthy.py --seconds 60 >/dev/null 2>"$out/killed.err" &
gwpid=$!
for i in $(seq 1 60); do  # wait until the injection has flushed real data
  sz=$(du -sb "$out/killed.gwr.parts" 2>/dev/null | cut -f1)
  [ "${sz:-0}" -gt 300000 ] && break
  sleep 0.5
done
sleep 1
kill -9 "$(pgrep -P $gwpid | head -1)"
wait $gwpid; rc=$?
nk=$(./gpuwhy dump --type kernel "$out/killed.gwr" | wc -l)
np=$(./gpuwhy dump --type process "$out/killed.gwr" | wc -l)
echo "$([ $rc -eq 137 ] && echo PASS || echo FAIL) exit status $rc after SIGKILL (want 137)"
echo "$([ "$nk" -gt 1000 ] && echo PASS || echo FAIL) killed recording holds $nk kernels"
echo "$([ "$np" -ge 5 ] && echo PASS || echo FAIL) processes seen: $np (target + 4 loader workers)"
echo "== done $(date -u +%T)"
