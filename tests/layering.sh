#!/usr/bin/env bash
# The shape of the code, checked from the sources and the object files:
# 0. Directories include only the layers below them (the edges listed in
#    `allowed` below, docs/DESIGN.md draws them); any other #include fails,
#    named with the line that makes it.
# 1. src/analyze/ is a pipeline: the call graph between its files (rules/
#    counted as one: the rule table and the rules it lists) has no loop, so
#    each file can be read knowing only the files below it. A loop is
#    listed with the calls that close it. Its bottom, the trace model (the
#    files in `model` below: the recording read into struct trace), calls
#    no file of the analysis above it.
# 2. No function in src/ or inject/ is over 150 lines.
# 3. Renderers only print: no file of src/report/ includes the recording's
#    reader (src/format/) or calls the analysis' quantile and median
#    functions, and the reports sort nothing (the timeline export orders
#    its events); what they print is computed by the analysis (struct
#    analysis, its facts, analyze/export.h). Nowhere is a validity bit
#    tested as a number (`valid & 8`): by its name (GW_VALID_BIT).
# Prints "N passed, N failed".
set -u
cd "$(dirname "$0")/.."
build=${BUILD:-build}
pass=0; fail=0
# the allowed edges: a directory may include its own files and those of the
# directories listed for it (src/analyze/rules/ is "rules")
python3 - <<'PY' && pass=$((pass+1)) || fail=$((fail+1))
import glob, os, re, sys
allowed = {
    'util': set(),
    'format': {'util'},
    'procfs': {'format', 'util'},
    'gpu': {'format', 'util'},
    'pystack': {'procfs'},
    'analyze': {'format', 'util'},
    'rules': {'analyze', 'format', 'util'},
    'report': {'analyze', 'util'},
    'record': {'gpu', 'pystack', 'procfs', 'format', 'util'},
    'check': {'gpu', 'procfs', 'format', 'util'},
    'job': {'report', 'analyze', 'format', 'util'},
    'cmd': {'job', 'report', 'analyze', 'record', 'check', 'pystack', 'procfs', 'gpu', 'format', 'util'},
    'main': {'cmd', 'util'},
    'inject': {'pystack', 'procfs', 'format', 'util'},
}
def layer(p):
    parts = p.split('/')
    if parts[0] == 'inject':
        return 'inject'
    if len(parts) == 2:
        return 'main'
    return 'rules' if parts[1:3] == ['analyze', 'rules'] else parts[1]
bad = 0
files = sorted(glob.glob('src/**/*.[ch]', recursive=True) + glob.glob('inject/*.[ch]'))
for p in files:
    a = layer(p)
    if a not in allowed:
        print('FAIL %s: directory %s is in no layer of tests/layering.sh' % (p, a)); bad += 1; continue
    for n, line in enumerate(open(p), 1):
        m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
        if not m:
            continue
        tgt = os.path.normpath(os.path.join(os.path.dirname(p), m.group(1)))
        b = layer(tgt)
        if b != a and b not in allowed[a]:
            print('FAIL %s:%d: %s includes %s (%s -> %s is not an allowed edge)' % (p, n, a, tgt, a, b)); bad += 1
sys.exit(1 if bad else 0)
PY
objs=$(ls "$build"/src/analyze/*.o "$build"/src/analyze/rules/*.o 2>/dev/null)
if [ -z "$objs" ]; then echo "no objects under $build/src/analyze: build first"; echo "0 passed, 1 failed"; exit 1; fi
python3 - "$build" $objs <<'PY' && pass=$((pass+1)) || fail=$((fail+1))
import os, subprocess, sys
build, objs = sys.argv[1], sys.argv[2:]
def node(o):
    rel = os.path.relpath(o, os.path.join(build, 'src/analyze'))
    return 'rules/' if rel.startswith('rules/') else rel[:-2] + '.c'
defs, uses = {}, {}
for o in objs:
    n = node(o)
    for line in subprocess.run(['nm', o], capture_output=True, text=True).stdout.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in 'TDRB':
            defs[parts[2]] = n
        elif len(parts) == 2 and parts[0] == 'U':
            uses.setdefault(n, set()).add(parts[1])
edges = {}
for n, syms in uses.items():
    for s in syms:
        m = defs.get(s)
        if m and m != n:
            edges.setdefault(n, {}).setdefault(m, []).append(s)
# loops: strongly connected components of more than one file (Tarjan)
index, low, stack, on, comps, counter = {}, {}, [], set(), [], [0]
def visit(v):
    index[v] = low[v] = counter[0]; counter[0] += 1; stack.append(v); on.add(v)
    for w in edges.get(v, {}):
        if w not in index:
            visit(w); low[v] = min(low[v], low[w])
        elif w in on:
            low[v] = min(low[v], index[w])
    if low[v] == index[v]:
        c = []
        while True:
            w = stack.pop(); on.discard(w); c.append(w)
            if w == v: break
        if len(c) > 1: comps.append(sorted(c))
model = {'load.c', 'names.c', 'samples.c', 'timeline.c', 'staged.c', 'replay.c', 'ordered.c', 'step_finder.c',
         'steps_period.c', 'kclass.c', 'pyholds.c', 'quantile.c'}
up = [(a, b, syms) for a in sorted(model) for b, syms in sorted(edges.get(a, {}).items()) if b not in model]
for a, b, syms in up:
    print('FAIL the trace model calls the analysis above it: %s -> %s (%s)' % (a, b, ', '.join(sorted(syms)[:6])))
missing = sorted(m for m in model if m not in set(defs.values()) | set(uses))
for m in missing:
    print('FAIL tests/layering.sh names %s in the trace model, which has no object' % m)
sys.setrecursionlimit(10000)
for v in sorted(set(defs.values())):
    if v not in index: visit(v)
for c in comps:
    print('FAIL loop between ' + ', '.join(c) + ':')
    for a in c:
        for b, syms in sorted(edges.get(a, {}).items()):
            if b in c:
                print('  %s -> %s (%s)' % (a, b, ', '.join(sorted(syms)[:6])))
sys.exit(1 if comps or up or missing else 0)
PY
# functions over 150 lines: from the first line of a definition at column 0
# to its closing brace at column 0
long=$(awk 'FNR == 1 { inf = 0 }
  /^[a-zA-Z].*\(/ && !/;[ \t]*$/ && !inf { start = FNR; name = $0; inf = 1; next }
  inf && /^}/ { n = FNR - start + 1; if (n > 150) printf "%s:%d: %d lines: %s\n", FILENAME, start, n, name; inf = 0 }' \
  $(find src inject -name '*.c' | sort))
if [ -n "$long" ]; then printf 'FAIL function over 150 lines:\n%s\n' "$long"; fail=$((fail+1)); else pass=$((pass+1)); fi
# renderers that read or compute
computes=$(grep -nE '#include "\.\./format/|gw_reader_[a-z_]+\(|\b(quantile|select_u32|median_[a-z_]+)\(' \
  src/report/*.[ch]; grep -nE '\bqsort(_r)?\(' src/report/render_term.c src/report/render_json.c \
  src/report/render_html.c src/report/render_sites.c)
if [ -n "$computes" ]; then printf 'FAIL src/report/ reads the recording or computes a statistic:\n%s\n' "$computes"; fail=$((fail+1)); else pass=$((pass+1)); fi
bits=$(grep -rnE 'valid\]? *& *\(?[0-9]' src inject)
if [ -n "$bits" ]; then printf 'FAIL a validity bit tested as a number:\n%s\n' "$bits"; fail=$((fail+1)); else pass=$((pass+1)); fi
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
