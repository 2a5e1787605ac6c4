"""C9 host callbacks inside the jitted step (jax.debug.print of each block's activation
statistics, left in after a NaN hunt): pre-training a small GPT-style decoder in plain JAX +
optax: 12 pre-LN blocks of width 384, 6 heads, MLP 1,536, learned positions, vocabulary 8,192
tied, context 256, batch 32 (8,192 tokens a step), matrix products in bf16 with float32
accumulation, AdamW with warm-up and global-norm clipping, one jax.jit with parameters and
optimizer state donated; the token stream is made once on the device; the loss is read every
50 steps.

While chasing a divergence the author put `jax.debug.print("block {i}: mean {m} std {s} max
{a}", ...)` after each block of the forward pass (the usual way to look inside a jitted
function) and left it there: every step the device stops 12 times in the middle of the
forward pass, copies three scalars to the host, and waits while the runtime's callback thread
takes the GIL, formats the line and writes it to stdout.

--fix: gpuwhy's advice for host reads of device values (keep them on the device, read them
every N steps): the same per-block statistics returned from the step as a [12, 3] array,
accumulated on the device and printed every 50 steps; model, data, loss and optimizer
unchanged (the losses of both variants checked equal over the first steps at start).

Written blind for the mike batch.
"""
import math

import numpy as np

import cc


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
        L, D, H, V, T, B, stream = 2, 64, 4, 512, 32, 4, 20_000
    else:
        L, D, H, V, T, B, stream = 12, 384, 6, 8_192, 256, 32, 4_000_000
    F = 4 * D
    cdt = jnp.bfloat16

    def dense(k, i, o):
        return jax.random.normal(k, (i, o)) * (0.02 if o != D or i != F else 0.02 / math.sqrt(2 * L))

    def init(key):
        ks = jax.random.split(key, 2 + 4 * L)
        p = {"wte": jax.random.normal(ks[0], (V, D)) * 0.02, "wpe": jax.random.normal(ks[1], (T, D)) * 0.01,
             "lnf": {"g": jnp.ones(D), "b": jnp.zeros(D)}, "blocks": []}
        for l in range(L):
            k = ks[2 + 4 * l: 6 + 4 * l]
            p["blocks"].append({"ln1": {"g": jnp.ones(D), "b": jnp.zeros(D)}, "ln2": {"g": jnp.ones(D), "b": jnp.zeros(D)},
                                "qkv": dense(k[0], D, 3 * D), "proj": dense(k[1], D, D),
                                "fc": dense(k[2], D, F), "out": dense(k[3], F, D)})
        return p

    def ln(p, x):
        mu = x.mean(-1, keepdims=True)
        var = ((x - mu) ** 2).mean(-1, keepdims=True)
        return (x - mu) * jax.lax.rsqrt(var + 1e-5) * p["g"] + p["b"]

    def mm(x, w):
        return jnp.dot(x.astype(cdt), w.astype(cdt), preferred_element_type=jnp.float32)

    mask = jnp.tril(jnp.ones((T, T), bool))

    def block(p, x):
        h = ln(p["ln1"], x)
        q, k, v = jnp.split(mm(h, p["qkv"]).reshape(B, T, 3, H, D // H), 3, axis=2)
        q, k, v = (t[:, :, 0].astype(cdt) for t in (q, k, v))
        att = jnp.einsum("bqhd,bkhd->bhqk", q, k, preferred_element_type=jnp.float32) / math.sqrt(D // H)
        att = jax.nn.softmax(jnp.where(mask, att, -1e30), -1).astype(cdt)
        y = jnp.einsum("bhqk,bkhd->bqhd", att, v, preferred_element_type=jnp.float32).reshape(B, T, D)
        x = x + mm(y, p["proj"])
        return x + mm(jax.nn.gelu(mm(ln(p["ln2"], x), p["fc"])), p["out"])

    def loss_fn(p, ids, fix):
        x = p["wte"][ids[:, :-1]] + p["wpe"]
        stats = []
        for i, bp in enumerate(p["blocks"]):
            x = block(bp, x)
            s = jax.lax.stop_gradient(jnp.stack([x.mean(), x.std(), jnp.abs(x).max()]))
            if fix:
                stats.append(s)
            else:
                jax.debug.print("block {i}: mean {m:.4f} std {s:.4f} max {a:.3f}", i=i, m=s[0], s=s[1], a=s[2])  # gpuwhy: plants C9 (a host callback after each of the 12 blocks: the device stops, copies 3 scalars and waits for the printing thread)
        logits = mm(ln(p["lnf"], x), p["wte"].T)
        lp = jax.nn.log_softmax(logits, -1)
        loss = -jnp.take_along_axis(lp, ids[:, 1:, None], -1).mean()
        return loss, (jnp.stack(stats) if fix else jnp.zeros((L, 3)))

    sched = optax.warmup_cosine_decay_schedule(0.0, 6e-4, 200, 200_000, 6e-5)
    opt = optax.chain(optax.clip_by_global_norm(1.0), optax.adamw(sched, b1=0.9, b2=0.95, weight_decay=0.1))

    def make_step(fix):
        def step(p, s, key, tokens):
            start = jax.random.randint(key, (B, 1), 0, stream - T - 1)
            ids = tokens[start + jnp.arange(T + 1)]
            (loss, stats), g = jax.value_and_grad(loss_fn, has_aux=True)(p, ids, fix)
            upd, s = opt.update(g, s, p)
            return optax.apply_updates(p, upd), s, loss, stats
        return jax.jit(step, donate_argnums=(0, 1))

    with jax.default_device(dev):
        key = jax.random.PRNGKey(0)
        tokens = jax.random.randint(jax.random.PRNGKey(1), (stream,), 0, V)
        # equivalence at start: both variants from the same state give the same losses
        ref = {}
        for fix in (False, True):
            p = init(key)
            s = opt.init(p)
            st = make_step(fix)
            ls = []
            for j in range(2):
                p, s, loss, _ = st(p, s, jax.random.PRNGKey(100 + j), tokens)
                ls.append(float(loss))
            ref[fix] = ls
        assert np.allclose(ref[False], ref[True], rtol=1e-4), ref

        params = init(key)
        state = opt.init(params)
        step_fn = make_step(args.fix)
        st = {"p": params, "s": state, "acc": jnp.zeros(()), "stats": jnp.zeros((L, 3)), "loss": None, "reads": 0}

        def step(i):
            st["p"], st["s"], loss, stats = step_fn(st["p"], st["s"], jax.random.PRNGKey(1000 + i), tokens)
            st["acc"] = st["acc"] + loss
            st["stats"] = st["stats"] + stats
            if i % 50 == 49:
                st["loss"] = float(st["acc"]) / 50
                if args.fix:
                    m = np.asarray(st["stats"]) / 50
                    for b in range(L):
                        print(f"block {b}: mean {m[b, 0]:.4f} std {m[b, 1]:.4f} max {m[b, 2]:.3f} (mean of 50 steps)")
                st["acc"] = jnp.zeros(())
                st["stats"] = jnp.zeros((L, 3))
                st["reads"] += 1
            return loss

        cc.run("c9_jax_debug_print_block_stats", args, step, B,
               extra=lambda: {"tokens_per_step": B * T, "loss": st["loss"], "loss_reads": st["reads"],
                              "debug_prints_per_step": 0 if args.fix else L,
                              "params_m": round(sum(x.size for x in jax.tree_util.tree_leaves(st["p"])) / 1e6, 1)})


if __name__ == "__main__":
    main()
