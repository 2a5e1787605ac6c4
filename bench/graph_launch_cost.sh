#!/usr/bin/env bash
# What tracing costs a CUDA graph's launch, by the graph's size, on the GPU
# machine, from the repository root (after tests/gpu/build.sh):
#   bench/graph_launch_cost.sh OUT [ROUNDS]
# bench/graph_launch.cu launches a chain of N tiny kernels as one graph 2,000
# times, synchronizing after each, uninstrumented and under `gpuwhy record`,
# the two interleaved per round, for N = 1, 16, 64, 256. Prints per N the
# median over rounds of the cudaGraphLaunch call's median time and of the
# iteration's, and what recording adds per operation of the graph: the
# figure the analysis bounds at 3 us an operation (docs/RULES.md, "gpuwhy's
# own cost"). Rows go to OUT/graph_launch.jsonl.
set -u
out=${1:?usage: bench/graph_launch_cost.sh OUT [ROUNDS]}
rounds=${2:-3}
mkdir -p "$out" && out=$(cd "$out" && pwd)
gw=$PWD/gpuwhy
bin=build/graph_launch
nvcc -O2 -o "$bin" bench/graph_launch.cu || exit 1
res="$out/graph_launch.jsonl"
: >"$res"
for r in $(seq 1 "$rounds"); do
  for n in 1 16 64 256; do
    for mode in plain recorded; do
      if [ $mode = plain ]; then
        line=$("$bin" "$n" 2000)
      else
        line=$("$gw" record -q -o "$out/graph.$n.$r.gwr" -- "$bin" "$n" 2000 2>"$out/graph.$n.$r.err" | tail -1)
        rm -f "$out/graph.$n.$r.gwr"
      fi
      echo "{\"mode\": \"$mode\", \"round\": $r, \"run\": $line}" >>"$res"
    done
  done
done
python3 - "$res" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
print("| graph operations | launch call, plain | recorded | added per operation | iteration, plain | recorded |")
print("|---|---|---|---|---|---|")
for n in sorted({r["run"]["nodes"] for r in rows}):
    m = {mode: [r["run"] for r in rows if r["mode"] == mode and r["run"]["nodes"] == n] for mode in ("plain", "recorded")}
    c = {k: statistics.median(x["launch_call_us"] for x in v) for k, v in m.items()}
    it = {k: statistics.median(x["iteration_us"] for x in v) for k, v in m.items()}
    print(f"| {n} | {c['plain']:.1f} us | {c['recorded']:.1f} us | {(c['recorded'] - c['plain']) / n:.2f} us "
          f"| {it['plain']:.1f} us | {it['recorded']:.1f} us |")
PY
