#!/usr/bin/env python3
"""The lines where the training thread waited on storage, in every corpus recording: for each
line of the user's code innermost in the training thread's Python samples over the steady
window (the steps gpuwhy found), its samples in state D outside the thread's CUDA calls, against
all its samples there. Lines with 3 such samples or more (30 ms at the 100 Hz sampler) are
listed, lowest share first, with the library the line called (its innermost library frame):
the figures behind SITE_DISK_SHARE (docs/RULES.md sections 6 and 9).

    python3 tests/golden/disk_lines.py [GPUWHY]
"""
import glob
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GW = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "gpuwhy")
DISK = 3  # GW_PYSTATE_DISK (docs/FORMAT.md)


def records(path, types):
    out = subprocess.run([GW, "dump", "--json", "-t", types, path], capture_output=True, text=True).stdout
    return [json.loads(l) for l in out.splitlines() if l.strip()]


def library(file):
    return "site-packages" in file or "/lib/python" in file or file.startswith("<")


def lines_of(path):
    rep = subprocess.run([GW, "report", "--json", path], capture_output=True, text=True).stdout
    try:
        steps = json.loads(rep)["steps"]
    except (ValueError, KeyError):
        return []
    if not steps.get("count"):
        return []
    recs = records(path, "py_frame,py_stack,py_sample,api,kernel,memcpy,memset")
    frames = {r["id"]: r for r in recs if r["type"] == "py_frame"}
    nodes = {r["id"]: r for r in recs if r["type"] == "py_stack"}
    ops = [(r["start"], r["end"]) for r in recs if r["type"] in ("kernel", "memcpy", "memset") and r.get("device", 0) == 0]
    samples = [r for r in recs if r["type"] == "py_sample"]
    if not ops or not samples:
        return []
    first, last = min(s for s, _ in ops), max(e for _, e in ops)
    t0, t1 = first + steps["startup_s"] * 1e9, last - steps["tail_s"] * 1e9
    main = max({s["tid"] for s in samples}, key=lambda t: sum(1 for s in samples if s["tid"] == t))
    calls = sorted((r["start"], r["end"]) for r in recs if r["type"] == "api" and r.get("tid") == main)
    seen = {}
    ci = 0
    for s in samples:
        if s["tid"] != main or not t0 <= s["ts"] <= t1:
            continue
        n, lib, where = s["stack"], "", None
        while n in nodes:
            f = frames.get(nodes[n]["frame"])
            if f and library(f["file"]):
                lib = lib or f["file"].split("site-packages/")[-1]
            elif f:
                where = "%s:%d" % (os.path.basename(f["file"]), f["line"])
                break
            n = nodes[n]["parent"]
        if not where:
            continue
        while ci < len(calls) and calls[ci][1] < s["ts"]:
            ci += 1
        in_call = ci < len(calls) and calls[ci][0] <= s["ts"] <= calls[ci][1]
        k = seen.setdefault((where, lib), [0, 0])
        k[0] += 1
        k[1] += s["state"] == DISK and not in_call
    return [(d / n, d, n, where, lib) for (where, lib), (n, d) in seen.items() if d >= 3]


def main():
    rows = []
    for path in sorted(glob.glob(os.path.join(ROOT, "tests/fixtures/corpus/*.gwr"))):
        name = os.path.basename(path)[:-4]
        rows += [(share, d, n, name, where, lib) for share, d, n, where, lib in lines_of(path)]
    for share, d, n, name, where, lib in sorted(rows):
        print("%4.0f%%  %3d of %4d samples in D  %s  %s%s" % (100 * share, d, n, name, where,
                                                             "  (calls " + lib + ")" if lib else ""))


if __name__ == "__main__":
    main()
