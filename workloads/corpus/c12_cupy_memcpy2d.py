"""C12's copy-bandwidth evidence (CuPy): a recommendation model reads 64 of the 1024
float32 features of each of 65536 rows from a row-major table in pinned host memory,
with cudaMemcpy2DAsync (256-byte rows at a 4 KB pitch): a 16 MB copy per step that runs far
under the PCIe link's bandwidth although the memory is pinned.
No placement fault can be planted on the test machine (one NUMA node, full x16 link): this
plants the only C12 evidence a program can produce there; gpuwhy's C12 fix text (slot, NUMA
binding) does not apply to its cause.

--fix: the table is stored feature-major by groups, so the 64 features are one contiguous
16 MB block: one cudaMemcpyAsync at full link speed.
"""
import numpy as np

import cc

try:
    import cupy as cp
    import cupyx
except ImportError:  # CPU smoke test: numpy stands in
    cp = cupyx = None


def main():
    args = cc.parser(__doc__).parse_args()
    gpu = args.device == "cuda"
    if gpu and cp is None:
        raise SystemExit("CuPy is not installed: run with --device cpu for a smoke test")
    rows, width, sel, first = (1024 if args.smoke else 65536), 1024, 64, 128
    if gpu:
        table = cupyx.empty_pinned((rows, width), np.float32)
    else:
        table = np.empty((rows, width), np.float32)
    table[...] = np.random.default_rng(0).random((rows, width), dtype=np.float32)
    # --fix: the same features stored as one contiguous group (feature-major by groups)
    group = np.ascontiguousarray(table[:, first:first + sel]) if not gpu else cupyx.empty_pinned((rows, sel), np.float32)
    if gpu:
        group[...] = table[:, first:first + sel]
    xp = cp if gpu else np
    dsel = xp.empty((rows, sel), xp.float32)
    w = xp.asarray(np.random.default_rng(1).standard_normal((sel, 256), dtype=np.float32)).astype(xp.float16)
    stream = cp.cuda.Stream(non_blocking=True) if gpu else None
    item = table.itemsize

    def step(i):
        if not gpu:
            dsel[...] = group if args.fix else table[:, first:first + sel]
        elif args.fix:
            cp.cuda.runtime.memcpyAsync(dsel.data.ptr, group.ctypes.data, rows * sel * item,
                                        cp.cuda.runtime.memcpyHostToDevice, stream.ptr)
        else:
            # gpuwhy: plants C12 (strided 2D copy: 256-byte rows at a 4 KB pitch)
            cp.cuda.runtime.memcpy2DAsync(dsel.data.ptr, sel * item, table.ctypes.data + first * item, width * item,
                                          sel * item, rows, cp.cuda.runtime.memcpyHostToDevice, stream.ptr)
        if gpu:
            with stream:
                return xp.tanh(dsel.astype(xp.float16) @ w).sum(axis=1)
        return xp.tanh(dsel.astype(xp.float16) @ w).sum(axis=1)

    cc.run("c12_cupy_memcpy2d", args, step, rows)


if __name__ == "__main__":
    main()
