"""Compares a recording of target.cu with the counts the target printed.
Usage: check_target.py GPUWHY RECORDING EXPECTED_JSON. Prints PASS/FAIL lines."""
import json
import subprocess
import sys

gw, rec, exp = sys.argv[1], sys.argv[2], json.loads(open(sys.argv[3]).read().strip().splitlines()[-1])
rows = [json.loads(l) for l in subprocess.run([gw, "dump", "--json", rec], check=True,
                                              capture_output=True, text=True).stdout.splitlines()]
kern = [r for r in rows if r["type"] == "kernel" and "gw_scale" in r["name"]]
memcpy = [r for r in rows if r["type"] == "memcpy" and r["copy_kind"] == 1]
syncs = [r for r in rows if r["type"] == "sync" and r["sync_type"] == 3]
api_sync = [r for r in rows if r["type"] == "api" and "StreamSynchronize" in r["name"]]
marks = [r for r in rows if r["type"] == "marker" and r["name"] == "gw_step"]
checks = [
    ("kernels", len(kern), exp["kernels"]),
    ("kernel grid", sorted({r["grid_x"] for r in kern}), [exp["grid"]]),
    ("kernel block", sorted({r["block_x"] for r in kern}), [exp["block"]]),
    ("pageable HtoD copies", sum(1 for r in memcpy if r["src_kind"] == 1), exp["pageable_htod"]),
    ("pinned HtoD copies", sum(1 for r in memcpy if r["src_kind"] == 2), exp["pinned_htod"]),
    ("stream sync API calls", len(api_sync), exp["stream_syncs"]),
    # sync activity records are the fallback when there are no host calls
    ("stream sync records" + (" beside the host calls" if api_sync else ""), len(syncs),
     0 if api_sync else exp["stream_syncs"]),
    ("NVTX range starts", sum(1 for r in marks if r["flags"] & 2), exp["nvtx_ranges"]),
]
bad = 0
for name, got, want in checks:
    ok = got == want
    bad += not ok
    print(f"{'PASS' if ok else 'FAIL'} {name}: recorded {got}, expected {want}")
print(f"{len(checks) - bad} passed, {bad} failed")
sys.exit(1 if bad else 0)
