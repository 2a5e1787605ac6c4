#!/usr/bin/env bash
# On the GPU machine: the start-up finding end to end, on real recordings of a JAX job whose
# start-up is most of it (workloads/corpus/h_jax_jit_few_steps.py, GW_COMPILE_CACHE: its
# persistent compilation cache in a new, empty directory):
#  1. recorded to its end with that cache set: the recording keeps JAX_COMPILATION_CACHE_DIR,
#     and the start-up finding's evidence says the cache was cold;
#  2. recorded with --duration 15.5 (the job took 17-25 s recorded on that machine, so the cut
#     falls in its steps or before them; the line says whether steps were found): the
#     recording says it was cut short (record.stopped_early), and no start-up finding comes of
#     it, whatever its start-up.
#   tests/gpu/startup_report.sh OUT      (carry .gpudeps: tests/gpu/build.sh; about 2 minutes)
# Prints PASS/FAIL lines and "N passed, N failed"; OUT/*.report.json are the reports.
set -u
out=${1:?usage: tests/gpu/startup_report.sh OUT}
mkdir -p "$out" && out=$(cd "$out" && pwd) || exit 1
tests/gpu/build.sh "$out" || { echo "build failed"; exit 1; }
gw=$PWD/gpuwhy
pass=0 fail=0
say() { if [ "$1" = 0 ]; then pass=$((pass + 1)); echo "PASS $2"; else fail=$((fail + 1)); echo "FAIL $2"; fi; }

cache=$(mktemp -d /tmp/gw_startup_XXXX)
(cd workloads/corpus && GW_COMPILE_CACHE="$cache" timeout -k 10 150 "$gw" record -q -o "$out/cold.gwr" -- \
  python3 h_jax_jit_few_steps.py --seconds 2) >"$out/cold.stdout" 2>"$out/cold.stderr"
"$gw" report --json "$out/cold.gwr" >"$out/cold.report.json" 2>/dev/null
"$gw" dump -t meta "$out/cold.gwr" 2>/dev/null | grep -c "JAX_COMPILATION_CACHE_DIR" >"$out/cold.env" || true
python3 - "$out/cold.report.json" "$cache" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); sf = d.get("startup_finding")
print("startup_finding:", sf and {k: sf[k] for k in ("title", "job_s", "job_speedup", "job_speedup_range")})
sys.exit(0 if sf and ("JAX_COMPILATION_CACHE_DIR=" + sys.argv[2] + "/jax") in sf["evidence"] else 1)
PY
say $? "to its end, with a cold cache set: a start-up finding whose evidence names the cache ($(cat "$out/cold.env") meta records)"

rm -rf "$cache"; cache=$(mktemp -d /tmp/gw_startup_XXXX)
(cd workloads/corpus && GW_COMPILE_CACHE="$cache" timeout -k 10 150 "$gw" record -q --duration 15.5 -o "$out/cut.gwr" -- \
  python3 h_jax_jit_few_steps.py --seconds 2) >"$out/cut.stdout" 2>"$out/cut.stderr"
"$gw" report --json "$out/cut.gwr" >"$out/cut.report.json" 2>/dev/null
cut=$("$gw" dump -t meta "$out/cut.gwr" 2>/dev/null | grep -c 'record.stopped_early=duration')
python3 - "$out/cut.report.json" "$cut" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
st = d.get("steps") or {}
print("stopped_early records:", sys.argv[2], "steps:", st.get("count"), "startup_s:", st.get("startup_s"),
      "startup_finding:", d.get("startup_finding") and d["startup_finding"]["title"],
      "(steps were found: the cut alone keeps the finding out)" if st.get("count") else "(no steps found)")
sys.exit(0 if d.get("startup_finding") is None and int(sys.argv[2]) > 0 else 1)
PY
say $? "cut short by --duration 15.5: said so, and no start-up finding"
rm -rf "$cache"
echo "$pass passed, $fail failed"
