#!/usr/bin/env bash
# On the GPU machine: the injection library's exact counts, ring mode, a
# profiler inside the recorded job, os._exit, and which part of the injection
# costs what (its diagnostic switches, bench/run.sh).
#   tests/gpu/inject_faults.sh OUT
out=${1:?usage: tests/gpu/inject_faults.sh OUT}
name=inject_faults
. tests/gpu/harness.sh

echo "== CUDA C target: exact counts"
rm -f "$out/target.gwr"
./gpuwhy record -q -o "$out/target.gwr" -- build/gpu-target >"$out/target.json"
python3 tests/gpu/check_target.py ./gpuwhy "$out/target.gwr" "$out/target.json" && ok target || ko target

echo "== ring mode keeps the newest data"
rm -f "$out/ring.gwr"
./gpuwhy record -q --ring --max-size 32M -o "$out/ring.gwr" -- \
  python3 workloads/c4_launch_bound.py --seconds 25 >"$out/ring.json"; rc=$?
sz=$(stat -c %s "$out/ring.gwr")
[ $rc -eq 0 ] && ok "ring: exit 0" || ko "ring: exit $rc"
[ "$sz" -lt $((48 << 20)) ] && ok "ring: $sz bytes within budget" || ko "ring: $sz bytes"
nk=$(./gpuwhy dump --type kernel "$out/ring.gwr" | wc -l)
[ "$nk" -gt 10000 ] && ok "ring: $nk kernels kept" || ko "ring: $nk kernels"
./gpuwhy report "$out/ring.gwr" >"$out/ring.report" 2>&1 && ok "ring: report" || ko "ring: report"

echo "== torch.profiler inside a recorded job"
rm -f "$out/prof.gwr"
./gpuwhy record -q -o "$out/prof.gwr" -- python3 tests/gpu/profiler_inside.py >"$out/prof.out" 2>&1; rc=$?
[ $rc -eq 0 ] && grep -q "job finished" "$out/prof.out" && ok "profiler inside: job unharmed ($(tail -1 "$out/prof.out"))" \
  || ko "profiler inside: exit $rc"
./gpuwhy report "$out/prof.gwr" >"$out/prof.report" 2>&1
# gpuwhy subscribed first, so it keeps CUPTI: its recording must hold all
# 2400 iterations (3 kernels each), the profiled window included.
nk=$(./gpuwhy dump --type kernel "$out/prof.gwr" | wc -l)
[ "$nk" -ge 7200 ] && ok "profiler inside: gpuwhy kept all $nk kernels" || ko "profiler inside: $nk kernels, want 7200+"

echo "== os._exit (no atexit flush)"
rm -f "$out/exit.gwr"
./gpuwhy record -q -o "$out/exit.gwr" -- python3 -c '
import os, time, torch
x = torch.ones(1, device="cuda")
for _ in range(200000): x.add_(1)
torch.cuda.synchronize(); time.sleep(1.2); os._exit(3)'; rc=$?
nk=$(./gpuwhy dump --type kernel "$out/exit.gwr" | wc -l)
[ $rc -eq 3 ] && ok "os._exit: exit 3" || ko "os._exit: exit $rc"
[ "$nk" -gt 100000 ] && ok "os._exit: $nk kernels kept" || ko "os._exit: $nk kernels"

echo "== overhead: which part costs"
MODES="plain record none kernels nocb nots profiler" timeout 340 bench/run.sh "$out/bench" 3
echo "== gpu tests: $pass passed, $fail failed"
