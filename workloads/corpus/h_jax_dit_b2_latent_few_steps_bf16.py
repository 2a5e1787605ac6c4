"""healthy, short and compile-dominated (JAX): class-conditional latent diffusion with a DiT-B/2
(Peebles & Xie, ICCV 2023, facebookresearch/DiT models.py: patch 2 over 32 x 32 x 4 latents,
256 tokens, 12 blocks of width 768 with 12 heads and adaLN-Zero modulation from the timestep and
class embeddings, 1,000 classes, ~130 M parameters) in plain JAX + optax, written block by block
without scan (unrolled, as Flax ports of DiT are), so XLA compiles a large program: ~10-20 s on
the GPU machine, the persistent compilation cache off (a first run). After it, each step is one
jitted, donated program: VAE-style latents and labels held on the GPU (made at start), noise and
timesteps drawn inside the step (linear beta schedule, 1,000 steps, epsilon prediction, MSE),
bf16 products, AdamW lr 1e-4, batch 128: ~8.8 TFLOP a step, ~25-40 ms on an H100, so the 2 s
window holds ~50-80 steps.

--fix changes nothing: this is a control.

Written blind for the yankee batch.
"""
import math
import os

os.environ["JAX_ENABLE_COMPILATION_CACHE"] = "false"  # a first run: the compilation is part of the job

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import optax  # noqa: E402

import cc  # noqa: E402
import jaxlm  # noqa: E402


def dense(key, a, b, zero=False):
    w = jnp.zeros((a, b), jnp.float32) if zero else jax.random.normal(key, (a, b), jnp.float32) * math.sqrt(1.0 / a)
    return {"w": w, "b": jnp.zeros((b,), jnp.float32)}


def init(key, d, depth, patch, chans, classes):
    ks = iter(jax.random.split(key, 8 + 6 * depth))
    p = {"x_emb": dense(next(ks), patch * patch * chans, d), "t1": dense(next(ks), 256, d), "t2": dense(next(ks), d, d),
         "y_emb": jax.random.normal(next(ks), (classes + 1, d)) * 0.02,
         "final_mod": dense(next(ks), d, 2 * d, zero=True), "final": dense(next(ks), d, patch * patch * chans, zero=True),
         "blocks": []}
    for _ in range(depth):
        p["blocks"].append({"mod": dense(next(ks), d, 6 * d, zero=True), "qkv": dense(next(ks), d, 3 * d),
                            "proj": dense(next(ks), d, d), "fc1": dense(next(ks), d, 4 * d), "fc2": dense(next(ks), 4 * d, d)})
    return p


def lin(l, x, dt):
    return x.astype(dt) @ l["w"].astype(dt) + l["b"].astype(dt)


def ln(x):
    x = x.astype(jnp.float32)
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) * jax.lax.rsqrt(v + 1e-6)


def timestep_embedding(t, dim=256):
    half = dim // 2
    freqs = jnp.exp(-math.log(10000) * jnp.arange(half) / half)
    a = t[:, None].astype(jnp.float32) * freqs[None]
    return jnp.concatenate([jnp.cos(a), jnp.sin(a)], -1)


def dit(p, x, t, y, heads, patch, dt):
    B, H, W, C = x.shape
    n = (H // patch) * (W // patch)
    x = x.reshape(B, H // patch, patch, W // patch, patch, C).transpose(0, 1, 3, 2, 4, 5).reshape(B, n, -1)
    d = p["x_emb"]["w"].shape[1]
    pos = jnp.sin(jnp.arange(n)[:, None] / 10000 ** (jnp.arange(d)[None] / d))
    h = lin(p["x_emb"], x, dt) + pos.astype(dt)
    c = lin(p["t2"], jax.nn.silu(lin(p["t1"], timestep_embedding(t), dt)), dt) + p["y_emb"][y].astype(dt)
    c = jax.nn.silu(c)
    for blk in p["blocks"]:  # unrolled: one copy of the block per layer in the program
        sh1, sc1, g1, sh2, sc2, g2 = jnp.split(lin(blk["mod"], c, dt)[:, None], 6, -1)
        a = (ln(h) * (1 + sc1) + sh1).astype(dt)
        q, k, v = jnp.split(lin(blk["qkv"], a, dt).reshape(B, n, 3 * heads, d // heads), 3, 2)
        att = jax.nn.dot_product_attention(q, k, v)
        h = h + g1 * lin(blk["proj"], att.reshape(B, n, d), dt)
        m = (ln(h) * (1 + sc2) + sh2).astype(dt)
        h = h + g2 * lin(blk["fc2"], jax.nn.gelu(lin(blk["fc1"], m, dt), approximate=True), dt)
    sh, sc = jnp.split(lin(p["final_mod"], c, dt)[:, None], 2, -1)
    return lin(p["final"], (ln(h) * (1 + sc) + sh).astype(dt), dt).astype(jnp.float32)


def main():
    args = cc.parser(__doc__).parse_args()
    jax.config.update("jax_enable_compilation_cache", False)
    dev = jaxlm.device(args)
    if args.smoke:
        d, depth, heads, res, batch, classes, n_lat = 64, 2, 4, 8, 4, 10, 16
    else:
        d, depth, heads, res, batch, classes, n_lat = 768, 12, 12, 32, 128, 1000, 4096
    patch, chans, T = 2, 4, 1000
    betas = jnp.linspace(1e-4, 0.02, T)
    abar = jnp.cumprod(1.0 - betas)
    with jax.default_device(dev):
        params = init(jax.random.PRNGKey(0), d, depth, patch, chans, classes)
        lat = jax.random.normal(jax.random.PRNGKey(1), (n_lat, res, res, chans)) * 0.18215 * 5
        labels = jax.random.randint(jax.random.PRNGKey(2), (n_lat,), 0, classes)
        opt = optax.adamw(1e-4, weight_decay=0.0)
        state = opt.init(params)

    def loss_fn(p, key):
        k1, k2, k3, k4 = jax.random.split(key, 4)
        idx = jax.random.randint(k1, (batch,), 0, n_lat)
        x0, y = lat[idx], labels[idx]
        y = jnp.where(jax.random.uniform(k4, (batch,)) < 0.1, classes, y)  # classifier-free dropout
        t = jax.random.randint(k2, (batch,), 0, T)
        eps = jax.random.normal(k3, x0.shape)
        a = abar[t][:, None, None, None]
        xt = jnp.sqrt(a) * x0 + jnp.sqrt(1 - a) * eps
        pred = dit(p, xt, t, y, heads, patch, jnp.bfloat16)
        return jnp.mean((pred.reshape(eps.shape) - eps) ** 2)

    def train_step(p, s, key):
        loss, g = jax.value_and_grad(loss_fn)(p, key)
        upd, s = opt.update(g, s, p)
        return optax.apply_updates(p, upd), s, loss

    train_step = jax.jit(train_step, donate_argnums=(0, 1))
    st = {"p": params, "s": state, "loss": None}

    def step(i):
        st["p"], st["s"], loss = train_step(st["p"], st["s"], jax.random.PRNGKey(100 + i))
        return loss

    res_ = cc.run("h_jax_dit_b2_latent_few_steps_bf16", args, step, batch,
                  extra=lambda: {"params_m": round(sum(x.size for x in jax.tree_util.tree_leaves(st["p"])) / 1e6, 1),
                                 "compile_cache": False})
    return res_


if __name__ == "__main__":
    main()
