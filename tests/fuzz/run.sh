#!/usr/bin/env bash
# Fuzzes one target: tests/fuzz/run.sh FUZZER SECONDS
# FUZZER is build-fuzz/fuzz_report (the recording reader and the report) or
# build-fuzz/fuzz_X, whose corpus, seeds and log are build-fuzz/corpus-X,
# seeds-X and fuzz_X.log. Seeds: the real fixtures, uncompressed and cut
# to 64 KiB (seeds.sh); the build makes every sanitizer finding fatal.
# Prints the number of executions and crashes; exits non-zero on a crash
# (its input is kept in build-fuzz/crashes/).
set -u
fuzzer=${1:?usage: run.sh FUZZER SECONDS}
secs=${2:-60}
cd "$(dirname "$0")/../.."
dir=build-fuzz
name=$(basename "$fuzzer")
case $name in
  fuzz_report) corpus=$dir/corpus seeds=$dir/seeds log=$dir/fuzz.log prefix=$dir/crashes/ ;;
  *) corpus=$dir/corpus-${name#fuzz_} seeds=$dir/seeds-${name#fuzz_} log=$dir/$name.log prefix=$dir/crashes/${name#fuzz_}- ;;
esac
./tests/fuzz/seeds.sh
mkdir -p "$corpus"
t0=$(date +%s)
"$fuzzer" -max_total_time="$secs" -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
  -artifact_prefix="$prefix" -print_final_stats=1 "$corpus" "$seeds" tests/fuzz/regressions \
  >"$log" 2>&1
rc=$?
elapsed=$(( $(date +%s) - t0 ))
execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | awk '{print $2}')
crashes=$(ls "$dir/crashes" | wc -l)
echo "fuzz: ${execs:-0} executions in ${elapsed} s (limit ${secs} s), $crashes crashing inputs ($name)"
[ $rc -eq 0 ] && [ "$crashes" -eq 0 ] && echo "1 passed, 0 failed" || { tail -30 "$log"; echo "0 passed, 1 failed"; exit 1; }
