#!/usr/bin/env bash
# docs/RULES.md's "Thresholds" table against the source: each constant it
# names is defined exactly once under src/ with the value the table gives,
# and every constant of src/analyze/thresholds.h is in the table.
# Prints "N passed, N failed".
set -u
cd "$(dirname "$0")/../.."
python3 - <<'PY'
import re, subprocess, sys
doc = open('docs/RULES.md').read()
sec = doc.split('## 9. Thresholds', 1)
if len(sec) < 2:
    print('FAIL docs/RULES.md has no "## 9. Thresholds" section'); print('0 passed, 1 failed'); sys.exit(1)
rows = re.findall(r'^\| `([A-Z][A-Z0-9_]*)` \| ([^|]+)\|', sec[1], re.M)
srcs = subprocess.run(['git', 'ls-files', '--cached', '--others', '--exclude-standard', 'src/*.c', 'src/*.h'], capture_output=True, text=True).stdout.split()
defs = {}
for p in srcs:
    for m in re.finditer(r'^#define ([A-Z][A-Z0-9_]*) (.+?)\s*(?:/\*.*)?$', open(p).read(), re.M):
        defs.setdefault(m.group(1), []).append((p, m.group(2)))
def value(name, depth=0):
    expr = defs[name][0][1]
    expr = re.sub(r'\b(\d+)(?:ull|ul|ll|u|l)\b', r'\1', expr, flags=re.I)
    expr = re.sub(r'\(\s*(?:double|uint64_t|unsigned)\s*\)', '', expr)
    names = {n: value(n, depth + 1) for n in re.findall(r'\b[A-Z][A-Z0-9_]+\b', expr) if n in defs and depth < 5}
    return float(eval(expr, {'__builtins__': {}}, names))
passed = failed = 0
def check(ok, msg):
    global passed, failed
    if ok: passed += 1
    else: failed += 1; print('FAIL ' + msg)
check(len(rows) >= 30, 'the table lists only %d constants (its rows are "| `NAME` | VALUE |")' % len(rows))
for name, val in rows:
    where = defs.get(name, [])
    if len(where) != 1:
        check(False, '%s is defined %d times under src/ (%s): a threshold is named once' %
              (name, len(where), ', '.join(p for p, _ in where) or 'nowhere'))
        continue
    num = re.match(r'\s*(-?[0-9.]+)', val)
    try:
        have = value(name)
    except Exception as e:
        check(False, '%s: cannot evaluate %r (%s)' % (name, where[0][1], e)); continue
    check(num is not None and abs(float(num.group(1)) - have) <= 1e-9 * max(1, abs(have)),
          '%s is %g in %s, but docs/RULES.md says %s' % (name, have, where[0][0], val.strip()))
listed = {n for n, _ in rows}
for m in re.finditer(r'^#define ([A-Z][A-Z0-9_]*) ', open('src/analyze/thresholds.h').read(), re.M):
    if m.group(1).startswith('GPUWHY_'):
        continue
    check(m.group(1) in listed, '%s (src/analyze/thresholds.h) is not in docs/RULES.md\'s Thresholds table' % m.group(1))
print('%d passed, %d failed' % (passed, failed))
sys.exit(1 if failed else 0)
PY
