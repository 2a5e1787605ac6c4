#!/usr/bin/env python3
"""gpuwhy's step without its own tracing cost against the job run without gpuwhy.

For every corpus recording (tests/fixtures/corpus/NAME.gwr) whose program also timed an
uninstrumented run (timings/NAME.plain.json, the same scenario and steady seconds) and whose
steps gpuwhy counted within 5% of the program's iterations, prints the quantiles of
  recorded / plain: gpuwhy's mean steady step over the program's uninstrumented step
  untraced / plain: the same after the analysis takes its estimate of its own tracing cost
                    out (JSON steady.untraced_step_ms)
and the recordings slower than their uninstrumented run by the most, with the time added
per GPU operation. Run from the repository root: python3 bench/untraced_vs_plain.py [GPUWHY]
[NAME...] (NAME...: those recordings' rows too, wherever they rank; bench/RESULTS.md, "The
untraced step against uninstrumented runs")."""
import glob
import json
import os
import subprocess
import sys

gw = sys.argv[1] if len(sys.argv) > 1 else "./gpuwhy"
named = sys.argv[2:]
corpus = "tests/fixtures/corpus"


def last_json(path):
    try:
        return json.loads(open(path).read().strip().splitlines()[-1])
    except (OSError, ValueError, IndexError):
        return None


rows = []
for g in sorted(glob.glob(os.path.join(corpus, "*.gwr"))):
    name = os.path.basename(g)[:-4]
    if "." in name:  # r2, r3, 6s: no uninstrumented run of their own
        continue
    plain = last_json(os.path.join(corpus, "timings", name + ".plain.json"))
    rec = last_json(os.path.join(corpus, "timings", name + ".rec.json"))
    if not plain or not rec or not plain.get("step_ms"):
        continue
    d = json.loads(subprocess.run([gw, "report", "--json", g], capture_output=True, text=True).stdout)
    st, sd = d["steps"], d["steady"]
    its = rec.get("iterations_total") or 0
    if not st.get("count") or not its or abs(st["iterations"] - its) > 0.05 * its:
        continue
    untraced = sd.get("untraced_step_ms") or st["mean_ms"]
    rows.append((st["mean_ms"] / plain["step_ms"], untraced / plain["step_ms"], name, st.get("ops_per_step") or 0,
                 st["mean_ms"] - plain["step_ms"], d.get("framework")))


def q(v, f):
    v = sorted(v)
    return v[int(f * (len(v) - 1))]


for i, label in ((0, "recorded / plain"), (1, "untraced / plain")):
    v = [r[i] for r in rows]
    print(f"{label}, {len(v)} recordings: p10 {q(v, .1):.3f}  p25 {q(v, .25):.3f}  median {q(v, .5):.3f}  "
          f"p75 {q(v, .75):.3f}  p90 {q(v, .9):.3f}")


def row(r):
    per = f"{1000 * r[4] / r[3]:.1f} us/op" if r[3] else "-"
    print(f"  {r[0]:.3f} {r[1]:.3f}  {r[2]:<44} {r[5] or '-':<8} {r[3]:>6} {r[4]:8.2f} ms  {per}")


print("\nslowest under recording (recorded / plain, untraced / plain, ops a step, ms added a step, per op):")
for r in sorted(rows, reverse=True)[:25]:
    row(r)
if named:
    print("\nnamed:")
    for r in rows:
        if r[2] in named:
            row(r)
