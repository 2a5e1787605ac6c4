"""C2 storage (CuPy): a sensor-record reader that opens its 1 GB data file with O_DIRECT
(bypassing the page cache, as some I/O libraries default to) and reads one 32 MB chunk per
step into a pinned buffer; every read goes to the disk while the GPU waits.

--fix: ordinary buffered reads, with the file read once into the page cache before training
(page-cache warm-up: the data fits in RAM).
"""
import mmap
import os

import numpy as np

import cc

try:
    import cupy as cp
except ImportError:  # CPU smoke test: numpy stands in
    cp = None

CHUNK = 32 << 20


def make_file(path, size):
    if os.path.exists(path) and os.path.getsize(path) == size:
        return
    rng = np.random.default_rng(0)
    with open(path + ".tmp", "wb") as f:
        for _ in range(size // CHUNK):
            f.write(rng.standard_normal(CHUNK // 4, dtype=np.float32).tobytes())
    os.rename(path + ".tmp", path)


def main():
    args = cc.parser(__doc__).parse_args()
    gpu = args.device == "cuda"
    if gpu and cp is None:
        raise SystemExit("CuPy is not installed: run with --device cpu for a smoke test")
    xp = cp if gpu else np
    size = (4 if args.smoke else 32) * CHUNK
    os.makedirs(cc.CACHE, exist_ok=True)
    path = os.path.join(cc.CACHE, f"records_{size >> 20}MB.bin")
    make_file(path, size)
    buf = mmap.mmap(-1, CHUNK)  # page-aligned, as O_DIRECT needs
    host = np.frombuffer(buf, dtype=np.float32)
    if gpu:
        cp.cuda.runtime.hostRegister(host.ctypes.data, CHUNK, 0)  # pinned
    direct = False
    if args.fix:
        with open(path, "rb") as f:  # warm the page cache
            while f.read(CHUNK):
                pass
        fd = os.open(path, os.O_RDONLY)
    else:
        try:
            fd = os.open(path, os.O_RDONLY | os.O_DIRECT)  # gpuwhy: plants C2 (every read from the disk)
            direct = True
        except OSError:  # a file system without O_DIRECT: drop the file's pages after each read
            fd = os.open(path, os.O_RDONLY)
            cc.drop_caches("c2_cupy_odirect")
    nchunks = size // CHUNK
    dev = xp.empty(CHUNK // 4, dtype=xp.float32)
    stats = xp.zeros(4, dtype=xp.float32)

    def step(i):
        off = (i % nchunks) * CHUNK
        os.preadv(fd, [buf], off)
        if not args.fix and not direct:
            os.posix_fadvise(fd, off, CHUNK, os.POSIX_FADV_DONTNEED)
        if gpu:
            dev.set(host)
        else:
            dev[...] = host
        x = dev.reshape(-1, 1024)
        stats[...] += xp.stack([x.mean(), x.std(), xp.abs(x).max(), (x > 3).mean()])
        return stats

    cc.run("c2_cupy_odirect", args, step, 1, extra={"o_direct": direct})


if __name__ == "__main__":
    main()
