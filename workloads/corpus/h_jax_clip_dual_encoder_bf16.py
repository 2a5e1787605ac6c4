"""Healthy control (JAX, contrastive image-text pre-training in one jitted step): a CLIP
ViT-B/32-sized dual encoder written in plain JAX + optax, the OpenCLIP recipe on one GPU: an
image tower (224 px images cut into 49 patches of 32 x 32, class token, 12 pre-LN layers of
width 768 with 12 heads, MLP 3072, QuickGELU as in the original CLIP) and a text tower (77 tokens,
vocabulary 49,408, 12 causal pre-LN layers of width 512 with 8 heads, the end-of-text position's
feature), each projected to a 512-d space and L2-normalized; a learned temperature (log-scale,
clamped at 100) and the symmetric cross-entropy over the 256 x 256 image-text logits. 151 M
parameters in float32, every matrix product in bfloat16; each tower's layers stacked and applied
with jax.lax.scan; forward, backward and AdamW (betas 0.9/0.98, eps 1e-6, weight decay 0.2 on
matrices only, warm-up then cosine) are one jax.jit with params and optimizer state donated.
Batches of 256 image-caption pairs (bf16 images, int32 token ids) are made once on the device
and cycled; the losses stay on the device and are fetched once every 100 steps. About 11 TFLOP
a step; compilation falls in the warm-up, nothing on the host waits for the GPU in the loop.

--fix: nothing (control).

Written blind for the delta batch.
"""
import math

import numpy as np

import cc


def main():
    args = cc.parser(__doc__).parse_args()
    import jax
    import jax.numpy as jnp
    import optax

    if args.smoke:
        res, patch, iw, il, ih, ctx, vocab, tw, tl_, th, emb, batch = 32, 16, 64, 2, 4, 16, 500, 32, 2, 4, 32, 8
    else:
        res, patch, iw, il, ih, ctx, vocab, tw, tl_, th, emb, batch = 224, 32, 768, 12, 12, 77, 49408, 512, 12, 8, 512, 256
    if args.device == "cpu":
        dev = jax.devices("cpu")[0]
    else:
        try:
            dev = jax.devices("gpu")[0]
        except RuntimeError:
            raise SystemExit("no GPU for JAX: run with --device cpu for a smoke test")
    cdt = jnp.bfloat16
    n_patch = (res // patch) ** 2

    def tower_init(key, layers, width):
        k = iter(jax.random.split(key, 8))
        s = width ** -0.5
        nrm = lambda shape, std: jax.random.normal(next(k), shape, jnp.float32) * std  # noqa: E731
        return {"ln1_g": jnp.ones((layers, width)), "ln1_b": jnp.zeros((layers, width)),
                "wqkv": nrm((layers, width, 3 * width), s), "bqkv": jnp.zeros((layers, 3 * width)),
                "wo": nrm((layers, width, width), s / math.sqrt(2 * layers)), "bo": jnp.zeros((layers, width)),
                "ln2_g": jnp.ones((layers, width)), "ln2_b": jnp.zeros((layers, width)),
                "w1": nrm((layers, width, 4 * width), s), "b1": jnp.zeros((layers, 4 * width)),
                "w2": nrm((layers, 4 * width, width), (4 * width) ** -0.5 / math.sqrt(2 * layers)),
                "b2": jnp.zeros((layers, width))}

    def init(key):
        k = jax.random.split(key, 10)
        return {
            "img": {"patch": jax.random.normal(k[0], (patch * patch * 3, iw)) * (patch * patch * 3) ** -0.5,
                    "cls": jax.random.normal(k[1], (iw,)) * iw ** -0.5,
                    "pos": jax.random.normal(k[2], (n_patch + 1, iw)) * iw ** -0.5,
                    "ln_pre_g": jnp.ones((iw,)), "ln_pre_b": jnp.zeros((iw,)),
                    "layers": tower_init(k[3], il, iw),
                    "ln_post_g": jnp.ones((iw,)), "ln_post_b": jnp.zeros((iw,)),
                    "proj": jax.random.normal(k[4], (iw, emb)) * iw ** -0.5},
            "txt": {"tok": jax.random.normal(k[5], (vocab, tw)) * 0.02,
                    "pos": jax.random.normal(k[6], (ctx, tw)) * 0.01,
                    "layers": tower_init(k[7], tl_, tw),
                    "ln_g": jnp.ones((tw,)), "ln_b": jnp.zeros((tw,)),
                    "proj": jax.random.normal(k[8], (tw, emb)) * tw ** -0.5},
            "logit_scale": jnp.asarray(math.log(1 / 0.07), jnp.float32),
        }

    def layer_norm(x, g, b):
        x32 = x.astype(jnp.float32)
        m = x32.mean(-1, keepdims=True)
        v = ((x32 - m) ** 2).mean(-1, keepdims=True)
        return ((x32 - m) * jax.lax.rsqrt(v + 1e-5) * g + b).astype(cdt)

    def tower(x, lp, heads, causal):
        b, n, w = x.shape
        c = lambda a: a.astype(cdt)  # noqa: E731

        def block(h, p):
            y = layer_norm(h, p["ln1_g"], p["ln1_b"]) @ c(p["wqkv"]) + c(p["bqkv"])
            q, k, v = (z.reshape(b, n, heads, w // heads) for z in jnp.split(y, 3, axis=-1))
            a = jax.nn.dot_product_attention(q, k, v, is_causal=causal).reshape(b, n, w)
            h = h + (a @ c(p["wo"]) + c(p["bo"])).astype(h.dtype)
            y = layer_norm(h, p["ln2_g"], p["ln2_b"]) @ c(p["w1"]) + c(p["b1"])
            y = y * jax.nn.sigmoid(1.702 * y)  # QuickGELU
            return h + (y @ c(p["w2"]) + c(p["b2"])).astype(h.dtype), None

        x, _ = jax.lax.scan(block, x, lp)
        return x

    def encode_image(p, img):
        b = img.shape[0]
        g = res // patch
        x = img.reshape(b, g, patch, g, patch, 3).transpose(0, 1, 3, 2, 4, 5).reshape(b, n_patch, -1)
        x = x.astype(cdt) @ p["patch"].astype(cdt)
        x = jnp.concatenate([jnp.broadcast_to(p["cls"].astype(cdt), (b, 1, iw)), x], 1) + p["pos"].astype(cdt)
        x = layer_norm(x, p["ln_pre_g"], p["ln_pre_b"])
        x = tower(x, p["layers"], ih, causal=False)
        return layer_norm(x[:, 0], p["ln_post_g"], p["ln_post_b"]) @ p["proj"].astype(cdt)

    def encode_text(p, ids):
        x = (p["tok"][ids] + p["pos"]).astype(cdt)
        x = tower(x, p["layers"], th, causal=True)
        return layer_norm(x[:, -1], p["ln_g"], p["ln_b"]) @ p["proj"].astype(cdt)  # the end-of-text position

    def loss_fn(p, img, ids):
        zi = encode_image(p["img"], img).astype(jnp.float32)
        zt = encode_text(p["txt"], ids).astype(jnp.float32)
        zi = zi / jnp.linalg.norm(zi, axis=-1, keepdims=True)
        zt = zt / jnp.linalg.norm(zt, axis=-1, keepdims=True)
        logits = jnp.minimum(jnp.exp(p["logit_scale"]), 100.0) * zi @ zt.T
        labels = jnp.arange(logits.shape[0])
        return 0.5 * (optax.softmax_cross_entropy_with_integer_labels(logits, labels).mean()
                      + optax.softmax_cross_entropy_with_integer_labels(logits.T, labels).mean())

    sched = optax.warmup_cosine_decay_schedule(0.0, 5e-4, 2000, 200_000, end_value=1e-6)
    decay_mask = lambda params: jax.tree_util.tree_map(lambda x: x.ndim >= 2, params)  # noqa: E731
    opt = optax.adamw(sched, b1=0.9, b2=0.98, eps=1e-6, weight_decay=0.2, mask=decay_mask)

    def train_step(p, s, img, ids):
        loss, grads = jax.value_and_grad(loss_fn)(p, img, ids)
        upd, s = opt.update(grads, s, p)
        return optax.apply_updates(p, upd), s, loss

    with jax.default_device(dev):
        params = init(jax.random.PRNGKey(0))
        state = opt.init(params)
        data = [(jax.random.normal(jax.random.PRNGKey(10 + k), (batch, res, res, 3), cdt),
                 jax.random.randint(jax.random.PRNGKey(20 + k), (batch, ctx), 0, vocab, jnp.int32)) for k in range(4)]
    n_params = sum(x.size for x in jax.tree_util.tree_leaves(params))
    train_step = jax.jit(train_step, donate_argnums=(0, 1))
    losses = []
    log = {"loss": None, "reads": 0}

    def step(i):
        nonlocal params, state
        img, ids = data[i % len(data)]
        params, state, loss = train_step(params, state, img, ids)
        losses.append(loss)
        if len(losses) == 100:
            log["loss"] = float(np.mean(jax.device_get(losses)))
            log["reads"] += 1
            losses.clear()
        return loss

    cc.run("h_jax_clip_dual_encoder_bf16", args, step, batch,
           extra=lambda: {"params_m": round(n_params / 1e6, 1), "compute_dtype": "bfloat16",
                          "loss_reads": log["reads"], "jax": jax.__version__})


if __name__ == "__main__":
    main()
