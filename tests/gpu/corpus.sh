#!/usr/bin/env bash
# On the GPU machine: the independent corpus (workloads/corpus/), and what
# the Python stacks need proven there.
#  1. tests/pystack/verify.sh on the machine's own python3 (its offsets
#     against its headers, two live threads' stacks);
#  2. tests/gpu/harm.sh (descriptors, nohup, chdir) unless NO_HARM=1;
#  3. the suite's scenarios whose cause lives in Python code, recorded again
#     (with stacks) for the golden site checks: SUITE="c9_item_sync ..."
#     (default below; SUITE= for none);
#  4. corpus scenarios (names or subsets of workloads/corpus/run.sh), each
#     recorded, reported and timed plain and fixed, until the deadline.
# Everything comes back as OUT/corpus-results.tgz.NN parts of 15 MB
# (the device tool returns files up to 16 MiB).
#   tests/gpu/corpus.sh OUT [SCENARIO|SUBSET...]      (under 10 minutes)
out=${1:?usage: tests/gpu/corpus.sh OUT [SCENARIO|SUBSET...]}
shift
name=corpus
start=$SECONDS
. tests/gpu/harness.sh
res="$out/results"
mkdir -p "$res/suite"
python3 -c 'import sys; print("python", sys.version)'

echo "== pystack verify $(date -u +%T)"
tests/pystack/verify.sh python3 >"$res/pystack-verify.txt" 2>&1 && ok "pystack verify" || ko "pystack verify"
tail -25 "$res/pystack-verify.txt"

if [ "${NO_HARM:-0}" != 1 ]; then
  echo "== harm $(date -u +%T)"
  tests/gpu/harm.sh "$res/harm" 2>&1 | tail -8
fi

suite=${SUITE-c9_item_sync c1_data_loading c14_validation case_study c6_pageable c7_oversubscription c2_storage}
for s in $suite; do
  echo "== suite $s $(date -u +%T)"
  (cd workloads && timeout 90 ../gpuwhy record -q -o "$res/suite/$s.gwr" -- python3 "$s.py" --seconds 3 \
     >"$res/suite/$s.rec.json" 2>"$res/suite/$s.rec.err")
  ./gpuwhy report --json "$res/suite/$s.gwr" >"$res/suite/$s.report.json" 2>/dev/null
  ./gpuwhy report "$res/suite/$s.gwr" 2>&1 | sed -n '1,40p' | grep -E 'Steps:|^ *[0-9]+\. \[|  at |note:'
done

used=$((SECONDS - start))
echo "== corpus $(date -u +%T), ${used}s used"
GW_DEADLINE=$((520 - used)) workloads/corpus/run.sh "$res/corpus" "$@"
cat "$res/corpus/summary.tsv" 2>/dev/null
for r in "$res"/corpus/*.report.json; do
  [ -f "$r" ] || continue
  python3 - "$r" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
f = [x for x in d.get("findings", []) if x.get("assessed") and x.get("severity") in ("high", "warning")]
s = d.get("steps") or {}
top = ", ".join(f"{x['cause']} {x['speedup']:.2f}x" for x in f[:3]) or "healthy"
site = f[0]["sites"][0] if f and f[0].get("sites") else None
print(sys.argv[1].rsplit("/", 1)[-1], "| steps", s.get("count"), s.get("confidence"), "|", d.get("framework"),
      "|", top, "|", f"{site['file']}:{site['line']}" if site else "")
PY
done

echo "== gpu tests: $pass passed, $fail failed"
echo "== done $(date -u +%T), $((SECONDS - start)) s"
cp "$out/$name.log" "$res/" 2>/dev/null
tar czf "$out/results.tgz" -C "$out" results && split -b 15M -d "$out/results.tgz" "$out/corpus-results.tgz." \
  && rm -f "$out/results.tgz"
rm -rf "$res"
ls -la "$out"
