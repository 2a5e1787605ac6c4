#!/usr/bin/env bash
# valgrind (memcheck, full leak check) over `gpuwhy report -v` on real
# fixtures: no invalid access, no leak. Prints "N passed, N failed".
set -u
cd "$(dirname "$0")/.."
gw=${GPUWHY:-./gpuwhy}
p=0; f=0
for fx in case_study c9_item_sync healthy c4_launch_bound cuda_c_target c15_ddp_straggler; do
  if valgrind -q --leak-check=full --errors-for-leak-kinds=definite,indirect,possible \
       --error-exitcode=9 "$gw" report -v "tests/fixtures/$fx.gwr" >/dev/null 2>/tmp/gw-vg.txt; then
    p=$((p+1))
  else
    f=$((f+1)); echo "FAIL valgrind on $fx:"; head -30 /tmp/gw-vg.txt
  fi
done
echo "$p passed, $f failed"
[ $f -eq 0 ]
