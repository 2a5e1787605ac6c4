"""C6 + C9 (a NumPy beamformer ported to CuPy by swapping the module: pageable uploads and a
blocking read-back every frame): offline reconstruction of plane-wave ultrasound recordings
(coherent plane-wave compounding, 32 steering angles from -16 to +15 degrees, a 128-element
linear array at 5.2 MHz sampled at 20.8 MHz, 4,096 samples a channel). Each frame's RF data
(32 x 128 x 4,096 float32, 64 MB) comes from the acquisition reader as a NumPy array; four
frames are made once in memory and cycled. On the GPU, written as the NumPy prototype was with
`xp = cupy`: per angle the transmit plus receive delay of every pixel (256 lateral x 512 axial
over 38 x 40 mm) to every element, the fractional sample index, two gathers with linear
interpolation and a Hann receive apodization (f-number 1.5), summed over the elements and
compounded over the angles; then the envelope by an FFT Hilbert transform along depth, log
compression to a 60 dB range, and a uint8 display frame made on the host for the cine buffer.

Two habits of the port stay from the NumPy version: `xp.asarray(rf)` uploads each frame from
pageable host memory (a synchronous 64 MB copy staged by the driver while the GPU has nothing
queued), and `cp.asnumpy(bmode)` brings each B-mode image back before the next frame is read
(a blocking copy that waits for the whole frame's kernels), so upload, beamforming and
read-back follow each other instead of overlapping.

--fix: gpuwhy's advice for both causes: the frames held in pinned host memory and uploaded with
an asynchronous copy on a copy stream one frame ahead (C6: pinned memory, non-blocking copies);
the B-mode image copied asynchronously into a pinned buffer and read one frame later after an
event (C9: no blocking read-back each step). Geometry, beamforming, envelope and display
unchanged.

Written blind for the foxtrot batch.
"""
import math

import numpy as np

import cc

try:
    import cupy as cp
    import cupyx
except ImportError:  # CPU smoke test: numpy stands in
    cp = cupyx = None

C_SOUND = 1540.0
FS = 20.8e6
PITCH = 0.3e-3


def main():
    args = cc.parser(__doc__).parse_args()
    gpu = args.device == "cuda"
    if gpu and cp is None:
        raise SystemExit("CuPy is not installed: run with --device cpu for a smoke test")
    xp = cp if gpu else np
    angles_n, elems, samples, nx, nz = (2, 8, 256, 16, 32) if args.smoke else (32, 128, 4096, 256, 512)

    # geometry (static): element positions, pixel grid, receive delays and apodization
    ex = (np.arange(elems) - (elems - 1) / 2) * PITCH
    x = np.linspace(-19e-3, 19e-3, nx)
    z = np.linspace(5e-3, 45e-3, nz)
    px, pz = np.meshgrid(x, z, indexing="ij")                       # (nx, nz)
    px, pz = px.ravel(), pz.ravel()
    rx = np.sqrt((px[:, None] - ex[None, :]) ** 2 + pz[:, None] ** 2) / C_SOUND   # (P, elems)
    aperture = pz[:, None] / 1.5
    dist = np.abs(px[:, None] - ex[None, :])
    apod = np.where(dist <= aperture / 2, 0.5 + 0.5 * np.cos(2 * np.pi * dist / np.maximum(aperture, 1e-9)), 0.0)
    theta = np.deg2rad(np.arange(angles_n) - angles_n // 2)
    tx = (px[None, :] * np.sin(theta[:, None]) + pz[None, :] * np.cos(theta[:, None])
          + (elems - 1) / 2 * PITCH * np.abs(np.sin(theta[:, None]))) / C_SOUND      # (A, P)
    rx_d, apod_d = xp.asarray(rx, dtype=xp.float32), xp.asarray(apod, dtype=xp.float32)
    tx_d = xp.asarray(tx, dtype=xp.float32)
    chan_off = xp.asarray((np.arange(elems) * samples)[None, :], dtype=xp.int32)

    # RF frames from the acquisition reader: point scatterers, a 2-cycle pulse, noise
    rng = np.random.default_rng(0)
    win = np.arange(-16, 17)
    rows = np.arange(elems)[:, None]
    frames = []
    for f in range(4):
        rf = rng.standard_normal((angles_n, elems, samples), dtype=np.float32)
        rf *= np.float32(0.01)
        for _ in range(12):
            sx, sz = rng.uniform(-15e-3, 15e-3), rng.uniform(8e-3, 42e-3)
            for a in range(angles_n):
                tt = (sx * math.sin(theta[a]) + sz * math.cos(theta[a])
                      + (elems - 1) / 2 * PITCH * abs(math.sin(theta[a]))) / C_SOUND
                tau = tt + np.sqrt((sx - ex) ** 2 + sz ** 2) / C_SOUND             # (elems,)
                # the 2-cycle echo, written only where it is not negligible (33 samples an element)
                k = np.clip(np.round(tau * FS).astype(np.int64)[:, None] + win[None, :], 0, samples - 1)
                arg = k / FS - tau[:, None]
                rf[a][rows, k] += (np.exp(-(arg * 5.2e6 / 1.2) ** 2) * np.cos(2 * np.pi * 5.2e6 * arg)).astype(np.float32)
        frames.append(rf)

    def beamform(rf_d):
        flat = rf_d.reshape(angles_n, -1)
        img = xp.zeros(rx_d.shape[0], xp.float32)
        for a in range(angles_n):
            s = (tx_d[a][:, None] + rx_d) * np.float32(FS)
            i0 = xp.clip(s.astype(xp.int32), 0, samples - 2)
            frac = s - i0.astype(xp.float32)
            idx = i0 + chan_off
            v = flat[a].take(idx) * (1 - frac) + flat[a].take(idx + 1) * frac
            img += (v * apod_d).sum(1)
        img = img.reshape(nx, nz)
        spec = xp.fft.fft(img, axis=1)
        h = xp.zeros(nz, xp.float32)
        h[0] = 1
        h[1:nz // 2] = 2
        h[nz // 2] = 1
        env = xp.abs(xp.fft.ifft(spec * h, axis=1))
        db = 20 * xp.log10(env / env.max() + 1e-6)
        return xp.clip(db, -60, 0).astype(xp.float32)

    cine = np.zeros((8, nx, nz), np.uint8)
    count = {"shown": 0}

    def show(bmode):  # the display frame for the cine buffer, on the host
        cine[count["shown"] % 8] = ((bmode + 60) * (255 / 60)).astype(np.uint8)
        count["shown"] += 1

    if gpu and args.fix:
        pinned = []
        for fr in frames:
            p = cupyx.empty_pinned(fr.shape, fr.dtype)
            p[...] = fr
            pinned.append(p)
        copy_stream = cp.cuda.Stream(non_blocking=True)
        bufs = [cp.empty(frames[0].shape, cp.float32) for _ in range(2)]
        arrived = [cp.cuda.Event() for _ in range(2)]
        consumed = [cp.cuda.Event() for _ in range(2)]
        out_host = [cupyx.empty_pinned((nx, nz), np.float32) for _ in range(2)]
        out_ready = [None, None]

        def upload(i):
            k = i % 2
            copy_stream.wait_event(consumed[k])  # the buffer's last frame has been beamformed
            bufs[k].set(pinned[i % 4], stream=copy_stream)
            arrived[k].record(copy_stream)

        upload(0)

        def step(i):
            k = i % 2
            cp.cuda.get_current_stream().wait_event(arrived[k])
            bmode = beamform(bufs[k])
            consumed[k].record()
            upload(i + 1)  # the next frame's copy overlaps this frame's beamforming
            cp.cuda.runtime.memcpyAsync(out_host[k].ctypes.data, bmode.data.ptr, bmode.nbytes,
                                        cp.cuda.runtime.memcpyDeviceToHost, cp.cuda.get_current_stream().ptr)
            ev = cp.cuda.Event()
            ev.record()
            prev = out_ready[1 - k]
            out_ready[k] = (ev, bmode)  # keep the device image alive until its copy is done
            if prev is not None:  # the previous frame's image, one frame later
                prev[0].synchronize()
                show(out_host[1 - k])
            return bmode
    else:
        def step(i):
            if gpu:
                rf_d = cp.asarray(frames[i % 4])  # gpuwhy: plants C6 (64 MB uploaded from pageable memory, synchronous)
                bmode = cp.asnumpy(beamform(rf_d))  # gpuwhy: plants C9 (a blocking read-back of each frame before the next is uploaded)
            else:
                bmode = beamform(frames[i % 4])
            show(bmode)
            return None

    cc.run("m_cupy_ultrasound_pageable_asnumpy", args, step, 1,
           extra=lambda: {"transfer": "pinned, async, read one frame later" if (gpu and args.fix)
                          else "pageable upload, blocking read-back",
                          "mb_per_frame": round(frames[0].nbytes / 2 ** 20, 1), "frames_shown": count["shown"]})


if __name__ == "__main__":
    main()
