#!/usr/bin/env bash
# On the GPU machine (repository root):   tests/gpu/ranks.sh OUT
# Several ranks of one job (workloads/ranks/ddp_ranks.py under torchrun: a
# slow rank 1, rank 0 checkpointing every 10 steps; --fix removes both), for
# 2 and 4 ranks: recorded once as one recording under `gpuwhy run` wrapping
# torchrun, and once as one recording per rank (torchrun --no-python gpuwhy
# record -o OUT/x-%r.gwr); the job report of the folder (terminal and JSON),
# each rank's own report, and the timings plain vs --fix, all under OUT.
# One GPU: gloo, every rank on GPU 0 (no NCCL kernels: the ranks are
# aligned by their realtime pairs only); with a GPU per rank (nvidia-h200-x2
# for 2 ranks, -x4 for 4): NCCL, and the cross-rank causes are judged.
out=${1:?usage: tests/gpu/ranks.sh OUT}
name=ranks
export CUDA_HOME=${CUDA_HOME:-$(ls -d /usr/local/cuda-13.0 /usr/local/cuda 2>/dev/null | head -1)}
. tests/gpu/harness.sh
make -j16 CUDA_HOME="$CUDA_HOME" >/dev/null 2>&1 || true # harness built it; a no-op then
gw=$PWD/gpuwhy
py=${PYTHON:-python3}
torchrun=("$py" -m torch.distributed.run --standalone)
secs=${GW_SECONDS:-5}
nvidia-smi -L
for n in 2 4; do
  d="$out/n$n"
  mkdir -p "$d"
  echo "== $n ranks: plain and --fix timings $(date -u +%T)"
  for v in plain fix; do
    flag=; [ $v = fix ] && flag=--fix
    timeout 300 "${torchrun[@]}" --nproc-per-node "$n" workloads/ranks/ddp_ranks.py --seconds "$secs" $flag \
      >"$d/$v.json" 2>"$d/$v.err"; echo "$v exit $? $(tail -1 "$d/$v.json")"
  done
  echo "== $n ranks: one recording under gpuwhy run $(date -u +%T)"
  rm -f "$d/one.gwr"
  timeout 300 "$gw" run -o "$d/one.gwr" --json="$d/one.report.json" -- "${torchrun[@]}" --nproc-per-node "$n" \
    workloads/ranks/ddp_ranks.py --seconds "$secs" >"$d/one.out" 2>&1; echo "run exit $?"
  "$gw" report "$d/one.gwr" >"$d/one.report" 2>&1; echo "report exit $?"
  head -30 "$d/one.report"
  echo "== $n ranks: one recording per rank $(date -u +%T)"
  mkdir -p "$d/per-rank"; rm -f "$d/per-rank"/*.gwr
  timeout 300 "${torchrun[@]}" --nproc-per-node "$n" --no-python "$gw" record -q -o "$d/per-rank/x-%r.gwr" -- \
    "$py" workloads/ranks/ddp_ranks.py --seconds "$secs" >"$d/per-rank.out" 2>&1; echo "torchrun exit $?"
  ls -la "$d/per-rank"
  [ "$(ls "$d/per-rank"/x-*.gwr 2>/dev/null | wc -l)" -eq "$n" ] && ok "$n ranks: one file per rank" ||
    ko "$n ranks: $(ls "$d/per-rank" | tr '\n' ' ')"
  "$gw" report -v "$d/per-rank" >"$d/job.report" 2>&1; echo "job report exit $?"
  cat "$d/job.report"
  "$gw" report --json "$d/per-rank" >"$d/job.json" 2>"$d/job.json.err"; echo "job json exit $?"
  for r in $(seq 0 $((n - 1))); do "$gw" report --rank "$r" "$d/per-rank" >"$d/rank$r.report" 2>&1; done
  "$py" - "$d/job.json" "$n" <<'PY' && ok "$n ranks: job JSON names every rank" || ko "$n ranks: job JSON"
import json, sys
d = json.load(open(sys.argv[1])); n = int(sys.argv[2])
print("alignment", d["alignment"], "findings", [(f["cause"], f["rank"], f["title"]) for f in d["findings"]])
assert [r["rank"] for r in d["ranks"]] == list(range(n)) and not d["missing_ranks"]
PY
  echo "== $n ranks: per-rank recordings with --fix $(date -u +%T)"
  mkdir -p "$d/per-rank-fix"; rm -f "$d/per-rank-fix"/*.gwr
  timeout 300 "${torchrun[@]}" --nproc-per-node "$n" --no-python "$gw" record -q -o "$d/per-rank-fix/x-%r.gwr" -- \
    "$py" workloads/ranks/ddp_ranks.py --seconds "$secs" --fix >"$d/per-rank-fix.out" 2>&1; echo "torchrun exit $?"
  "$gw" report "$d/per-rank-fix" >"$d/job-fix.report" 2>&1; echo "job report (fix) exit $?"
  head -25 "$d/job-fix.report"
done
echo "== done $(date -u +%T): $pass passed, $fail failed"
