#!/usr/bin/env bash
# On the GPU machine, after the SYNCHRONIZATION kind left the default recording:
#  - does duty mode now lower the cost on the host-bound loop (it did not
#    before; the hypothesis is that the sync kind's cost stayed after
#    cuptiActivityDisable), and
#  - what do the launch-heavy scenarios lose under `gpuwhy record` now
#    (docs/ACCURACY.md has the recording cost per scenario)?
#  - does `record --sync-records` bring CUPTI's sync records back?
#   tests/gpu/duty_and_launch_cost.sh OUT        (about 6 minutes)
out=${1:?usage: tests/gpu/duty_and_launch_cost.sh OUT}
name=duty_and_launch_cost
. tests/gpu/harness.sh
echo "== duty mode, host-bound loop $(date -u +%T)"
LOOPS=bf16-host MODES="plain record duty" timeout 150 bench/run.sh "$out/duty" 3
echo "== launch-heavy scenarios, plain vs recorded $(date -u +%T)"
for s in c1_data_loading c3_small_batch c5_launch_blocking c10_rnn_loop; do
  python3 "workloads/$s.py" --seconds 3 >"$out/$s.plain.json" 2>/dev/null
  ./gpuwhy record -q -o "$out/$s.gwr" -- python3 "workloads/$s.py" --seconds 3 >"$out/$s.rec.json" 2>/dev/null
  python3 - "$out" "$s" <<'PY'
import json, sys
out, s = sys.argv[1], sys.argv[2]
v = [json.loads(open(f"{out}/{s}.{k}.json").read().strip().splitlines()[-1])["samples_per_s"] for k in ("plain", "rec")]
print(f"{s}: recorded/plain throughput {v[1] / v[0]:.2f}")
PY
  rm -f "$out/$s.gwr"
done
echo "== --sync-records $(date -u +%T)"
./gpuwhy record -q --sync-records -o "$out/sr.gwr" -- build/gpu-target >/dev/null
ns=$(./gpuwhy dump --type sync "$out/sr.gwr" | wc -l)
[ "$ns" -ge 5 ] && ok "--sync-records: $ns sync records" || ko "--sync-records: $ns sync records, want 5+"
echo "== gpu tests: $pass passed, $fail failed"
echo "== done $(date -u +%T)"
