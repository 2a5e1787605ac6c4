"""C14 a periodic stall (a sample preview every 20 steps, JAX): rectified-flow / flow-matching
training of an unconditional image generator in plain JAX + optax on CIFAR-sized 32 x 32
images: a DiT-S/2-style transformer (2 x 2 patches: 256 tokens, 8 blocks of width 384, 6
heads, MLP 1,536, adaLN-Zero conditioning on the flow time; 21.9 M float32 parameters,
bfloat16 compute), the conditional flow-matching loss (x_t = (1 - t) x_0 + t x_1 with x_0
Gaussian noise, t logit-normal, the network regressing the velocity x_1 - x_0), AdamW (lr 2e-4,
optax) and an EMA of the weights (0.9999) in one jax.jit with parameters, optimizer state and
EMA donated, batch 128 drawn on the device from 20,000 synthetic images held there; losses
stay on the device and are fetched every 100 steps.

Every 20 steps (preview_every, kept from the short debugging runs where it was useful) the
loop draws a preview the way the rectified-flow example scripts do: 64 images from noise with
100 Euler steps of the ODE, a Python loop calling the jitted velocity function of the EMA
weights (100 forward passes at batch 64), then jax.device_get of the samples, a uint8 8 x 8
grid and a PNG encoded into memory (the image a tracker would log). Training waits for it:
~0.25-0.4 s every 20 steps of ~12-18 ms, about half of the wall time.

--fix: gpuwhy's C14 advice (do the periodic work less often): preview_every 2,000 instead of
20 (the step-0 preview kept, outside the measured window); model, data, loss, optimizer and
the sampler unchanged.

Written blind for the quebec batch.
"""
import io
import math

import numpy as np

import cc  # before jax: cc sets JAX's compilation cache directory
import jax
import jax.numpy as jnp
import jaxlm
import optax
from PIL import Image


def init(key, d, layers, patch_dim, tokens, mlp):
    ks = iter(jax.random.split(key, 8 + 6 * layers))
    nrm = lambda shape, s=0.02: jax.random.normal(next(ks), shape, jnp.float32) * s
    p = {"patch": nrm((patch_dim, d)), "patch_b": jnp.zeros((d,)), "pos": nrm((tokens, d)),
         "t1": nrm((256, d)), "t2": nrm((d, d)),
         "final_ada": jnp.zeros((d, 2 * d)), "final": jnp.zeros((d, patch_dim)), "blocks": []}
    for _ in range(layers):
        p["blocks"].append({"ada": jnp.zeros((d, 6 * d)), "ada_b": jnp.zeros((6 * d,)),
                            "wqkv": nrm((d, 3 * d)), "wo": nrm((d, d)),
                            "w1": nrm((d, mlp)), "b1": jnp.zeros((mlp,)), "w2": nrm((mlp, d))})
    return p


def layer_norm(x):
    x32 = x.astype(jnp.float32)
    m = x32.mean(-1, keepdims=True)
    v = ((x32 - m) ** 2).mean(-1, keepdims=True)
    return (x32 - m) * jax.lax.rsqrt(v + 1e-6)


def timestep_embedding(t, dim=256):
    half = dim // 2
    freqs = jnp.exp(-math.log(10000.0) * jnp.arange(half) / half)
    a = t[:, None] * 1000.0 * freqs[None]
    return jnp.concatenate([jnp.cos(a), jnp.sin(a)], -1)


def make_forward(heads, patch, size, cdt):
    def forward(p, x, t):
        b = x.shape[0]
        g = size // patch
        c = lambda w: w.astype(cdt)
        tok = x.reshape(b, g, patch, g, patch, 3).transpose(0, 1, 3, 2, 4, 5).reshape(b, g * g, -1)
        h = (tok.astype(cdt) @ c(p["patch"]) + c(p["patch_b"]) + c(p["pos"]))
        cond = jax.nn.silu(jax.nn.silu(timestep_embedding(t).astype(cdt) @ c(p["t1"])) @ c(p["t2"]))
        for blk in p["blocks"]:
            mod = cond @ c(blk["ada"]) + c(blk["ada_b"])
            sh1, sc1, g1, sh2, sc2, g2 = jnp.split(mod[:, None, :], 6, axis=-1)
            y = (layer_norm(h) * (1 + sc1) + sh1).astype(cdt)
            q, k, v = jnp.split(y @ c(blk["wqkv"]), 3, axis=-1)
            sh = lambda z: z.reshape(b, g * g, heads, -1)
            a = jax.nn.dot_product_attention(sh(q), sh(k), sh(v)).reshape(b, g * g, -1)
            h = h + (g1 * (a @ c(blk["wo"]))).astype(cdt)
            y = (layer_norm(h) * (1 + sc2) + sh2).astype(cdt)
            m = jax.nn.gelu(y @ c(blk["w1"]) + c(blk["b1"]), approximate=True) @ c(blk["w2"])
            h = h + (g2 * m).astype(cdt)
        sh_f, sc_f = jnp.split((cond @ c(p["final_ada"]))[:, None, :], 2, axis=-1)
        out = ((layer_norm(h) * (1 + sc_f) + sh_f).astype(cdt) @ c(p["final"])).astype(jnp.float32)
        return out.reshape(b, g, g, patch, patch, 3).transpose(0, 1, 3, 2, 4, 5).reshape(b, size, size, 3)
    return forward


def make_images(key, n, size):
    """Smooth synthetic 'photos' in [-1, 1]: low-resolution noise upsampled, plus a blob."""
    k1, k2 = jax.random.split(key)
    low = jax.random.normal(k1, (n, size // 8, size // 8, 3))
    img = jax.image.resize(low, (n, size, size, 3), "bicubic")
    yy, xx = jnp.meshgrid(jnp.linspace(-1, 1, size), jnp.linspace(-1, 1, size), indexing="ij")
    ctr = jax.random.uniform(k2, (n, 2), minval=-0.5, maxval=0.5)
    blob = jnp.exp(-((yy - ctr[:, :1, None]) ** 2 + (xx - ctr[:, 1:, None]) ** 2) * 8.0)
    return jnp.tanh(img * 0.6 + blob[..., None]).astype(jnp.bfloat16)


def main():
    args = cc.parser(__doc__, warmup=5).parse_args()
    dev = jaxlm.device(args)
    if args.smoke:
        d, layers, heads, mlp, batch, n_img, n_preview, ode_steps, every = 32, 2, 2, 64, 8, 64, 4, 4, 4
    else:
        d, layers, heads, mlp, batch, n_img, n_preview, ode_steps, every = 384, 8, 6, 1536, 128, 20_000, 64, 100, 20
    if args.fix:
        every = 2000                       # the advice: periodic work less often (never in the timed part)
    size, patch = 32, 2
    cdt = jnp.bfloat16
    forward = make_forward(heads, patch, size, cdt)
    tx = optax.adamw(2e-4, b1=0.9, b2=0.999, weight_decay=0.0)

    def train_step(p, o, ema, data, key):
        k1, k2, k3 = jax.random.split(key, 3)
        x1 = data[jax.random.randint(k1, (batch,), 0, data.shape[0])].astype(jnp.float32)
        x0 = jax.random.normal(k2, x1.shape)
        t = jax.nn.sigmoid(jax.random.normal(k3, (batch,)))            # logit-normal t
        xt = (1 - t)[:, None, None, None] * x0 + t[:, None, None, None] * x1

        def loss_fn(p):
            return jnp.mean((forward(p, xt, t) - (x1 - x0)) ** 2)

        loss, g = jax.value_and_grad(loss_fn)(p)
        u, o = tx.update(g, o, p)
        p = optax.apply_updates(p, u)
        ema = jax.tree_util.tree_map(lambda e, q: 0.9999 * e + 0.0001 * q, ema, p)
        return p, o, ema, loss

    train_step = jax.jit(train_step, donate_argnums=(0, 1, 2))
    velocity = jax.jit(forward)

    def preview(ema, key):
        """Euler integration of dx/dt = v(x, t) from noise (t = 0) to data (t = 1)."""
        x = jax.random.normal(key, (n_preview, size, size, 3))
        dt = 1.0 / ode_steps
        for s in range(ode_steps):
            t = jnp.full((n_preview,), s * dt)
            x = x + dt * velocity(ema, x, t)
        img = np.asarray(jax.device_get(x))
        img = ((np.clip(img, -1, 1) + 1) * 127.5).astype(np.uint8)
        side = int(math.sqrt(n_preview))
        grid = img[:side * side].reshape(side, side, size, size, 3).transpose(0, 2, 1, 3, 4).reshape(side * size, side * size, 3)
        buf = io.BytesIO()
        Image.fromarray(grid).save(buf, format="PNG")
        return buf.getvalue()

    with jax.default_device(dev):
        params = init(jax.random.PRNGKey(0), d, layers, patch * patch * 3, (size // patch) ** 2, mlp)
        opt_state = tx.init(params)
        ema = jax.tree_util.tree_map(jnp.copy, params)
        data = make_images(jax.random.PRNGKey(1), n_img, size)
        keys = jax.random.split(jax.random.PRNGKey(2), 100_000)
    n_params = sum(a.size for a in jax.tree_util.tree_leaves(params))
    st = {"p": params, "o": opt_state, "ema": ema, "acc": [], "loss": None, "reads": 0, "previews": [],
          "n_prev": 0}

    def step(i):
        st["p"], st["o"], st["ema"], loss = train_step(st["p"], st["o"], st["ema"], data, keys[i % keys.shape[0]])
        st["acc"].append(loss)
        if len(st["acc"]) == 100:
            st["loss"] = float(np.mean(jax.device_get(st["acc"])))
            st["acc"].clear()
            st["reads"] += 1
        if i % every == 0:
            png = preview(st["ema"], keys[-1 - i % 1000])  # gpuwhy: plants C14 (64 samples by 100 Euler steps of the DiT and a PNG every 20 training steps; training waits)
            st["previews"] = (st["previews"] + [png])[-4:]     # what a tracker would upload
            st["n_prev"] += 1
        return loss

    cc.run("c14_jax_flow_matching_preview_every_n", args, step, batch,
           extra=lambda: {"preview_every": every, "ode_steps": ode_steps, "preview_images": n_preview,
                          "previews": st["n_prev"], "params_m": round(n_params / 1e6, 1), "loss": st["loss"],
                          "loss_reads": st["reads"]})


if __name__ == "__main__":
    main()
