#!/usr/bin/env bash
# Fuzzes the reader and the report, and the merge of a parts folder
# (fuzz_merge), for SECONDS with both builds at once:
# clang's libFuzzer (build-fuzz/fuzz_report, ASan + UBSan) and gcc's ASan +
# UBSan through the mutation driver (build-fuzz/fuzz_report_gcc,
# tests/fuzz/mutate.c). Every sanitizer finding is fatal. Prints one summary
# line; exits non-zero on a crash (inputs kept in build-fuzz/crashes/).
#   tests/fuzz/long.sh SECONDS        (make fuzz-long SECONDS=3600)
set -u
secs=${1:-3600}
cd "$(dirname "$0")/../.."
dir=build-fuzz
./tests/fuzz/seeds.sh
mkdir -p "$dir/gcc"
t0=$(date +%s)
./tests/fuzz/run.sh "$dir/fuzz_report" "$secs" >"$dir/long-clang.out" 2>&1 &
cpid=$!
# the merge of a parts folder (fuzz_merge), both builds, at the same time
mkdir -p "$dir/gcc-merge" "$dir/corpus-merge"
./tests/fuzz/run.sh "$dir/fuzz_merge" "$secs" >"$dir/long-clang-merge.out" 2>&1 &
mpid=$!
"$dir/fuzz_merge_gcc" "$secs" "$t0" "$dir/gcc-merge" "$dir/seeds-merge" "$dir/corpus-merge" \
  >"$dir/long-gcc-merge.out" 2>&1 &
gmpid=$!
"$dir/fuzz_report_gcc" "$secs" "$t0" "$dir/gcc" "$dir/seeds" "$dir/corpus" tests/fuzz/regressions \
  >"$dir/long-gcc.out" 2>&1
grc=$?
wait $cpid
crc=$?
[ $grc -eq 0 ] || cp "$dir/gcc/current" "$dir/crashes/gcc-crash-$t0"
wait $mpid
mcrc=$?
wait $gmpid
mgrc=$?
[ $mgrc -eq 0 ] || cp "$dir/gcc-merge/current" "$dir/crashes/gcc-merge-crash-$t0"
elapsed=$(( $(date +%s) - t0 ))
cex=$(grep -o '^fuzz: [0-9]*' "$dir/long-clang.out" | awk '{print $2}')
gex=$(grep -o '^mutate: [0-9]*' "$dir/long-gcc.out" | awk '{print $2}')
crashes=$(ls "$dir/crashes" | wc -l)
mcex=$(grep -o '^fuzz: [0-9]*' "$dir/long-clang-merge.out" | awk '{print $2}')
mgex=$(grep -o '^mutate: [0-9]*' "$dir/long-gcc-merge.out" | awk '{print $2}')
echo "fuzz-long: clang libFuzzer ${cex:-0} executions, gcc mutation driver ${gex:-0} executions, in ${elapsed} s (limit ${secs} s); $crashes crashing inputs"
echo "fuzz-long merge: clang libFuzzer ${mcex:-0} executions, gcc mutation driver ${mgex:-0} executions"
if [ $crc -eq 0 ] && [ $grc -eq 0 ] && [ $mcrc -eq 0 ] && [ $mgrc -eq 0 ] && [ "$crashes" -eq 0 ]; then
  echo "1 passed, 0 failed"
else
  [ $crc -eq 0 ] || tail -30 "$dir/long-clang.out"
  [ $grc -eq 0 ] || tail -30 "$dir/long-gcc.out"
  [ $mcrc -eq 0 ] || tail -30 "$dir/long-clang-merge.out"
  [ $mgrc -eq 0 ] || tail -30 "$dir/long-gcc-merge.out"
  echo "0 passed, 1 failed"
  exit 1
fi
