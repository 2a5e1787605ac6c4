#!/usr/bin/env python3
"""Checks the DOM headless Chromium dumped for the pages of test_html.sh.

Each page's body is in <div class="page" data-name="NAME"> of the dump.
For a report page NAME.json (its --json report) and NAME.gpu (the first NVML
sample of the recording, empty if none) say what the page must show."""
import json
import os
import re
import sys

tmp, dom_path, console_path, names = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
dom = open(dom_path, encoding="utf-8", errors="replace").read()
console = open(console_path, encoding="utf-8", errors="replace").read()
passed = failed = 0


def check(ok, what):
    global passed, failed
    if ok:
        passed += 1
        print("ok   " + what)
    else:
        failed += 1
        print("FAIL " + what)


# The browser saw no uncaught script error in any frame.
errs = [l for l in console.splitlines() if "Uncaught" in l or "SyntaxError" in l]
check(not errs, "no script error on the console" + (": " + errs[0][:300] if errs else ""))
m = re.search(r'<div id="out" data-done="(\d+)"', dom)
check(m and int(m.group(1)) == len(names), "the index loaded all %d pages" % len(names))

# Split the dump into pages (a page's div ends where the next begins).
starts = [(mm.start(), mm.group(1)) for mm in re.finditer(r'<div class="page" data-name="([^"]+)">', dom)]
pages = {}
for i, (pos, name) in enumerate(starts):
    end = starts[i + 1][0] if i + 1 < len(starts) else len(dom)
    pages[name] = dom[pos:end]

for name in names:
    page = pages.get(name, "")
    check(page != "" and not re.search(r"NO-ACCESS \w", page), "%s: page loaded and read" % name)
    if not page:
        continue
    m = re.search(r'<div id="js-errors"[^>]*>(.*?)</div>', page, re.S)
    check(m is not None and m.group(1).strip() == "", "%s: no script error in the page (%s)"
          % (name, (m.group(1).strip()[:200] if m else "no #js-errors")))
    m = re.search(r'<div id="js-status">rendered: (\d+) charts', page)
    check(m is not None, "%s: the page's script ran to its end" % name)
    size = os.path.getsize(os.path.join(tmp, name + ".html"))
    check(size < 400 * 1024, "%s: page size %d bytes < 400 KiB" % (name, size))
    if name.startswith("diff_"):
        d = json.load(open(os.path.join(tmp, name + ".json")))
        check('id="diff-summary"' in page, "%s: diff summary" % name)
        rows = len(re.findall(r'<tr class="kernel"', page))
        check(rows == len(d["kernels"]), "%s: %d kernel rows (JSON: %d)" % (name, rows, len(d["kernels"])))
        bars = len(re.findall(r'<rect class="cause-bar"', page))
        want = sum(1 for side in ("before", "after") for v in d[side]["idle_by_cause_pct"].values() if v > 0)
        check(bars == want, "%s: %d idle-cause bars (JSON: %d non-zero)" % (name, bars, want))
        fnd = len(re.findall(r'<tr class="finding-change', page))
        check(fnd == len(d["findings"]), "%s: %d finding rows (JSON: %d)" % (name, fnd, len(d["findings"])))
        continue
    rep = json.load(open(os.path.join(tmp, name + ".json")))
    nf = len(re.findall(r'<section class="finding[ "]', page))
    ns = len(re.findall(r'<section class="finding info" id="startup-finding"', page))
    check(nf - ns == len(rep["findings"]), "%s: %d finding sections (JSON: %d findings)"
          % (name, nf - ns, len(rep["findings"])))
    check(ns == (rep["startup_finding"] is not None), "%s: %d start-up finding sections (JSON: %s)"
          % (name, ns, rep["startup_finding"] is not None))
    m = re.search(r'data-verdict="([^"]+)"', page)
    check(m is not None and m.group(1) == rep["verdict"], "%s: verdict %s" % (name, rep["verdict"]))
    if rep["verdict"] != "no-gpu-data":
        m = re.search(r'<g class="bars" data-bins="(\d+)" data-steps="(\d+)">', page)
        bars = len(re.findall(r'<g class="stepbar">', page))
        ok = m is not None and int(m.group(1)) == bars == min(int(m.group(2)), 300) and bars > 0
        if ok and rep["steps"]["count"]:
            ok = int(m.group(2)) == rep["steps"]["count"]
        check(ok, "%s: one step bar per bin (%d bars, %s)" % (name, bars, m.group(0) if m else "no bars"))
        nshown = len(re.findall(r'<path class="series', page))
        if rep["steps"]["count"]:
            hist = len(re.findall(r'<rect class="hbar"', page))
            check(re.search(r'<svg[^>]*id="step-time"[\s\S]*?<path class="series"', page) is not None
                  and hist > 0, "%s: step time line and histogram (%d bins)" % (name, hist))
        nsplit = len(re.findall(r'<rect class="part"', page))
        want = sum(1 for v in rep["steady"]["idle_by_cause_pct"].values() if v > 0)
        check(nsplit == want, "%s: idle split in %d parts (JSON: %d causes)" % (name, nsplit, want))
    gpu = open(os.path.join(tmp, name + ".gpu")).read().strip()
    if gpu:
        clocks = re.search(r'<svg[^>]*id="gpu-clocks"[\s\S]*?</svg>', page)
        power = re.search(r'<svg[^>]*id="gpu-power"[\s\S]*?</svg>', page)
        check(clocks is not None and '<path class="series"' in clocks.group(0)
              and power is not None and '<path class="series"' in power.group(0),
              "%s: a line in the clocks and the power charts" % name)
    else:
        check('id="gpu-none"' in page or 'id="gpu-clocks"' not in page, "%s: no GPU chart without samples" % name)
    if name == "markup":
        check("<script>alert" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
              and "&amp;amp;" in page, "markup: the command line is escaped")

print("%d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
