#!/usr/bin/env bash
# CPU smoke test of the corpus (no GPU needed): every Python scenario, plain and
# --fix, with --device cpu --smoke --seconds 1 must print a JSON line with its
# iteration counts; CUDA C scenarios are compiled only (nvcc -c). A scenario whose
# manifest `top` is too-little must end plain with a non-zero status and no JSON line
# (it crashes or is killed before its loop), and run with --fix. Usage:
# smoke.sh [NAME...] (PYTHON: an interpreter with torch, jax, transformers...).
set -u
here=$(cd "$(dirname "$0")" && pwd)
py=${PYTHON:-python3}
nvcc=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
cd "$here"
fail=0 pass=0
list=${*:-$(awk -F'\t' 'NR > 1 && $1 !~ /^#/ && $1 != "" { print $1 }' manifest.tsv)}
for s in $list; do
  if [ -f "$s.cu" ]; then
    if "$nvcc" -c -O2 -std=c++17 -arch=sm_90 -o /tmp/gw_smoke_$s.o "$s.cu" 2>/tmp/gw_smoke_$s.err; then
      pass=$((pass + 1)); echo "ok   $s (compiled)"
    else fail=$((fail + 1)); echo "FAIL $s: nvcc"; tail -n 5 /tmp/gw_smoke_$s.err; fi
    continue
  fi
  top=$(awk -F'\t' -v n="$s" '$1 == n { print $4 }' manifest.tsv)
  for f in "" --fix; do
    line=$(timeout 300 "$py" "$s.py" --device cpu --smoke --seconds 1 $f 2>/tmp/gw_smoke_$s.err | tail -n 1; exit "${PIPESTATUS[0]}")
    rc=$?
    if [ "$top" = too-little ] && [ -z "$f" ]; then
      if [ "$rc" -ne 0 ] && ! echo "$line" | grep -q '"iterations_total"'; then
        pass=$((pass + 1)); echo "ok   $s: ended early as planted (exit $rc)"
      else
        fail=$((fail + 1)); echo "FAIL $s: exit $rc, want an early end with no JSON line: $line"
      fi
      continue
    fi
    if echo "$line" | "$py" -c 'import json,sys; d=json.loads(sys.stdin.read()); assert d["iterations_total"] == d["steps"] == d["steady_steps"] + d["warmup_steps"] and d["steady_steps"] >= 1' 2>/dev/null; then
      pass=$((pass + 1)); echo "ok   $s $f: $line" | cut -c1-160
    else
      fail=$((fail + 1)); echo "FAIL $s $f: $line"; tail -n 5 /tmp/gw_smoke_$s.err
    fi
  done
done
echo "smoke: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
