"""C11 memory-bound elementwise chains (JAX, eager batch preparation): long-horizon traffic
forecasting with DLinear (Zeng et al., AAAI 2023, cure-lab/LTSF-Linear models/DLinear.py:
series decomposition by a moving average of 25, one Linear 336 -> 96 on the seasonal part and
one on the trend, shared across channels) in plain JAX + optax, on a Traffic-shaped series
made at start on the GPU and held there (17,544 hourly steps x 862 sensors, float32, 60 MB).
Each step draws 256 windows of 336 input + 96 target steps (the whole 862-channel panel:
74 M input values, 297 MB).

The batch is prepared by a plain Python function outside jax.jit, as one writes it while
experimenting: the windows gathered by fancy indexing, RevIN's instance normalization (Kim
et al., ICLR 2022: mean and standard deviation over each window's 336 steps, per channel; the
target normalized with the same statistics) and the time-series augmentations of Um et al.
(ICMI 2017, as tsaug applies them): jitter (Gaussian noise of 0.03), per-channel scaling
(N(1, 0.1)) and random time masking (10% of the steps zeroed). Each line is its own XLA
program over whole 256 x 336 x 862 arrays, ~16 whole-batch passes (each ~0.3 GB read and
~0.3 GB written) and two 74 M-value random draws, ~3-5 ms of DRAM traffic a step on an H100
at ~3 TB/s, where one fused pass (the gather, two reductions, one write) would take ~0.5 ms.
The jitted DLinear step itself (forward, backward, AdamW) is small: ~60 GFLOP of float32
GEMMs (TF32-eligible) and a few passes over the batch, ~1-1.5 ms. Estimated share of the eager
chain: ~70-80% of a plain step (~4-6 ms); the GPU stays busy streaming DRAM.

--fix: gpuwhy's C11 advice for JAX (jit the whole function that holds the chain): the same
batch-preparation function under jax.jit, so XLA fuses the gather, the normalization and the
augmentations; the series, the sampling, the arithmetic, the model and the optimizer unchanged
(one batch checked equal eager and jitted at start, the same key).

Written blind for the yankee batch.
"""
import numpy as np

import cc
import jaxlm

import jax
import jax.numpy as jnp
import optax

MA = 25


def make_series(key, steps, chans):
    """Traffic-like occupancy: daily and weekly cycles, per-sensor level, noise, all in [0, 1]."""
    k1, k2, k3 = jax.random.split(key, 3)
    t = jnp.arange(steps, dtype=jnp.float32)[:, None]
    level = jax.random.uniform(k1, (1, chans), minval=0.02, maxval=0.12)
    phase = jax.random.uniform(k2, (1, chans), maxval=2.0)
    day = jnp.clip(jnp.sin(2 * jnp.pi * (t / 24.0 - phase / 24.0)), 0, None) ** 2
    week = 1.0 - 0.4 * (((t // 24) % 7) >= 5)
    return jnp.clip(level + 0.08 * day * week + 0.01 * jax.random.normal(k3, (steps, chans)), 0, 1)


def prepare_batch(key, series, seq, pred, batch):
    """Windows, RevIN normalization and the Um et al. augmentations: a plain function."""
    ks, kj, kc, km = jax.random.split(key, 4)
    starts = jax.random.randint(ks, (batch,), 0, series.shape[0] - seq - pred)
    win = series[starts[:, None] + jnp.arange(seq + pred)[None, :]]  # (B, L+H, C)
    x, y = win[:, :seq], win[:, seq:]
    mean = jnp.mean(x, axis=1, keepdims=True)
    xc = x - mean
    var = jnp.mean(xc * xc, axis=1, keepdims=True)
    std = jnp.sqrt(var + 1e-5)
    x = xc / std
    y = (y - mean) / std
    x = x + 0.03 * jax.random.normal(kj, x.shape)
    x = x * (1.0 + 0.1 * jax.random.normal(kc, (batch, 1, x.shape[2])))
    keep = jax.random.uniform(km, (batch, seq, 1)) >= 0.1
    x = jnp.where(keep, x, 0.0)
    return x, y


def moving_avg(x):
    """DLinear's series_decomp: replicate-padded moving average of 25 over the time axis."""
    pad = (MA - 1) // 2
    xp = jnp.concatenate([jnp.repeat(x[:, :1], pad, 1), x, jnp.repeat(x[:, -1:], pad, 1)], 1)
    c = jnp.cumsum(xp, axis=1)
    c = jnp.concatenate([jnp.zeros_like(c[:, :1]), c], 1)
    return (c[:, MA:] - c[:, :-MA]) / MA


def dlinear(p, x):
    trend = moving_avg(x)
    seasonal = x - trend
    s = jnp.einsum("blc,lh->bhc", seasonal, p["ws"]) + p["bs"][None, :, None]
    t = jnp.einsum("blc,lh->bhc", trend, p["wt"]) + p["bt"][None, :, None]
    return s + t


def main():
    args = cc.parser(__doc__, warmup=5).parse_args()
    dev = jaxlm.device(args)
    if args.smoke:
        steps, chans, seq, pred, batch = 600, 16, 48, 12, 8
    else:
        steps, chans, seq, pred, batch = 17_544, 862, 336, 96, 256
    with jax.default_device(dev):
        series = make_series(jax.random.PRNGKey(0), steps, chans)
        w = jnp.full((seq, pred), 1.0 / seq, jnp.float32)
        params = {"ws": w, "bs": jnp.zeros((pred,)), "wt": w, "bt": jnp.zeros((pred,))}
        opt = optax.adamw(1e-3, weight_decay=0.0)
        opt_state = opt.init(params)

        def loss_fn(p, x, y):
            return jnp.mean((dlinear(p, x) - y) ** 2)

        @jax.jit
        def train_step(p, s, x, y):
            loss, g = jax.value_and_grad(loss_fn)(p, x, y)
            upd, s = opt.update(g, s, p)
            return optax.apply_updates(p, upd), s, loss

        jitted_prepare = jax.jit(prepare_batch, static_argnums=(2, 3, 4))
        xe, ye = prepare_batch(jax.random.PRNGKey(7), series, seq, pred, batch)
        xj, yj = jitted_prepare(jax.random.PRNGKey(7), series, seq, pred, batch)
        err = max(float(jnp.max(jnp.abs(xe - xj))), float(jnp.max(jnp.abs(ye - yj))))
        if err > 1e-3:
            raise SystemExit(f"jitted batch preparation disagrees with the eager one: {err}")
        del xe, ye, xj, yj
        prepare = jitted_prepare if args.fix else prepare_batch
        st = {"p": params, "s": opt_state, "acc": jnp.zeros(()), "loss": None, "reads": 0}

        def step(i):
            x, y = prepare(jax.random.PRNGKey(1000 + i), series, seq, pred, batch)  # gpuwhy: plants C11 (RevIN + augmentations run eagerly: ~16 whole-batch passes over 74 M values a step)
            st["p"], st["s"], loss = train_step(st["p"], st["s"], x, y)
            st["acc"] = st["acc"] + loss
            if i % 100 == 99:
                st["loss"] = float(st["acc"]) / 100
                st["acc"] = jnp.zeros(())
                st["reads"] += 1
            return loss

        cc.run("c11_jax_dlinear_traffic_eager_revin_augment", args, step, batch,
               extra=lambda: {"prepare": "jax.jit" if args.fix else "eager (op by op)", "loss": st["loss"],
                              "loss_reads": st["reads"], "batch_values_m": round(batch * seq * chans / 1e6, 1),
                              "prep_check_err": err})


if __name__ == "__main__":
    main()
