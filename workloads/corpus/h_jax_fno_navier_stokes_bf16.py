"""Healthy control (JAX, a neural operator): training a 2D Fourier Neural Operator (Li et al.
2021, the Navier-Stokes vorticity benchmark's model) in plain JAX + optax on a 128 x 128
periodic grid. The model maps the last 10 vorticity frames and the grid coordinates (12
channels) to the next frame: a lift to width 64, four Fourier layers (rfft2, the lowest 24 x 24
modes of both frequency corners multiplied by learned complex weights per input/output channel,
irfft2, plus a pointwise linear path, GELU), a projection 64 -> 128 -> 1; relative L2 loss,
AdamW with a cosine schedule. Pointwise products in bf16 with float32 accumulation, the FFTs
and spectral products in float32/complex64; one jax.jit for the step with parameters and
optimizer state donated; batch 64; the loss is read every 50 steps.

The data are 256 synthetic decaying-turbulence-like trajectories (random low Fourier modes of
the vorticity, advected by a uniform flow and decaying in time, 11 frames each), made once on
the GPU
and split into 4 batches that stay on the device: nothing crosses to the host between steps.

About 0.16 TFLOP of pointwise bf16 products, ~30 GFLOP of complex spectral products and ~40-50 GB
of FFT and fused elementwise traffic a step ([64, 128, 128, 64] float32 activations, 268 MB
each): a GPU-bound step of about 20-30 ms in FFT, GEMM and fused kernels (memory-bound kernels are the work itself here, as for
h_jax_meshgraphnet_segment_sum_bf16), against a single dispatch a step.

--fix: nothing (control).

Written blind for the kilo batch.
"""
import math

import cc


def main():
    args = cc.parser(__doc__, warmup=5).parse_args()
    import jax
    import jax.numpy as jnp
    import optax

    if args.device == "cpu":
        dev = jax.devices("cpu")[0]
    else:
        try:
            dev = jax.devices("gpu")[0]
        except RuntimeError:
            raise SystemExit("no GPU for JAX: run with --device cpu for a smoke test")
    if args.smoke:
        res, width, modes, layers, n_traj, batch = 16, 8, 4, 2, 8, 4
    else:
        res, width, modes, layers, n_traj, batch = 128, 64, 24, 4, 256, 64
    hist = 10
    cdt = jnp.bfloat16

    def trajectories(key):
        """[n, res, res, hist + 1] vorticity frames: random low Fourier modes (|k| <= 8, an energy
        spectrum falling as |k|^-2.5), advected by a random uniform flow and decaying viscously;
        made through an inverse FFT of the modes' coefficients."""
        kk = jnp.fft.fftfreq(res, 1.0 / res)
        kx, ky = jnp.meshgrid(kk, kk, indexing="ij")
        k2 = kx ** 2 + ky ** 2
        amp = jnp.where((k2 > 0) & (k2 <= 64), (k2 + 1.0) ** -1.25, 0.0)
        k1, k2_, k3 = jax.random.split(key, 3)
        c0 = (jax.random.normal(k1, (n_traj, res, res)) + 1j * jax.random.normal(k2_, (n_traj, res, res))) * amp
        vel = jax.random.normal(k3, (n_traj, 2)) * 3.0
        frames = []
        for j in range(hist + 1):
            t = 0.05 * j
            shift = jnp.exp(-1j * (kx * vel[:, 0, None, None] + ky * vel[:, 1, None, None]) * t)
            c = (c0 * shift * jnp.exp(-0.01 * k2 * t)).astype(jnp.complex64)
            frames.append(jnp.real(jnp.fft.ifft2(c, axes=(1, 2))) * (res * res))
        return jnp.stack(frames, -1).astype(jnp.float32)

    def init(key):
        ks = jax.random.split(key, 4 + 3 * layers)
        dense = lambda k, i, o: {"w": jax.random.normal(k, (i, o)) / math.sqrt(i), "b": jnp.zeros((o,))}
        scale = 1.0 / (width * width)
        p = {"lift": dense(ks[0], hist + 2, width), "proj1": dense(ks[1], width, 128), "proj2": dense(ks[2], 128, 1),
             "layers": []}
        for l in range(layers):
            k1, k2, k3 = ks[4 + 3 * l: 7 + 3 * l]
            p["layers"].append({
                "wr": scale * jax.random.uniform(k1, (2, width, width, modes, modes)),   # two frequency corners
                "wi": scale * jax.random.uniform(k2, (2, width, width, modes, modes)),
                "pw": dense(k3, width, width)})
        return p

    def pointwise(d, x):
        return jnp.dot(x.astype(cdt), d["w"].astype(cdt), preferred_element_type=jnp.float32) + d["b"]

    def spectral(q, x):                                   # x: [B, X, Y, C] float32
        xf = jnp.fft.rfft2(x, axes=(1, 2))                # [B, X, Y//2+1, C] complex64
        w = (q["wr"] + 1j * q["wi"]).astype(jnp.complex64)
        lo = jnp.einsum("bxyi,ioxy->bxyo", xf[:, :modes, :modes, :], w[0])
        hi = jnp.einsum("bxyi,ioxy->bxyo", xf[:, -modes:, :modes, :], w[1])
        out = jnp.zeros(xf.shape[:3] + (width,), jnp.complex64)
        out = out.at[:, :modes, :modes, :].set(lo).at[:, -modes:, :modes, :].set(hi)
        return jnp.fft.irfft2(out, s=(res, res), axes=(1, 2))

    g = jnp.linspace(0, 1, res, endpoint=False)
    with jax.default_device(dev):
        grid = jnp.stack(jnp.meshgrid(g, g, indexing="ij"), -1)           # [X, Y, 2]

    def forward(p, inp):
        b = inp.shape[0]
        x = jnp.concatenate([inp, jnp.broadcast_to(grid, (b, res, res, 2))], -1)
        x = pointwise(p["lift"], x)
        for l, q in enumerate(p["layers"]):
            x = spectral(q, x) + pointwise(q["pw"], x)
            if l < layers - 1:
                x = jax.nn.gelu(x)
        x = jax.nn.gelu(pointwise(p["proj1"], x))
        return pointwise(p["proj2"], x)[..., 0]

    def loss_fn(p, inp, target):
        pred = forward(p, inp)
        num = jnp.sqrt(((pred - target) ** 2).sum((1, 2)))
        den = jnp.sqrt((target ** 2).sum((1, 2))) + 1e-6
        return (num / den).mean()

    tx = optax.adamw(optax.cosine_decay_schedule(1e-3, 100_000), weight_decay=1e-4)

    def update(p, opt_state, inp, target):
        loss, grads = jax.value_and_grad(loss_fn)(p, inp, target)
        upd, opt_state = tx.update(grads, opt_state, p)
        return optax.apply_updates(p, upd), opt_state, loss

    update = jax.jit(update, donate_argnums=(0, 1))
    with jax.default_device(dev):
        data = jax.jit(trajectories)(jax.random.PRNGKey(0))            # made once on the device
        data = data / data.std()
        batches = [(data[s:s + batch, :, :, :hist], data[s:s + batch, :, :, hist]) for s in range(0, n_traj, batch)]
        params = init(jax.random.PRNGKey(1))
        opt_state = tx.init(params)
    st = {"params": params, "opt": opt_state, "losses": [], "loss": None, "reads": 0}

    def step(i):
        inp, target = batches[i % len(batches)]
        st["params"], st["opt"], loss = update(st["params"], st["opt"], inp, target)
        st["losses"].append(loss)
        if i % 50 == 49:
            st["loss"] = float(jnp.mean(jnp.stack(st["losses"])))
            st["losses"].clear()
            st["reads"] += 1
        return loss

    cc.run("h_jax_fno_navier_stokes_bf16", args, step, batch,
           extra=lambda: {"grid": res, "width": width, "modes": modes, "fourier_layers": layers, "loss": st["loss"],
                          "loss_reads": st["reads"], "jax": jax.__version__,
                          "params_m": round(sum(x.size for x in jax.tree_util.tree_leaves(st["params"])) / 1e6, 2)})


if __name__ == "__main__":
    main()
