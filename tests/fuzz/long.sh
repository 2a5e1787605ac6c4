#!/usr/bin/env bash
# Fuzzes every target for its share of SECONDS, each with both builds at
# once: clang's libFuzzer (build-fuzz/fuzz_X, ASan + UBSan) and gcc's ASan +
# UBSan through the mutation driver (build-fuzz/fuzz_X_gcc,
# tests/fuzz/mutate.c). Targets: fuzz_report (the reader and the report),
# fuzz_diff (gpuwhy diff), fuzz_merge (the merge of a parts folder, then the
# report). Every sanitizer finding is fatal. Prints one
# summary line over all targets; exits non-zero on a crash (inputs kept in
# build-fuzz/crashes/).
#   tests/fuzz/long.sh SECONDS        (make fuzz-long SECONDS=3600)
set -u
secs=${1:-3600}
targets="fuzz_report fuzz_diff fuzz_merge"
cd "$(dirname "$0")/../.."
dir=build-fuzz
./tests/fuzz/seeds.sh
ntargets=$(echo $targets | wc -w)
share=$(( secs / ntargets )); [ $share -ge 1 ] || share=1
t0=$(date +%s)
cex=0 gex=0 failed=0
for name in $targets; do
  case $name in
    fuzz_report) seeds=$dir/seeds corpus=$dir/corpus ;;
    *) seeds=$dir/seeds-${name#fuzz_} corpus=$dir/corpus-${name#fuzz_} ;;
  esac
  mkdir -p "$dir/gcc-$name" "$corpus"
  ./tests/fuzz/run.sh "$dir/$name" "$share" >"$dir/long-clang-$name.out" 2>&1 &
  cpid=$!
  "$dir/${name}_gcc" "$share" "$t0" "$dir/gcc-$name" "$seeds" "$corpus" tests/fuzz/regressions \
    >"$dir/long-gcc-$name.out" 2>&1
  grc=$?
  wait $cpid
  crc=$?
  [ $grc -eq 0 ] || cp "$dir/gcc-$name/current" "$dir/crashes/${name#fuzz_}-gcc-crash-$t0"
  c=$(grep -o '^fuzz: [0-9]*' "$dir/long-clang-$name.out" | awk '{print $2}')
  g=$(grep -o '^mutate: [0-9]*' "$dir/long-gcc-$name.out" | awk '{print $2}')
  cex=$((cex + ${c:-0})); gex=$((gex + ${g:-0}))
  echo "fuzz-long: $name: clang libFuzzer ${c:-0} executions, gcc mutation driver ${g:-0} executions in $share s"
  if [ $crc -ne 0 ] || [ $grc -ne 0 ]; then
    failed=1
    [ $crc -eq 0 ] || tail -30 "$dir/long-clang-$name.out"
    [ $grc -eq 0 ] || tail -30 "$dir/long-gcc-$name.out"
  fi
done
elapsed=$(( $(date +%s) - t0 ))
crashes=$(ls "$dir/crashes" | wc -l)
echo "fuzz-long: clang libFuzzer ${cex} executions, gcc mutation driver ${gex} executions, in ${elapsed} s (limit ${secs} s); $crashes crashing inputs"
if [ $failed -eq 0 ] && [ "$crashes" -eq 0 ]; then
  echo "1 passed, 0 failed"
else
  echo "0 passed, 1 failed"
  exit 1
fi
