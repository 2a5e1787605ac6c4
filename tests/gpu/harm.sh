#!/usr/bin/env bash
# What gpuwhy does to the job, on a GPU (the CLI tests check the same paths
# with a stand-in driver): descriptors of the real driver and NVML never
# reach the job, an ignored SIGHUP stays ignored, a job that changes
# directory before CUDA starts is still traced.
#   tests/gpu/harm.sh OUT
out=${1:?usage: tests/gpu/harm.sh OUT}
name=harm
. tests/gpu/harness.sh

echo "== descriptors: the job gets only those gpuwhy was started with"
rm -f "$out/fd.gwr"
./gpuwhy record -q -o "$out/fd.gwr" -- python3 -c '
import os, torch
torch.ones(1, device="cuda").sum().item()
for fd in sorted(os.listdir("/proc/self/fd")):
    try: print(fd, os.readlink("/proc/self/fd/" + fd))
    except OSError: pass' >"$out/fd.out" 2>&1
# the job opens /dev/nvidia* itself once CUDA starts: compare with a plain run
python3 -c '
import os, torch
torch.ones(1, device="cuda").sum().item()
for fd in sorted(os.listdir("/proc/self/fd")):
    try: print(fd, os.readlink("/proc/self/fd/" + fd))
    except OSError: pass' >"$out/fd.plain" 2>&1
a=$(grep -c nvidia "$out/fd.out"); b=$(grep -c nvidia "$out/fd.plain")
[ "$a" -le "$b" ] && ok "descriptors: $a to /dev/nvidia* under gpuwhy, $b in a plain run" \
  || ko "descriptors: $a to /dev/nvidia* under gpuwhy, $b in a plain run (gpuwhy's leaked)"

echo "== nohup: an ignored SIGHUP stays ignored in the job"
out_sig=$( (trap '' HUP; ./gpuwhy record -q -o "$out/hup.gwr" -- python3 -c \
  'import signal; print(signal.getsignal(signal.SIGHUP))') 2>&1)
echo "$out_sig" | grep -q SIG_IGN && ok "nohup: $out_sig" || ko "nohup: $out_sig"

echo "== a job that changes directory before CUDA starts, relative -o"
rm -rf "$out/cd" && mkdir -p "$out/cd" && (cd "$out/cd" && "$OLDPWD/gpuwhy" record -q -o rel.gwr -- \
  python3 -c 'import os; os.chdir("/tmp"); import torch; torch.ones(1, device="cuda").sum().item()')
nk=$(./gpuwhy dump --type kernel "$out/cd/rel.gwr" | wc -l)
[ "$nk" -ge 1 ] && ok "chdir: $nk kernels recorded" || ko "chdir: no kernels recorded"

echo "$pass passed, $fail failed"
