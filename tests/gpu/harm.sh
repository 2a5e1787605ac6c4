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
import os
# what the job was started with, before CUDA (CUPTI opens device files of its own later)
for fd in sorted(os.listdir("/proc/self/fd")):
    try: print("FD", fd, os.readlink("/proc/self/fd/" + fd))
    except OSError: pass
import torch
torch.ones(1, device="cuda").sum().item()' >"$out/fd.out" 2>&1
# compare with a plain run: the same descriptors at start (stdio, the
# pipe to this script), none of gpuwhy's own or of the driver it loaded
python3 -c '
import os
# what the job was started with, before CUDA (CUPTI opens device files of its own later)
for fd in sorted(os.listdir("/proc/self/fd")):
    try: print("FD", fd, os.readlink("/proc/self/fd/" + fd))
    except OSError: pass
import torch
torch.ones(1, device="cuda").sum().item()' >"$out/fd.plain" 2>&1
a=$(grep -c "^FD" "$out/fd.out"); b=$(grep -c "^FD" "$out/fd.plain")
[ "$a" -le "$b" ] && ! grep "^FD" "$out/fd.out" | grep -q nvidia && ok "descriptors at start: $a under gpuwhy, $b in a plain run" \
  || ko "descriptors at start: $a under gpuwhy, $b in a plain run ($(tr '\n' ' ' <"$out/fd.out"))"

echo "== nohup: an ignored SIGHUP stays ignored in the job"
out_sig=$( (trap '' HUP; ./gpuwhy record -q -o "$out/hup.gwr" -- python3 -c \
  'import signal; print(signal.getsignal(signal.SIGHUP))') 2>&1)
# SIG_IGN prints as 1 from Python 3.11 on (IntEnum's str is the int's)
echo "$out_sig" | grep -qE '^(Handlers\.)?SIG_IGN$|^1$' && ok "nohup: $out_sig" || ko "nohup: $out_sig"

echo "== a job that changes directory before CUDA starts, relative -o"
rm -rf "$out/cd" && mkdir -p "$out/cd" && (cd "$out/cd" && "$OLDPWD/gpuwhy" record -q -o rel.gwr -- \
  python3 -c 'import os; os.chdir("/tmp"); import torch; torch.ones(1, device="cuda").sum().item()')
nk=$(./gpuwhy dump --type kernel "$out/cd/rel.gwr" | wc -l)
[ "$nk" -ge 1 ] && ok "chdir: $nk kernels recorded" || ko "chdir: no kernels recorded"

echo "== SIGUSR1 (a preemption warning) reaches a CUDA job; its status and the recording stay whole"
rm -f "$out/usr1.gwr"
./gpuwhy record -q -o "$out/usr1.gwr" -- python3 -c '
import signal, sys, time
got = []
signal.signal(signal.SIGUSR1, lambda s, f: got.append(1))
import torch
x = torch.ones(1024, device="cuda")
t = time.time()
while time.time() - t < 20 and not got:
    (x * 2).sum().item()
    time.sleep(0.005)
sys.exit(7 if got else 1)' >"$out/usr1.out" 2>&1 &
gp=$!
sleep 8
kill -USR1 $gp
wait $gp
rc=$?
[ $rc -eq 7 ] && ok "SIGUSR1: forwarded, the job's own status 7 returned" || ko "SIGUSR1: exit $rc ($(tail -3 "$out/usr1.out"))"
./gpuwhy dump -t meta "$out/usr1.gwr" | grep -q "record.complete" && ok "SIGUSR1: recording complete" || ko "SIGUSR1: recording not finalized"
nk=$(./gpuwhy dump -t kernel "$out/usr1.gwr" | wc -l)
[ "$nk" -ge 100 ] && ok "SIGUSR1: $nk kernels recorded" || ko "SIGUSR1: $nk kernels recorded"
# the thread's state comes with its stack: this loop sleeps most of the time
ns=$(./gpuwhy dump -t py_sample "$out/usr1.gwr" | grep -c "state=2")
[ "$ns" -ge 1 ] && ok "py_sample state: $ns samples asleep" || ko "py_sample state: no sample asleep"
ls "$out"/usr1.gwr.parts >/dev/null 2>&1 && ko "SIGUSR1: the parts folder was left" || ok "SIGUSR1: parts folder merged and removed"

echo "$pass passed, $fail failed"
