"""healthy: CuPy FFT convolution with a filter bank: each step takes a batch of 64 complex64
fields of 1024 x 1024 resident on the GPU, computes their 2D FFT once (batched cuFFT), then
for each of 8 filters multiplies by the filter's spectrum, inverse-transforms and adds the
response's energy into an accumulator (an ElementwiseKernel). Nothing is read back.

--fix changes nothing: this is a control.
"""
import numpy as np

import cc

try:
    import cupy as cp
except ImportError:  # CPU smoke test: numpy stands in
    cp = None


def main():
    args = cc.parser(__doc__).parse_args()
    gpu = args.device == "cuda"
    if gpu and cp is None:
        raise SystemExit("CuPy is not installed: run with --device cpu for a smoke test")
    xp = cp if gpu else np
    batch, n, filters = (2, 32, 2) if args.smoke else (64, 1024, 8)
    rng = np.random.default_rng(0)
    fields = []
    for _ in range(2):
        re = xp.asarray(rng.standard_normal((batch, n, n), dtype=np.float32))
        im = xp.asarray(rng.standard_normal((batch, n, n), dtype=np.float32))
        fields.append((re + 1j * im).astype(xp.complex64))
    # Gaussian band-pass filters in the frequency domain, one per scale
    f = np.fft.fftfreq(n).astype(np.float32)
    r = np.sqrt(f[:, None] ** 2 + f[None, :] ** 2)
    bank = xp.asarray(np.stack([np.exp(-((r - 0.03 * (k + 1)) / 0.01) ** 2) for k in range(filters)])
                      .astype(np.complex64))
    acc = xp.zeros((batch, n, n), xp.float32)
    prod = xp.empty((batch, n, n), xp.complex64)
    if gpu:
        energy = cp.ElementwiseKernel("complex64 y", "float32 acc", "acc += y.real() * y.real() + y.imag() * y.imag()",
                                      "energy_acc")
    else:
        def energy(y, out):
            out += (y.real ** 2 + y.imag ** 2).astype(np.float32)

    def step(i):
        spec = xp.fft.fft2(fields[i % 2])
        acc.fill(0)
        for k in range(filters):
            xp.multiply(spec, bank[k], out=prod)
            energy(xp.fft.ifft2(prod), acc)

    cc.run("h_cupy_fft_batch", args, step, batch)


if __name__ == "__main__":
    main()
