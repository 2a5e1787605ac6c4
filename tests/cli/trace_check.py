"""Checks a `gpuwhy report --trace` file against the trace-event format and
against its recording.

  trace_check.py TRACE.json[.gz] START_NS END_NS [PIDS]

START_NS/END_NS: the recording's window (record.start_ns, record.end_ns;
END_NS 0 when the recording has none); PIDS: the recording's process ids,
comma-separated (its process records). Asserts:
  - the JSON is an object with a traceEvents list; every event has a known
    ph and its required fields with the right types (ts, dur numeric; pid,
    tid integers; counter args numeric; flow ids paired s -> f)
  - every timestamp is exact to the nanosecond (at most three decimals) and,
    in CLOCK_MONOTONIC (otherData.time_zero_ns + ts), inside the window
  - no two complete events overlap on one track (pid, tid) unless one nests
    inside the other
  - every kernel carries its launch in args: grid and block ("1728x1x1"),
    stream, correlation
  - processes are the job's by their real pids (among PIDS), GPUs above any
    Linux pid (2^22 and up); each process and each track named once, every
    named one with events, every track with events named
Exits 1 with the first failures listed, 0 otherwise; prints a summary."""
import gzip
import json
import re
import sys
from collections import defaultdict



def main():  # a function: its names are locals, which Python reads fastest
    path, start_ns, end_ns = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    real_pids = {int(p) for p in sys.argv[4].split(",") if p} if len(sys.argv) > 4 else None
    PID_MAX_LIMIT = 1 << 22
    raw = open(path, "rb").read()
    if path.endswith(".gz"):
        raw = gzip.decompress(raw)
    text = raw.decode("utf-8")  # must be valid UTF-8
    # timestamps as written: microseconds with at most three decimals, no exponent
    bad = re.search(r'"(?:ts|dur)":-?(?:\d+\.\d{4}|[\d.]+[eE])\S{0,12}', text)
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
    meta = defaultdict(int)      # (name, pid, tid) -> times written
    proc_name = {}               # pid -> its process_name
    proc_events = defaultdict(int)
    launch_re = re.compile(r"^\d+x\d+x\d+$")
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
            proc_events[key[0]] += 1
            if e.get("cat") == "kernel":
                a = e.get("args") or {}
                if not (isinstance(a.get("grid"), str) and launch_re.match(a["grid"]) and
                        isinstance(a.get("block"), str) and launch_re.match(a["block"]) and
                        isinstance(a.get("stream"), int) and isinstance(a.get("correlation"), int)):
                    err("kernel without its launch (grid, block, stream, correlation) in args: %r" % e)
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
            process_level = e["name"].startswith("process_")
            meta[(e["name"], e.get("pid"), None if process_level else e.get("tid"))] += 1
            if e["name"] == "process_name":
                proc_name[e.get("pid")] = (e.get("args") or {}).get("name")
            continue
        proc_events[e.get("pid")] += 1
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
    for (what, pid, tid), n in meta.items():
        if n > 1:
            err("%s of pid %r%s written %d times" % (what, pid, "" if tid is None else " tid %r" % tid, n))
    for (what, pid, tid) in meta:
        if what == "thread_name" and not tracks.get((pid, tid)):
            err("an empty track: thread_name %r of pid %r tid %r has no slice" % (what, pid, tid))
        if what == "process_name" and not proc_events.get(pid):
            err("an empty process: pid %r (%r) has no event" % (pid, proc_name.get(pid)))
    for key in tracks:
        if ("thread_name", key[0], key[1]) not in meta:
            err("track %r has slices but no thread_name" % (key,))
    for pid, name in proc_name.items():
        gpu = isinstance(name, str) and name.startswith("GPU ")
        if gpu and pid < PID_MAX_LIMIT:
            err("GPU process %r has pid %d, which a job process could have" % (name, pid))
        if not gpu and (pid >= PID_MAX_LIMIT or (real_pids is not None and pid not in real_pids)):
            err("process %r has pid %d, not one of the recording's (%s)" % (name, pid, sorted(real_pids or [])[:8]))
    for pid in proc_events:
        if pid not in proc_name:
            err("events of pid %r, which has no process_name" % pid)
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


main()
