"""Replays an input of the diff fuzz target (tests/fuzz/fuzz_diff.c) with the
gpuwhy binary: diff_split.py INPUT OUTDIR writes OUTDIR/before.gwr and
OUTDIR/after.gwr, split as the target splits (at the second file header, or
in halves), and prints the options the target derives from the input's size.
The fuzz build skips chunk CRCs: here every chunk header found (each "GWC1"
whose stored length fits) gets the CRC of the bytes it covers, so that the
binary reads nearly what the target read (a header inside another chunk's
bytes changes them)."""
import os
import struct
import sys
import zlib

data = open(sys.argv[1], "rb").read()
size = len(data)
second = data.find(b"GPUWHY\x1a\n", 1)
split = second if second > 0 else size // 2


def recrc(b):
    b = bytearray(b)
    at = b.rfind(b"GWC1")
    while at >= 0:  # from the end: a header inside another chunk is fixed before that chunk's CRC
        if at + 24 <= len(b):
            stored = struct.unpack_from("<I", b, at + 12)[0]
            if at + 24 + stored <= len(b):
                struct.pack_into("<I", b, at + 20, zlib.crc32(b[at + 24:at + 24 + stored]))
        at = b.rfind(b"GWC1", 0, at)
    return bytes(b)


for name, part in (("before", data[:split]), ("after", data[split:])):
    open(os.path.join(sys.argv[2], name + ".gwr"), "wb").write(recrc(part))
steps = [None, "none", "nvtx:step", "kernel:gemm"][size % 4]
batch = [None, "32", "32:64"][size // 4 % 3]
top = [15, 0, 3][size // 12 % 3]
opts = (["--steps", steps] if steps else []) + (["--batch", batch] if batch else []) + ["--top", str(top)]
print(" ".join(opts))
