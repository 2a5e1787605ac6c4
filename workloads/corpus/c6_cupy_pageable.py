"""C6 pageable copies (CuPy): a spectral feature pipeline whose input frames (64 MB each)
sit in ordinary numpy arrays; cp.asarray copies them from pageable memory, synchronously,
through the driver's staging buffer, while the GPU waits.

--fix: the frames are allocated in pinned memory (cupyx.empty_pinned) and copied
asynchronously on a copy stream, one frame ahead of the compute.
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
    xp = cp if gpu else np
    rows, cols = (64, 128) if args.smoke else (4096, 4096)
    rng = np.random.default_rng(0)
    frames = [rng.standard_normal((rows, cols), dtype=np.float32) for _ in range(4)]
    if args.fix and gpu:
        pinned = []
        for f in frames:
            p = cupyx.empty_pinned(f.shape, f.dtype)
            p[...] = f
            pinned.append(p)
        frames = pinned
    fbank = xp.asarray(rng.random((cols // 2 + 1, 128), dtype=np.float32)).astype(xp.float16)
    if gpu and args.fix:
        copy_stream = cp.cuda.Stream(non_blocking=True)
        bufs = [cp.empty((rows, cols), cp.float32) for _ in range(2)]
        done = [cp.cuda.Event() for _ in range(2)]  # a frame has arrived
        used = [cp.cuda.Event() for _ in range(2)]  # its buffer's compute was issued

        def upload(i):
            copy_stream.wait_event(used[i % 2])  # do not overwrite a buffer still being read
            bufs[i % 2].set(frames[i % 4], stream=copy_stream)
            done[i % 2].record(copy_stream)
        upload(0)

    def step(i):
        if gpu and args.fix:
            cp.cuda.get_current_stream().wait_event(done[i % 2])
            x = bufs[i % 2]
        else:
            x = xp.asarray(frames[i % 4])  # gpuwhy: plants C6 (pageable source, synchronous)
        mag = xp.abs(xp.fft.rfft(x, axis=1)).astype(xp.float16)
        out = xp.log1p((mag @ fbank).astype(xp.float32)).mean(axis=0)
        if gpu and args.fix:
            used[i % 2].record()
            upload(i + 1)  # the next frame's copy overlaps this frame's compute
        return out

    cc.run("c6_cupy_pageable", args, step, rows)


if __name__ == "__main__":
    main()
