#!/usr/bin/env bash
# On the GPU machine: bench/new_shape_cost.py plain, under `gpuwhy record`
# (default, --no-py, --no-inject, and with only kernel records), for the
# default SDPA backends and cuDNN's attention. One JSON line per run, in
# OUT/new_shape_cost.log. Usage: bench/new_shape_cost.sh OUT (repository root).
out=${1:?usage: bench/new_shape_cost.sh OUT}
name=new_shape_cost
. tests/gpu/harness.sh
gw=$PWD/gpuwhy
for b in default cudnn; do
  echo "== $b plain";             python3 bench/new_shape_cost.py $b | tail -n1
  echo "== $b record";            "$gw" record -q -o "$out/ns-$b.gwr" -- python3 bench/new_shape_cost.py $b | tail -n1
  echo "== $b record --no-py";    "$gw" record -q --no-py -o "$out/ns-$b-nopy.gwr" -- python3 bench/new_shape_cost.py $b | tail -n1
  echo "== $b record --no-inject"; "$gw" record -q --no-inject -o "$out/ns-$b-noinj.gwr" -- python3 bench/new_shape_cost.py $b | tail -n1
  echo "== $b record, kernel records only"; GPUWHY_KINDS=kernel "$gw" record -q --no-py -o "$out/ns-$b-k.gwr" -- python3 bench/new_shape_cost.py $b | tail -n1
done
rm -f "$out"/ns-*.gwr
