"""Healthy control (JAX, host input pipeline prefetched to the device): a ViT-B/16 image
classifier written in plain JAX + optax (224 px, 196 patches, d=768, 12 layers of
pre-LN multi-head attention with 12 heads through jax.nn.dot_product_attention and a GELU
MLP of 3072, global average pooling, 1000 classes; 86 M float32 parameters, bfloat16
compute), the layers stacked and applied with jax.lax.scan; forward, backward, clipping
and AdamW (warm-up/cosine, label smoothing 0.1) in one jit with params and optimizer state
donated. Batches come from the host the way JAX input pipelines are written: a generator
cuts random 224 x 224 crops out of an in-memory pool of 1024 uint8 images of 256 x 256
(numpy slicing into a preallocated batch, which releases the GIL) and draws a flip flag
per image, and a prefetch thread puts two batches ahead on the device with jax.device_put
(flax's prefetch_to_device idea): a uint8 batch of 128 (19 MB) is copied while the
previous step runs; the flips, the conversion to bfloat16 and the normalization happen
inside the jitted step. Losses stay on the device and are fetched every 100 steps. About 6.7 TFLOP a
step against a few milliseconds of host work on another thread.

--fix: nothing (control).

Written blind for the quarry batch.
"""
import math
import queue
import threading

import numpy as np

import cc


def crops(pool, labels, batch, crop, seed):
    """Random crops from the uint8 pool with a horizontal-flip flag per image, forever."""
    r = np.random.default_rng(seed)
    n, size = pool.shape[0], pool.shape[1]
    while True:
        idx = r.integers(0, n, batch)
        oy, ox = r.integers(0, size - crop + 1, (2, batch))
        out = np.empty((batch, crop, crop, 3), np.uint8)
        for k in range(batch):
            out[k] = pool[idx[k], oy[k]:oy[k] + crop, ox[k]:ox[k] + crop]
        yield out, (labels[idx], r.random(batch) < 0.5)


def prefetch_to_device(it, dev, size, put):
    """Moves the iterator's batches to the device on a thread, `size` batches ahead."""
    q = queue.Queue(maxsize=size)

    def producer():
        for x, y in it:
            q.put((put(x, dev), put(y, dev)))

    threading.Thread(target=producer, name="prefetch-to-device", daemon=True).start()
    while True:
        yield q.get()


def main():
    args = cc.parser(__doc__, warmup=5).parse_args()
    import jax
    import jax.numpy as jnp
    import optax

    import jaxlm

    dev = jaxlm.device(args)
    if args.smoke:
        res, patch, d, layers, heads, mlp, classes, batch, pool_n, pool_res = 32, 8, 64, 2, 4, 128, 10, 4, 16, 40
    else:
        res, patch, d, layers, heads, mlp, classes, batch, pool_n, pool_res = \
            224, 16, 768, 12, 12, 3072, 1000, 128, 1024, 256
    tokens = (res // patch) ** 2
    cdt = jnp.bfloat16
    rng = np.random.default_rng(0)
    pool = rng.integers(0, 256, (pool_n, pool_res, pool_res, 3), dtype=np.uint8)
    labels = rng.integers(0, classes, pool_n).astype(np.int32)

    def init(key):
        k = iter(jax.random.split(key, 8))

        def dense(shape, fan_in):
            return jax.random.normal(next(k), shape, jnp.float32) * math.sqrt(1.0 / fan_in)

        L = layers
        return {
            "patch_w": dense((patch * patch * 3, d), patch * patch * 3), "patch_b": jnp.zeros((d,)),
            "pos": jax.random.normal(next(k), (tokens, d), jnp.float32) * 0.02,
            "layers": {
                "ln1_g": jnp.ones((L, d)), "ln1_b": jnp.zeros((L, d)),
                "qkv_w": dense((L, d, 3 * d), d), "qkv_b": jnp.zeros((L, 3 * d)),
                "out_w": dense((L, d, d), d), "out_b": jnp.zeros((L, d)),
                "ln2_g": jnp.ones((L, d)), "ln2_b": jnp.zeros((L, d)),
                "fc1_w": dense((L, d, mlp), d), "fc1_b": jnp.zeros((L, mlp)),
                "fc2_w": dense((L, mlp, d), mlp), "fc2_b": jnp.zeros((L, d)),
            },
            "ln_g": jnp.ones((d,)), "ln_b": jnp.zeros((d,)),
            "head_w": jnp.zeros((d, classes)), "head_b": jnp.zeros((classes,)),
        }

    def layer_norm(x, g, b):
        x32 = x.astype(jnp.float32)
        m = x32.mean(-1, keepdims=True)
        v = ((x32 - m) ** 2).mean(-1, keepdims=True)
        return ((x32 - m) * jax.lax.rsqrt(v + 1e-6) * g + b).astype(cdt)

    def encoder_layer(h, lp):
        c = lambda w: w.astype(cdt)  # noqa: E731
        b, t, _ = h.shape
        y = layer_norm(h, lp["ln1_g"], lp["ln1_b"])
        q, k, v = jnp.split(y @ c(lp["qkv_w"]) + c(lp["qkv_b"]), 3, axis=-1)
        sh = lambda z: z.reshape(b, t, heads, d // heads)  # noqa: E731
        a = jax.nn.dot_product_attention(sh(q), sh(k), sh(v)).reshape(b, t, d)
        h = h + a @ c(lp["out_w"]) + c(lp["out_b"])
        y = layer_norm(h, lp["ln2_g"], lp["ln2_b"])
        h = h + jax.nn.gelu(y @ c(lp["fc1_w"]) + c(lp["fc1_b"])) @ c(lp["fc2_w"]) + c(lp["fc2_b"])
        return h, None

    mean = jnp.array([0.485, 0.456, 0.406]) * 255
    std = jnp.array([0.229, 0.224, 0.225]) * 255

    def forward(p, x_u8, flip):
        b = x_u8.shape[0]
        g = res // patch
        x_u8 = jnp.where(flip[:, None, None, None], x_u8[:, :, ::-1], x_u8)
        x = ((x_u8.astype(jnp.float32) - mean) / std).astype(cdt)
        x = x.reshape(b, g, patch, g, patch, 3).transpose(0, 1, 3, 2, 4, 5).reshape(b, tokens, patch * patch * 3)
        h = x @ p["patch_w"].astype(cdt) + p["patch_b"].astype(cdt) + p["pos"].astype(cdt)
        h, _ = jax.lax.scan(encoder_layer, h, p["layers"])
        h = layer_norm(h, p["ln_g"], p["ln_b"]).astype(jnp.float32).mean(1)
        return h @ p["head_w"] + p["head_b"]

    def loss_fn(p, x, y, flip):
        target = optax.smooth_labels(jax.nn.one_hot(y, classes), 0.1)
        return optax.softmax_cross_entropy(forward(p, x, flip), target).mean()

    sched = optax.warmup_cosine_decay_schedule(0.0, 1e-3, 500, 100_000, end_value=1e-5)
    opt = optax.chain(optax.clip_by_global_norm(1.0), optax.adamw(sched, b1=0.9, b2=0.999, weight_decay=0.05))

    def train_step(p, s, x, y, flip):
        loss, grads = jax.value_and_grad(loss_fn)(p, x, y, flip)
        upd, s = opt.update(grads, s, p)
        return optax.apply_updates(p, upd), s, loss

    with jax.default_device(dev):
        params = init(jax.random.PRNGKey(0))
        state = opt.init(params)
    n_params = sum(x.size for x in jax.tree_util.tree_leaves(params))
    train_step = jax.jit(train_step, donate_argnums=(0, 1))
    batches = prefetch_to_device(crops(pool, labels, batch, res, seed=1), dev, 2, jax.device_put)
    losses = []
    log = {"loss": None, "reads": 0}

    def step(i):
        nonlocal params, state
        x, (y, flip) = next(batches)
        params, state, loss = train_step(params, state, x, y, flip)
        losses.append(loss)
        if len(losses) == 100:
            log["loss"] = float(np.mean(jax.device_get(losses)))
            log["reads"] += 1
            losses.clear()
        return loss

    cc.run("h_jax_vit_prefetch", args, step, batch,
           extra=lambda: {"params_m": round(n_params / 1e6, 1), "compute_dtype": "bfloat16",
                          "prefetch": 2, "loss_reads": log["reads"]})


if __name__ == "__main__":
    main()
