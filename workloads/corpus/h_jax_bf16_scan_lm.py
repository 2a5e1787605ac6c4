"""Healthy control (JAX, pure-bf16 training with the layers under lax.scan): a LLaMA-style
decoder written in plain JAX + optax (12 layers, d=1024, 16 heads of 64, RMSNorm, rotary
position embeddings, SwiGLU MLP of hidden 2816, causal jax.nn.dot_product_attention,
untied 32000-token embedding and output head; 220 M parameters) whose parameters, compute
and AdamW moments are all bfloat16 (the logits cast to float32 for the loss). The layers'
weights are stacked on a leading axis and applied with jax.lax.scan, as large-model JAX
code does (one compiled layer body), and the whole step (forward, backward, global-norm
clipping, AdamW with warm-up/cosine) is one jax.jit with params and optimizer state
donated. Batches of 8 x 1024 tokens are made once on the device and cycled; the losses
stay on the device and are fetched (jax.device_get of the last 100) once every 100 steps.
Compilation falls in the warm-up; nothing on the host waits for the GPU inside the loop.

--fix: nothing (control).
"""
import math

import numpy as np

import cc


def main():
    args = cc.parser(__doc__).parse_args()
    import jax
    import jax.numpy as jnp
    import optax

    vocab, d, layers, heads, hidden, seq, batch = \
        (512, 64, 2, 4, 176, 33, 2) if args.smoke else (32000, 1024, 12, 16, 2816, 1025, 8)
    if args.device == "cpu":
        dev = jax.devices("cpu")[0]
    else:
        try:
            dev = jax.devices("gpu")[0]
        except RuntimeError:
            raise SystemExit("no GPU for JAX: run with --device cpu for a smoke test")
    dt = jnp.bfloat16
    hd = d // heads
    ctx = seq - 1

    def init(key):
        k = iter(jax.random.split(key, 8))
        nrm = lambda shape, s: (jax.random.normal(next(k), shape, jnp.float32) * s).astype(dt)  # noqa: E731
        out_s = 0.02 / math.sqrt(2 * layers)
        return {"embed": nrm((vocab, d), 0.02), "norm": jnp.ones((d,), dt), "out": nrm((d, vocab), 0.02),
                "layers": {"attn_norm": jnp.ones((layers, d), dt), "wqkv": nrm((layers, d, 3 * d), 0.02),
                           "wo": nrm((layers, d, d), out_s), "mlp_norm": jnp.ones((layers, d), dt),
                           "w13": nrm((layers, d, 2 * hidden), 0.02), "w2": nrm((layers, hidden, d), out_s)}}

    inv = 1.0 / 10000.0 ** (np.arange(0, hd, 2) / hd)
    ang = np.outer(np.arange(ctx), inv)
    cos = jnp.asarray(np.concatenate([np.cos(ang)] * 2, -1), dt)[None, :, None, :]
    sin = jnp.asarray(np.concatenate([np.sin(ang)] * 2, -1), dt)[None, :, None, :]

    def rms(x, w):
        x32 = x.astype(jnp.float32)
        return (x32 * jax.lax.rsqrt((x32 * x32).mean(-1, keepdims=True) + 1e-5)).astype(dt) * w

    def rope(x):
        a, b = jnp.split(x, 2, axis=-1)
        return x * cos + jnp.concatenate([-b, a], -1) * sin

    def layer(h, lp):
        b, t, _ = h.shape
        q, k, v = jnp.split(rms(h, lp["attn_norm"]) @ lp["wqkv"], 3, axis=-1)
        q, k, v = (z.reshape(b, t, heads, hd) for z in (q, k, v))
        a = jax.nn.dot_product_attention(rope(q), rope(k), v, is_causal=True).reshape(b, t, d)
        h = h + a @ lp["wo"]
        g, u = jnp.split(rms(h, lp["mlp_norm"]) @ lp["w13"], 2, axis=-1)
        return h + (jax.nn.silu(g) * u) @ lp["w2"], None

    def loss_fn(p, ids):
        h = p["embed"][ids[:, :-1]]
        h, _ = jax.lax.scan(layer, h, p["layers"])
        logits = (rms(h, p["norm"]) @ p["out"]).astype(jnp.float32)
        return optax.softmax_cross_entropy_with_integer_labels(logits, ids[:, 1:]).mean()

    sched = optax.warmup_cosine_decay_schedule(0.0, 3e-4, 200, 100_000, end_value=3e-5)
    opt = optax.chain(optax.clip_by_global_norm(1.0), optax.adamw(sched, b1=0.9, b2=0.95, weight_decay=0.1))

    def train_step(p, s, ids):
        loss, grads = jax.value_and_grad(loss_fn)(p, ids)
        upd, s = opt.update(grads, s, p)
        return optax.apply_updates(p, upd), s, loss

    with jax.default_device(dev):
        params = init(jax.random.PRNGKey(0))
        state = opt.init(params)
        data = [jax.random.randint(jax.random.PRNGKey(1 + k), (batch, seq), 0, vocab) for k in range(4)]
    n_params = sum(x.size for x in jax.tree_util.tree_leaves(params))
    train_step = jax.jit(train_step, donate_argnums=(0, 1))
    losses = []
    log = {"loss": None, "reads": 0}

    def step(i):
        nonlocal params, state
        params, state, loss = train_step(params, state, data[i % len(data)])
        losses.append(loss)
        if len(losses) == 100:
            log["loss"] = float(np.mean(jax.device_get(losses)))
            log["reads"] += 1
            losses.clear()
        return loss

    cc.run("h_jax_bf16_scan_lm", args, step, batch,
           extra=lambda: {"params_m": round(n_params / 1e6, 1), "param_dtype": "bfloat16", "loss_reads": log["reads"]})


if __name__ == "__main__":
    main()
