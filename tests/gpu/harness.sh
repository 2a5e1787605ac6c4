# Sourced by the GPU scripts (tests/gpu/*.sh), from the repository
# root, after they set $out and $name: logs everything to $out/$name.log,
# counts PASS/FAIL lines, names the machine, builds gpuwhy there.
set -u
mkdir -p "$out"
exec > >(tee -a "$out/$name.log") 2>&1
pass=0; fail=0
ok() { echo "PASS $*"; pass=$((pass+1)); }
ko() { echo "FAIL $*"; fail=$((fail+1)); }
echo "== machine $(date -u +%FT%TZ)"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
echo "== build $(date -u +%T)"
tests/gpu/build.sh "$out" || exit 1
