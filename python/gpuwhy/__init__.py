"""gpuwhy: why is the GPU idle? This package carries the gpuwhy binary and
its CUPTI injection libraries; `gpuwhy` on the PATH runs the binary.

    import gpuwhy
    d = gpuwhy.report("run.gwr")   # the JSON report (docs/JSON.md) as a dict
    d["verdict"], d["findings"][0]["title"]
    c = gpuwhy.diff("before.gwr", "after.gwr")   # gpuwhy diff --json as a dict
    c["speedup"], c["findings"]
"""
import json
import os
import subprocess

__version__ = "@VERSION@"
__all__ = ["report", "diff", "binary", "GpuwhyError"]


class GpuwhyError(RuntimeError):
    """gpuwhy failed; the message is what it printed on stderr."""


def binary():
    """The path of the bundled gpuwhy binary."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin", "gpuwhy")


def report(path, *args):
    """Diagnoses a recording and returns `gpuwhy report --json` as a dict.

    Extra arguments go to `gpuwhy report` (e.g. "--steps", "kernel:NAME").
    The path is always a file, whatever its name ("-v", "--html=x")."""
    proc = subprocess.run([binary(), "report", "--json", *map(str, args), "--", os.fspath(path)],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          check=False)
    if not proc.stdout.strip():
        raise GpuwhyError(proc.stderr.strip() or "gpuwhy report exited %d" % proc.returncode)
    return json.loads(proc.stdout)


def diff(before, after, *args):
    """Compares two recordings and returns `gpuwhy diff --json` as a dict
    (schema gpuwhy.diff/1: the measured speed-up, per-cause idle time,
    kernels and findings of both).

    Extra arguments go to `gpuwhy diff` (e.g. "--batch", "2:16")."""
    proc = subprocess.run([binary(), "diff", "--json", *map(str, args), "--",
                           os.fspath(before), os.fspath(after)],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          check=False)
    if not proc.stdout.strip():
        raise GpuwhyError(proc.stderr.strip() or "gpuwhy diff exited %d" % proc.returncode)
    return json.loads(proc.stdout)
