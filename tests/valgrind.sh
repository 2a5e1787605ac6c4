#!/usr/bin/env bash
# valgrind (memcheck, full leak check) over `gpuwhy report -v` on real
# fixtures: no invalid access, no leak. Two at a time (CI's two cores).
# Prints "N passed, N failed".
set -u
cd "$(dirname "$0")/.."
gw=${GPUWHY:-./gpuwhy}
tmp=$(mktemp -d /tmp/gw-vg-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
check() { # fixture name: its exit status in $tmp/NAME.rc, valgrind's messages in $tmp/NAME.txt
  valgrind -q --leak-check=full --errors-for-leak-kinds=definite,indirect,possible \
    --error-exitcode=9 "$gw" report -v "tests/fixtures/$1.gwr" >/dev/null 2>"$tmp/$1.txt"
  echo $? >"$tmp/$1.rc"
}
fixtures=(case_study c9_item_sync healthy c4_launch_bound cuda_c_target c15_ddp_straggler)
for fx in "${fixtures[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge 2 ]; do wait -n; done
  check "$fx" &
done
wait
p=0; f=0
for fx in "${fixtures[@]}"; do
  if [ "$(cat "$tmp/$fx.rc" 2>/dev/null)" = 0 ]; then
    p=$((p+1))
  else
    f=$((f+1)); echo "FAIL valgrind on $fx:"; head -30 "$tmp/$fx.txt"
  fi
done
echo "$p passed, $f failed"
[ $f -eq 0 ]
