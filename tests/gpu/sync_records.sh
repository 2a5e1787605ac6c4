#!/usr/bin/env bash
# On the GPU machine: the injection library without SYNCHRONIZATION
# records beside the host-call callbacks.   tests/gpu/sync_records.sh OUT
# The CUDA C target's counts, C9 (synchronization stalls) still diagnosed from
# the host calls alone, then the host-bound loops with and without the kind.
out=${1:?usage: tests/gpu/sync_records.sh OUT}
name=sync_records
. tests/gpu/harness.sh
echo "== CUDA C target"
./gpuwhy record -q -o "$out/cuda_c_target.gwr" -- build/gpu-target >"$out/cuda_c_target.expected.json"
python3 tests/gpu/check_target.py ./gpuwhy "$out/cuda_c_target.gwr" "$out/cuda_c_target.expected.json" && ok target || ko target
echo "== C9 from host calls only"
./gpuwhy record -q -o "$out/c9.gwr" -- python3 workloads/c9_item_sync.py --seconds 3 >"$out/c9.json"
ns=$(./gpuwhy dump --type sync "$out/c9.gwr" | wc -l)
[ "$ns" -eq 0 ] && ok "c9: no sync activity records" || ko "c9: $ns sync records"
./gpuwhy report --json "$out/c9.gwr" >"$out/c9.report.json"
python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); f=[x for x in r["findings"] if x.get("assessed", True)]; print("top:", f[0]["rule"], f[0]["speedup"]); sys.exit(0 if f[0]["cause"]=="C9" else 1)' "$out/c9.report.json" \
  && ok "c9: top finding C9" || ko "c9: top finding is not C9"
echo "== gpu tests: $pass passed, $fail failed"
echo "== overhead with and without the sync kind $(date -u +%T)"
LOOPS="bf16-host launch" MODES="plain kinds=kernel record kinds=kernel,memcpy,memset,sync,marker,overhead" \
  timeout 300 bench/run.sh "$out/bench" 3
echo "== done $(date -u +%T)"
