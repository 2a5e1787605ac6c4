#!/usr/bin/env bash
# On the GPU machine (repository root):   tests/gpu/ranks.sh OUT
# Several ranks of one job (workloads/ranks/ddp_ranks.py under torchrun):
# a slow rank 1 (plant slow), rank 0 checkpointing every 10 steps (plant
# ckpt), or both; --fix removes them. Each configuration (2 ranks slow,
# 2 ranks ckpt, 4 ranks both; CONFIGS="N:PLANT ..." picks others) is timed
# plain and --fix uninstrumented, recorded once as one recording under
# `gpuwhy run` wrapping torchrun and once as one recording per rank
# (torchrun --no-python gpuwhy record -o OUT/x-%r.gwr), with the job
# report of the folder (terminal and JSON) and of the one recording.
# One GPU: gloo with CUDA tensors, every rank on GPU 0 (its collectives are
# staged through host memory: src/job/load.c finds them by their copies);
# with a GPU per rank (nvidia-h200-x2 for 2 ranks, -x4 for 4): NCCL.
out=${1:?usage: tests/gpu/ranks.sh OUT}
name=ranks
export CUDA_HOME=${CUDA_HOME:-$(ls -d /usr/local/cuda-13.0 /usr/local/cuda 2>/dev/null | head -1)}
. tests/gpu/harness.sh
gw=$PWD/gpuwhy
py=${PYTHON:-python3}
torchrun=("$py" -m torch.distributed.run --standalone)
secs=${GW_SECONDS:-4}
nvidia-smi -L
for cfg in ${CONFIGS:-2:slow 2:ckpt 4:both}; do
  n=${cfg%%:*} plant=${cfg#*:}
  d="$out/n$n-$plant"
  mkdir -p "$d"
  wl=(workloads/ranks/ddp_ranks.py --seconds "$secs" --plant "$plant")
  echo "== $n ranks, $plant: plain and --fix timings $(date -u +%T)"
  for v in plain fix; do
    flag=; [ $v = fix ] && flag=--fix
    timeout 300 "${torchrun[@]}" --nproc-per-node "$n" "${wl[@]}" $flag \
      >"$d/$v.json" 2>"$d/$v.err"; echo "$v exit $? $(tail -1 "$d/$v.json")"
  done
  echo "== $n ranks, $plant: one recording under gpuwhy run $(date -u +%T)"
  timeout 300 "$gw" run -q -o "$d/one.gwr" -- "${torchrun[@]}" --nproc-per-node "$n" "${wl[@]}" \
    >"$d/one.out" 2>&1; echo "run exit $?"
  "$gw" report "$d/one.gwr" >"$d/one.report" 2>&1; echo "report exit $?"
  head -30 "$d/one.report"
  echo "== $n ranks, $plant: one recording per rank $(date -u +%T)"
  mkdir -p "$d/per-rank"
  timeout 300 "${torchrun[@]}" --nproc-per-node "$n" --no-python "$gw" record -q -o "$d/per-rank/x-%r.gwr" -- \
    "$py" "${wl[@]}" >"$d/per-rank.out" 2>&1; echo "torchrun exit $?"
  [ "$(ls "$d/per-rank"/x-*.gwr 2>/dev/null | wc -l)" -eq "$n" ] && ok "one file per rank ($n ranks, $plant)" ||
    ko "one file per rank ($n ranks, $plant): $(ls "$d/per-rank" | tr '\n' ' ')"
  "$gw" report -v "$d/per-rank" >"$d/job.report" 2>&1; echo "job report exit $?"
  cat "$d/job.report"
  "$gw" report --json "$d/per-rank" >"$d/job.json" 2>"$d/job.json.err"; echo "job json exit $?"
  echo "== $n ranks, $plant: per-rank recordings with --fix $(date -u +%T)"
  mkdir -p "$d/per-rank-fix"
  timeout 300 "${torchrun[@]}" --nproc-per-node "$n" --no-python "$gw" record -q -o "$d/per-rank-fix/x-%r.gwr" -- \
    "$py" "${wl[@]}" --fix >"$d/per-rank-fix.out" 2>&1; echo "torchrun exit $?"
  "$gw" report "$d/per-rank-fix" >"$d/job-fix.report" 2>&1; echo "job report (fix) exit $?"
  head -25 "$d/job-fix.report"
done
echo "== done $(date -u +%T): $pass passed, $fail failed"
