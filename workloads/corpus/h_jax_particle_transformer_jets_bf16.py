"""Healthy control (plain JAX, particle physics): jet tagging in the JetClass setting with the
Particle Transformer (ParT, Qu, Li and Qian 2022) in plain JAX + optax: up to 128 particles a
jet with the 17 per-particle features of the full JetClass input set (relative eta and phi,
log pT and E and their fractions of the jet's, delta R, charge, particle-ID flags, track
impact parameters), the 4 pairwise features computed inside the step from the particles'
four-vectors as ParT's pairwise_lv_fts does (ln delta, ln kT, ln z, ln m^2, over the
8,128 lower-triangle pairs, mirrored), ParT's particle embedding (input BatchNorm, then
LayerNorm, Linear and GELU to widths 128, 512, 128) and pair embedding (BatchNorm, 1 x 1
convolutions 4 -> 64 -> 64 -> 64 with BatchNorm and GELU, -> 8 heads) added to the attention
logits, 8 particle-attention blocks (width 128, 8 heads, FFN 512, ParT's extra LayerNorms
after the attention and the FFN's activation, dropout 0.1, padded particles masked), 2
class-attention blocks with a class token and the 10-class head (2.14 M parameters);
cross-entropy, Lookahead (k 6, alpha 0.5) over RAdam (lr 1e-3) as ParT trains, bf16 matrix
products with float32 parameters, BatchNorm running statistics carried in the jitted step's
state, all in one jax.jit with parameters, optimizer and BatchNorm state donated; batch 256
jets (half of ParT's 512, to stay within a few GB) drawn on the device from 32,768 synthetic
jets of the 10 JetClass classes made there at start (1-4 prongs by class, 30-128 particles
around the prong axes); the loss stays on the device and is fetched every 50 steps.

About 0.6 TFLOP a step (XLA's cost analysis), much of its time memory traffic: the pair
embedding over 2.1 M pairs and the 256 x 8 x 128 x 128 attention logits with their pair bias
in each of the 8 blocks, ~10-20 ms of GPU work against well under 1 ms of host time (one
jitted call): GPU-bound, nothing to fix. XLA compiles the step in the first warm-up iteration
(the persistent compilation cache serves later runs).

--fix: nothing (control).

Written blind for the sierra batch.
"""
import math

import numpy as np

import cc  # before jax: cc sets JAX's compilation cache directory
import jax
import jax.numpy as jnp
import jaxlm
import optax

N_CLASSES, N_FEAT, N_PAIR_FEAT = 10, 17, 4
PRONGS = np.array([1, 2, 2, 2, 4, 3, 2, 2, 3, 2])     # QCD, H->bb, cc, gg, 4q, lvqq, Z->qq, W->qq, t->bqq, t->blv


def dense(key, cin, cout, scale=None):
    s = scale if scale is not None else 1 / math.sqrt(cin)
    return {"w": jax.random.normal(key, (cin, cout), jnp.float32) * s, "b": jnp.zeros((cout,), jnp.float32)}


def ln_p(d):
    return {"g": jnp.ones((d,), jnp.float32), "b": jnp.zeros((d,), jnp.float32)}


def init(key, d, heads, ff, n_blocks, n_cls_blocks, embed=(128, 512, 128), pair=(64, 64, 64)):
    ks = iter(jax.random.split(key, 256))
    p = {"embed": [], "pair": [], "blocks": [], "cls_blocks": [], "cls": jax.random.normal(next(ks), (1, 1, d)) * 0.02}
    cin = N_FEAT
    for e in embed:
        p["embed"].append({"ln": ln_p(cin), "fc": dense(next(ks), cin, e)})
        cin = e
    cin = N_PAIR_FEAT
    for e in pair + (heads,):
        p["pair"].append({"fc": dense(next(ks), cin, e), "bn": ln_p(e)})
        cin = e
    for blocks, n in (("blocks", n_blocks), ("cls_blocks", n_cls_blocks)):
        for _ in range(n):
            p[blocks].append({"ln1": ln_p(d), "qkv": dense(next(ks), d, 3 * d), "proj": dense(next(ks), d, d),
                              "ln_post": ln_p(d), "ln2": ln_p(d), "fc1": dense(next(ks), d, ff),
                              "ln_act": ln_p(ff), "fc2": dense(next(ks), ff, d)})
    p["head"] = {"ln": ln_p(d), "fc": dense(next(ks), d, N_CLASSES)}
    bn = {"in": {"mean": jnp.zeros((N_FEAT,)), "var": jnp.ones((N_FEAT,))},
          "pair_in": {"mean": jnp.zeros((N_PAIR_FEAT,)), "var": jnp.ones((N_PAIR_FEAT,))},
          "pair": [{"mean": jnp.zeros((e,)), "var": jnp.ones((e,))} for e in pair + (heads,)]}
    return p, bn


def layer_norm(x, p, eps=1e-5):
    x32 = x.astype(jnp.float32)
    m = x32.mean(-1, keepdims=True)
    v = ((x32 - m) ** 2).mean(-1, keepdims=True)
    return (x32 - m) * jax.lax.rsqrt(v + eps) * p["g"] + p["b"]


def batch_norm(x, w, stats, affine=None, momentum=0.1, eps=1e-5):
    """BatchNorm in training mode over the valid rows (weights w), with running statistics."""
    axes = tuple(range(x.ndim - 1))
    n = jnp.maximum(w.sum(), 1.0)
    x32 = x.astype(jnp.float32)
    mean = (x32 * w[..., None]).sum(axes) / n                       # statistics in float32
    var = (((x32 - mean) ** 2) * w[..., None]).sum(axes) / n
    new = {"mean": (1 - momentum) * stats["mean"] + momentum * jax.lax.stop_gradient(mean),
           "var": (1 - momentum) * stats["var"] + momentum * jax.lax.stop_gradient(var)}
    scale = jax.lax.rsqrt(var + eps)
    shift = -mean * scale
    if affine is not None:
        scale, shift = scale * affine["g"], shift * affine["g"] + affine["b"]
    return (x * scale.astype(x.dtype) + shift.astype(x.dtype)), new      # in the input's dtype


def pair_features(p4, mask):
    """ParT's pairwise_lv_fts on the lower-triangle pairs: ln delta, ln kT, ln z, ln m^2."""
    n = p4.shape[1]
    i, j = np.tril_indices(n, -1)
    a, b = p4[:, i], p4[:, j]                                                 # (B, P, 4): px py pz E
    pt = lambda v: jnp.sqrt(v[..., 0] ** 2 + v[..., 1] ** 2 + 1e-8)            # noqa: E731
    rap = lambda v: 0.5 * jnp.log((v[..., 3] + v[..., 2] + 1e-8) / (v[..., 3] - v[..., 2] + 1e-8))   # noqa: E731
    phi = lambda v: jnp.arctan2(v[..., 1], v[..., 0])                          # noqa: E731
    pta, ptb = pt(a), pt(b)
    dphi = (phi(a) - phi(b) + math.pi) % (2 * math.pi) - math.pi
    delta = jnp.sqrt((rap(a) - rap(b)) ** 2 + dphi ** 2 + 1e-8)
    ptmin = jnp.minimum(pta, ptb)
    s = a + b
    m2 = jnp.maximum(s[..., 3] ** 2 - s[..., 0] ** 2 - s[..., 1] ** 2 - s[..., 2] ** 2, 1e-8)
    fts = jnp.stack([jnp.log(delta), jnp.log(ptmin * delta + 1e-8), jnp.log(ptmin / (pta + ptb + 1e-8) + 1e-8),
                     jnp.log(m2)], -1)
    valid = (mask[:, i] & mask[:, j]).astype(jnp.float32)
    return fts, valid, (i, j)


def make_forward(heads, cdt, train):
    def attn_block(w, x, kv, bias, key, rate):
        b, t, d = x.shape
        c = lambda a: a.astype(cdt)                                            # noqa: E731
        hd = d // heads
        h = c(layer_norm(x, w["ln1"]))
        hk = c(layer_norm(kv, w["ln1"]))
        qkv_w, qkv_b = c(w["qkv"]["w"]), c(w["qkv"]["b"])
        q = (h @ qkv_w[:, :d] + qkv_b[:d]).reshape(b, t, heads, hd)
        k = (hk @ qkv_w[:, d:2 * d] + qkv_b[d:2 * d]).reshape(b, -1, heads, hd)
        v = (hk @ qkv_w[:, 2 * d:] + qkv_b[2 * d:]).reshape(b, -1, heads, hd)
        a = jax.nn.dot_product_attention(q, k, v, bias=bias).reshape(b, t, d)
        a = c(layer_norm(a @ c(w["proj"]["w"]) + c(w["proj"]["b"]), w["ln_post"]))
        k1, k2 = jax.random.split(key)
        if train:
            a = a * (jax.random.uniform(k1, a.shape) >= rate) / (1 - rate)
        x = x + a.astype(jnp.float32)
        h = c(layer_norm(x, w["ln2"]))
        h = c(layer_norm(jax.nn.gelu(h @ c(w["fc1"]["w"]) + c(w["fc1"]["b"])), w["ln_act"]))
        if train:
            h = h * (jax.random.uniform(k2, h.shape) >= rate) / (1 - rate)
        return x + (h @ c(w["fc2"]["w"]) + c(w["fc2"]["b"])).astype(jnp.float32)

    def forward(p, bn, feats, p4, mask, key):
        b, t, _ = feats.shape
        c = lambda a: a.astype(cdt)                                            # noqa: E731
        mf = mask.astype(jnp.float32)
        new_bn = {"pair": []}
        x, new_bn["in"] = batch_norm(feats, mf, bn["in"])
        for e in p["embed"]:
            x = jax.nn.gelu(c(layer_norm(x, e["ln"])) @ c(e["fc"]["w"]) + c(e["fc"]["b"]))
        x = x.astype(jnp.float32) * mf[..., None]
        # pair embedding over the lower-triangle pairs, mirrored into a (B, H, T, T) bias
        u, pv, (i, j) = pair_features(p4, mask)
        u, new_bn["pair_in"] = batch_norm(u, pv, bn["pair_in"])
        for k, e in enumerate(p["pair"]):
            u = c(u) @ c(e["fc"]["w"]) + c(e["fc"]["b"])
            u, s = batch_norm(u, pv, bn["pair"][k], affine=e["bn"])
            new_bn["pair"].append(s)
            if k < len(p["pair"]) - 1:
                u = jax.nn.gelu(u)
        u = c(u)
        bias = jnp.zeros((b, t, t, u.shape[-1]), cdt).at[:, i, j].set(u).at[:, j, i].set(u)
        neg = jnp.asarray(-1e4, cdt)
        bias = jnp.where(mask[:, None, :, None], bias, neg).transpose(0, 3, 1, 2)      # keys masked
        keys = jax.random.split(key, len(p["blocks"]) + len(p["cls_blocks"]))
        for k, w in enumerate(p["blocks"]):
            x = attn_block(w, x, x, bias, keys[k], 0.1)
        cls = jnp.broadcast_to(p["cls"], (b, 1, x.shape[-1]))
        cmask = jnp.concatenate([jnp.ones((b, 1), bool), mask], 1)
        cbias = jnp.where(cmask[:, None, None, :], jnp.asarray(0, cdt), neg)
        for k, w in enumerate(p["cls_blocks"]):
            cls = attn_block(w, cls, jnp.concatenate([cls, x], 1), cbias, keys[len(p["blocks"]) + k], 0.0)
        h = c(layer_norm(cls[:, 0], p["head"]["ln"]))
        return (h @ c(p["head"]["fc"]["w"]) + c(p["head"]["fc"]["b"])).astype(jnp.float32), new_bn
    return forward


def make_jets(key, n, t):
    """n synthetic jets of the 10 classes: 1-4 prongs by class, 30-t particles around the prong
    axes; returns the 17 features, the four-vectors, the valid mask and the labels."""
    ks = jax.random.split(key, 12)
    label = jax.random.randint(ks[0], (n,), 0, N_CLASSES)
    prongs = jnp.asarray(PRONGS)[label]
    mult = jax.random.randint(ks[1], (n,), 30, t + 1)
    mask = jnp.arange(t)[None] < mult[:, None]
    axis_eta = jax.random.normal(ks[2], (n, 4)) * 0.25 * (jnp.arange(4)[None] < prongs[:, None])
    axis_phi = jax.random.normal(ks[3], (n, 4)) * 0.25 * (jnp.arange(4)[None] < prongs[:, None])
    which = jax.random.randint(ks[4], (n, t), 0, 4) % prongs[:, None]
    spread = 0.02 + 0.08 * (label == 0)[:, None]                                # QCD jets wider
    eta = jnp.take_along_axis(axis_eta, which, 1) + jax.random.normal(ks[5], (n, t)) * spread
    phi = jnp.take_along_axis(axis_phi, which, 1) + jax.random.normal(ks[6], (n, t)) * spread
    jet_pt = 500 + 500 * jax.random.uniform(ks[7], (n, 1))
    frac = jax.random.exponential(ks[8], (n, t)) * mask
    pt = jet_pt * frac / frac.sum(1, keepdims=True) + 1e-3
    px, py, pz = pt * jnp.cos(phi), pt * jnp.sin(phi), pt * jnp.sinh(eta)
    e = pt * jnp.cosh(eta)
    p4 = jnp.stack([px, py, pz, e], -1) * mask[..., None]
    jet_e = e.sum(1, keepdims=True)
    pid = jax.nn.one_hot(jax.random.randint(ks[9], (n, t), 0, 5), 5)
    charge = jnp.where(pid[..., 0] + pid[..., 3] + pid[..., 4] > 0, jnp.sign(jax.random.normal(ks[10], (n, t))), 0.0)
    d0 = jax.random.normal(ks[11], (n, t)) * (0.01 + 0.05 * jnp.isin(label, jnp.array([1, 2, 8, 9]))[:, None])
    dr = jnp.sqrt(eta ** 2 + phi ** 2)
    feats = jnp.concatenate([jnp.stack([eta, phi, jnp.log(pt), jnp.log(e), jnp.log(pt / jet_pt), jnp.log(e / jet_e), dr,
                                        charge], -1), pid,
                             jnp.stack([jnp.tanh(d0), jnp.abs(d0) * 0.1 + 0.01, jnp.tanh(d0 * 0.7), jnp.abs(d0) * 0.1 + 0.01], -1)],
                            -1) * mask[..., None]
    return feats.astype(jnp.float32), p4.astype(jnp.float32), mask, label


def main():
    args = cc.parser(__doc__, warmup=5).parse_args()
    dev = jaxlm.device(args)
    if args.smoke:
        d, heads, ff, n_blocks, n_cls, batch, t, n_jets, embed, pair = 32, 4, 64, 2, 1, 16, 32, 256, (32, 64, 32), (16, 16, 16)
    else:
        d, heads, ff, n_blocks, n_cls, batch, t, n_jets, embed, pair = 128, 8, 512, 8, 2, 256, 128, 32_768, (128, 512, 128), (64, 64, 64)
    cdt = jnp.bfloat16
    forward = make_forward(heads, cdt, train=True)
    tx = optax.lookahead(optax.radam(1e-3), sync_period=6, slow_step_size=0.5)

    def train_step(lp, o, bn, data, key):
        feats_all, p4_all, mask_all, label_all = data
        k1, k2 = jax.random.split(key)
        idx = jax.random.randint(k1, (batch,), 0, feats_all.shape[0])
        feats, p4, mask, label = feats_all[idx], p4_all[idx], mask_all[idx], label_all[idx]

        def loss_fn(p):
            logits, new_bn = forward(p, bn, feats, p4, mask, k2)
            return optax.softmax_cross_entropy_with_integer_labels(logits, label).mean(), new_bn

        (loss, new_bn), g = jax.value_and_grad(loss_fn, has_aux=True)(lp.fast)
        u, o = tx.update(g, o, lp)                       # gradients of the fast weights
        return optax.apply_updates(lp, u), o, new_bn, loss

    train_step = jax.jit(train_step, donate_argnums=(0, 1, 2))
    with jax.default_device(dev):
        params, bn = init(jax.random.PRNGKey(0), d, heads, ff, n_blocks, n_cls, embed, pair)
        lp = optax.LookaheadParams(params, jax.tree_util.tree_map(lambda a: a.copy(), params))   # fast, slow
        opt_state = tx.init(lp)
        data = make_jets(jax.random.PRNGKey(1), n_jets, t)
        keys = jax.random.split(jax.random.PRNGKey(2), 100_000)
    n_params = sum(a.size for a in jax.tree_util.tree_leaves(params))
    st = {"p": lp, "o": opt_state, "bn": bn, "acc": [], "loss": None, "reads": 0}

    def step(i):
        st["p"], st["o"], st["bn"], loss = train_step(st["p"], st["o"], st["bn"], data, keys[i % keys.shape[0]])
        st["acc"].append(loss)
        if len(st["acc"]) == 50:
            st["loss"] = float(np.mean(jax.device_get(st["acc"])))
            st["acc"].clear()
            st["reads"] += 1
        return loss

    cc.run("h_jax_particle_transformer_jets_bf16", args, step, batch,
           extra=lambda: {"params_m": round(n_params / 1e6, 2), "particles": t, "pairs_per_jet": t * (t - 1) // 2,
                          "loss": st["loss"], "loss_reads": st["reads"]})


if __name__ == "__main__":
    main()
