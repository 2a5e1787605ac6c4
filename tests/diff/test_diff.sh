#!/usr/bin/env bash
# gpuwhy diff on the real recordings of tests/fixtures/: exit statuses, the
# JSON schema (docs/JSON.md), --fail-if-slower, output files, and the
# measured step time against the workloads' own timing (timings/*.json):
#  - each suite recording's mean step time (what the speed-up divides) agrees
#    with the step time its workload printed while it was recorded
#    (timings/NAME.rec.json), within 5%;
#  - where a recording of the fixed variant exists (NAME.fix.gwr, here or in
#    $GW_FIXED_DIR), the diff's speed-up agrees with the workloads' own
#    (NAME.rec.json / NAME.fix.rec.json, else the uninstrumented
#    NAME.plain.json / NAME.fix.json) within 10%.
set -u
cd "$(dirname "$0")/../.."
GPUWHY=${GPUWHY:-./gpuwhy}
FX=tests/fixtures
pass=0; fail=0
ok() { pass=$((pass + 1)); echo "ok   $1"; }
bad() { fail=$((fail + 1)); echo "FAIL $1"; }
expect() { # status what command...
  local want=$1 what=$2; shift 2
  "$@" >/dev/null 2>&1
  local rc=$?
  if [ "$rc" -eq "$want" ]; then ok "$what (exit $rc)"; else bad "$what: exit $rc, expected $want"; fi
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
py() { python3 -c "$@"; }

# a cold start against a warm compilation cache (tests/gpu/startup_cache.sh): the
# steps alike, the start-up kept apart shrinks, in the table and in the JSON
cold=$FX/corpus/h_jax_jit_few_steps.gwr warm=$FX/corpus/h_jax_jit_few_steps.warm.gwr
if [ -f "$cold" ] && [ -f "$warm" ]; then
  row=$("$GPUWHY" diff "$cold" "$warm" 2>/dev/null | grep 'start-up (kept apart)')
  case $row in *"17.55 s"*"2.24 s"*"-87%"*) ok "cold against warm: $row" ;; *) bad "cold against warm: '$row'" ;; esac
  "$GPUWHY" diff --json "$cold" "$warm" >"$tmp/warm.json" 2>/dev/null
  py 'import json, sys; d = json.load(open(sys.argv[1])); b, a = d["before"]["startup_s"], d["after"]["startup_s"]
sys.exit(0 if 17.5 < b < 17.6 and 2.2 < a < 2.3 else 1)' "$tmp/warm.json" && ok "cold against warm: startup_s in the JSON" ||
    bad "cold against warm: startup_s in the JSON"
  # the job, start to exit, 23.56 s -> 7.36 s, against the cold run's start-up finding
  py 'import json, sys; d = json.load(open(sys.argv[1])); p = d["startup_predicted"]
ok = 3.15 < p["job_speedup"] < 3.25 and abs(p["predicted"] / p["job_speedup"] - 1) < 0.3
ok = ok and p["predicted_range"][0] < p["predicted"] < p["predicted_range"][1]
ok = ok and abs(d["before"]["job_s"] / d["after"]["job_s"] - p["job_speedup"]) < 1e-3
sys.exit(0 if ok else 1)' "$tmp/warm.json" && ok "cold against warm: the job's speed-up against the start-up finding's" ||
    bad "cold against warm: startup_predicted $(py 'import json, sys; print(json.load(open(sys.argv[1]))["startup_predicted"])' "$tmp/warm.json")"
  "$GPUWHY" diff "$cold" "$warm" 2>/dev/null | grep -q '^Job, start to exit: 3\.2[01]x' && ok "cold against warm: the job's line" ||
    bad "cold against warm: no 'Job, start to exit' line"
fi

# exit statuses
expect 0 "a recording against itself" "$GPUWHY" diff $FX/healthy.gwr $FX/healthy.gwr
expect 2 "one recording" "$GPUWHY" diff $FX/healthy.gwr
expect 2 "a bad --fail-if-slower" "$GPUWHY" diff --fail-if-slower x $FX/healthy.gwr $FX/healthy.gwr
expect 1 "a missing recording" "$GPUWHY" diff $FX/healthy.gwr "$tmp/none.gwr"
# c4 (2.8 ms steps) -> c1 (24.9 ms steps): 9x slower
expect 4 "--fail-if-slower 10, AFTER 4x slower" "$GPUWHY" diff --fail-if-slower 10 $FX/c1_data_loading.fix.gwr $FX/c1_data_loading.gwr
expect 0 "--fail-if-slower 1000, AFTER 4x slower" "$GPUWHY" diff --fail-if-slower 1000 $FX/c1_data_loading.fix.gwr $FX/c1_data_loading.gwr
expect 0 "--fail-if-slower 0, AFTER 4x faster" "$GPUWHY" diff --fail-if-slower 0 $FX/c1_data_loading.gwr $FX/c1_data_loading.fix.gwr
# two different programs (21x the GPU work): their ratio is no speed-up, so it gates nothing
expect 5 "--fail-if-slower, two programs" "$GPUWHY" diff --fail-if-slower 10 $FX/c4_launch_bound.gwr $FX/c1_data_loading.gwr
expect 0 "--fail-if-slower 0, the same run" "$GPUWHY" diff --fail-if-slower 0 $FX/healthy.gwr $FX/healthy.gwr
expect 5 "--fail-if-slower without steps" "$GPUWHY" diff --steps none --fail-if-slower 5 $FX/healthy.gwr $FX/healthy.gwr

# output files: no overwrite, not an input, '-' is stdout
echo keep >"$tmp/exists.html"
expect 1 "--html on an existing file" "$GPUWHY" diff --html "$tmp/exists.html" $FX/healthy.gwr $FX/c8_fp32.gwr
[ "$(cat "$tmp/exists.html")" = keep ] && ok "the existing file is untouched" || bad "existing file changed"
expect 1 "--html naming an input" "$GPUWHY" diff --html $FX/c8_fp32.gwr $FX/healthy.gwr $FX/c8_fp32.gwr
"$GPUWHY" diff --html - $FX/healthy.gwr $FX/c8_fp32.gwr >"$tmp/stdout.html" 2>/dev/null
head -c 15 "$tmp/stdout.html" | grep -q '<!DOCTYPE html>' && tail -1 "$tmp/stdout.html" | grep -q '</html>' &&
  ok "--html - writes the page alone to stdout" || bad "--html - output"
expect 2 "--html - with --json" "$GPUWHY" diff --json --html - $FX/healthy.gwr $FX/c8_fp32.gwr
# --json=OUT: the comparison in that new file alone, nothing on stdout;
# never over an existing file or an input; --html - beside it is fine
"$GPUWHY" diff --json="$tmp/out.json" --html - $FX/healthy.gwr $FX/c8_fp32.gwr >"$tmp/both.html" 2>/dev/null
python3 -c 'import json,sys; sys.exit(json.load(open(sys.argv[1]))["schema"] != "gpuwhy.diff/1")' "$tmp/out.json" &&
  head -c 15 "$tmp/both.html" | grep -q '<!DOCTYPE html>' && ok "--json=OUT with --html -" || bad "--json=OUT with --html -"
"$GPUWHY" diff --json="$tmp/out2.json" $FX/healthy.gwr $FX/c8_fp32.gwr >"$tmp/out2.stdout" 2>/dev/null
[ -s "$tmp/out2.json" ] && [ ! -s "$tmp/out2.stdout" ] && ok "--json=OUT: nothing on stdout" || bad "--json=OUT: stdout $(head -c 100 "$tmp/out2.stdout")"
echo keep >"$tmp/exists.json"
expect 1 "--json=OUT on an existing file" "$GPUWHY" diff --json="$tmp/exists.json" $FX/healthy.gwr $FX/c8_fp32.gwr
[ "$(cat "$tmp/exists.json")" = keep ] && ok "the existing JSON file is untouched" || bad "existing JSON file changed"
expect 1 "--json=OUT naming an input" "$GPUWHY" diff --json=$FX/c8_fp32.gwr $FX/healthy.gwr $FX/c8_fp32.gwr
expect 1 "--json=/dev/full" "$GPUWHY" diff --json=/dev/full $FX/healthy.gwr $FX/c8_fp32.gwr

# the JSON: a recording against itself is 1.0x and changes nothing
"$GPUWHY" diff --json $FX/case_study.gwr $FX/case_study.gwr >"$tmp/same.json"
py '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["schema"] == "gpuwhy.diff/1", d["schema"]
assert d["speedup"] == 1 and d["speedup_median"] == 1 and d["wall_ratio"] == 1, d["speedup"]
assert all(f["state"] == "same" for f in d["findings"]) and d["findings"], d["findings"]
assert all(k["before_ms"] == k["after_ms"] and k["before_count"] == k["after_count"] for k in d["kernels"])
assert d["before"] == d["after"]
' "$tmp/same.json" && ok "case study against itself: 1.0x, all the same" || bad "case study against itself"

# case study -> c4: the speed-up is the ratio of the mean step times, the
# findings gone/new/changed are those of the two reports
"$GPUWHY" diff --json --top 5 --batch 16 $FX/case_study.gwr $FX/c4_launch_bound.gwr >"$tmp/d.json"
"$GPUWHY" report --json $FX/case_study.gwr >"$tmp/a.json"
"$GPUWHY" report --json $FX/c4_launch_bound.gwr >"$tmp/b.json"
py '
import json, sys
d, a, b = (json.load(open(p)) for p in sys.argv[1:4])
B, A = d["before"], d["after"]
for side, rep in ((B, a), (A, b)):
    assert side["steps"] == rep["steps"]["count"]
    mean = rep["steady"]["seconds"] * 1e3 / rep["steps"]["count"]
    assert abs(side["step_mean_ms"] / mean - 1) < 1e-4, (side["step_mean_ms"], mean)
    assert abs(side["busy_pct"] - rep["steady"]["busy_pct"]) < 1e-3
    assert abs(side["samples_per_s"] - 16 * side["steps_per_s"]) < 1e-4 * side["samples_per_s"]
    for c, v in rep["steady"]["idle_by_cause_pct"].items():
        assert abs(side["idle_by_cause_pct"][c] - v) < 1e-3, c
assert abs(d["speedup"] - B["step_mean_ms"] / A["step_mean_ms"]) < 1e-4 * d["speedup"]
assert abs(d["speedup"] - 1.565) < 0.01, d["speedup"]
assert len(d["kernels"]) == 5 and d["kernels_total"] >= 5
ch = [abs(k["after_per_ms"] - k["before_per_ms"]) for k in d["kernels"]]
assert ch == sorted(ch, reverse=True), ch
warn = lambda r: {f["rule"] for f in r["findings"] if f["assessed"] and f["severity"] in ("warning", "high")}
st = {f["rule"]: f["state"] for f in d["findings"]}
assert {r for r, s in st.items() if s == "gone"} == warn(a) - warn(b), st
assert {r for r, s in st.items() if s == "new"} == warn(b) - warn(a), st
assert set(st) == warn(a) | warn(b)
assert st.get("C1.data-loading") == "gone" or any(r.startswith("C1") for r in st if st[r] == "gone"), st
' "$tmp/d.json" "$tmp/a.json" "$tmp/b.json" && ok "case study -> c4: speed-up 1.57x from the step times, findings as the reports say" ||
  bad "case study -> c4 JSON"

# each suite recording's mean step time against its workload's own timing
# (numbers no build changes: a sanitizer build, GW_SANITIZED=1, leaves these
# self-diffs to the plain one; the diffs below run the same code under it)
for rec in $FX/timings/*.rec.json; do
  [ "${GW_SANITIZED:-}" = 1 ] && break
  n=$(basename "$rec" .rec.json)
  [ -f "$FX/$n.gwr" ] || continue
  "$GPUWHY" diff --json "$FX/$n.gwr" "$FX/$n.gwr" >"$tmp/self.json" 2>/dev/null
  if py '
import json, sys
d, r = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
m = d["before"]["step_mean_ms"]
print("  %s: step %.4g ms, the workload timed %.4g ms" % (sys.argv[3], m, r["step_ms"]))
sys.exit(0 if m and abs(m / r["step_ms"] - 1) < 0.05 else 1)
' "$tmp/self.json" "$rec" "$n"; then ok "$n: step time agrees with the workload's within 5%"; else bad "$n: step time"; fi
done

# plain and fixed recordings of one scenario: the diff's speed-up against the workloads' own
pairs=0
for dir in $FX $FX/corpus ${GW_FIXED_DIR:-}; do
  for fixg in "$dir"/*.fix.gwr; do
    [ -f "$fixg" ] || continue
    n=$(basename "$fixg" .fix.gwr)
    plain="$dir/$n.gwr"
    [ -f "$plain" ] || continue
    # the timings: beside the recordings (a run-all.sh OUTDIR), in their
    # timings/ folder, or the suite's or the corpus's
    t="$FX/timings"; [ -f "$t/$n.plain.json" ] || t="$FX/corpus/timings"
    [ -f "$dir/timings/$n.fix.json" ] && t="$dir/timings"
    [ -f "$dir/$n.fix.json" ] && t="$dir"
    "$GPUWHY" diff --json "$plain" "$fixg" >"$tmp/pair.json" 2>/dev/null
    pairs=$((pairs + 1))
    if py '
import json, os, sys
d, t, n = json.load(open(sys.argv[1])), sys.argv[2], sys.argv[3]
ms = lambda f: json.load(open(os.path.join(t, f)))["step_ms"]
if os.path.exists(os.path.join(t, n + ".fix.rec.json")):
    want = ms(n + ".rec.json") / ms(n + ".fix.rec.json")
else:
    want = ms(n + ".plain.json") / ms(n + ".fix.json")
print("  %s: diff %.3gx, the workloads %.3gx" % (n, d["speedup"] or 0, want))
sys.exit(0 if d["speedup"] and abs(d["speedup"] / want - 1) < 0.10 else 1)
' "$tmp/pair.json" "$t" "$n"; then ok "$n: the diff's speed-up agrees with the workloads' within 10%"; else bad "$n: speed-up"; fi
  done
done
# a fix that changes the batch (the case study's: 2 -> 16 samples a step):
# the step-time ratio is no throughput ratio; the diff says so, and with
# --batch B:A gives the ratio of samples/s the workload measured
if [ -f "$FX/case_study.fix.gwr" ]; then
  "$GPUWHY" diff "$FX/case_study.gwr" "$FX/case_study.fix.gwr" >"$tmp/cs.txt" 2>&1
  grep -q "GPU work (busy time per step)" "$tmp/cs.txt" && ok "case study: the steps' different work is said" ||
    bad "case study: no note that the steps differ in work"
  # the batch grew: text and page both give a step-time ratio, not a speed-up
  "$GPUWHY" diff --html "$tmp/cs.html" "$FX/case_study.gwr" "$FX/case_study.fix.gwr" >/dev/null 2>&1
  grep -q "^Step-time ratio: 0.82x" "$tmp/cs.txt" && grep -q "Step-time ratio: <b>0.82x</b>" "$tmp/cs.html" &&
    ! grep -q "Measured speed-up" "$tmp/cs.txt" "$tmp/cs.html" && ok "case study: a step-time ratio, text and page" ||
    bad "case study: the grown batch's ratio is called a measured speed-up"
  "$GPUWHY" diff --json --batch 2:16 "$FX/case_study.gwr" "$FX/case_study.fix.gwr" >"$tmp/cs.json" 2>/dev/null
  if py '
import json, sys
d = json.load(open(sys.argv[1]))
t = sys.argv[2]
want = json.load(open(t + "/case_study.fix.rec.json"))["samples_per_s"] / json.load(open(t + "/case_study.rec.json"))["samples_per_s"]
print("  case_study --batch 2:16: diff %.3gx in %s, the workload %.3gx" % (d["speedup"], d["speedup_of"], want))
sys.exit(0 if d["speedup_of"] == "samples_per_s" and abs(d["speedup"] / want - 1) < 0.10 else 1)
' "$tmp/cs.json" "$FX/timings"; then ok "case study: samples/s ratio agrees with the workload's within 10%"; else bad "case study: samples/s ratio"; fi
fi
# two different jobs (a PyTorch model and a JAX script): a step-time ratio, not a
# speed-up, in text, page and JSON; a fix's own pair stays a measured speed-up
C="$FX/corpus"
if [ -f "$C/h_torch_llama_sdpa_bf16.gwr" ] && [ -f "$C/c4_jax_no_jit.gwr" ]; then
  "$GPUWHY" diff "$C/h_torch_llama_sdpa_bf16.gwr" "$C/c4_jax_no_jit.gwr" >"$tmp/two.txt" 2>&1
  "$GPUWHY" diff --html "$tmp/two.html" "$C/h_torch_llama_sdpa_bf16.gwr" "$C/c4_jax_no_jit.gwr" >/dev/null 2>&1
  "$GPUWHY" diff --json "$C/h_torch_llama_sdpa_bf16.gwr" "$C/c4_jax_no_jit.gwr" >"$tmp/two.json" 2>/dev/null
  grep -q "^Step-time ratio: 2.11x" "$tmp/two.txt" && grep -q "different programs" "$tmp/two.txt" &&
    grep -q "different programs (h_torch_llama_sdpa_bf16.py" "$tmp/two.html" &&
    ! grep -q "Measured speed-up" "$tmp/two.txt" "$tmp/two.html" &&
    py 'import json, sys; sys.exit(json.load(open(sys.argv[1]))["not_a_speedup"] != "different programs")' "$tmp/two.json" &&
    ok "two programs: a step-time ratio, not a speed-up" || bad "two programs: $(sed -n 5,6p "$tmp/two.txt")"
  "$GPUWHY" diff --json "$FX/c1_data_loading.gwr" "$FX/c1_data_loading.fix.gwr" >"$tmp/one.json" 2>/dev/null
  py 'import json, sys; sys.exit(json.load(open(sys.argv[1]))["not_a_speedup"] is not None)' "$tmp/one.json" &&
    ok "a fix of one program: its speed-up" || bad "a fix of one program: not_a_speedup set"
  # what each ran on: one H200 host for the fix of one program; an H200 against an
  # H100 noted in the terminal, the page and JSON
  py 'import json, sys; m = json.load(open(sys.argv[1]))["machines"]; sys.exit(m["differ"] or m["before"] != m["after"] or not m["before"].startswith("NVIDIA H200, 16 CPUs"))' "$tmp/one.json" &&
    ok "one machine: machines.differ false" || bad "one machine: $(grep -o '"machines":{[^}]*}' "$tmp/one.json")"
  "$GPUWHY" diff "$FX/c1_data_loading.gwr" "$C/c14_torch_schnet_water_md_extxyz_every_n.gwr" >"$tmp/mach.txt" 2>&1
  "$GPUWHY" diff --html "$tmp/mach.html" "$FX/c1_data_loading.gwr" "$C/c14_torch_schnet_water_md_extxyz_every_n.gwr" >/dev/null 2>&1
  "$GPUWHY" diff --json "$FX/c1_data_loading.gwr" "$C/c14_torch_schnet_water_md_extxyz_every_n.gwr" >"$tmp/mach.json" 2>/dev/null
  grep -q "^note: BEFORE and AFTER ran on different machines (BEFORE: NVIDIA H200, 16" "$tmp/mach.txt" &&
    grep -q 'id="diff-machines"' "$tmp/mach.html" &&
    py 'import json, sys; m = json.load(open(sys.argv[1]))["machines"]; sys.exit(not (m["differ"] and m["after"].startswith("NVIDIA H100 80GB HBM3, 16 CPUs")))' "$tmp/mach.json" &&
    ok "two machines: noted, machines.differ true" || bad "two machines: $(grep -A2 'different machines' "$tmp/mach.txt")"
fi
# the same job twice, BEFORE with one 750.9 ms step (a CuPy compilation) among
# 10.3 ms ones: the mean's 1.49x is said to be that step's, the median's 1.00x the
# typical step's
if [ -f "$C/h_cupy_nbody_rawkernel.r2.gwr" ]; then
  "$GPUWHY" diff "$C/h_cupy_nbody_rawkernel.gwr" "$C/h_cupy_nbody_rawkernel.r2.gwr" >"$tmp/nb.txt" 2>&1
  tr '\n' ' ' <"$tmp/nb.txt" | tr -s ' ' | grep -q "note: BEFORE's mean step holds one step of 750.9 ms (36% of its window, against a median of 10.3 ms): the median's ratio, 1.00x" &&
    ok "one long step: the mean's ratio is said to be its" || bad "one long step: $(sed -n 5,8p "$tmp/nb.txt")"
  "$GPUWHY" diff "$FX/c1_data_loading.gwr" "$FX/c1_data_loading.fix.gwr" 2>&1 | grep -q "mean step holds" &&
    bad "a fix's pair: an outlier note without an outlier" || ok "a fix's pair: no outlier note"
fi
# a cut recording under --fail-if-slower: exit 3 (the lowest wins) and a warning
# that the gate was not judged, not a silent pass of the gate
sz=$(stat -c %s "$FX/c9_item_sync.fix.gwr")
head -c $((sz / 2)) "$FX/c9_item_sync.fix.gwr" >"$tmp/half.gwr"
"$GPUWHY" diff --fail-if-slower 1 "$FX/c9_item_sync.fix.gwr" "$tmp/half.gwr" >"$tmp/half.txt" 2>&1; rc=$?
[ "$rc" -eq 3 ] && grep -q "fail-if-slower not judged" "$tmp/half.txt" && ok "a cut recording: the gate is said not judged (exit 3)" ||
  bad "a cut recording under --fail-if-slower: exit $rc, $(grep -c 'not judged' "$tmp/half.txt") notes"
# --batch given: the ratio of samples/s, named so, even for two programs
if [ -f "$C/c3_tv_resnet18_train_batch2.gwr" ] && [ -f "$C/h_hf_bart_seq2seq_bf16.gwr" ]; then
  "$GPUWHY" diff --batch 2:8 "$C/c3_tv_resnet18_train_batch2.gwr" "$C/h_hf_bart_seq2seq_bf16.gwr" >"$tmp/bt.txt" 2>&1
  grep -q "^Measured speed-up: .* in samples/s" "$tmp/bt.txt" && ! grep -q "Step-time ratio" "$tmp/bt.txt" &&
    ok "--batch: the samples/s ratio, named so" || bad "--batch with two programs: $(sed -n 5,6p "$tmp/bt.txt")"
fi
# the fixture pairs (plain and fixed): BEFORE's prediction beside the
# measured speed-up, names whole, columns within 79, ratios past +999%
for pair in c1_data_loading c6_pageable c9_item_sync case_study; do
  [ -f "$FX/$pair.fix.gwr" ] || continue
  LC_ALL=C.UTF-8 "$GPUWHY" diff "$FX/$pair.gwr" "$FX/$pair.fix.gwr" >"$tmp/p.txt" 2>&1
  "$GPUWHY" diff --json "$FX/$pair.gwr" "$FX/$pair.fix.gwr" >"$tmp/p.json" 2>/dev/null
  "$GPUWHY" diff --html "$tmp/p-$pair.html" "$FX/$pair.gwr" "$FX/$pair.fix.gwr" >/dev/null 2>&1
  "$GPUWHY" report --json "$FX/$pair.gwr" >"$tmp/pb.json" 2>/dev/null
  if py '
import json, re, sys
txt = open(sys.argv[1], encoding="utf-8").read()
d, rep = json.load(open(sys.argv[2])), json.load(open(sys.argv[3]))
page = open(sys.argv[4], encoding="utf-8").read()
names = ["host too slow to issue work (launch/Python)", "synchronization stall (host waited on the GPU)",
         "periodic stalls (validation, checkpoints)", "CPU work on the training thread", "storage reads",
         "pageable host copies", "waiting for input (loader workers, a thread)"]
idle = txt.split("Idle per step, by cause:\n")[1].split("\n\n")[0].splitlines()
for line in idle:  # each row starts with a whole cause name
    assert any(line[2:].startswith(n + " ") for n in names), line
kern = {k["name"] for k in d["kernels"]}
for line in txt.splitlines():  # a kernel name too long for its column has a line of its own
    assert len(line) <= 79 or line.strip() in kern, (len(line), line)
assert not re.search(r"[+]\d{4,}%", txt + page), re.search(r"[+]\d{4,}%", txt + page).group(0)
gone = [f for f in d["findings"] if f["state"] == "gone"]
p = d["predicted"]
assert [f["cause"] for f in p["findings"]] == [f["cause"] for f in gone], (p, gone)
mine = {f["cause"]: f for f in rep["findings"] if f.get("assessed")}
for f in p["findings"]:
    assert abs(f["speedup"] - mine[f["cause"]]["speedup"]) < 1e-3, (f, mine[f["cause"]])
if len(gone) == 1:
    want = p["findings"][0]["speedup"]
else:
    assert p["combined"], p
    want = rep["combined_speedup"]
assert abs(p["speedup"] - want) < 1e-3, (p, want)
causes = "+".join(f["cause"] for f in p["findings"])
# steps of unlike work (a batch changed, no --batch): the step-time ratio is
# no measured speed-up, and the line says so
wr = d.get("work_ratio")
unlike = not d.get("speedup_of") == "samples_per_s" and wr and wr > 1.5
meas = "n/a (steps of unlike work: --batch B:A)" if unlike else "%.2fx" % d["speedup"]
pred = "predicted %.2fx for %s (before%s)" % (p["speedup"], causes, ", all its findings" if p["combined"] else "")
line = "  %s / measured %s" % (pred, meas)
lines = txt.splitlines()
assert line in lines or ("  " + pred in lines and "    / measured " + meas in lines), (line, txt[:600])
assert "<p id=\"diff-predicted\">" + line.strip() + "</p>" in page, line
print("  %s:%s" % (sys.argv[5], line))
' "$tmp/p.txt" "$tmp/p.json" "$tmp/pb.json" "$tmp/p-$pair.html" "$pair"; then
    ok "$pair: predicted beside measured, names whole, columns fit"
  else
    bad "$pair: the diff's layout or prediction"
  fi
done
# c1: 45 ns -> 3.6 us of sync idle in a 24.9 ms step is 79x, shown as a ratio
# and not marked on the page; the launch idle's 0.5 ms fall is marked better
LC_ALL=C.UTF-8 "$GPUWHY" diff "$FX/c1_data_loading.gwr" "$FX/c1_data_loading.fix.gwr" >"$tmp/c1.txt" 2>&1
grep -Eq '^  synchronization stall \(host waited on the GPU\) +45 ns +3\.6 µs +79x$' "$tmp/c1.txt" &&
  ok "c1: the sync idle's rise reads 79x" || bad "c1: sync row $(grep 'synchronization' "$tmp/c1.txt")"
grep -q '<tr><th>synchronization stall (host waited on the GPU)</th><td class="num">45 ns</td><td class="num">3.6 µs</td><td class="num">79x</td></tr>' "$tmp/p-c1_data_loading.html" &&
  ok "c1 page: a 3.6 us change in a 25 ms step is not marked" || bad "c1 page: sync row marked"
grep -q '<tr><th>host too slow to issue work (launch/Python)</th>.*class="num better">-80%' "$tmp/p-c1_data_loading.html" &&
  ok "c1 page: the launch idle's fall is marked better" || bad "c1 page: launch row not marked"
# with --batch the measured figure is the samples/s ratio, the prediction BEFORE's combined one
LC_ALL=C.UTF-8 "$GPUWHY" diff --batch 2:16 "$FX/case_study.gwr" "$FX/case_study.fix.gwr" >"$tmp/csb.txt" 2>&1
grep -qx '  predicted 2.42x for C1+C14 (before, all its findings) / measured 6.60x' "$tmp/csb.txt" &&
  ok "case study --batch 2:16: predicted 2.42x / measured 6.60x" || bad "case study --batch: $(grep predicted "$tmp/csb.txt")"
# nothing gone: no prediction
"$GPUWHY" diff "$FX/healthy.gwr" "$FX/healthy.gwr" >"$tmp/hh.txt" 2>&1
"$GPUWHY" diff --json "$FX/healthy.gwr" "$FX/healthy.gwr" >"$tmp/hh.json" 2>&1
! grep -q predicted "$tmp/hh.txt" && py 'import json,sys; sys.exit(json.load(open(sys.argv[1]))["predicted"] is not None)' "$tmp/hh.json" &&
  ok "no finding gone: no prediction" || bad "a prediction with no finding gone"
[ "$pairs" -eq 0 ] && echo "note: no fixed recordings (NAME.fix.gwr) here or in GW_FIXED_DIR: the pair check ran on none"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
