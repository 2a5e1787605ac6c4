"""Checks a `gpuwhy report --trace` file against the trace-event format and
against its recording.

  trace_check.py TRACE.json[.gz] START_NS END_NS

START_NS/END_NS: the recording's window (record.start_ns, record.end_ns;
END_NS 0 when the recording has none). Asserts:
  - the JSON is an object with a traceEvents list; every event has a known
    ph and its required fields with the right types (ts, dur numeric; pid,
    tid integers; counter args numeric; flow ids paired s -> f)
  - every timestamp is exact to the nanosecond (at most three decimals) and,
    in CLOCK_MONOTONIC (otherData.time_zero_ns + ts), inside the window
  - no two complete events overlap on one track (pid, tid) unless one nests
    inside the other
Exits 1 with the first failures listed, 0 otherwise; prints a summary."""
import gzip
import json
import re
import sys
from collections import defaultdict

path, start_ns, end_ns = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
raw = open(path, "rb").read()
if path.endswith(".gz"):
    raw = gzip.decompress(raw)
text = raw.decode("utf-8")  # must be valid UTF-8
# timestamps as written: microseconds with at most three decimals, no exponent
bad = re.search(r'"(?:ts|dur)":(-?\d+(?:\.\d{4,}|\.?\d*[eE][-+]?\d+))', text)
if bad:
    sys.exit("inexact timestamp: %s" % bad.group(0))
doc = json.loads(text)
errors = []


def err(msg):
    if len(errors) < 20:
        errors.append(msg)


assert isinstance(doc, dict) and isinstance(doc.get("traceEvents"), list), "no traceEvents"
zero = doc.get("otherData", {}).get("time_zero_ns")
assert isinstance(zero, int), "otherData.time_zero_ns missing"


def ns(us):  # exact: the text has three decimals at most
    return round(us * 1000)


lo = start_ns - zero
hi = (end_ns - zero) if end_ns else None
tracks = defaultdict(list)
flows = defaultdict(list)
counts = defaultdict(int)
for e in doc["traceEvents"]:
    ph = e.get("ph")
    counts[ph] += 1
    if ph == "X":  # the bulk: checked first, briefly
        try:
            t0 = round(e["ts"] * 1000)
            d = round(e["dur"] * 1000)
            key = (e["pid"], e["tid"])
            name = e["name"]
        except (KeyError, TypeError):
            err("complete event without ts, dur, pid, tid or name: %r" % e)
            continue
        if d < 0 or t0 < lo or (hi is not None and t0 + d > hi) or type(key[0]) is not int \
                or type(key[1]) is not int or type(name) is not str:
            err("bad complete event (window [%d, %s] ns): %r" % (lo, hi, e))
        tracks[key].append((t0, t0 + d, name))
        continue
    if ph not in ("M", "C", "s", "f"):
        err("unknown ph %r: %r" % (ph, e))
        continue
    if not isinstance(e.get("pid"), int) or (ph != "C" and not isinstance(e.get("tid"), int)):
        err("pid/tid not integers: %r" % e)
    if not isinstance(e.get("name"), str):
        err("no name: %r" % e)
    if ph == "M":
        if e["name"] not in ("process_name", "thread_name", "thread_sort_index", "process_sort_index"):
            err("unknown metadata %r" % e)
        continue
    ts = e.get("ts")
    if not isinstance(ts, (int, float)):
        err("ts not numeric: %r" % e)
        continue
    t0 = ns(ts)
    if t0 < lo or (hi is not None and t0 > hi):
        err("outside the recording [%d, %s] ns: %r" % (lo, hi, e))
    if ph == "C":
        args = e.get("args")
        if not isinstance(args, dict) or not args or not all(
                isinstance(v, (int, float)) and not isinstance(v, bool) for v in args.values()):
            err("counter args not numeric: %r" % e)
    else:
        flows[e.get("id")].append(ph)
        if ph == "f" and e.get("bp") != "e":
            err("flow end without bp=e: %r" % e)
for fid, phs in flows.items():
    if sorted(phs) != ["f", "s"]:
        err("flow %r not paired: %r" % (fid, phs))
overlaps = 0
for key, sl in tracks.items():
    sl.sort(key=lambda x: (x[0], -x[1]))
    if all(sl[i][1] <= sl[i + 1][0] for i in range(len(sl) - 1)):
        continue  # no two touch: nothing nests either
    stack = []
    for t0, t1, name in sl:
        while stack and stack[-1][1] <= t0:
            stack.pop()
        if stack and t1 > stack[-1][1]:
            overlaps += 1
            err("track %r: %s [%d, %d] overlaps %s [%d, %d]" % (key, name, t0, t1, stack[-1][2],
                                                                stack[-1][0], stack[-1][1]))
        stack.append((t0, t1, name))
print("%s: %d events (%s), %d tracks, %d flows, %d overlaps" % (
    path, len(doc["traceEvents"]), ", ".join("%s %d" % kv for kv in sorted(counts.items())),
    len(tracks), len(flows), overlaps))
if errors:
    print("\n".join(errors))
    sys.exit(1)
