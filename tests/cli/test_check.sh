#!/usr/bin/env bash
# gpuwhy check without a GPU: the GPU checks on a stand-in NVML with two
# synthetic GPUs (tests/faults/fakenvml.c) against their expected output, and
# --data on folders that must not hang it or hide why they could not be
# read. Prints "N passed, N failed".
set -u
cd "$(dirname "$0")/../.."
root=$PWD
gw=${GPUWHY:-$PWD/gpuwhy}
cc=${CC:-cc}
tmp=$(mktemp -d /tmp/gw-check-XXXXXX)
trap 'chmod -R u+rwx "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
pass=0; fail=0; skip=
ok() { pass=$((pass+1)); }
ko() { echo "FAIL $*"; fail=$((fail+1)); }

# An ASan build needs its runtime first in a preload list.
asan=$(ldd "$gw" 2>/dev/null | awk '/libasan/ {print $3}')
preload() { if [ -n "$asan" ]; then echo "$asan $1"; else echo "$1"; fi; }

# checks FILE [SCOPE_PREFIX]: one line per check, tab-separated fields
checks() {
  python3 - "$1" "${2:-}" <<'PY'
import json, sys
for c in json.load(open(sys.argv[1]))["checks"]:
    if c["scope"].startswith(sys.argv[2]):
        print("\t".join(c[k] for k in ("scope", "name", "status", "measured", "expected", "why", "fix")))
PY
}
# field FILE SCOPE NAME KEY
field() {
  python3 - "$@" <<'PY'
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except ValueError:
    sys.exit("(no JSON from gpuwhy check)")
for c in d["checks"]:
    if c["scope"] == sys.argv[2] and c["name"] == sys.argv[3]:
        print(c[sys.argv[4]])
PY
}

mkdir -p "$tmp/nvml"
$cc -std=c11 -O1 -fPIC -shared -o "$tmp/nvml/libnvidia-ml.so.1" tests/faults/fakenvml.c &&
  $cc -std=c11 -O1 -fPIC -shared -o "$tmp/slowread.so" tests/faults/slowread.c -ldl ||
  { echo "cannot build the stand-ins with $cc"; echo "0 passed, 1 failed"; exit 1; }

# The GPU checks: every verdict and text, for two GPUs (one healthy, one with
# every fault) and for one GPU alone, as tests/cli/check-fakenvml.tsv has them.
LD_LIBRARY_PATH=$tmp/nvml "$gw" check --json --no-bandwidth > "$tmp/two.json" 2>"$tmp/err"; rc=$?
[ $rc -eq 1 ] && ok || ko "check on the faulty synthetic GPU: exit $rc, want 1 ($(head -c 200 "$tmp/err"))"
LD_LIBRARY_PATH=$tmp/nvml FAKE_NVML_ONE_GPU=1 "$gw" check --json > "$tmp/one.json" 2>"$tmp/err"
{ checks "$tmp/two.json" gpu; checks "$tmp/one.json" gpu; } > "$tmp/gpu.tsv"
if diff tests/cli/check-fakenvml.tsv "$tmp/gpu.tsv" > "$tmp/diff"; then ok; else
  ko "GPU checks differ from tests/cli/check-fakenvml.tsv:"; head -20 "$tmp/diff"
fi
[ "$(grep -c . "$tmp/gpu.tsv")" -ge 30 ] && ok || ko "GPU checks: $(grep -c . "$tmp/gpu.tsv") lines"
# the terminal form shows the texts of what did not pass
LD_LIBRARY_PATH=$tmp/nvml "$gw" check --no-bandwidth > "$tmp/two.txt" 2>&1
grep -q "fix: Restore it with nvidia-smi -pl (root)" "$tmp/two.txt" && ok || ko "check text lacks the power limit's fix"
grep -q "^  fail ecc  *3 uncorrected errors" "$tmp/two.txt" && ok || ko "check text lacks the ECC failure"
# no driver: one n/a line that says what to do
"$gw" check --json --no-bandwidth > "$tmp/none.json" 2>/dev/null
[ "$(field "$tmp/none.json" gpu driver status)" = not-assessed ] && ok || ko "no driver: not n/a"
field "$tmp/none.json" gpu driver fix | grep -q "Install the NVIDIA driver" && ok || ko "no driver: no fix"
# no driver: what was not checked, and the exact command to run next (a
# report on the bundled recording), which runs from here and diagnoses it
"$gw" check --no-bandwidth > "$tmp/none.txt" 2>&1
grep -A3 '^not checked without a driver: ' "$tmp/none.txt" | tr '\n' ' ' > "$tmp/nc"
for id in pcie.link bandwidth.pinned bandwidth.pageable power.limit clocks temperature ecc numa; do
  grep -q "[: ]$id[, ]" "$tmp/nc" && ok || ko "no driver: '$id' not among what was not checked: $(cat "$tmp/nc")"
done
grep -q '^next: run gpuwhy check on the GPU machine' "$tmp/none.txt" && ok || ko "no driver: no 'next:' line ($(tail -5 "$tmp/none.txt"))"
next=$(grep -A2 '^next: ' "$tmp/none.txt" | grep '^  ' | sed 's/^  //')
case $next in
  *" report tests/fixtures/case_study.gwr") ok ;;
  *) ko "no driver: the next command is '$next', not a report on tests/fixtures/case_study.gwr" ;;
esac
python3 - "$tmp/none.json" "$next" <<'PY' && ok || ko "no driver: JSON not_checked / next ($(tail -c 400 "$tmp/none.json"))"
import json, sys
d = json.load(open(sys.argv[1]))
assert "pcie.link" in d["not_checked"] and "bandwidth.pinned" in d["not_checked"], d.get("not_checked")
assert d["next"] == sys.argv[2], (d["next"], sys.argv[2])
PY
eval "$next" > "$tmp/next.out" 2>&1; rc=$?
[ $rc -eq 0 ] && grep -q '^Steps: 697' "$tmp/next.out" && ok || ko "no driver: '$next' exits $rc: $(head -c 300 "$tmp/next.out")"
# from another folder the command names both by full path
(cd "$tmp" && "$gw" check --no-bandwidth) > "$tmp/none2.txt" 2>&1
next2=$(grep -A2 '^next: ' "$tmp/none2.txt" | grep '^  ' | sed 's/^  //')
(cd "$tmp" && eval "$next2") > "$tmp/next2.out" 2>&1 && grep -q '^Steps: 697' "$tmp/next2.out" && ok ||
  ko "no driver, run elsewhere: '$next2' does not report ($(head -c 300 "$tmp/next2.out"))"
# with a driver (the stand-in NVML) there is nothing of the kind
grep -q '^not checked\|^next:' "$tmp/two.txt" && ko "with a driver, check says what it did not check" || ok
grep -q '"not_checked"' "$tmp/two.json" && ko "with a driver, the JSON has not_checked" || ok

# --data: a folder with a FIFO beside a file is read without waiting on it
mkdir "$tmp/fifo"
head -c 2097152 /dev/zero > "$tmp/fifo/data.bin"
mkfifo "$tmp/fifo/pipe"
timeout 20 "$gw" check --json --no-bandwidth --data "$tmp/fifo" > "$tmp/out.json" 2>"$tmp/err"; rc=$?
[ $rc -ne 124 ] && ok || ko "check --data hangs on a FIFO"
field "$tmp/out.json" data storage.read measured | grep -q "reading 2 MB from 1 files" && ok ||
  ko "check --data with a FIFO: $(field "$tmp/out.json" data storage.read measured)"

# --data on a tree, as image folders are (train/CLASS/N.jpg): every level is
# walked to a depth of 16 folders; links (to a folder, to /dev/zero) are not
# followed, a FIFO is skipped, a folder deeper than the bound is not read
mkdir -p "$tmp/tree/train/cat" "$tmp/tree/train/dog" "$tmp/tree/val/cat" "$tmp/outside"
deep=$tmp/tree/deep/a/b/c/d/e/f/g/h/i/j/k/l/m/n/o
mkdir -p "$deep/p/q"
for d in train/cat train/dog val/cat; do
  for i in 1 2 3 4 5 6 7 8; do head -c 65536 /dev/zero > "$tmp/tree/$d/$i.jpg"; done
done
head -c 65536 /dev/zero > "$deep/16.jpg"        # in the 16th folder level: read
head -c 4194304 /dev/zero > "$deep/p/q/18.jpg"  # in the 18th: not read
head -c 8388608 /dev/zero > "$tmp/outside/big.bin"
mkfifo "$tmp/tree/train/cat/pipe.jpg"
ln -s /dev/zero "$tmp/tree/train/dog/zero.jpg"
ln -s "$tmp/outside" "$tmp/tree/train/linked"
timeout 60 "$gw" check --json --no-bandwidth --data "$tmp/tree" > "$tmp/out.json" 2>"$tmp/err"; rc=$?
[ $rc -ne 124 ] && ok || ko "check --data hangs on a tree"
m=$(field "$tmp/out.json" data storage.read measured)
case $m in *"reading 2 MB from 25 of 25+ files in 22 folders"*) ok ;; *) ko "check --data on a tree: '$m'" ;; esac

# the files read are a sample of the whole tree, not the first folder's: a
# folder of 4 sparse 512 MiB files and one of 50 small files; 1 GiB is read
mkdir -p "$tmp/mix/big" "$tmp/mix/small"
for i in 1 2 3 4; do truncate -s 512M "$tmp/mix/big/$i.bin"; done
for i in $(seq 50); do head -c 65536 /dev/zero > "$tmp/mix/small/$i.jpg"; done
timeout 60 "$gw" check --json --no-bandwidth --data "$tmp/mix" > "$tmp/out.json" 2>"$tmp/err"
m=$(field "$tmp/out.json" data storage.read measured)
n=$(echo "$m" | sed -n 's/.*reading 10[0-9][0-9] MB from \([0-9]*\) of 54 files in 3 folders.*/\1/p')
[ -n "$n" ] && [ "$n" -ge 3 ] && ok || ko "check --data: not a sample of both folders: '$m'"

# a regular file whose read blocks (as /proc/kmsg's does): opened non-blocking
mkdir "$tmp/block"
head -c 2097152 /dev/zero > "$tmp/block/blocky.bin"
head -c 2097152 /dev/zero > "$tmp/block/plain.bin"
LD_PRELOAD=$(preload "$tmp/slowread.so") GW_SLOW_PATH=blocky GW_SLOW_MODE=block \
  timeout 20 "$gw" check --json --no-bandwidth --data "$tmp/block" > "$tmp/out.json" 2>"$tmp/err"; rc=$?
[ $rc -ne 124 ] && ok || ko "check --data hangs on a file whose read blocks"
field "$tmp/out.json" data storage.read measured | grep -q "reading 2 MB from 2 files" && ok ||
  ko "check --data with a blocking file: $(field "$tmp/out.json" data storage.read measured)"

# a very slow file (each 1 MiB read takes a second of the shim's clock): the
# 30 s limit holds inside the file, not only between files
mkdir "$tmp/slow"
truncate -s 64M "$tmp/slow/slow.bin"
LD_PRELOAD=$(preload "$tmp/slowread.so") GW_SLOW_PATH=slow.bin GW_SLOW_MODE=slow \
  timeout 60 "$gw" check --json --no-bandwidth --data "$tmp/slow" > "$tmp/out.json" 2>"$tmp/err"
mb=$(field "$tmp/out.json" data storage.read measured | sed -n 's/.*reading \([0-9]*\) MB.*/\1/p')
[ -n "$mb" ] && [ "$mb" -le 33 ] && ok ||
  ko "check --data read past its time limit: $(field "$tmp/out.json" data storage.read measured)"

# /proc: a pseudo file system, not storage (its kmsg would block)
timeout 30 "$gw" check --json --no-bandwidth --data /proc > "$tmp/out.json" 2>"$tmp/err"; rc=$?
[ $rc -ne 124 ] && ok || ko "check --data /proc hangs"
field "$tmp/out.json" data storage.read measured | grep -q "pseudo file system (proc)" && ok ||
  ko "check --data /proc: $(field "$tmp/out.json" data storage.read measured)"

# unreadable folder and files: "permission denied" and what to do. Root reads
# anything, so as root these run as nobody (setpriv), or are skipped.
mkdir -p "$tmp/perm/closed" "$tmp/perm/files"
head -c 2097152 /dev/zero > "$tmp/perm/files/a.bin"
chmod 000 "$tmp/perm/closed" "$tmp/perm/files/a.bin"
chmod 755 "$tmp" "$tmp/perm" "$tmp/perm/files"
as_user=()
if [ "$(id -u)" -eq 0 ]; then
  if command -v setpriv >/dev/null && id nobody >/dev/null 2>&1; then
    as_user=(setpriv --reuid=nobody --regid="$(id -g nobody)" --clear-groups)
    # nobody must reach the binary: a copy where it can
    cp "$gw" "$tmp/gpuwhy" && chmod 755 "$tmp/gpuwhy"
    pgw=$tmp/gpuwhy
  else
    echo "skip unreadable folder: running as root, and no setpriv or user nobody to drop to"; skip=1
  fi
else
  pgw=$gw
fi
if [ "$(id -u)" -ne 0 ] || [ ${#as_user[@]} -gt 0 ]; then
  "${as_user[@]}" "$pgw" check --json --no-bandwidth --data "$tmp/perm/closed" > "$tmp/p1.json" 2>"$tmp/err"
  m=$(field "$tmp/p1.json" data storage.read measured)
  case $m in *"Permission denied"*) ok ;; *) ko "unreadable folder: '$m' ($(head -c 200 "$tmp/err"))" ;; esac
  field "$tmp/p1.json" data storage.read fix | grep -q "as the user the job runs as" && ok || ko "unreadable folder: no fix"
  [ "$(field "$tmp/p1.json" data storage.read status)" = warn ] && ok || ko "unreadable folder: not a warning"
  "${as_user[@]}" "$pgw" check --json --no-bandwidth --data "$tmp/perm/files" > "$tmp/p2.json" 2>"$tmp/err"
  m=$(field "$tmp/p2.json" data storage.read measured)
  case $m in *"permission denied"*) ok ;; *) ko "unreadable files: '$m'" ;; esac
fi

# a virtual machine's disk reports itself rotational: no HDD warning for it
d=$(stat -c %d "$tmp"); blk=$(readlink -f /sys/dev/block/$((d >> 8)):$((d & 255)) 2>/dev/null)
case $blk in
*/virtio*|*/xen*)
  mkdir -p "$tmp/vdata" && head -c 1048576 /dev/zero > "$tmp/vdata/a.bin"
  "$gw" check --json --data "$tmp/vdata" --no-bandwidth > "$tmp/v.json" 2>/dev/null
  python3 -c 'import json,sys; c=[x for x in json.load(open(sys.argv[1]))["checks"] if x["name"] == "storage.device"][0]; sys.exit(not (c["status"] == "pass" and "virtual disk" in c["measured"]))' "$tmp/v.json" &&
    ok || ko "a virtio disk: storage.device warns or does not say it is virtual ($(head -c 300 "$tmp/v.json"))" ;;
*) skip=$((${skip:-0} + 1)) ;;
esac

echo "$pass passed, $fail failed${skip:+, $skip skipped}"
[ "$fail" -eq 0 ]
