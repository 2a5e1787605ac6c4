"""A small decoder-only language model in plain JAX + optax, shared by the JAX scenarios
(not a scenario itself). Parameters are kept in float32; `dtype` is the compute type
(bfloat16 is the usual mixed-precision setup)."""
import jax
import jax.numpy as jnp
import optax


def init(key, vocab, d, layers, seq):
    ks = iter(jax.random.split(key, 4 + 4 * layers))
    nrm = lambda shape, s=0.02: jax.random.normal(next(ks), shape, jnp.float32) * s
    p = {"embed": nrm((vocab, d)), "pos": nrm((seq, d)), "ln_f": jnp.ones((d,)), "layers": []}
    for _ in range(layers):
        p["layers"].append({"ln1": jnp.ones((d,)), "wqkv": nrm((d, 3 * d)), "wo": nrm((d, d)),
                            "ln2": jnp.ones((d,)), "w1": nrm((d, 4 * d)), "w2": nrm((4 * d, d))})
    return p


def _ln(x, g):
    x32 = x.astype(jnp.float32)
    m = x32.mean(-1, keepdims=True)
    v = ((x32 - m) ** 2).mean(-1, keepdims=True)
    return ((x32 - m) * jax.lax.rsqrt(v + 1e-5) * g).astype(x.dtype)


def forward(p, ids, heads, dtype):
    b, t = ids.shape
    c = lambda w: w.astype(dtype)
    x = (p["embed"][ids] + p["pos"][:t]).astype(dtype)
    for l in p["layers"]:
        h = _ln(x, l["ln1"])
        q, k, v = jnp.split(h @ c(l["wqkv"]), 3, axis=-1)
        sh = lambda z: z.reshape(b, t, heads, -1)
        a = jax.nn.dot_product_attention(sh(q), sh(k), sh(v), is_causal=True).reshape(b, t, -1)
        x = x + a @ c(l["wo"])
        h = _ln(x, l["ln2"])
        x = x + jax.nn.gelu(h @ c(l["w1"])) @ c(l["w2"])
    x = _ln(x, p["ln_f"])
    return (x @ c(p["embed"]).T).astype(jnp.float32)


def loss_fn(p, ids, heads, dtype):
    logits = forward(p, ids[:, :-1], heads, dtype)
    return optax.softmax_cross_entropy_with_integer_labels(logits, ids[:, 1:]).mean()


def make_step(opt, heads, dtype):
    """One training step: (params, opt_state, ids) -> (params, opt_state, loss). Not jitted here."""
    def step(p, s, ids):
        loss, g = jax.value_and_grad(loss_fn)(p, ids, heads, dtype)
        upd, s = opt.update(g, s, p)
        return optax.apply_updates(p, upd), s, loss
    return step


def device(args):
    """The JAX device for --device (cuda -> the first GPU)."""
    if args.device == "cpu":
        return jax.devices("cpu")[0]
    try:
        return jax.devices("gpu")[0]
    except RuntimeError:
        raise SystemExit("no GPU for JAX: run with --device cpu for a smoke test")
