#!/usr/bin/env bash
# verify.sh PYTHON: checks src/pystack against the CPython that PYTHON runs.
#  1. pyoffsets.c, compiled against PYTHON's own headers (internal ones with
#     Py_BUILD_CORE), prints the true struct offsets; used.c prints the ones
#     pystack uses on a live PYTHON process (its tables, or 3.13's
#     _Py_DebugOffsets): PASS/FAIL per offset.
#  2. The live process's two threads: their stacks printed, then checked
#     (inner:4 <- middle:7 <- outer:10 <- <module>:21 / Worker.run:14).
# Needs a C compiler and PYTHON's headers (Debian/Ubuntu: python3.X-dev).
# Exit status 0 when everything passed.
set -u
py=${1:?usage: verify.sh PYTHON}
here=$(cd "$(dirname "$0")" && pwd)
cc=${CC:-cc}
tmp=$(mktemp -d /tmp/gw-verify-XXXXXX)
pid=
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
fail=0; pass=0
ok() { echo "PASS $*"; pass=$((pass + 1)); }
ko() { echo "FAIL $*"; fail=$((fail + 1)); }

"$py" -c 'import sys, platform; print("python", sys.version.split()[0], sys.executable, platform.machine())' || exit 2
inc=$("$py" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
$cc -O1 -o "$tmp/used" "$here/used.c" || { echo "FAIL cannot build used.c"; exit 1; }

cat > "$tmp/prog.py" <<'PY'
import sys, threading

def inner(stop):
    while not stop[0]: pass

def middle(stop):
    return inner(stop)

def outer(stop):
    return middle(stop)

class Worker:
    def run(self, stop):
        return outer(stop)

stop = [False]
t = threading.Thread(target=Worker().run, args=(stop,))
t.start()
print('ready', flush=True)
try:
    outer(stop)
finally:
    stop[0] = True
PY
"$py" "$tmp/prog.py" > "$tmp/ready" &
pid=$!
for _ in $(seq 50); do grep -q ready "$tmp/ready" 2>/dev/null && break; sleep 0.1; done
# Until the main thread is in its loop (the program may still be starting it).
for _ in $(seq 50); do
	"$tmp/used" "$pid" > "$tmp/used.txt" || { ko "py_proc_open on the live python (pid $pid)"; exit 1; }
	grep -q "^stack $pid inner " "$tmp/used.txt" && break
	sleep 0.1
done

echo "== offsets (true: $inc; used: pystack on pid $pid)"
if [ -f "$inc/internal/pycore_runtime.h" ] &&
   $cc -w -I"$inc" -o "$tmp/pyoffsets" "$here/pyoffsets.c" 2> "$tmp/cc.err"; then
	"$tmp/pyoffsets" > "$tmp/true.txt"
	while read -r name val; do
		[ "$name" = version ] && continue
		used=$(awk -v n="$name" '$1 == n { print $2 }' "$tmp/used.txt")
		if [ -z "$used" ]; then echo "     $name $val (not used)"
		elif [ "$used" = "$val" ]; then ok "$name $val"
		else ko "$name: headers say $val, pystack uses $used"; fi
	done < "$tmp/true.txt"
else
	ko "cannot compile pyoffsets.c against $inc (install the python3.X-dev package): $(head -3 "$tmp/cc.err" 2>/dev/null)"
fi
grep pthread_tid_offset "$tmp/used.txt"

echo "== stacks"
sed -n 's/^stack //p' "$tmp/used.txt"
f=$tmp/prog.py
main=$(awk -v p="$pid" '$2 == p || $1 == p' "$tmp/used.txt" | awk '$1=="stack"{print $3":"$5}' | paste -sd' ')
[ "$main" = "inner:4 middle:7 outer:10 <module>:21" ] && ok "main thread: $main" || ko "main thread: '$main'"
worker=$(awk -v p="$pid" '$1=="stack" && $2 != p {print $3":"$5}' "$tmp/used.txt" | head -4 | paste -sd' ')
case $worker in
"inner:4 middle:7 outer:10 Worker.run:14" | "inner:4 middle:7 outer:10 run:14") ok "worker thread: $worker" ;;
*) ko "worker thread: '$worker'" ;;
esac
grep -q " $f " "$tmp/used.txt" || ko "file name $f not in the stacks"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
