#!/usr/bin/env bash
# The install path on the GPU machine (repository root; no network there):
#   tests/gpu/install.sh OUT
# Installs the wheel built on the development machine (dist/*.whl: `make
# gpudeps wheel` there; the GPU image has no zlib.h) into the venv that holds
# the machine's PyTorch (or, where python3 is no venv's, a fresh venv with
# --system-site-packages), then records with
#   1. the CUPTI of the framework's own wheel (nothing set),
#   2. CUPTI 12.x from the nvidia-cuda-cupti-cu12 wheel carried in .gpudeps
#      (GPUWHY_CUPTI): a PyTorch job, and a driver-API job without libcudart,
#   3. the CUDA 13 toolkit's CUPTI (GPUWHY_CUPTI),
# and asserts from each report the CUPTI used and that kernels were recorded.
# Carry: dist and .gpudeps/cu12-12.9.79/nvidia/cuda_cupti/lib/libcupti.so.12.
# Logs, recordings' reports and the summary land in OUT. About 2 minutes.
set -u
out=${1:?usage: tests/gpu/install.sh OUT}
mkdir -p "$out"
out=$(cd "$out" && pwd)
exec > >(tee -a "$out/install.log") 2>&1
root=$PWD
pass=0; fail=0
ok() { echo "PASS $*"; pass=$((pass + 1)); }
ko() { echo "FAIL $*"; fail=$((fail + 1)); }

echo "== machine $(date -u +%FT%TZ)"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
python3 -c 'import sys, torch; print("python", sys.version.split()[0], sys.executable); print("torch", torch.__version__, torch.__file__)'
python3 -c 'import os, torch; s = os.path.dirname(os.path.dirname(torch.__file__)); d = os.path.join(s, "nvidia")
print("nvidia wheels:", sorted(os.listdir(d)) if os.path.isdir(d) else "none in " + s)'
wheel=$(ls "$root"/dist/gpuwhy-*.whl 2>/dev/null | head -1)
cupti12=$(ls "$root"/.gpudeps/cu12-*/nvidia/cuda_cupti/lib/libcupti.so.12 2>/dev/null | head -1)
toolkit13=$(ls /usr/local/cuda*/targets/x86_64-linux/lib/libcupti.so.13 /usr/local/cuda*/extras/CUPTI/lib64/libcupti.so.13 2>/dev/null | head -1)
echo "wheel: ${wheel:-none}"; echo "cupti 12: ${cupti12:-none}"; echo "toolkit cupti 13: ${toolkit13:-none}"
[ -n "$wheel" ] || { ko "no wheel in dist/ (make gpudeps wheel on the development machine, carry dist)"; exit 1; }

# Where PyTorch lives in a venv (the GPU machine's is /opt/torch/.venv), the
# wheel goes into that venv, as a user installs it beside their framework;
# otherwise into a fresh venv that sees the system's packages.
if python3 -c 'import sys; sys.exit(sys.prefix == sys.base_prefix)'; then
	venv=$(python3 -c 'import sys; print(sys.prefix)')
	echo "== install into the job's own venv: $venv"
	python3 -m pip install --no-index --no-deps --force-reinstall --disable-pip-version-check \
		"$wheel" && ok "pip install $(basename "$wheel")" || { ko "pip install"; exit 1; }
else
	echo "== install into a fresh venv (system site-packages: the machine's torch)"
	venv=$out/venv
	rm -rf "$venv"
	python3 -m venv --without-pip --system-site-packages "$venv" || { ko "python3 -m venv"; exit 1; }
	python3 -m pip --python "$venv/bin/python" install --no-index --no-deps --disable-pip-version-check \
		"$wheel" && ok "pip install $(basename "$wheel")" || { ko "pip install"; exit 1; }
fi
export PATH=$venv/bin:$PATH
hash -r
[ "$(command -v gpuwhy)" = "$venv/bin/gpuwhy" ] && ok "gpuwhy on the venv's PATH" || ko "gpuwhy is $(command -v gpuwhy)"
gpuwhy --version && python -m gpuwhy --version && ok "gpuwhy --version, python -m gpuwhy --version" || ko "--version"
[ -n "$(command -v nvcc)" ] && echo "(nvcc exists on this machine; the wheel needs none)"

# record NAME EXPECT_MAJOR PATH_GLOB -- command...: records, reports, asserts
record() {
	local name=$1 major=$2 want=$3; shift 4
	echo "== $name: $*"
	rm -rf "$out/$name.gwr" "$out/$name.gwr.parts"
	(cd "$root/workloads" && timeout 150 gpuwhy run -o "$out/$name.gwr" -- "$@") >"$out/$name.run.txt" 2>&1
	echo "exit $?"; tail -5 "$out/$name.run.txt"
	gpuwhy report -v "$out/$name.gwr" >"$out/$name.report.txt" 2>&1
	grep -E "^  CUPTI:|warning:.*CUPTI|no GPU timeline" "$out/$name.report.txt"
	gpuwhy report --json "$out/$name.gwr" >"$out/$name.json" 2>/dev/null
	python - "$out/$name.json" "$major" "$want" <<'PY' && ok "$name" || ko "$name"
import fnmatch, json, sys
import gpuwhy
d = json.load(open(sys.argv[1]))
assert gpuwhy.report(sys.argv[1][:-5] + ".gwr")["verdict"] == d["verdict"]
c = d["cupti"]
assert c, "no CUPTI recorded; warnings: %s" % d["warnings"]
print("  cupti: %s, %s (from %s)" % (c["version"], c["path"], c["source"]))
assert c["version"].startswith(sys.argv[2] + "."), c["version"]
assert fnmatch.fnmatch(c["path"], sys.argv[3]), (c["path"], sys.argv[3])
k = sum(g["kernels"] for g in d["gpus"])
print("  kernels: %d; verdict %s; findings %s" % (k, d["verdict"], [f["rule"] for f in d["findings"]][:3]))
assert k >= 1000, "only %d kernels" % k
PY
}

# 1. the framework's own CUPTI: already loaded by torch, or found in its site-packages
record framework 13 "*/nvidia/*" -- python c9_item_sync.py --seconds 3
# 2. CUPTI 12.x from the carried wheel: the CUDA 12 library takes over
if [ -n "$cupti12" ]; then
	GPUWHY_CUPTI=$cupti12 record cupti12-torch 12 "$cupti12" -- python c9_item_sync.py --seconds 3
	GPUWHY_CUPTI=$cupti12 record cupti12-driver 12 "$cupti12" -- python "$root/tests/gpu/driver_loop.py" 3000
else
	ko "no libcupti.so.12 carried (.gpudeps/cu12-*/nvidia/cuda_cupti/lib)"
fi
# 3. the CUDA 13 toolkit's CUPTI
if [ -n "$toolkit13" ]; then
	GPUWHY_CUPTI=$toolkit13 record toolkit13 13 "$toolkit13" -- python c9_item_sync.py --seconds 3
else
	ko "no CUDA 13 toolkit CUPTI found"
fi
rm -rf "$venv" "$out"/*.gwr "$out"/*.gwr.parts # the reports stay
echo "== install tests: $pass passed, $fail failed"
