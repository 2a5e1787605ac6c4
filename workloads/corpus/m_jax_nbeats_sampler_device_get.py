"""C1 + C9 the N-BEATS reference sampler building each batch in a Python loop on the training
thread, and the step's metrics fetched with jax.device_get after every step: N-BEATS-G
(generic: 30 blocks of 4 fully connected layers of width 512, ReLU, a linear theta to the
backcast and forecast, doubly residual stacking; 29 M parameters) trained in plain JAX + optax
on an electricity-load data set (370 hourly series of 26,304 points, float64 NumPy arrays, as
the original repository keeps its training values): lookback 168 hours, horizon 24, windows
drawn from the last 2,400 points of each series, batch 1,024, sMAPE loss with the masks,
Adam with global-norm clipping, one jax.jit for the step (matrix products in bf16 with
float32 accumulation).

The batches come from the repository's TimeseriesSampler ported as it is: per batch, float64
np.zeros for the windows and masks, then a Python loop over the 1,024 samples (a series index,
np.random.randint for the cut point, four slice assignments), ~8-18 ms a batch on the
training thread, then the float64 arrays go to the jitted step (converted to float32 on the
host and copied). After each step the loop does `metrics = jax.device_get(metrics)` (loss,
gradient norm, forecast mean) for its logger: the host waits for the step to finish before it
starts sampling the next batch, so the GPU's step and the host's sampling never overlap.

--fix: both causes' advice: the series put on the device once (a [370, 26,304] float32 array)
and the same windows and masks cut inside the jitted step from jax.random indices and cut
points (the sampling distribution unchanged), and the metrics kept on the device, summed and
fetched every 50 steps; model, loss, optimizer and batch unchanged (host and device windows
checked equal for the same draws, and the two steps' losses on the same batch, at start).

Written blind for the november batch.
"""
import numpy as np

import cc


class TimeseriesSampler:
    """The N-BEATS repository's sampler (common/sampler.py), as ported."""

    def __init__(self, timeseries, insample_size, outsample_size, window_sampling_limit, batch_size):
        self.timeseries = timeseries
        self.insample_size = insample_size
        self.outsample_size = outsample_size
        self.window_sampling_limit = window_sampling_limit
        self.batch_size = batch_size

    def __iter__(self):
        while True:
            insample = np.zeros((self.batch_size, self.insample_size))
            insample_mask = np.zeros((self.batch_size, self.insample_size))
            outsample = np.zeros((self.batch_size, self.outsample_size))
            outsample_mask = np.zeros((self.batch_size, self.outsample_size))
            sampled_ts_indices = np.random.randint(len(self.timeseries), size=self.batch_size)
            self.cut_points = []
            for i, sampled_index in enumerate(sampled_ts_indices):  # gpuwhy: plants C1 (1,024 windows cut in a Python loop on the training thread each step)
                sampled_timeseries = self.timeseries[sampled_index]
                cut_point = np.random.randint(low=max(1, len(sampled_timeseries) - self.window_sampling_limit),
                                              high=len(sampled_timeseries), size=1)[0]
                self.cut_points.append(cut_point)
                insample_window = sampled_timeseries[max(0, cut_point - self.insample_size):cut_point]
                insample[i, -len(insample_window):] = insample_window
                insample_mask[i, -len(insample_window):] = 1.0
                outsample_window = sampled_timeseries[
                    cut_point:min(len(sampled_timeseries), cut_point + self.outsample_size)]
                outsample[i, :len(outsample_window)] = outsample_window
                outsample_mask[i, :len(outsample_window)] = 1.0
            self.indices = sampled_ts_indices
            yield insample, insample_mask, outsample, outsample_mask


def make_series(n, length, seed=0):
    """Hourly loads: level, trend, daily and weekly profiles, noise (float64)."""
    rng = np.random.default_rng(seed)
    t = np.arange(length, dtype=np.float64)
    out = []
    for _ in range(n):
        level = rng.uniform(50, 5000)
        day = 1 + 0.3 * np.sin(2 * np.pi * (t / 24 + rng.random())) + 0.1 * np.sin(4 * np.pi * t / 24)
        week = 1 + 0.15 * (((t // 24) % 7) < 5)
        trend = 1 + rng.normal(0, 0.1) * t / length
        out.append(level * day * week * trend * (1 + 0.05 * rng.standard_normal(length)))
    return out


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
        n_series, length, blocks, width, batch = 8, 2_000, 3, 64, 32
    else:
        n_series, length, blocks, width, batch = 370, 26_304, 30, 512, 1024
    Hz = 24
    Lb = 7 * Hz
    limit = 100 * Hz
    cdt = jnp.bfloat16
    np.random.seed(0)
    series = make_series(n_series, length)
    sampler = TimeseriesSampler(series, Lb, Hz, limit, batch)
    batches = iter(sampler)

    def init(key):
        params = []
        for k in jax.random.split(key, blocks):
            ks = jax.random.split(k, 5)
            dims = [Lb, width, width, width, width]
            fc = [(jax.random.normal(ks[j], (dims[j], width)) * np.sqrt(2.0 / dims[j]), jnp.zeros(width))
                  for j in range(4)]
            theta = (jax.random.normal(ks[4], (width, Lb + Hz)) * np.sqrt(1.0 / width), jnp.zeros(Lb + Hz))
            params.append({"fc": fc, "theta": theta})
        return params

    def mm(x, w):
        return jnp.dot(x.astype(cdt), w.astype(cdt), preferred_element_type=jnp.float32)

    def forward(params, x, xm):
        residuals = x[:, ::-1]
        mask = xm[:, ::-1]
        forecast = x[:, -1:]
        for blk in params:
            h = residuals
            for w, b in blk["fc"]:
                h = jax.nn.relu(mm(h, w) + b)
            theta = mm(h, blk["theta"][0]) + blk["theta"][1]
            backcast, block_forecast = theta[:, :Lb], theta[:, Lb:]
            residuals = (residuals - backcast) * mask
            forecast = forecast + block_forecast
        return forecast

    def smape(forecast, target, mask):
        den = jnp.abs(forecast) + jnp.abs(target)
        ratio = jnp.where(den > 0, jnp.abs(forecast - target) / jnp.where(den > 0, den, 1.0), 0.0)
        return 200 * jnp.mean(ratio * mask)

    def loss_fn(p, x, xm, y, ym):
        f = forward(p, x, xm)
        return smape(f, y, ym), f

    opt = optax.chain(optax.clip_by_global_norm(1.0), optax.adam(1e-3))

    def update(p, s, x, xm, y, ym):
        (loss, f), g = jax.value_and_grad(loss_fn, has_aux=True)(p, x, xm, y, ym)
        upd, s = opt.update(g, s, p)
        metrics = {"loss": loss, "grad_norm": optax.global_norm(g), "forecast_mean": f.mean()}
        return optax.apply_updates(p, upd), s, metrics

    def device_windows(data, idx, cut):
        """The sampler's windows and masks, cut on the device (all series of one length)."""
        pos_in = cut[:, None] + jnp.arange(-Lb, 0)[None, :]
        pos_out = cut[:, None] + jnp.arange(Hz)[None, :]
        xm = (pos_in >= 0).astype(jnp.float32)
        ym = (pos_out < length).astype(jnp.float32)
        x = data[idx[:, None], jnp.clip(pos_in, 0, length - 1)] * xm
        y = data[idx[:, None], jnp.clip(pos_out, 0, length - 1)] * ym
        return x, xm, y, ym

    host_step = jax.jit(update, donate_argnums=(0, 1))

    def dev_step(p, s, key, data):
        k1, k2 = jax.random.split(key)
        idx = jax.random.randint(k1, (batch,), 0, n_series)
        cut = jax.random.randint(k2, (batch,), max(1, length - limit), length)
        return update(p, s, *device_windows(data, idx, cut))

    dev_step = jax.jit(dev_step, donate_argnums=(0, 1))

    with jax.default_device(dev):
        data = jnp.asarray(np.stack(series).astype(np.float32))
        # equivalence at start: the same draws give the same windows, and both steps the same loss
        hb = next(batches)
        idx = jnp.asarray(sampler.indices)
        cut = jnp.asarray(np.array(sampler.cut_points))
        db = jax.jit(device_windows)(data, idx, cut)
        for h, d in zip(hb, db):
            if not np.allclose(np.asarray(d), h.astype(np.float32), rtol=1e-6, atol=1e-3):
                raise SystemExit("device windows disagree with the sampler's")
        p0 = init(jax.random.PRNGKey(0))
        loss_jit = jax.jit(loss_fn)
        la = loss_jit(p0, *hb)[0]
        lb = loss_jit(p0, *db)[0]
        if not np.allclose(float(la), float(lb), rtol=1e-4):
            raise SystemExit(f"losses disagree: {float(la)} {float(lb)}")

        st = {"p": init(jax.random.PRNGKey(0)), "s": None, "acc": None, "log": [], "loss": None, "reads": 0}
        st["s"] = opt.init(st["p"])
        st["acc"] = {"loss": jnp.zeros(()), "grad_norm": jnp.zeros(()), "forecast_mean": jnp.zeros(())}

        def step(i):
            if args.fix:
                st["p"], st["s"], m = dev_step(st["p"], st["s"], jax.random.PRNGKey(1000 + i), data)
                st["acc"] = jax.tree_util.tree_map(lambda a, b: a + b, st["acc"], m)
                if i % 50 == 49:
                    avg = {k: float(v) / 50 for k, v in jax.device_get(st["acc"]).items()}
                    st["log"].append(avg)
                    st["loss"] = avg["loss"]
                    st["acc"] = jax.tree_util.tree_map(jnp.zeros_like, st["acc"])
                    st["reads"] += 1
                return m["loss"]
            x, xm, y, ym = next(batches)
            st["p"], st["s"], m = host_step(st["p"], st["s"], x, xm, y, ym)
            m = jax.device_get(m)  # gpuwhy: plants C9 (the step's metrics fetched every step: the host waits for the GPU before it samples the next batch)
            st["log"].append({k: float(v) for k, v in m.items()})
            st["loss"] = st["log"][-1]["loss"]
            st["reads"] += 1
            if len(st["log"]) > 1000:
                st["log"] = st["log"][-100:]
            return None

        cc.run("m_jax_nbeats_sampler_device_get", args, step, batch,
               extra=lambda: {"sampler": "device (jitted)" if args.fix else "host Python loop (float64)",
                              "metric_fetches": st["reads"], "loss": st["loss"], "series": n_series,
                              "params_m": round(sum(a.size for a in jax.tree_util.tree_leaves(st["p"])) / 1e6, 1)})


if __name__ == "__main__":
    main()
