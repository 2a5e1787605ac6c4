#!/usr/bin/env bash
# On the GPU machine: what a persistent compilation cache saves a compile-dominated job on
# its next run (docs/RULES.md section 2, the start-up finding). Each scenario is first
# recorded by gpuwhy with an empty cache of its own (OUT/NAME.cold.gwr: what the report
# predicts from), then runs uninstrumented three times, each in its own process: cold (a
# new, empty cache directory), then twice warm (the same directory); the job's wall time
# is the process's, start to exit. Then a fourth start from that cache is recorded
# (OUT/NAME.warm.gwr, a real recording of a warm start). The caches are JAX's (JAX_COMPILATION_CACHE_DIR, no
# minimum compile time), Inductor's and Triton's (TORCHINDUCTOR_CACHE_DIR,
# TRITON_CACHE_DIR) and CuPy's (CUPY_CACHE_DIR), all under one directory per scenario;
# scenarios that force a first run honour GW_COMPILE_CACHE (their docstrings).
#   tests/gpu/startup_cache.sh OUT [SCENARIO...]     (carry .gpudeps: tests/gpu/build.sh)
# GW_STARTUP_RECORD=0: no recordings, the three uninstrumented runs only (checking the
# start-up finding's predictions from recordings made before).
# Prints one line per scenario:
#   NAME cold X s, warm Y s, Z s (saved S s); recorded cold C s, warm R s[; cached compiling K s,
#   recorded cold - warm over it F]   (K: the cold recording's startup_finding.cached_compile_s)
# and writes OUT/startup_cache.tsv (scenario, run, wall_s, exit status), OUT/summary.txt, and
# OUT/startup-results.tgz with everything (the recordings, stdout and stderr of each run).
set -u
out=${1:?usage: tests/gpu/startup_cache.sh OUT [SCENARIO...]}
shift
mkdir -p "$out" && out=$(cd "$out" && pwd) || exit 1
scenarios=${*:-"h_jax_jit_few_steps h_torch_compile_warmup h_jax_transformer_jit c4_cupy_small_chain"}
budget=${GW_BUDGET:-520}
record=${GW_STARTUP_RECORD:-1} # 0: the uninstrumented runs only (a check of the finding's predictions)
start=$SECONDS
if [ "$record" = 1 ]; then
  tests/gpu/build.sh "$out" || { echo "build failed"; exit 1; }
fi
gw=$PWD/gpuwhy
printf 'scenario\trun\twall_s\texit\n' >"$out/startup_cache.tsv"

# one_run NAME RUN CACHE [gpuwhy record args]: the process's wall time, in seconds
one_run() {
  local s=$1 run=$2 dir=$3 t0 t1 rc
  shift 3
  t0=$(date +%s.%N)
  (cd workloads/corpus && env GW_COMPILE_CACHE="$dir" JAX_COMPILATION_CACHE_DIR="$dir/jax" \
    JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS=0 TORCHINDUCTOR_CACHE_DIR="$dir/inductor" \
    TRITON_CACHE_DIR="$dir/triton" CUPY_CACHE_DIR="$dir/cupy" \
    timeout -k 10 150 "$@" python3 "$s.py" --seconds 2) >"$out/$s.$run.stdout" 2>"$out/$s.$run.stderr"
  rc=$?
  t1=$(date +%s.%N)
  awk -v s="$s" -v r="$run" -v a="$t0" -v b="$t1" -v rc="$rc" \
    'BEGIN { printf "%s\t%s\t%.2f\t%s\n", s, r, b - a, rc }' >>"$out/startup_cache.tsv"
  awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f\n", b - a }'
}

for s in $scenarios; do
  if [ $((SECONDS - start)) -gt $((budget - 120)) ]; then
    echo "$s: not run (out of time)"
    continue
  fi
  recdir=$(mktemp -d /tmp/gw_startup_XXXX) dir=$(mktemp -d /tmp/gw_startup_XXXX) coldrec=0 rec=0
  [ "$record" = 1 ] && coldrec=$(one_run "$s" coldrec "$recdir" "$gw" record -q -o "$out/$s.cold.gwr" --)
  cold=$(one_run "$s" cold "$dir")
  warm1=$(one_run "$s" warm1 "$dir")
  warm2=$(one_run "$s" warm2 "$dir")
  [ "$record" = 1 ] && rec=$(one_run "$s" warmrec "$dir" "$gw" record -q -o "$out/$s.warm.gwr" --)
  # the cold recording's cached compiling: what the start-up finding's factor multiplies
  cached=$([ "$record" = 1 ] && "$gw" report --json "$out/$s.cold.gwr" 2>/dev/null | python3 -c \
    'import json, sys; f = json.load(sys.stdin).get("startup_finding"); print(f["cached_compile_s"] if f else 0)')
  awk -v s="$s" -v c="$cold" -v w1="$warm1" -v w2="$warm2" -v r="$rec" -v cr="$coldrec" -v k="${cached:-0}" 'BEGIN {
    printf "%s cold %.1f s, warm %.1f s, %.1f s (saved %.1f s)", s, c, w1, w2, c - (w1 + w2) / 2
    if (cr > 0) printf "; recorded cold %.1f s, warm %.1f s", cr, r
    if (k > 0) printf "; cached compiling %.2f s, recorded cold - warm over it %.2f", k, (cr - r) / k
    printf "\n" }' | tee -a "$out/summary.txt"
  rm -rf "$dir" "$recdir"
done
# the recordings, logs and table in one archive (the device tool brings back 8 files)
(cd "$out" && tar czf startup-results.tgz --exclude=startup-results.tgz ./*) &&
  find "$out" -mindepth 1 ! -name startup-results.tgz ! -name summary.txt ! -name startup_cache.tsv -delete
