#!/usr/bin/env bash
# The CPU time of `gpuwhy report --json` over every bundled corpus recording,
# for two builds side by side: OLD_REV (built in a temporary worktree) and
# this tree, each recording reported by one then the other on one core, so
# that the machine's drift falls on both alike. Prints the two totals and
# their ratio.
#   bench/corpus_report_cpu.sh OLD_REV
set -eu
old=${1:?usage: bench/corpus_report_cpu.sh OLD_REV}
cd "$(dirname "$0")/.."
wt=$(mktemp -d /tmp/gw-old-XXXXXX)
trap 'git worktree remove --force "$wt" >/dev/null 2>&1' EXIT
git worktree add -f "$wt" "$old" >/dev/null 2>&1
make -s -C "$wt" gpuwhy >/dev/null 2>&1
make -s gpuwhy >/dev/null
python3 - "$wt/gpuwhy" "$old" <<'PY'
import glob, resource, subprocess, sys
old, rev = sys.argv[1], sys.argv[2]
fs = sorted(glob.glob("tests/fixtures/corpus/*.gwr"))
tot = {"old": 0.0, "new": 0.0}
for f in fs:
    for k, b in (("old", old), ("new", "./gpuwhy")):
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run(["taskset", "-c", "0", b, "report", "--json=/dev/null", f],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        tot[k] += (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
print(f"| {len(fs)} corpus recordings | {rev}: {tot['old']:.1f} s CPU | this tree: {tot['new']:.1f} s CPU "
      f"({tot['old'] / tot['new']:.2f}x) |")
PY
