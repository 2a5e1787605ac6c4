#!/usr/bin/env bash
# On the GPU machine, after gpuwhy is built (tests/gpu/build.sh): NVTX ranges
# reach the recording through the injection library (NVTX_INJECTION64_PATH
# names it; its InitializeInjectionNvtx2 hands NVTX to the CUPTI it traces
# with). A PyTorch loop marking each of its 60 iterations with
# torch.cuda.nvtx.range_push("train_step") is recorded; its steps must come
# from those ranges.
#   tests/gpu/nvtx_steps.sh OUT
out=${1:?usage: tests/gpu/nvtx_steps.sh OUT}
mkdir -p "$out"
pass=0; fail=0
ok() { echo "PASS $*"; pass=$((pass+1)); }
ko() { echo "FAIL $*"; fail=$((fail+1)); }
timeout 120 ./gpuwhy record -q -o "$out/nvtx_loop.gwr" -- python3 tests/gpu/nvtx_loop.py >"$out/nvtx_loop.out" 2>&1
echo "record exit $?"
./gpuwhy dump --type marker "$out/nvtx_loop.gwr" 2>/dev/null | grep -c "name=train_step" | sed 's/^/train_step range starts recorded: /'
./gpuwhy report --json "$out/nvtx_loop.gwr" >"$out/nvtx_loop.json" 2>/dev/null
./gpuwhy report -v "$out/nvtx_loop.gwr" 2>&1 | sed -n '/^Steps/,/step time/p'
python3 - "$out/nvtx_loop.json" <<'PY' && ok "steps from the NVTX ranges" || ko "steps from the NVTX ranges"
import json, sys
s = json.load(open(sys.argv[1]))["steps"]
print("steps:", s.get("source"), s.get("marker"), s.get("count"))
assert s["source"] == "nvtx" and s["marker"] == "train_step" and 55 <= s["count"] <= 60, s
PY
echo "== nvtx: $pass passed, $fail failed"
