"""C10 serial structure (a recursive filter run sample by sample from Python): real-time
processing of distributed acoustic sensing (DAS) data in CuPy, 65,536 channels of a fibre
(one every metre) at 1 kHz, 128-sample chunks (time-major, as the interrogator streams them,
int16 counts held on the GPU as a replayed recording). Each chunk is band-passed (2-80 Hz)
by a 4th-order filter as two second-order sections (direct form II transposed, the
filter state carried from chunk to chunk), written into a rolling window of the last 8,192
samples (2 GB), and the window is f-k filtered: rfft2 over time and channels, the f-k power
accumulated by a cupy.ElementwiseKernel, a velocity fan mask, irfft2, and an STA/LTA
trigger on the newest chunk of the filtered window, kept on the GPU and read every 50
chunks.

The band-pass is the loop a NumPy user writes because scipy.signal.sosfilt has no CuPy twin
in their code: a Python loop over the 128 samples of the chunk, each sample a row of 65,536
channels, the two sections' recursions as array expressions, about 23 small dependent CuPy
kernels a sample, 2,944 a chunk, each a few microseconds of GPU work behind CuPy's launch
cost on the host.

--fix: gpuwhy's C10 advice (a fused kernel over the whole sequence instead of a time-step
loop): one cupy.RawKernel, one thread a channel, that carries the two sections' state
through the chunk's 128 samples in registers (the same coefficients, arithmetic and state);
data, window, f-k filter and trigger unchanged (both filters checked against each other at
start).

Written blind for the hotel batch.
"""
import math

import numpy as np

import cc

try:
    import cupy as cp
except ImportError:  # CPU smoke test: numpy stands in
    cp = None

SOS_SRC = r"""
extern "C" __global__ void sos_chunk(const float* __restrict__ x, float* __restrict__ y,
                                     float* __restrict__ z, const float* __restrict__ sos,
                                     const int T, const int C) {
    const int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= C) return;
    float z1a = z[c], z2a = z[C + c], z1b = z[2 * C + c], z2b = z[3 * C + c];
    const float b0a = sos[0], b1a = sos[1], b2a = sos[2], a1a = sos[4], a2a = sos[5];
    const float b0b = sos[6], b1b = sos[7], b2b = sos[8], a1b = sos[10], a2b = sos[11];
    for (int t = 0; t < T; ++t) {
        const float xa = x[(size_t)t * C + c];
        const float ya = b0a * xa + z1a;
        z1a = b1a * xa - a1a * ya + z2a;
        z2a = b2a * xa - a2a * ya;
        const float yb = b0b * ya + z1b;
        z1b = b1b * ya - a1b * yb + z2b;
        z2b = b2b * ya - a2b * yb;
        y[(size_t)t * C + c] = yb;
    }
    z[c] = z1a; z[C + c] = z2a; z[2 * C + c] = z1b; z[3 * C + c] = z2b;
}
"""


def butter_bandpass_sos(lo, hi, fs):
    """A 4th-order band-pass as two biquads: analog resonators at the band's prewarped centre
    with the quality factors of a Butterworth pole pair, bilinear-transformed; rows
    (b0, b1, b2, 1, a1, a2) as scipy.signal.butter(output='sos') lays them out."""
    w0 = 2 * fs * math.tan(math.pi * math.sqrt(lo * hi) / fs)
    bw = 2 * fs * (math.tan(math.pi * hi / fs) - math.tan(math.pi * lo / fs))
    rows = []
    for q in (1 / (2 * math.cos(math.pi / 8)), 1 / (2 * math.cos(3 * math.pi / 8))):
        qq = w0 / bw * 2 * q
        k = 2 * fs
        a0 = k * k + k * w0 / qq + w0 * w0
        b = np.array([k * w0 / qq, 0.0, -k * w0 / qq]) / a0
        a = np.array([1.0, (2 * w0 * w0 - 2 * k * k) / a0, (k * k - k * w0 / qq + w0 * w0) / a0])
        rows.append(np.concatenate([b, a]))
    return np.array(rows)


def main():
    args = cc.parser(__doc__).parse_args()
    gpu = args.device == "cuda"
    if gpu and cp is None:
        raise SystemExit("CuPy is not installed: run with --device cpu for a smoke test")
    xp = cp if gpu else np
    C, T, W, n_chunks = (64, 16, 64, 4) if args.smoke else (65_536, 128, 8192, 8)
    fs = 1000.0
    sos_np = butter_bandpass_sos(2.0, 80.0, fs)
    sos = xp.asarray(sos_np.astype(np.float32).ravel())
    coef = [[float(v) for v in row] for row in sos_np]

    # a replayed recording: traffic-like moving sources and noise, int16 counts, time-major
    rng = np.random.default_rng(0)
    ch = np.arange(C, dtype=np.float32)
    chunks = []
    for j in range(n_chunks):
        t = (j * T + np.arange(T, dtype=np.float32))[:, None] / fs
        sig = 800 * np.sin(2 * np.pi * 12 * t - ch / 40.0) * np.exp(-((ch - 9000 * t) % C - C / 2) ** 2 / (2 * 3000.0 ** 2))
        sig += rng.standard_normal((T, C), dtype=np.float32) * 150
        chunks.append(xp.asarray(np.clip(sig, -32768, 32767).astype(np.int16)))
    scale = np.float32(1.0 / 32768)

    z = xp.zeros((4, C), xp.float32)  # the two sections' states, carried across chunks
    out = xp.empty((T, C), xp.float32)
    if gpu:
        kern = cp.RawKernel(SOS_SRC, "sos_chunk")

    def iir_loop(xf, y, z):
        for t in range(T):  # gpuwhy: plants C10
            x = xf[t]
            for s in range(2):
                b0, b1, b2, _, a1, a2 = coef[s]
                y_t = b0 * x + z[2 * s]
                z[2 * s] = b1 * x - a1 * y_t + z[2 * s + 1]
                z[2 * s + 1] = b2 * x - a2 * y_t
                x = y_t
            y[t] = x

    def iir_fused(xf, y, z):
        if gpu:
            kern(((C + 255) // 256,), (256,), (xf, y, z, sos, np.int32(T), np.int32(C)))
        else:
            iir_loop(xf, y, z)

    # both filters agree (one chunk from the same zero state)
    xf0 = chunks[0].astype(xp.float32) * scale
    y_a, y_b = xp.empty_like(out), xp.empty_like(out)
    iir_loop(xf0, y_a, xp.zeros_like(z))
    iir_fused(xf0, y_b, xp.zeros_like(z))
    check = float(xp.abs(y_a - y_b).max() / (xp.abs(y_a).max() + 1e-12))
    if check > 1e-3:
        raise SystemExit(f"fused filter disagrees with the loop: {check}")
    iir = iir_fused if args.fix else iir_loop

    window = xp.zeros((W, C), xp.float32)
    fk_power = xp.zeros((W, C // 2 + 1), xp.float32)
    f = np.fft.fftfreq(W, 1 / fs)[:, None]
    k = np.fft.rfftfreq(C, 1.0)[None, :]
    vel = np.abs(f) / np.maximum(k, 1e-6)
    mask = xp.asarray(((vel > 300) & (vel < 6000)).astype(np.float32))  # a velocity fan (m/s)
    if gpu:
        power_acc = cp.ElementwiseKernel("complex64 s", "float32 p",
                                         "p += s.real() * s.real() + s.imag() * s.imag()", "fk_power_acc")
    else:
        def power_acc(s, p):
            p += s.real ** 2 + s.imag ** 2
    lta = xp.full((C,), 1e-6, xp.float32)
    triggers = xp.zeros((), xp.int64)
    state = {"pos": 0, "reads": 0, "triggers": 0}

    def step(i):
        nonlocal lta
        xf = chunks[i % n_chunks].astype(xp.float32) * scale
        iir(xf, out, z)
        p = state["pos"]
        window[p:p + T] = out
        state["pos"] = (p + T) % W
        spec = xp.fft.rfft2(window)
        power_acc(spec, fk_power)
        spec *= mask
        filt = xp.fft.irfft2(spec, s=(W, C))
        sta = (filt[p:p + T] ** 2).mean(0)
        lta = np.float32(0.98) * lta + np.float32(0.02) * sta
        triggers[...] += (sta > 4 * lta).sum()
        if i % 50 == 49:
            state["triggers"] = int(triggers)
            state["reads"] += 1

    cc.run("c10_cupy_das_iir_sample_loop", args, step, 1,
           extra=lambda: {"channels": C, "chunk_samples": T, "window_samples": W,
                          "filter": "RawKernel over the chunk" if args.fix else "Python loop over samples",
                          "dependent_kernels_per_chunk": 1 if args.fix else 23 * T,
                          "filter_check": round(check, 9), "trigger_reads": state["reads"]})


if __name__ == "__main__":
    main()
