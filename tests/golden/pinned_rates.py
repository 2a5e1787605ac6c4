#!/usr/bin/env python3
"""Pinned host-to-device copies of 1 MiB or more in every real recording of tests/fixtures:
their bytes over their time, against the link's practical rate (51.2 GB/s for the H200
machine's Gen5 x16, src/util/util.c pcie_practical_gbs), and their share of the main GPU's
window. C12's line (C12_LINK_SHARE, docs/RULES.md) sits below what contiguous copies reach.
    python3 tests/golden/pinned_rates.py ./gpuwhy"""
import glob, json, os, subprocess, sys

gw = sys.argv[1] if len(sys.argv) > 1 else "./gpuwhy"
LINK = 51.2
for f in sorted(glob.glob("tests/fixtures/*.gwr") + glob.glob("tests/fixtures/corpus/*.gwr")):
    b = t = 0
    dump = subprocess.run([gw, "dump", "--json", "-t", "memcpy", f], capture_output=True, text=True).stdout
    for line in dump.splitlines():
        r = json.loads(line)
        if r["copy_kind"] == 1 and r["src_kind"] == 2 and r["bytes"] >= 1 << 20:
            b += r["bytes"]
            t += r["end"] - r["start"]
    if not t:
        continue
    d = json.loads(subprocess.run([gw, "report", "--json", f], capture_output=True, text=True).stdout)
    w = ((d.get("gpus") or [{}])[0].get("window_s") or 1) * 1e9
    print("%-45s %5.1f GB/s  %4.2f of the link  copies %5.1f%% of the window"
          % (os.path.basename(f), b / t, b / t / LINK, 100 * t / w))
