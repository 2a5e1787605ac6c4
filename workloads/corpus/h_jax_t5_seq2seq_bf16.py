"""Healthy control (JAX, one donated jit step): T5-base-sized encoder-decoder pre-training with
span corruption, written in plain JAX + optax: 12 encoder and 12 decoder layers of width 768
(12 heads, ReLU FFN 3,072, RMSNorm, learned absolute positions instead of T5's relative
buckets), a shared 32,128-token embedding tied to the output, causal self-attention and
cross-attention in the decoder through jax.nn.dot_product_attention; parameters in float32,
every matrix product in bfloat16. Each layer stack's weights are stacked on a leading axis and
applied with jax.lax.scan; forward, backward, global-norm clipping and AdamW (warm-up, inverse
square-root decay) are one jax.jit with parameters and optimizer state donated. Batches of 32
pairs of 512 corrupted-input and 128 target tokens are made once on the device (8, cycled);
the losses stay on the device and are fetched once every 100 steps. About 12.7 TFLOP a step
(encoder 2.8, decoder 0.9, head 0.2 and attention 0.35 TFLOP forward, times 3); compilation
falls in the warm-up (the persistent compilation cache serves the later runs), and nothing on
the host waits for the GPU inside the loop.

--fix: nothing (control).

Written blind for the foxtrot batch.
"""
import math

import numpy as np

import cc


def main():
    args = cc.parser(__doc__).parse_args()
    import jax
    import jax.numpy as jnp
    import optax

    vocab, d, heads, ffn, layers, src, tgt, batch = \
        (256, 32, 2, 64, 2, 32, 8, 2) if args.smoke else (32_128, 768, 12, 3072, 12, 512, 128, 32)
    if args.device == "cpu":
        dev = jax.devices("cpu")[0]
    else:
        try:
            dev = jax.devices("gpu")[0]
        except RuntimeError:
            raise SystemExit("no GPU for JAX: run with --device cpu for a smoke test")
    cdt = jnp.bfloat16
    hd = d // heads

    def init(key):
        k = iter(jax.random.split(key, 16))
        nrm = lambda shape, fan: jax.random.normal(next(k), shape, jnp.float32) / math.sqrt(fan)  # noqa: E731
        L = layers
        return {
            "embed": jax.random.normal(next(k), (vocab, d), jnp.float32) * 0.05,
            "pos_enc": jnp.zeros((src, d)), "pos_dec": jnp.zeros((tgt, d)),
            "enc": {"n1": jnp.ones((L, d)), "qkv": nrm((L, d, 3 * d), d), "o": nrm((L, d, d), d),
                    "n2": jnp.ones((L, d)), "wi": nrm((L, d, ffn), d), "wo": nrm((L, ffn, d), ffn)},
            "dec": {"n1": jnp.ones((L, d)), "qkv": nrm((L, d, 3 * d), d), "o": nrm((L, d, d), d),
                    "n2": jnp.ones((L, d)), "cq": nrm((L, d, d), d), "ckv": nrm((L, d, 2 * d), d),
                    "co": nrm((L, d, d), d),
                    "n3": jnp.ones((L, d)), "wi": nrm((L, d, ffn), d), "wo": nrm((L, ffn, d), ffn)},
            "enc_norm": jnp.ones((d,)), "dec_norm": jnp.ones((d,)),
        }

    def rms(x, g):
        x32 = x.astype(jnp.float32)
        return (x32 * jax.lax.rsqrt((x32 * x32).mean(-1, keepdims=True) + 1e-6) * g).astype(cdt)

    c = lambda w: w.astype(cdt)  # noqa: E731
    split = lambda z: z.reshape(z.shape[0], z.shape[1], heads, hd)  # noqa: E731

    def enc_layer(h, lp):
        b, t, _ = h.shape
        q, kk, v = jnp.split(rms(h, lp["n1"]) @ c(lp["qkv"]), 3, -1)
        a = jax.nn.dot_product_attention(split(q), split(kk), split(v)).reshape(b, t, d)
        h = h + a @ c(lp["o"])
        h = h + jax.nn.relu(rms(h, lp["n2"]) @ c(lp["wi"])) @ c(lp["wo"])
        return h, None

    def dec_layer(carry, lp):
        h, mem = carry
        b, t, _ = h.shape
        q, kk, v = jnp.split(rms(h, lp["n1"]) @ c(lp["qkv"]), 3, -1)
        a = jax.nn.dot_product_attention(split(q), split(kk), split(v), is_causal=True).reshape(b, t, d)
        h = h + a @ c(lp["o"])
        q = rms(h, lp["n2"]) @ c(lp["cq"])
        kk, v = jnp.split(mem @ c(lp["ckv"]), 2, -1)
        a = jax.nn.dot_product_attention(split(q), split(kk), split(v)).reshape(b, t, d)
        h = h + a @ c(lp["co"])
        h = h + jax.nn.relu(rms(h, lp["n3"]) @ c(lp["wi"])) @ c(lp["wo"])
        return (h, mem), None

    def loss_fn(p, inp, dec_in, labels):
        emb = c(p["embed"])
        h = emb[inp] + c(p["pos_enc"])[None]
        h, _ = jax.lax.scan(enc_layer, h, p["enc"])
        mem = rms(h, p["enc_norm"])
        y = emb[dec_in] + c(p["pos_dec"])[None]
        (y, _), _ = jax.lax.scan(dec_layer, (y, mem), p["dec"])
        logits = (rms(y, p["dec_norm"]) * (d ** -0.5)) @ emb.T
        return optax.softmax_cross_entropy_with_integer_labels(logits.astype(jnp.float32), labels).mean()

    sched = lambda s: 1e-3 * jnp.minimum((s + 1) / 1000, jnp.sqrt(1000 / (s + 1)))  # noqa: E731
    opt = optax.chain(optax.clip_by_global_norm(1.0), optax.adamw(sched, b1=0.9, b2=0.98, weight_decay=0.01))

    def train_step(p, s, inp, dec_in, labels):
        loss, grads = jax.value_and_grad(loss_fn)(p, inp, dec_in, labels)
        updates, s = opt.update(grads, s, p)
        return optax.apply_updates(p, updates), s, loss

    step_fn = jax.jit(train_step, donate_argnums=(0, 1))
    with jax.default_device(dev):
        params = init(jax.random.PRNGKey(0))
        state = opt.init(params)
        rng = np.random.default_rng(0)
        data = []
        for _ in range(8):
            inp = rng.integers(1, vocab, (batch, src)).astype(np.int32)
            lab = rng.integers(1, vocab, (batch, tgt)).astype(np.int32)
            dec_in = np.concatenate([np.zeros((batch, 1), np.int32), lab[:, :-1]], 1)
            data.append(tuple(jax.device_put(a, dev) for a in (inp, dec_in, lab)))
    losses = []
    box = {"p": params, "s": state, "fetched": 0}

    def step(i):
        box["p"], box["s"], loss = step_fn(box["p"], box["s"], *data[i % 8])
        losses.append(loss)
        if len(losses) == 100:
            jax.device_get(losses)
            losses.clear()
            box["fetched"] += 1
        return loss

    cc.run("h_jax_t5_seq2seq_bf16", args, step, batch,
           extra=lambda: {"jax": jax.__version__, "loss_fetches": box["fetched"]})


if __name__ == "__main__":
    main()
