#!/usr/bin/env python3
"""Where the corpus's planting lines are in the reports: for each corpus fixture whose
scenario marks a line "# gpuwhy: plants CX" (in the scenario's version of the commit
that recorded the fixture), whether the first site of finding CX names that line, as
its own line, inside its block of lines or as the loop's line that leads to it
(docs/RULES.md section 6), and
whether any sampled Python frame holds the line at all (a configuration line such as
`num_workers=0` or `batch = 4` is in no stack, so no site can name it). A scenario that
marks several lines for one cause (the copy in and the copy out of a step) is also counted
once per cause: its first site names one of them or none.

    python3 tests/golden/planting_sites.py [GPUWHY]    (repository root; prints one line
                                                         per miss, then the totals)
"""
import glob, json, os, re, subprocess, sys

gw = sys.argv[1] if len(sys.argv) > 1 else "./gpuwhy"
wl, fx = "workloads/corpus", "tests/fixtures/corpus"
named = held = named_held = total = 0
causes = {}  # (scenario, cause) -> [held by a stack, named], over the cause's marks
for src in sorted(glob.glob(wl + "/*.py")):
    name = os.path.basename(src)[:-3]
    g = f"{fx}/{name}.gwr"
    if not os.path.exists(g):
        continue
    c = subprocess.run(["git", "log", "-1", "--format=%h", "--", g], capture_output=True, text=True).stdout.strip()
    txt = subprocess.run(["git", "show", f"{c}:{src}"], capture_output=True, text=True).stdout or open(src).read()
    marks = [(m.group(1), n) for n, line in enumerate(txt.splitlines(), 1)
             for m in [re.search(r"#.*gpuwhy: plants (C\d+)", line)] if m]
    if not marks:
        continue
    d = json.loads(subprocess.run([gw, "report", "--json", g], capture_output=True, text=True).stdout)
    frames = subprocess.run([gw, "dump", "--type", "py_frame", g], capture_output=True, text=True).stdout
    for cause, line in marks:
        total += 1
        in_stacks = re.search(rf"file=\S*/{re.escape(name)}\.py function=.* line={line}$", frames, re.M) is not None
        held += in_stacks
        f = next((x for x in d["findings"] if x["assessed"] and x["cause"] == cause), None)
        s0 = f["sites"][0] if f and f.get("sites") else None
        lines = [x for x in (s0, s0 and s0.get("call")) if x]
        ok = any(os.path.basename(x["file"]) == name + ".py" and
                 (x["line"] == line or x.get("lines", [0, -1])[0] <= line <= x.get("lines", [0, -1])[1])
                 for x in lines)
        named += ok
        named_held += ok and in_stacks
        c = causes.setdefault((name, cause), [False, False])
        c[0] |= in_stacks
        c[1] |= ok
        if not ok:
            print(f"{name} {cause}: line {line}{'' if in_stacks else ' (in no stack)'}; first site "
                  f"{[(os.path.basename(x['file']), x['line']) for x in lines] or 'none'}")
print(f"first site names the planting line: {named} of {total}; of the {held} lines some stack holds: {named_held}")
held_c = [v for v in causes.values() if v[0]]
print(f"per planted cause (a scenario's marks of one cause, named when the first site names one of them): "
      f"{sum(v[1] for v in causes.values())} of {len(causes)}; of the {len(held_c)} with a mark some stack holds: "
      f"{sum(v[1] for v in held_c)}")
