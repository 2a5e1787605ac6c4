"""Healthy control (plain JAX, interpretability): a sparse autoencoder (dictionary learning) trained
on a language model's residual-stream activations, in the setup of Anthropic's "Towards
Monosemanticity" and its April 2024 update as SAELens and Gemma Scope users train them, in
plain JAX + optax: d_model 2,304 (a Gemma-2-2B residual stream), 16,384 latents, encoder
f = ReLU(W_e (x - b_d) + b_e), decoder x_hat = W_d f + b_d, the loss ||x - x_hat||^2 + lambda
sum_i f_i ||W_d,i|| (the L1 penalty weighted by the decoder columns' norms, lambda 5 warmed up
linearly over the first 5% of steps), the inputs scaled once so that E ||x||^2 = d_model, Adam
(0.9, 0.999, lr 5e-5) with global-norm clipping at 1.0; parameters (75.5 M) in float32, the
two large products in bf16 with float32 accumulation; one jitted step with parameters and
optimizer state donated; batch 8,192 activations drawn on the device from a shuffled buffer of
262,144 (1.2 GB in bf16, the buffer an activation store keeps on the GPU), made at start from
a ground-truth dictionary of 32,768 unit directions with Zipf-distributed firing rates (~30
active a token) and exponential magnitudes, a large shared mean direction and noise, as the
residual stream has; L0, the fraction of variance explained and the count of latents that
fired stay on the device and are read every 50 steps.

About 3.7 TFLOP a step (the encoder and decoder products, 8,192 x 2,304 x 16,384 each, 0.62
TFLOP, forward and twice backward), ~9-13 ms of GPU work in large bf16 GEMMs and fused elementwise epilogues on the
8,192 x 16,384 latent tensor, against well under 1 ms of host time (one jitted call): GPU-bound,
nothing to fix. XLA compiles the step and the data generator in the first warm-up iteration (a
few seconds; the persistent compilation cache serves later runs).

--fix: nothing (control).

Written blind for the victor batch.
"""
import numpy as np

import cc  # before jax: cc sets JAX's compilation cache directory
import jax
import jax.numpy as jnp
import jaxlm
import optax


def init(key, d, n_latents):
    """W_d's columns at norm 0.1 in random directions, W_e = W_d^T (the update's initialization)."""
    wd = jax.random.normal(key, (n_latents, d), jnp.float32)
    wd = wd / jnp.linalg.norm(wd, axis=1, keepdims=True) * 0.1
    return {"W_enc": wd.T, "b_enc": jnp.zeros((n_latents,)), "W_dec": wd, "b_dec": jnp.zeros((d,))}


def make_activations(key, n, d, n_true, active, chunk):
    """n residual-stream-like vectors in bf16: sparse codes over a ground-truth dictionary."""
    k0, k1, k2, k3 = jax.random.split(key, 4)
    feats = jax.random.normal(k0, (n_true, d))
    feats = (feats / jnp.linalg.norm(feats, axis=1, keepdims=True)).astype(jnp.bfloat16)
    rate = 1.0 / jnp.arange(1, n_true + 1, dtype=jnp.float32) ** 0.7
    rate = jnp.minimum(rate / rate.sum() * active, 0.5)                  # firing probability, ~`active` a token
    mean_dir = jax.random.normal(k1, (d,)) * 0.6

    @jax.jit
    def one(k):
        ka, kb, kc = jax.random.split(k, 3)
        on = jax.random.uniform(ka, (chunk, n_true)) < rate
        mag = jax.random.exponential(kb, (chunk, n_true)) * 2.0
        codes = jnp.where(on, mag, 0.0).astype(jnp.bfloat16)
        x = jnp.dot(codes, feats, preferred_element_type=jnp.float32) + mean_dir
        x = x + jax.random.normal(kc, x.shape) * 0.05
        return x.astype(jnp.bfloat16)

    xs = jnp.concatenate([one(k) for k in jax.random.split(k2, n // chunk)])
    scale = jnp.sqrt(d / jnp.mean(jnp.sum(xs.astype(jnp.float32) ** 2, axis=1)))
    return (xs.astype(jnp.float32) * scale).astype(jnp.bfloat16)


def main():
    args = cc.parser(__doc__, warmup=5).parse_args()
    dev = jaxlm.device(args)
    if args.smoke:
        d, n_latents, n_true, active, batch, n_buf, chunk = 64, 256, 512, 8, 128, 4096, 1024
    else:
        d, n_latents, n_true, active, batch, n_buf, chunk = 2304, 16384, 32768, 30, 8192, 262_144, 8192
    lam, total_steps = 5.0, 100_000
    tx = optax.chain(optax.clip_by_global_norm(1.0), optax.adam(5e-5, b1=0.9, b2=0.999))
    bf = jnp.bfloat16

    def forward(p, x):
        pre = jnp.dot((x - p["b_dec"]).astype(bf), p["W_enc"].astype(bf), preferred_element_type=jnp.float32) + p["b_enc"]
        f = jax.nn.relu(pre)
        x_hat = jnp.dot(f.astype(bf), p["W_dec"].astype(bf), preferred_element_type=jnp.float32) + p["b_dec"]
        return f, x_hat

    def train_step(p, o, buf, key, step, fired):
        key, k = jax.random.split(key)
        x = buf[jax.random.randint(k, (batch,), 0, buf.shape[0])].astype(jnp.float32)
        l1 = lam * jnp.minimum(1.0, step / (0.05 * total_steps))

        def loss_fn(p):
            f, x_hat = forward(p, x)
            mse = jnp.sum((x - x_hat) ** 2, axis=-1).mean()
            sparsity = jnp.sum(f * jnp.linalg.norm(p["W_dec"], axis=1), axis=-1).mean()
            return mse + l1 * sparsity, (mse, f)

        (loss, (mse, f)), g = jax.value_and_grad(loss_fn, has_aux=True)(p)
        u, o = tx.update(g, o, p)
        p = optax.apply_updates(p, u)
        stats = {"loss": loss, "l0": jnp.mean(jnp.sum(f > 0, axis=-1)),
                 "fvu": mse / jnp.sum((x - x.mean(0)) ** 2, axis=-1).mean()}
        return p, o, key, step + 1.0, fired | jnp.any(f > 0, axis=0), stats

    train_step = jax.jit(train_step, donate_argnums=(0, 1))
    with jax.default_device(dev):
        params = init(jax.random.PRNGKey(0), d, n_latents)
        opt_state = tx.init(params)
        buf = make_activations(jax.random.PRNGKey(1), n_buf, d, n_true, active, chunk)
        key = jax.random.PRNGKey(2)
        fired = jnp.zeros((n_latents,), bool)
        t0 = jnp.zeros((), jnp.float32)
    n_params = sum(a.size for a in jax.tree_util.tree_leaves(params))
    st = {"p": params, "o": opt_state, "key": key, "t": t0, "fired": fired, "no_fired": fired, "log": None, "reads": 0}

    def step(i):
        st["p"], st["o"], st["key"], st["t"], st["fired"], stats = train_step(st["p"], st["o"], buf, st["key"], st["t"], st["fired"])
        if (i + 1) % 50 == 0:
            loss, l0, fvu, alive = jax.device_get((stats["loss"], stats["l0"], stats["fvu"], st["fired"].sum()))
            st["log"] = {"loss": round(float(loss), 4), "l0": round(float(l0), 1), "fvu": round(float(fvu), 4),
                         "alive": int(alive)}
            st["fired"] = st["no_fired"]                  # a window of 50 steps for the dead-latent count
            st["reads"] += 1
        return stats["loss"]

    cc.run("h_jax_sae_residual_stream_relu_l1_bf16", args, step, batch,
           extra=lambda: {"params_m": round(n_params / 1e6, 1), "d_model": d, "latents": n_latents,
                          "buffer": n_buf, "log": st["log"], "log_reads": st["reads"]})


if __name__ == "__main__":
    main()
