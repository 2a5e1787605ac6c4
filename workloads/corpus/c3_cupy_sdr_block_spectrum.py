"""C3 work too small for the GPU (a recording processed in the radio's buffer size): offline
spectrum monitoring of a wideband SDR capture with CuPy. The capture is 2^27 complex64 IQ
samples (1 GB, made once on the GPU: a noise floor, carriers at fixed frequencies, bursty
carriers that key on and off, and a frequency hopper that changes channel every 65,536
samples). For each block the monitor computes Welch spectra (a Hann window, 1,024-point FFTs of
16 non-overlapping frames, |X|^2, fftshift, the frames averaged), converts them to dB, flags the
bins more than 10 dB over the noise floor (measured once at start), and keeps per-bin
detection counts, a max-hold spectrum, the average spectrum and a 4,096-row waterfall ring, all
on the device; the max-hold peak is read every 2^25 samples (the operator's display).

The processing function came from the live receiver, where it is called once per buffer the
radio driver hands over: 16,384 samples. Run offline over a recording, the same loop keeps
that size: each call is ~17 CuPy launches (a window multiply, a cuFFT plan execution, squares,
a shift, four reductions, a log, comparisons, in-place updates) over 16,384 values, a few
microseconds of GPU work each, while CuPy's Python spends ~10-20 us issuing each one. The GPU
waits for the host between almost every kernel; gpuwhy may see it as C4 (launch-bound) as
fairly as C3.

--fix: gpuwhy's C3 advice (raise the batch size): the same function over 256 blocks a call
(4,194,304 samples, cc.fix_batch(256)); every per-block result is the same (the spectra, the
detections and the waterfall rows are per block; counts, max-hold and sums are associative),
which the script checks at start on the first 256 blocks. The throughput is per sample.

Written blind for the kilo batch.
"""
import numpy as np

import cc

try:
    import cupy as cp
except ImportError:  # CPU smoke test: numpy stands in
    cp = None

NFFT = 1024
FPB = 16                       # frames a block
BLOCK = NFFT * FPB             # the radio driver's buffer: 16,384 samples
ROWS = 4096                    # waterfall rows kept on the device
FS = 61.44e6                   # sample rate of the capture (Hz)


def make_capture(xp, n, seed=0):
    """Noise, fixed and bursty carriers and a hopper; generated in chunks on the device."""
    out = xp.empty(n, xp.complex64)
    r = np.random.default_rng(seed)
    tones = r.integers(0, 4 * NFFT, 12)                     # frequencies in 1/4096 of the rate
    amps = [float(a) for a in 10 ** (r.uniform(15, 40, 12) / 20)]
    hops = r.integers(0, 4 * NFFT, 64)
    hop_table = xp.asarray(hops.astype(np.int64))
    chunk = 1 << 22
    for s in range(0, n, chunk):
        m = min(chunk, n - s)
        if cp is not None and xp is cp:
            re = cp.random.standard_normal(m, dtype=cp.float32)
            im = cp.random.standard_normal(m, dtype=cp.float32)
        else:
            re = r.standard_normal(m, dtype=np.float32)
            im = r.standard_normal(m, dtype=np.float32)
        x = (re + 1j * im).astype(xp.complex64) * 0.7071
        t = xp.arange(s, s + m, dtype=xp.int64)
        for j in range(12):
            ph = ((t * int(tones[j])) % (4 * NFFT)).astype(xp.float32) * (2 * np.pi / (4 * NFFT))
            a = amps[j]
            if j % 3 == 2:                                   # bursty: keyed on a third of the time
                a = a * ((t // 200_000 + j) % 3 == 0).astype(xp.float32)
            x += (a * (xp.cos(ph) + 1j * xp.sin(ph))).astype(xp.complex64)
        b = hop_table[(t >> 16) % 64]
        ph = ((t * b) % (4 * NFFT)).astype(xp.float32) * (2 * np.pi / (4 * NFFT))
        x += (30.0 * (xp.cos(ph) + 1j * xp.sin(ph))).astype(xp.complex64)
        out[s:s + m] = x
    return out


def main():
    args = cc.parser(__doc__, warmup=20).parse_args()
    gpu = args.device == "cuda" and cp is not None
    if args.device == "cuda" and cp is None:
        raise SystemExit("no CuPy: run with --device cpu for a smoke test")
    xp = cp if gpu else np
    n_cap = (1 << 20) if args.smoke else (1 << 27)
    nblocks = n_cap // BLOCK
    cap = make_capture(xp, n_cap)
    win = xp.asarray(np.hanning(NFFT + 1)[:-1].astype(np.float32))

    def spectra(seg, nb):
        """Welch spectra of nb consecutive blocks: ([nb, NFFT] linear, [nb, NFFT] dB)."""
        fr = seg.reshape(nb * FPB, NFFT) * win
        spec = xp.fft.fft(fr, axis=1)
        p = spec.real ** 2 + spec.imag ** 2
        p = xp.fft.fftshift(p, axes=1)
        psd = p.reshape(nb, FPB, NFFT).mean(axis=1).astype(xp.float32, copy=False)
        return psd, (10.0 * xp.log10(psd + 1e-12)).astype(xp.float32, copy=False)

    # noise floor: the median bin of the average spectrum of the first 64 blocks, once
    _, db0 = spectra(cap[:64 * BLOCK], 64)
    floor = float(xp.median(db0.mean(axis=0)))
    thresh = xp.full(NFFT, floor + 10.0, xp.float32)

    def state():
        return {"hits": xp.zeros(NFFT, xp.int32), "maxhold": xp.full(NFFT, -200.0, xp.float32),
                "acc": xp.zeros(NFFT, xp.float32), "water": xp.zeros((ROWS, NFFT), xp.float32)}

    def monitor(s, i, nb):
        """Processes blocks [i*nb, (i+1)*nb) of the capture (wrapping) into state s."""
        b0 = (i * nb) % nblocks
        psd, db = spectra(cap[b0 * BLOCK:(b0 + nb) * BLOCK], nb)  # gpuwhy: plants C3 (one 16,384-sample radio buffer per call)
        s["hits"] += (db > thresh).sum(axis=0, dtype=xp.int32)
        xp.maximum(s["maxhold"], db.max(axis=0), out=s["maxhold"])
        s["acc"] += psd.sum(axis=0)
        r = (i * nb) % ROWS
        s["water"][r:r + nb] = db

    nb = cc.fix_batch(8 if args.smoke else 256) if args.fix else 1
    if nblocks % nb or ROWS % nb:
        raise SystemExit(f"blocks per call {nb} must divide {nblocks} blocks and {ROWS} waterfall rows")

    # the batched call gives the per-block results of the loop: checked on the first blocks
    k = 8 if args.smoke else 256
    a, b = state(), state()
    for j in range(k):
        monitor(a, j, 1)
    monitor(b, 0, k)
    check = {"hits_equal": float((a["hits"] == b["hits"]).astype(xp.float32).mean()),
             "maxhold_max_diff_db": float(abs(a["maxhold"] - b["maxhold"]).max()),
             "acc_rel_diff": float((abs(a["acc"] - b["acc"]) / abs(a["acc"])).max())}
    if check["maxhold_max_diff_db"] > 0.01 or check["acc_rel_diff"] > 1e-4:
        raise SystemExit(f"batched blocks disagree with the block loop: {check}")

    s = state()
    every = max(1, (1 << 25) // (nb * BLOCK))      # the display: every 2^25 samples
    st = {"peak": None, "reads": 0}

    def step(i):
        monitor(s, i, nb)
        if i % every == every - 1:
            st["peak"] = float(s["maxhold"].max())
            st["reads"] += 1

    cc.run("c3_cupy_sdr_block_spectrum", args, step, nb * BLOCK,
           extra=lambda: {"samples_per_call": nb * BLOCK, "blocks_per_call": nb, "capture_samples": n_cap,
                          "noise_floor_db": round(floor, 2), "detections": int(s["hits"].sum()),
                          "peak_db": st["peak"], "peak_reads": st["reads"], "check": check,
                          "cupy": gpu})


if __name__ == "__main__":
    main()
