"""Healthy control (JAX, one jitted step): an MLP-Mixer-B/16-style image classifier written in
plain JAX + optax (224 px images cut into 196 patches of 16x16, hidden 768, 12 mixer layers
each with a token-mixing MLP of 384 and a channel-mixing MLP of 3072, LayerNorm, GELU,
global average pooling, 1000 classes; 60 M parameters kept in float32, every matrix product
computed in bfloat16). The layers' weights are stacked on a leading axis and applied with
jax.lax.scan; forward, backward, global-norm clipping and AdamW with warm-up/cosine (label
smoothing 0.1) are one jax.jit with params and optimizer state donated. Batches of 128
images (bf16) and labels are made once on the device and cycled; the losses stay on the
device and are fetched (jax.device_get of the last 100) once every 100 steps. About 9.7
TFLOP a step; compilation falls in the warm-up and nothing on the host waits for the GPU
inside the loop.

--fix: nothing (control).

Written blind for the harbor batch.
"""
import math

import numpy as np

import cc


def main():
    args = cc.parser(__doc__).parse_args()
    import jax
    import jax.numpy as jnp
    import optax

    res, patch, hidden, layers, tok_mlp, ch_mlp, classes, batch = \
        (32, 8, 64, 2, 32, 128, 10, 4) if args.smoke else (224, 16, 768, 12, 384, 3072, 1000, 128)
    if args.device == "cpu":
        dev = jax.devices("cpu")[0]
    else:
        try:
            dev = jax.devices("gpu")[0]
        except RuntimeError:
            raise SystemExit("no GPU for JAX: run with --device cpu for a smoke test")
    tokens = (res // patch) ** 2
    cdt = jnp.bfloat16

    def init(key):
        k = iter(jax.random.split(key, 8))

        def dense(shape, fan_in):
            return jax.random.normal(next(k), shape, jnp.float32) * math.sqrt(1.0 / fan_in)

        L = layers
        return {
            "stem_w": dense((patch * patch * 3, hidden), patch * patch * 3), "stem_b": jnp.zeros((hidden,)),
            "layers": {
                "ln1_g": jnp.ones((L, hidden)), "ln1_b": jnp.zeros((L, hidden)),
                "tok_w1": dense((L, tokens, tok_mlp), tokens), "tok_b1": jnp.zeros((L, tok_mlp)),
                "tok_w2": dense((L, tok_mlp, tokens), tok_mlp), "tok_b2": jnp.zeros((L, tokens)),
                "ln2_g": jnp.ones((L, hidden)), "ln2_b": jnp.zeros((L, hidden)),
                "ch_w1": dense((L, hidden, ch_mlp), hidden), "ch_b1": jnp.zeros((L, ch_mlp)),
                "ch_w2": dense((L, ch_mlp, hidden), ch_mlp), "ch_b2": jnp.zeros((L, hidden)),
            },
            "ln_g": jnp.ones((hidden,)), "ln_b": jnp.zeros((hidden,)),
            "head_w": jnp.zeros((hidden, classes)), "head_b": jnp.zeros((classes,)),
        }

    def layer_norm(x, g, b):
        x32 = x.astype(jnp.float32)
        m = x32.mean(-1, keepdims=True)
        v = ((x32 - m) ** 2).mean(-1, keepdims=True)
        return ((x32 - m) * jax.lax.rsqrt(v + 1e-6) * g + b).astype(cdt)

    def mixer_layer(h, lp):
        c = lambda w: w.astype(cdt)  # noqa: E731
        y = layer_norm(h, lp["ln1_g"], lp["ln1_b"]).swapaxes(1, 2)          # (B, C, S)
        y = jax.nn.gelu(y @ c(lp["tok_w1"]) + c(lp["tok_b1"])) @ c(lp["tok_w2"]) + c(lp["tok_b2"])
        h = h + y.swapaxes(1, 2)
        y = layer_norm(h, lp["ln2_g"], lp["ln2_b"])
        h = h + jax.nn.gelu(y @ c(lp["ch_w1"]) + c(lp["ch_b1"])) @ c(lp["ch_w2"]) + c(lp["ch_b2"])
        return h, None

    def forward(p, x):
        b = x.shape[0]
        g = res // patch
        x = x.reshape(b, g, patch, g, patch, 3).transpose(0, 1, 3, 2, 4, 5).reshape(b, tokens, patch * patch * 3)
        h = x.astype(cdt) @ p["stem_w"].astype(cdt) + p["stem_b"].astype(cdt)
        h, _ = jax.lax.scan(mixer_layer, h, p["layers"])
        h = layer_norm(h, p["ln_g"], p["ln_b"]).astype(jnp.float32).mean(1)
        return h @ p["head_w"] + p["head_b"]

    def loss_fn(p, x, y):
        logits = forward(p, x)
        target = optax.smooth_labels(jax.nn.one_hot(y, classes), 0.1)
        return optax.softmax_cross_entropy(logits, target).mean()

    sched = optax.warmup_cosine_decay_schedule(0.0, 1e-3, 500, 100_000, end_value=1e-5)
    opt = optax.chain(optax.clip_by_global_norm(1.0), optax.adamw(sched, b1=0.9, b2=0.999, weight_decay=0.05))

    def train_step(p, s, x, y):
        loss, grads = jax.value_and_grad(loss_fn)(p, x, y)
        upd, s = opt.update(grads, s, p)
        return optax.apply_updates(p, upd), s, loss

    with jax.default_device(dev):
        params = init(jax.random.PRNGKey(0))
        state = opt.init(params)
        data = [(jax.random.normal(jax.random.PRNGKey(10 + k), (batch, res, res, 3), cdt),
                 jax.random.randint(jax.random.PRNGKey(20 + k), (batch,), 0, classes)) for k in range(4)]
    n_params = sum(x.size for x in jax.tree_util.tree_leaves(params))
    train_step = jax.jit(train_step, donate_argnums=(0, 1))
    losses = []
    log = {"loss": None, "reads": 0}

    def step(i):
        nonlocal params, state
        x, y = data[i % len(data)]
        params, state, loss = train_step(params, state, x, y)
        losses.append(loss)
        if len(losses) == 100:
            log["loss"] = float(np.mean(jax.device_get(losses)))
            log["reads"] += 1
            losses.clear()
        return loss

    cc.run("h_jax_mixer_jit", args, step, batch,
           extra=lambda: {"params_m": round(n_params / 1e6, 1), "compute_dtype": "bfloat16", "loss_reads": log["reads"]})


if __name__ == "__main__":
    main()
