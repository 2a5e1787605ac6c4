#!/usr/bin/env bash
# What one in-process stack read costs (the exact sync sites' read, made by
# the injection library at every synchronizing call), from the repository root:
#   bench/pystack_read.sh [PYTHON]
# Builds a small library of src/pystack that reads the calling thread's own
# stack N times through py_proc_stack, and calls it through ctypes at two
# depths, with 1 and 17 threads. Prints microseconds per read.
set -eu
py=${1:-python3}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cat >"$dir/b.c" <<'C'
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "pystack/pystack.h"
static struct py_proc *p;
double bench(int n)
{
	struct py_frame f[64];
	struct timespec a, b;
	int ok = 0;

	if (!p && py_proc_open(&p, getpid(), NULL, 0))
		return -1;
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (int i = 0; i < n; i++)
		ok += py_proc_stack(p, (pid_t)syscall(SYS_gettid), f, 64) > 0;
	clock_gettime(CLOCK_MONOTONIC, &b);
	return ok == n ? ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / n : -2;
}
C
${CC:-cc} -O2 -shared -fPIC -D_GNU_SOURCE -Isrc -o "$dir/b.so" "$dir/b.c" src/pystack/pystack.c
"$py" - "$dir/b.so" <<'PY'
import ctypes, sys, threading
lib = ctypes.CDLL(sys.argv[1]); lib.bench.restype = ctypes.c_double
def deep(n, k):
    return deep(n - 1, k) if n else lib.bench(k)
for nth in (0, 16):
    ev = threading.Event()
    for _ in range(nth):
        threading.Thread(target=ev.wait, daemon=True).start()
    for depth in (10, 40):
        deep(depth, 200)
        print(f"{nth + 1} threads, depth {depth + 2}: {deep(depth, 5000) / 1000:.1f} us per read")
    ev.set()
PY
