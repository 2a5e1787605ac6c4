#!/usr/bin/env bash
# The corpus's own tools, without a GPU or a framework: manifest.tsv and split.tsv agree
# with the scenario files, the activities batch (issue 22) is split once and marks its
# planting lines, run.sh's subsets (GW_LIST=1) select what they say, and table.py grades
# the batch apart (too-little, repeated recordings of the controls) while the first
# halves' tables stay as they were.
set -u
cd "$(dirname "$0")/../.."
wc=workloads/corpus
pass=0; fail=0
ok() { echo "ok   $*"; pass=$((pass + 1)); }
ko() { echo "FAIL $*"; fail=$((fail + 1)); }
check() { local what=$1; shift; if "$@"; then ok "$what"; else ko "$what"; fi; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# 1. every manifest row: 8 columns, a scenario file, an expectation the table knows, a half
bad=$(awk -F'\t' 'NR > 1 && $1 !~ /^#/ && NF != 8 { print $1 }' $wc/manifest.tsv)
check "manifest rows have 8 columns ${bad}" test -z "$bad"
missing=""
for s in $(awk -F'\t' 'NR > 1 && $1 !~ /^#/ { print $1 }' $wc/manifest.tsv); do
  [ -f "$wc/$s.py" ] || [ -f "$wc/$s.cu" ] || missing="$missing $s"
done
check "every manifest scenario has its file${missing}" test -z "$missing"
badtop=$(awk -F'\t' 'NR > 1 && $4 !~ /^(healthy|too-little|wait|C[0-9]+|any-of:[A-Za-z0-9,-]+)$/ { print $1 }' $wc/manifest.tsv)
check "manifest tops are causes, healthy, wait, too-little or any-of ${badtop}" test -z "$badtop"
check "split.tsv covers the manifest" python3 $wc/split.py

# 2. the activities batch: split once, both halves with controls, planting lines marked
batch=$(awk -F'\t' 'NR > 1 && $2 ~ /^activities-/ { print $1 }' $wc/split.tsv)
n=$(echo $batch | wc -w)
check "activities batch: $n scenarios (20 or more)" test "$n" -ge 20
for h in calibration evaluation; do
  nh=$(awk -F'\t' -v h="activities-$h" 'FNR == NR { half[$1] = $2; next } half[$1] == h && $3 == "none"' \
    $wc/split.tsv $wc/manifest.tsv | wc -l)
  check "activities-$h has $nh healthy jobs (2 or more)" test "$nh" -ge 2
done
if python3 $wc/split.py --batch activities >"$tmp/redo" 2>&1; then ko "split.py --batch activities ran again"
else check "split.py --batch activities is never redone" grep -q "never redone" "$tmp/redo"; fi
unmarked=""
for s in $batch; do
  planted=$(awk -F'\t' -v n="$s" '$1 == n { print $3 }' $wc/manifest.tsv)
  [ "$planted" = none ] && continue
  grep -q "gpuwhy: plants $planted" "$wc/$s.py" || unmarked="$unmarked $s"
  python3 -c 'import ast, sys; d = ast.get_docstring(ast.parse(open(sys.argv[1]).read())); sys.exit(not (d and "--fix" in d))' \
    "$wc/$s.py" || unmarked="$unmarked $s(docstring)"
done
check "batch scenarios mark their planted cause and say what --fix does${unmarked}" test -z "$unmarked"

# 3. run.sh's subsets
names() { GW_LIST=1 $wc/run.sh "$tmp/none" "$@"; }
check "GW_LIST runs nothing" test ! -e "$tmp/none"
orig=$(awk -F'\t' 'NR > 1 && $2 !~ /^[a-z]+-(calibration|evaluation)$/ { print $1 }' $wc/split.tsv | sort)
ab=$( (names a; names b) | sort)
check "a and b: the first 50 scenarios, none of the batch" test "$ab" = "$orig" -a "$(names a | wc -l)" = 25
acts=$( (names activities-a; names activities-b) | sort)
check "activities-a and -b: the batch" test "$acts" = "$(echo "$batch" | sort)"
halves=$( (names activities-calibration; names activities-evaluation) | sort)
check "activities halves: the batch" test "$halves" = "$(echo "$batch" | sort)"
# a later batch's half in alternate rows: both together the half, neither empty
for h in $(awk -F'\t' 'NR > 1 && $2 ~ /^[a-z]+-evaluation$/ && $2 != "activities-evaluation" { print $2 }' $wc/split.tsv | sort -u); do
  ab=$( (names "$h-a"; names "$h-b") | sort)
  check "$h-a and -b: the half in two" test "$ab" = "$(names "$h" | sort)" -a -n "$(names "$h-a")" -a -n "$(names "$h-b")"
done

# 4. table.py: the batch apart, too-little graded, the controls' further recordings counted
o=$tmp/out
mkdir -p "$o"
{
  printf 'scenario\tplain_samples_per_s\tfix_samples_per_s\tmeasured_speedup\trecorded_samples_per_s\trec_iterations\twall_s\n'
  printf 'h_torch_compile_warmup\t100\t101\t1.010\t95\t80\t60\n'
  printf 't_torch_import_crash\tnan\t50\tnan\tnan\tnan\t20\n'
  printf 't_torch_killed_early\tnan\t50\tnan\tnan\tnan\t20\n'
  printf 'w_torch_lock_logger\t100\t200\t2.000\t90\t200\t25\n'
} >"$o/summary.tsv"
echo '{"verdict":"healthy","findings":[],"steps":{"iterations":80}}' >"$o/h_torch_compile_warmup.report.json"
echo '{"verdict":"bottlenecked","findings":[{"assessed":true,"severity":"warning","cause":"C4","speedup":1.3}],"steps":{"iterations":80}}' \
  >"$o/h_torch_compile_warmup.r2.report.json"
echo '{"verdict":"healthy","findings":[],"steps":{"iterations":80}}' >"$o/h_torch_compile_warmup.r3.report.json"
echo '{"iterations_total":80}' >"$o/h_torch_compile_warmup.rec.json"
echo '{"verdict":"too-little","findings":[]}' >"$o/t_torch_import_crash.report.json"
echo '{"verdict":"bottlenecked","findings":[{"assessed":true,"severity":"high","cause":"C6","speedup":3.3}]}' \
  >"$o/t_torch_killed_early.report.json"
echo '{"verdict":"bottlenecked","findings":[{"assessed":true,"severity":"high","cause":"C16","speedup":1.9}],"steps":{"iterations":200}}' \
  >"$o/w_torch_lock_logger.report.json"
echo '{"iterations_total":200}' >"$o/w_torch_lock_logger.rec.json"
python3 $wc/table.py "$o" --batch activities >"$tmp/t.md" 2>&1
half() { awk -v h="### Corpus, activities-$1 half" 'index($0, h) == 1 { on = 1; print; next } /^### / { on = 0 } on' "$tmp/t.md"; }
ev=$(half evaluation) cal=$(half calibration)
check "table --batch prints only the batch's halves" test "$(grep -c '^### ' "$tmp/t.md")" = 2
check "evaluation half: 3 scenarios run, the control's 3 recordings listed" \
  grep -q "activities-evaluation half (3 scenarios run)" <<<"$ev"
check "a control's further recording with a warning is a false alarm: 1 of 3" \
  grep -q "healthy false alarms over every recording of them: 1/3" <<<"$ev"
check "C16 graded as a cause, its gain checked" grep -q "| w_torch_lock_logger | C16 | C16 | C16 1.90x | yes | 1.90x | 2.00x | yes |" <<<"$ev"
check "too-little with that verdict and no finding is right" grep -q "too little to diagnose said: 1/1; a finding at warning or above: 0/1" <<<"$ev"
check "too-little with a finding is wrong" grep -q "too little to diagnose said: 0/1; a finding at warning or above: 1/1" <<<"$cal"
python3 $wc/table.py "$o" >"$tmp/all.md" 2>&1
check "default tables: calibration, evaluation, then the batch's halves that ran" \
  test "$(grep '^### ' "$tmp/all.md" | cut -d, -f2 | tr -d ' ' | cut -d'(' -f1 | tr '\n' ' ')" = \
  "calibrationhalf evaluationhalf activities-calibrationhalf activities-evaluationhalf "
sed -i '/^[ht]_torch\|^w_torch/d' "$o/summary.tsv"
printf 'c1_tv_pil_jpeg\t10\t30\t3.000\t9\t50\t30\n' >>"$o/summary.tsv"
python3 $wc/table.py "$o" >"$tmp/old.md" 2>&1
check "without the batch, no batch tables (as before)" test "$(grep -c '^### ' "$tmp/old.md")" = 2

# 5. advice.tsv: a row per manifest row, in its order, each naming advice ids that exist
# (src/analyze/rules/rule.h) or "-" for the controls and jobs that end early
check "advice.tsv lists the manifest's scenarios in order" \
  cmp -s <(awk -F'\t' 'NR > 1 && $1 !~ /^#/ { print $1 }' $wc/manifest.tsv) <(awk -F'\t' 'NR > 1 { print $1 }' $wc/advice.tsv)
bad=$(awk -F'\t' 'NR > 1 && NF != 3 { print $1 }' $wc/advice.tsv)
check "advice.tsv rows have 3 columns ${bad}" test -z "$bad"
ids=$(grep -o 'ADV_[A-Z0-9_]*' src/analyze/rules/rule.h | sort -u)
unknown=""
for a in $(awk -F'\t' 'NR > 1 && $2 != "-" { gsub(/\+/, " ", $2); print $2 }' $wc/advice.tsv); do
  grep -qx "$a" <<<"$ids" || unknown="$unknown $a"
done
check "advice.tsv names advice ids that exist${unknown}" test -z "$unknown"
nodash=$(awk -F'\t' 'FNR == NR { p[$1] = $3; next } FNR > 1 && (p[$1] == "none" || p[$1] == "too-little") != ($2 == "-") { print $1 }' \
  $wc/manifest.tsv $wc/advice.tsv)
check "advice.tsv: '-' exactly for controls and jobs that end early ${nodash}" test -z "$nodash"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
