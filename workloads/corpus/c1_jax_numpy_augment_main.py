"""C1 data loading (JAX, per-sample numpy augmentation on the main thread): a Vision
Transformer written in plain JAX + optax (patch 8 on 64 px images, so 64 tokens; 6 layers,
d=768, 12 heads, MLP 3072, mean pooling, 200 classes; float32 parameters, bf16 compute,
AdamW with warm-up/cosine, one jitted step with donated buffers) trained on a
Tiny-ImageNet-sized image set held in memory (20000 uint8 images of 72 x 72 x 3). Each
batch of 256 is built on the main thread right before its step, one sample at a time in
Python: a random 64 x 64 crop, a horizontal flip, brightness/contrast/saturation jitter
in float32, a random 16 x 16 cutout and the clip back to uint8, then np.stack and
jax.device_put (normalization happens on the device inside the step). JAX dispatches the
step asynchronously, so the host builds batch k+1 while the GPU runs step k; the
augmentation takes longer than the step, and the GPU waits for it.

--fix: gpuwhy's C1 advice (take this work off the thread that feeds the GPU: run it in
background processes that hand results over): the same batch function run by a
multiprocessing Pool of 8 processes (forked before JAX starts, each batch seeded by its
index) that keeps 16 batches in flight ahead of the loop (cc.prefetch); model and step
unchanged.

Needs jax with a GPU backend on the GPU machine; the smoke test runs on CPU jax.
"""
import math
import multiprocessing as mp

import numpy as np

import cc

IMAGES = None  # (N, 72, 72, 3) uint8, made before the pool forks (shared copy-on-write)
LABELS = None
CROP, STORE, CLASSES, PATCH = 64, 72, 200, 8
BATCH = 256


def augment(r, img):
    """One training sample: random crop, flip, colour jitter, cutout (numpy, per sample)."""
    y0, x0 = r.integers(0, STORE - CROP + 1, 2)
    c = img[y0:y0 + CROP, x0:x0 + CROP]
    if r.random() < 0.5:
        c = c[:, ::-1]
    f = c.astype(np.float32)
    f = f * r.uniform(0.6, 1.4) + r.uniform(-32, 32)  # brightness
    m = f.mean()
    f = (f - m) * r.uniform(0.6, 1.4) + m  # contrast
    gray = f.mean(-1, keepdims=True)
    f = gray + (f - gray) * r.uniform(0.6, 1.4)  # saturation
    if r.random() < 0.5:  # cutout
        cy, cx = r.integers(0, CROP, 2)
        f[max(cy - 8, 0):cy + 8, max(cx - 8, 0):cx + 8] = 127.0
    return np.clip(f, 0, 255).astype(np.uint8)


def make_batch(k):
    """Batch k: BATCH random samples, each augmented in Python; uint8 NHWC and int32 labels."""
    r = np.random.default_rng(1000 + k)
    idx = r.integers(0, len(IMAGES), BATCH)
    x = np.stack([augment(r, IMAGES[j]) for j in idx])
    return x, LABELS[idx]


def main():
    global IMAGES, LABELS, BATCH
    args = cc.parser(__doc__).parse_args()
    n_img, d, layers, heads = (64, 64, 1, 4) if args.smoke else (20000, 768, 6, 12)
    BATCH = 8 if args.smoke else 256
    rng = np.random.default_rng(0)
    # smooth random images (upsampled 9 x 9 noise plus grain), as decoded photos would be
    small = rng.integers(0, 256, (n_img, 9, 9, 3), dtype=np.uint8)
    IMAGES = (np.repeat(np.repeat(small, 8, axis=1), 8, axis=2) // 2
              + rng.integers(0, 128, (n_img, STORE, STORE, 3), dtype=np.uint8))
    LABELS = rng.integers(0, CLASSES, n_img).astype(np.int32)
    if args.fix:
        pool = mp.get_context("fork").Pool(2 if args.smoke else 8)  # forked before JAX starts its threads
        batches = cc.prefetch(pool, make_batch, iter(range(1 << 40)), 16)  # 16 batches in flight
    else:
        batches = map(make_batch, iter(range(1 << 40)))  # gpuwhy: plants C1 (per-sample numpy on the main thread)

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

    tokens = (CROP // PATCH) ** 2
    mean = jnp.array([0.48, 0.45, 0.40]) * 255
    std = jnp.array([0.23, 0.22, 0.22]) * 255

    def init(key):
        ks = iter(jax.random.split(key, 4 + 4 * layers))
        nrm = lambda shape, s=0.02: jax.random.normal(next(ks), shape, jnp.float32) * s  # noqa: E731
        p = {"patch": nrm((PATCH * PATCH * 3, d)), "patch_b": jnp.zeros((d,)), "pos": nrm((tokens, d)),
             "ln_f": jnp.ones((d,)), "head": nrm((d, CLASSES)), "head_b": jnp.zeros((CLASSES,)), "layers": []}
        for _ in range(layers):
            p["layers"].append({"ln1": jnp.ones((d,)), "wqkv": nrm((d, 3 * d)), "wo": nrm((d, d)),
                                "ln2": jnp.ones((d,)), "w1": nrm((d, 4 * d)), "w2": nrm((4 * d, d))})
        return p

    def ln(x, g):
        x32 = x.astype(jnp.float32)
        mu = x32.mean(-1, keepdims=True)
        var = ((x32 - mu) ** 2).mean(-1, keepdims=True)
        return ((x32 - mu) * jax.lax.rsqrt(var + 1e-6) * g).astype(x.dtype)

    def forward(p, x):
        b = x.shape[0]
        c = lambda w: w.astype(jnp.bfloat16)  # noqa: E731
        x = ((x.astype(jnp.float32) - mean) / std).astype(jnp.bfloat16)
        g = CROP // PATCH
        x = x.reshape(b, g, PATCH, g, PATCH, 3).transpose(0, 1, 3, 2, 4, 5).reshape(b, tokens, -1)
        h = x @ c(p["patch"]) + c(p["patch_b"]) + c(p["pos"])
        for lyr in p["layers"]:
            a = ln(h, lyr["ln1"])
            q, k, v = jnp.split(a @ c(lyr["wqkv"]), 3, axis=-1)
            sh = lambda z: z.reshape(b, tokens, heads, -1)  # noqa: E731
            a = jax.nn.dot_product_attention(sh(q), sh(k), sh(v)).reshape(b, tokens, -1)
            h = h + a @ c(lyr["wo"])
            h = h + jax.nn.gelu(ln(h, lyr["ln2"]) @ c(lyr["w1"])) @ c(lyr["w2"])
        h = ln(h, p["ln_f"]).mean(1)
        return (h @ c(p["head"])).astype(jnp.float32) + p["head_b"]

    def loss_fn(p, x, y):
        return optax.softmax_cross_entropy_with_integer_labels(forward(p, x), y).mean()

    sched = optax.warmup_cosine_decay_schedule(0.0, 1e-3, 200, 100_000)
    opt = optax.adamw(sched, b1=0.9, b2=0.999, weight_decay=0.05)

    def train_step(p, s, x, y):
        loss, grads = jax.value_and_grad(loss_fn)(p, x, y)
        upd, s = opt.update(grads, s, p)
        return optax.apply_updates(p, upd), s, loss

    with jax.default_device(dev):
        params = init(jax.random.PRNGKey(0))
        state = opt.init(params)
    train_step = jax.jit(train_step, donate_argnums=(0, 1))

    def step(i):
        nonlocal params, state
        x, y = next(batches)
        params, state, loss = train_step(params, state, jax.device_put(x, dev), jax.device_put(y, dev))
        return loss

    try:
        cc.run("c1_jax_numpy_augment_main", args, step, BATCH,
               extra={"input": "Pool(8) ahead" if args.fix else "main thread", "images": n_img,
                      "params_m": round(sum(math.prod(a.shape) for a in jax.tree_util.tree_leaves(params)) / 1e6, 1)})
    finally:
        if args.fix:
            pool.terminate()


if __name__ == "__main__":
    main()
