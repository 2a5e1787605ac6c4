#!/usr/bin/env bash
# Fuzzes the recording reader and the report (fuzz_report), or the merge of
# a parts folder (fuzz_merge): tests/fuzz/run.sh FUZZER SECONDS
# Seeds: the real fixtures, uncompressed and cut to 64 KiB (seeds.sh); the
# build makes every sanitizer finding fatal. Prints the number
# of executions and crashes; exits non-zero on a crash (its input is kept in
# build-fuzz/crashes/).
set -u
fuzzer=${1:?usage: run.sh FUZZER SECONDS}
secs=${2:-60}
cd "$(dirname "$0")/../.."
dir=build-fuzz
# each target its own corpus, seeds and log (fuzz_report: corpus, seeds, fuzz.log)
sub=$(basename "$fuzzer"); sub=${sub#fuzz_}; [ "$sub" = report ] && sub= || sub=-$sub
log=$dir/fuzz$sub.log
./tests/fuzz/seeds.sh
mkdir -p "$dir/corpus$sub"
t0=$(date +%s)
"$fuzzer" -max_total_time="$secs" -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
  -artifact_prefix="$dir/crashes/" -print_final_stats=1 "$dir/corpus$sub" "$dir/seeds$sub" tests/fuzz/regressions \
  >"$log" 2>&1
rc=$?
elapsed=$(( $(date +%s) - t0 ))
execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | awk '{print $2}')
crashes=$(ls "$dir/crashes" | wc -l)
echo "fuzz: ${execs:-0} executions in ${elapsed} s (limit ${secs} s), $crashes crashing inputs"
[ $rc -eq 0 ] && [ "$crashes" -eq 0 ] && echo "1 passed, 0 failed" || { tail -30 "$log"; echo "0 passed, 1 failed"; exit 1; }
