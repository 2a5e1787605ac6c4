#!/usr/bin/env bash
# A resource limit is never a verdict: `gpuwhy report` on real recordings,
# with one allocation made to fail at a time (tests/faults/failmalloc.c),
# must either print the same report as without the failure (the allocation
# had a fallback that changes nothing) or stop with exit 1 and say that it
# ran out of memory. A different report with exit 0 (a step count capped, a
# cause left out, a "healthy" verdict) or a crash fails. Every allocation of
# c11_memory_bound (no Python stacks) and every third of c2_storage (Python
# stacks, /proc samples, I/O). `gpuwhy check` alike: every allocation
# failed in turn gives the full list of checks or exit 1 saying it ran out
# of memory, never a crash or a shorter list. Prints "N passed, N failed".
set -u
cd "$(dirname "$0")/../.."
gw=${GPUWHY:-$PWD/gpuwhy}
so=${FAILMALLOC:-$PWD/${BUILD:-build}/tests/failmalloc.so}
tmp=$(mktemp -d /tmp/gw-alloc-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
pass=0; fail=0
if [ ! -f "$so" ] || ldd "$gw" 2>/dev/null | grep -q libasan; then
  echo "skip: no $so, or a sanitizer build (its allocator cannot be replaced)"
  echo "0 passed, 0 failed, 1 skipped"
  exit 0
fi
sweep() { # fixture, stride
  local fx=tests/fixtures/$1.gwr stride=$2 n i rc bad=0 runs=0
  "$gw" report "$fx" >"$tmp/base" 2>/dev/null
  GW_FAIL_MALLOC_COUNT=$tmp/count LD_PRELOAD=$so "$gw" report "$fx" >/dev/null 2>&1
  n=$(cat "$tmp/count")
  for ((i = 1; i <= n; i += stride)); do
    runs=$((runs + 1))
    GW_FAIL_MALLOC_AT=$i LD_PRELOAD=$so "$gw" report "$fx" >"$tmp/out" 2>"$tmp/err"; rc=$?
    if [ $rc -eq 0 ] && cmp -s "$tmp/out" "$tmp/base"; then continue; fi
    if [ $rc -eq 1 ] && grep -q "out of memory\|Cannot allocate memory" "$tmp/err"; then continue; fi
    bad=$((bad + 1))
    [ $bad -le 5 ] && echo "FAIL $1: allocation $i of $n failed: exit $rc, $(head -c 200 "$tmp/err" | tr '\n' ' ')" \
      "$(diff "$tmp/out" "$tmp/base" | head -4 | tr '\n' ' ')"
  done
  if [ $bad -eq 0 ] && [ "$n" -gt 100 ]; then pass=$((pass + 1)); else fail=$((fail + 1)); fi
  echo "$1: $runs of $n allocations failed in turn, $bad ended otherwise than in the same report or an out-of-memory error"
}
sweep c11_memory_bound 1
sweep c2_storage 3
# check: the number of checks, not their values (free memory changes). Its
# data folder: four files and a recording, 2.5 MB in all, in three folders,
# and a link (the storage check reads them all): each allocation of the walk
# is made a few times, not once for each of the hundreds of fixture files.
check_sweep() {
  local n i rc bad=0 base got data=$tmp/data
  mkdir -p "$data/sub/deeper"
  for i in 1 2 3; do head -c 700000 /dev/urandom >"$data/f$i.bin"; done
  head -c 300000 /dev/urandom >"$data/sub/g.bin"
  cp tests/fixtures/healthy.gwr "$data/sub/deeper/"
  ln -s f1.bin "$data/link.bin"
  "$gw" check --json --no-bandwidth --data "$data" --pid $$ >"$tmp/cbase" 2>/dev/null
  base=$(grep -c '"scope"' "$tmp/cbase")
  GW_FAIL_MALLOC_COUNT=$tmp/count LD_PRELOAD=$so "$gw" check --json --no-bandwidth --data "$data" --pid $$ >/dev/null 2>&1
  n=$(cat "$tmp/count")
  for ((i = 1; i <= n; i++)); do
    GW_FAIL_MALLOC_AT=$i LD_PRELOAD=$so "$gw" check --json --no-bandwidth --data "$data" --pid $$ \
      >"$tmp/out" 2>"$tmp/err"; rc=$?
    got=$(grep -c '"scope"' "$tmp/out")
    if [ $rc -le 1 ] && [ "$got" -eq "$base" ]; then continue; fi
    if [ $rc -eq 1 ] && [ "$got" -eq 0 ] && grep -q "out of memory" "$tmp/err"; then continue; fi
    bad=$((bad + 1))
    [ $bad -le 5 ] && echo "FAIL check: allocation $i of $n failed: exit $rc, $got of $base checks, $(head -c 200 "$tmp/err" | tr '\n' ' ')"
  done
  if [ $bad -eq 0 ] && [ "$base" -gt 0 ] && [ "$n" -gt 0 ]; then pass=$((pass + 1)); else fail=$((fail + 1)); fi
  echo "check: $n allocations failed in turn, $bad ended otherwise than in the full list or an out-of-memory error"
}
check_sweep
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
