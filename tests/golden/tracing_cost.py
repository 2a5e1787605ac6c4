#!/usr/bin/env python3
"""gpuwhy's estimate of its own tracing cost against the slowdown measured.

For each corpus recording with steps and timings (tests/fixtures/corpus/timings/summary.tsv),
the measured slowdown is the plain run's throughput over the recorded run's (each in its
own process: run-to-run noise and everything the recording costs, samplers included), and
the estimate is 1 / (1 - O), O the report's tracing_cost_pct (docs/RULES.md, "gpuwhy's own
cost"). Prints the jobs whose estimate differs most, then a summary line.

  python3 tests/golden/tracing_cost.py [GPUWHY] [--launch-graphs]

--launch-graphs: only the recordings that launched CUDA graphs (a cuGraphLaunch call).
"""
import concurrent.futures
import csv
import json
import math
import os
import statistics
import subprocess
import sys

here = os.path.dirname(os.path.abspath(__file__))
corpus = os.path.join(here, "..", "fixtures", "corpus")
args = [a for a in sys.argv[1:] if not a.startswith("--")]
gw = args[0] if args else os.path.join(here, "..", "..", "gpuwhy")
graphs_only = "--launch-graphs" in sys.argv


def one(name):
    path = os.path.join(corpus, name + ".gwr")
    if not os.path.exists(path):
        return None
    if graphs_only:
        api = subprocess.run([gw, "dump", "-t", "api", path], capture_output=True, text=True).stdout
        if "GraphLaunch" not in api:
            return None
    out = subprocess.run([gw, "report", "--json", path], capture_output=True, text=True).stdout
    try:
        d = json.loads(out)
    except ValueError:
        return None
    if not (d.get("steps") or {}).get("count"):
        return None
    return name, (d.get("steady") or {}).get("tracing_cost_pct") or 0.0


rows = {r["scenario"]: r for r in csv.DictReader(open(os.path.join(corpus, "timings", "summary.tsv")),
                                                  delimiter="\t")}
res = []
with concurrent.futures.ThreadPoolExecutor(os.cpu_count() or 2) as ex:
    for r in ex.map(one, sorted(rows)):
        if not r:
            continue
        name, pct = r
        try:
            meas = float(rows[name]["plain_samples_per_s"]) / float(rows[name]["recorded_samples_per_s"])
        except (ValueError, ZeroDivisionError):
            continue
        if not (meas > 0 and math.isfinite(meas)) or pct >= 100:
            continue
        res.append((name, meas, 1 / (1 - pct / 100)))
if not res:
    sys.exit("tracing_cost.py: no recording with steps and timings")
print("| recording | measured slowdown | estimated | estimate / measured |\n|---|---|---|---|")
for name, meas, est in sorted(res, key=lambda x: abs(math.log(x[2] / x[1])), reverse=True)[:20]:
    print(f"| {name} | {meas:.2f} | {est:.2f} | {est / meas:.2f} |")
err = [abs(e / m - 1) for _, m, e in res]
print(f"\n{len(res)} recordings: the estimate within 5% of the measured slowdown on "
      f"{sum(x <= 0.05 for x in err)}, within 10% on {sum(x <= 0.10 for x in err)}; "
      f"median difference {100 * statistics.median(err):.1f}%")
