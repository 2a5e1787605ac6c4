#!/usr/bin/env bash
# Does timing the plain and fixed variants in one process (`--both`, used by
# workloads/run-all.sh) measure the same speed-up as two processes?
# Alternates the two ways, ROUNDS times, on the same machine.
#   tests/gpu/inprocess_ab.sh OUT [ROUNDS] [SCENARIO...]
out=${1:?usage: tests/gpu/inprocess_ab.sh OUT [ROUNDS] [SCENARIO...]}
rounds=${2:-2}
shift 2 2>/dev/null
list=${*:-c4_launch_bound c9_item_sync c8_fp32}
sec=${GW_SECONDS:-3}
mkdir -p "$out"
cd workloads
sps() { grep "\"fix\": $2" "$1" | tail -1 | python3 -c 'import json,sys; print(json.loads(sys.stdin.read())["samples_per_s"])'; }
printf 'scenario\tround\tseparate_plain\tseparate_fix\tseparate_speedup\tboth_plain\tboth_fix\tboth_speedup\n' | tee "$out/inprocess_ab.tsv"
for r in $(seq "$rounds"); do
  for s in $list; do
    python3 "$s.py" --seconds "$sec" >"$out/p.json" 2>/dev/null
    python3 "$s.py" --fix --seconds "$sec" >"$out/f.json" 2>/dev/null
    python3 "$s.py" --both --seconds "$sec" >"$out/b.json" 2>/dev/null
    sp=$(sps "$out/p.json" false); sf=$(sps "$out/f.json" true)
    bp=$(sps "$out/b.json" false); bf=$(sps "$out/b.json" true)
    python3 -c "import sys; a=sys.argv[1:]; print('\t'.join(a[:4] + [f'{float(a[3])/float(a[2]):.3f}'] + a[4:6] + [f'{float(a[5])/float(a[4]):.3f}']))" \
      "$s" "$r" "$sp" "$sf" "$bp" "$bf" | tee -a "$out/inprocess_ab.tsv"
  done
done
