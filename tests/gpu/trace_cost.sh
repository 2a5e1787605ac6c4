#!/usr/bin/env bash
# On the GPU machine (repository root), in one call:   tests/gpu/trace_cost.sh OUT
# The injection library's own measurement of what tracing costs per launch
# (inject/calibrate.c), checked end to end:
#  - bench/trace_cost.sh OUT/bench 3: the measurement beside the cost tracing
#    added to the same loops against uninstrumented runs;
#  - the measurement in PyTorch, JAX (no context on the exiting thread: the
#    primary context), CuPy and CUDA C jobs: measured, and `report -v` says so;
#  - a job that exits with a second of GPU work still queued: not measured,
#    said why, and its exit no slower than with GPUWHY_CALIBRATE=0 by more
#    than the 100 ms bound and the run-to-run spread;
#  - a small recording of the launch loop kept as a fixture
#    (OUT/trace_cost_launch.gwr).
# Everything comes back as OUT/trace-cost.tgz. Carry .gpudeps (tests/gpu/build.sh).
out=${1:?usage: tests/gpu/trace_cost.sh OUT}
mkdir -p "$out" && out=$(cd "$out" && pwd) || exit 1
name=trace_cost
res="$out/results"
mkdir -p "$res"
. tests/gpu/harness.sh
gw=$PWD/gpuwhy

echo "== bench $(date -u +%T)"
bench/trace_cost.sh "$res/bench" 2

measured() { # NAME GWR: the report's figure, and a PASS/FAIL on it
  local n=$1 f=$2
  "$gw" report -v "$f" >"$res/$n.report.txt" 2>&1
  "$gw" report --json "$f" >"$res/$n.report.json" 2>/dev/null
  "$gw" dump --json --type inject_event "$f" | grep '"code":9' >"$res/$n.ev"
  python3 - "$res/$n.report.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1])).get("steady", {})
print("tracing cost per launch %s us, measured %s" % (s.get("tracing_cost_per_launch_us"),
                                                    s.get("tracing_cost_measured")))
sys.exit(0 if s.get("tracing_cost_measured") else 1)
PY
}

echo "== frameworks $(date -u +%T)"
timeout 120 "$gw" record -q -o "$res/trace_cost_launch.gwr" -- python3 bench/overhead.py --loop launch --seconds 0.3 \
  && measured torch "$res/trace_cost_launch.gwr" && grep -q "measured in the job" "$res/torch.report.txt" \
  && ok "PyTorch launch loop: measured, report -v says so ($(cat "$res/torch.ev" | head -c 300))" \
  || ko "PyTorch launch loop: $(cat "$res/torch.ev" 2>/dev/null)"
cat >"$res/jax_job.py" <<'PY'
import jax, jax.numpy as jnp
x = jnp.ones((1024, 1024))
for _ in range(200):
    x = x * 1.0001 + 0.5
x.block_until_ready()
print("done")
PY
timeout 120 "$gw" record -q -o "$res/jax.gwr" -- python3 "$res/jax_job.py" && measured jax "$res/jax.gwr" \
  && ok "JAX: measured ($(head -c 300 "$res/jax.ev"))" || ko "JAX: $(cat "$res/jax.ev" 2>/dev/null)"
cat >"$res/cupy_job.py" <<'PY'
import cupy as cp
x = cp.ones(1 << 20, dtype=cp.float32)
for _ in range(500):
    x = x * 1.0001 + 0.5
cp.cuda.Device().synchronize()
print("done")
PY
timeout 120 "$gw" record -q -o "$res/cupy.gwr" -- python3 "$res/cupy_job.py" && measured cupy "$res/cupy.gwr" \
  && ok "CuPy: measured ($(head -c 300 "$res/cupy.ev"))" || ko "CuPy: $(cat "$res/cupy.ev" 2>/dev/null)"
# CUDA C, its runtime linked statically: the runtime releases the primary
# context in its own exit handler, so there is nothing left to measure on;
# the job must exit at once all the same (a backtrace if it does not)
timeout 60 "$gw" record -q -o "$res/cuda_c.gwr" -- build/gpu-target &
rp=$!
for i in $(seq 20); do kill -0 $rp 2>/dev/null || break; sleep 1; done
if kill -0 $rp 2>/dev/null; then
  tp=$(pgrep -f -n '^build/gpu-target') || tp=
  [ -n "$tp" ] && command -v gdb >/dev/null && gdb -batch -p "$tp" -ex "thread apply all bt" >"$res/cuda_c.bt" 2>&1
  [ -n "$tp" ] && { cat /proc/$tp/task/*/stack 2>/dev/null | head -40; kill -9 "$tp"; }
  ko "CUDA C: still running after 20 s ($(head -c 3000 "$res/cuda_c.bt" 2>/dev/null))"
fi
wait $rp
"$gw" dump --json --type inject_event "$res/cuda_c.gwr" | grep '"code":9' >"$res/cuda_c.ev"
grep -q '"code":9' "$res/cuda_c.ev" && ok "CUDA C: exits at once ($(head -c 300 "$res/cuda_c.ev"))" \
  || ko "CUDA C: no measurement event"

echo "== busy at exit $(date -u +%T)"
cat >"$res/busy_exit.py" <<'PY'
import sys, torch
x = torch.zeros(1, device="cuda")
torch.cuda.synchronize()
torch.cuda._sleep(2_000_000_000)  # about a second of GPU work, never waited for
sys.exit(0)
PY
for r in 1 2; do
  for v in on off; do
    t0=$(date +%s.%N)
    GPUWHY_CALIBRATE=$([ $v = on ] && echo 1 || echo 0) timeout 60 "$gw" record -q -o "$res/busy_$v.gwr" -- python3 "$res/busy_exit.py"
    t1=$(date +%s.%N)
    echo "busy exit, calibration $v, round $r: $(python3 -c "print(round($t1 - $t0, 3))") s" | tee -a "$res/busy.txt"
  done
done
"$gw" dump --json --type inject_event "$res/busy_on.gwr" | grep '"code":9' >"$res/busy.ev"
grep -q "not measured: the GPU was still busy" "$res/busy.ev" \
  && ok "busy at exit: not measured, and why ($(head -c 200 "$res/busy.ev"))" \
  || ko "busy at exit: $(cat "$res/busy.ev")"
python3 - "$res/busy.txt" <<'PY' && ok "busy at exit: the measurement's bound holds" || ko "busy at exit: slower exit"
import re, statistics, sys
t = {"on": [], "off": []}
for l in open(sys.argv[1]):
    m = re.search(r"calibration (on|off), round \d+: ([\d.]+) s", l)
    if m:
        t[m.group(1)].append(float(m.group(2)))
on, off = statistics.median(t["on"]), statistics.median(t["off"])
print("median wall time: calibration on %.3f s, off %.3f s" % (on, off))
sys.exit(0 if on - off < 0.5 else 1)
PY
"$gw" dump --json --type inject_event "$res/busy_off.gwr" | grep -c '"code":9' | grep -qx 0 \
  && ok "GPUWHY_CALIBRATE=0: no measurement event" || ko "GPUWHY_CALIBRATE=0 still measured"

echo "== $pass passed, $fail failed $(date -u +%T)"
cp "$out/$name.log" "$res/"
rm -rf "$res/bench/t.gwr" "$res/bench/last.gwr" "$res/busy_on.gwr" "$res/busy_off.gwr" "$res"/*.parts
tar czf "$out/trace-cost.tgz" -C "$out" results
ls -la "$out"
