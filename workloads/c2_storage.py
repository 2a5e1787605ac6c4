"""C2 storage: each step reads its samples from files on disk with the page cache dropped.

--fix: the same files read once into memory before training (preloaded).
"""
import os
import tempfile

import numpy as np
import torch

import common

FILE_MB = 8
NFILES = 160


def make_files(d):
    rng = np.random.default_rng(0)
    for i in range(NFILES):
        p = os.path.join(d, f"shard{i:04d}.bin")
        if not os.path.exists(p):
            rng.random(FILE_MB * 1024 * 1024 // 4, dtype=np.float32).tofile(p)
    os.sync()


def drop_caches():
    try:
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("1\n")
    except OSError as e:
        print(f"c2_storage: cannot drop the page cache ({e}); storage will look fast", flush=True)


def main():
    args = common.parser(__doc__).parse_args()
    d = os.environ.get("GW_DATA_DIR", os.path.join(tempfile.gettempdir(), "gw_c2_data"))
    os.makedirs(d, exist_ok=True)
    make_files(d)
    files = sorted(os.path.join(d, f) for f in os.listdir(d))
    drop_caches()
    cache = [np.fromfile(f, dtype=np.float32) for f in files] if args.fix else None
    w = torch.randn(1024, 1024, device="cuda")

    def step(i):
        k = i % len(files)
        a = cache[k] if cache is not None else np.fromfile(files[k], dtype=np.float32)  # gpuwhy: plants C2
        if cache is None and k == len(files) - 1:
            drop_caches()  # every pass over the data is cold, as on a data set larger than RAM
        x = torch.from_numpy(a).view(-1, 1024).cuda()
        for _ in range(8):
            x = torch.tanh(x @ w)

    common.run("c2_storage", args, step, 1)


if __name__ == "__main__":
    main()
