"""Healthy control (plain JAX, offline reinforcement learning): a Decision Transformer (Chen et
al., NeurIPS 2021, kzl/decision-transformer gym/decision_transformer/models/decision_transformer.py)
trained on a D4RL hopper-medium-shaped dataset in plain JAX + optax: 1,000,000 transitions in
2,186 trajectories of varying length (11-dimensional states from smooth random dynamics,
3-dimensional actions in [-1, 1], rewards), made at start on the GPU and held there; states
normalized by the dataset's mean and standard deviation, returns-to-go per trajectory scaled by
1/1000, as the reference's experiment.py does. The model as the reference builds it (return,
state and action embeddings plus a timestep embedding of 1,000 steps, an embedding LayerNorm,
a GPT-2 stack without position embeddings over the interleaved (R, s, a) tokens, a tanh action
head on the state tokens), scaled from the paper's 3 layers of 128 to 6 pre-LayerNorm layers of
width 512 (8 heads of 64, feed-forward 2,048, GELU, dropout 0.1), context K = 20 steps (60
tokens), 19.4 M parameters; batch 1,024 windows (61,440 tokens) sampled inside the jitted step
(start transitions uniform over the dataset, so trajectories in proportion to their length, as
the reference samples them; positions past a trajectory's end masked from attention and loss),
action MSE, AdamW (lr 1e-4, weight decay 1e-4) with linear warm-up over 10,000 steps and
global-norm clipping at 0.25 as the reference's; parameters in float32, products in bf16 with
float32 accumulation, the layers as one jax.lax.scan, one jitted step with parameters and
optimizer state donated; the loss is read every 50 steps.

Estimated (not measured): ~7.5 TFLOP a step (6 x 19 M x 61,440 tokens, attention over 60 tokens
~0.5 TFLOP more), ~20-35 ms of GPU work in bf16 GEMMs of 61,440 x 512 x 512-2,048 with fused
epilogues, against ~0.1-0.2 ms of host time (one jitted call): GPU-bound, nothing to fix; ~10-14
GB of GPU memory (the feed-forward activations, ~0.5 GB a layer, and the scores kept for the
backward pass). XLA compiles the step in the first warm-up iteration (~10-30 s the first time
on a machine; the persistent compilation cache serves later runs).

--fix: nothing (control).

Written blind for the xray batch.
"""
import math

import cc  # before jax: cc sets JAX's compilation cache directory
import jax
import jax.numpy as jnp
import jaxlm
import optax

BF = jnp.bfloat16


def dense(key, n_in, n_out, scale=1.0):
    return jax.random.normal(key, (n_in, n_out), jnp.float32) * (0.02 * scale)


def init(key, d, layers, ffn, state_dim, act_dim, max_ep_len):
    ks = jax.random.split(key, 12)
    lk = jax.random.split(ks[0], 4)
    stack = lambda k, a, b, s=1.0: jax.vmap(lambda kk: dense(kk, a, b, s))(jax.random.split(k, layers))
    res = 1.0 / math.sqrt(2 * layers)   # GPT-2's scaled residual projections
    return {
        "t_emb": jax.random.normal(ks[1], (max_ep_len, d)) * 0.02,
        "r_w": dense(ks[2], 1, d), "r_b": jnp.zeros((d,)),
        "s_w": dense(ks[3], state_dim, d), "s_b": jnp.zeros((d,)),
        "a_w": dense(ks[4], act_dim, d), "a_b": jnp.zeros((d,)),
        "ln_e": {"g": jnp.ones((d,)), "b": jnp.zeros((d,))},
        "layers": {
            "ln1g": jnp.ones((layers, d)), "ln1b": jnp.zeros((layers, d)),
            "qkv": stack(lk[0], d, 3 * d), "qkvb": jnp.zeros((layers, 3 * d)),
            "o": stack(lk[1], d, d, res), "ob": jnp.zeros((layers, d)),
            "ln2g": jnp.ones((layers, d)), "ln2b": jnp.zeros((layers, d)),
            "f1": stack(lk[2], d, ffn), "f1b": jnp.zeros((layers, ffn)),
            "f2": stack(lk[3], ffn, d, res), "f2b": jnp.zeros((layers, d)),
        },
        "ln_f": {"g": jnp.ones((d,)), "b": jnp.zeros((d,))},
        "head_w": dense(ks[5], d, act_dim), "head_b": jnp.zeros((act_dim,)),
    }


def mm(x, w):
    return jnp.dot(x.astype(BF), w.astype(BF), preferred_element_type=jnp.float32)


def ln(x, g, b):
    mu = jnp.mean(x, -1, keepdims=True)
    var = jnp.mean(jnp.square(x - mu), -1, keepdims=True)
    return (x - mu) * jax.lax.rsqrt(var + 1e-5) * g + b


def dropout(key, x, p):
    return jnp.where(jax.random.bernoulli(key, 1.0 - p, x.shape), x / (1.0 - p), 0.0)


def make_dataset(key, n, n_traj, state_dim, act_dim):
    """hopper-medium-shaped transitions: trajectory ids and timesteps, states, actions, returns-to-go."""
    k = jax.random.split(key, 6)
    # trajectory lengths summing to n (hopper-medium's end at falls: 2,186 trajectories, ~457 steps each)
    w = jax.random.uniform(k[0], (n_traj,), minval=0.2, maxval=1.8)
    ends = jnp.round(jnp.cumsum(w) / jnp.sum(w) * n).astype(jnp.int32)
    starts = jnp.concatenate([jnp.zeros((1,), jnp.int32), ends[:-1]])
    traj = jnp.searchsorted(ends, jnp.arange(n), side="right").astype(jnp.int32)
    t = jnp.arange(n, dtype=jnp.int32) - starts[traj]
    # smooth states: low-frequency sinusoids per trajectory and dimension plus noise
    freq = jax.random.uniform(k[1], (n_traj, state_dim), minval=0.005, maxval=0.05)
    ph = jax.random.uniform(k[2], (n_traj, state_dim), maxval=2 * math.pi)
    states = jnp.sin(t[:, None] * freq[traj] + ph[traj]) + 0.05 * jax.random.normal(k[3], (n, state_dim))
    mix = jax.random.normal(k[4], (state_dim, act_dim)) / math.sqrt(state_dim)
    actions = jnp.tanh(states @ mix + 0.1 * jax.random.normal(k[5], (n, act_dim)))
    rewards = 3.0 + states[:, 5] - 0.1 * jnp.sum(actions ** 2, -1)
    # returns-to-go: the reverse cumulative sum of rewards inside each trajectory
    csum = jnp.cumsum(rewards)
    rtg = csum[ends[traj] - 1] - csum + rewards
    return {"traj": traj, "t": t, "s": states, "a": actions, "rtg": rtg}


def main():
    args = cc.parser(__doc__, warmup=5).parse_args()
    dev = jaxlm.device(args)
    if args.smoke:
        d, layers, heads, ffn, batch, n, n_traj = 64, 2, 4, 256, 32, 20_000, 40
    else:
        d, layers, heads, ffn, batch, n, n_traj = 512, 6, 8, 2048, 1024, 1_000_000, 2186
    state_dim, act_dim, K, max_ep_len, p_drop, scale = 11, 3, 20, 1000, 0.1, 1000.0
    hd = d // heads
    sched = optax.linear_schedule(1e-5, 1e-4, 10_000)
    tx = optax.chain(optax.clip_by_global_norm(0.25), optax.adamw(sched, weight_decay=1e-4))
    causal = jnp.tril(jnp.ones((3 * K, 3 * K), bool))

    def layer(carry, lp):
        x, mask, key = carry
        key, k1, k2 = jax.random.split(key, 3)
        b, T, _ = x.shape
        h = ln(x, lp["ln1g"], lp["ln1b"])
        q, kk, v = jnp.split((mm(h, lp["qkv"]) + lp["qkvb"]).astype(BF).reshape(b, T, 3, heads, hd), 3, axis=2)
        s = jnp.einsum("bqhd,bkhd->bhqk", q[:, :, 0], kk[:, :, 0], preferred_element_type=jnp.float32) / math.sqrt(hd)
        s = jnp.where(causal & mask[:, None, None, :], s, -1e30)
        a = jax.nn.softmax(s, -1).astype(BF)
        o = jnp.einsum("bhqk,bkhd->bqhd", a, v[:, :, 0], preferred_element_type=jnp.float32).reshape(b, T, d)
        x = x + dropout(k1, mm(o, lp["o"]) + lp["ob"], p_drop)
        h = ln(x, lp["ln2g"], lp["ln2b"])
        x = x + dropout(k2, mm(jax.nn.gelu(mm(h, lp["f1"]) + lp["f1b"]), lp["f2"]) + lp["f2b"], p_drop)
        return (x, mask, key), None

    def forward(p, s, a, r, t, valid, key):
        te = p["t_emb"][t]
        se = mm(s, p["s_w"]) + p["s_b"] + te
        ae = mm(a, p["a_w"]) + p["a_b"] + te
        re = mm(r[..., None], p["r_w"]) + p["r_b"] + te
        b = s.shape[0]
        x = jnp.stack([re, se, ae], 2).reshape(b, 3 * K, d)   # (R_1, s_1, a_1, R_2, ...)
        key, kd = jax.random.split(key)
        x = dropout(kd, ln(x, p["ln_e"]["g"], p["ln_e"]["b"]), p_drop)
        mask = jnp.repeat(valid, 3, axis=1)
        (x, _, _), _ = jax.lax.scan(layer, (x, mask, key), p["layers"])
        x = ln(x, p["ln_f"]["g"], p["ln_f"]["b"]).reshape(b, K, 3, d)
        return jnp.tanh(mm(x[:, :, 1], p["head_w"]) + p["head_b"])   # actions from the state tokens

    def train_step(p, o, key, data, s_mu, s_sd):
        key, ks, kf = jax.random.split(key, 3)
        start = jax.random.randint(ks, (batch,), 0, n)
        idx = start[:, None] + jnp.arange(K)[None, :]
        idx_c = jnp.minimum(idx, n - 1)
        valid = (idx < n) & (data["traj"][idx_c] == data["traj"][start][:, None])
        s = (data["s"][idx_c] - s_mu) / s_sd
        a = data["a"][idx_c]
        r = data["rtg"][idx_c] / scale
        t = data["t"][idx_c]
        s, a, r = (jnp.where(valid[..., None], z, 0.0) for z in (s, a, r[..., None]))
        r = r[..., 0]

        def loss_fn(p):
            pred = forward(p, s, a, r, t, valid, kf)
            err = jnp.sum(jnp.square(pred - a), -1)
            return jnp.sum(err * valid) / jnp.maximum(jnp.sum(valid) * act_dim, 1)

        loss, g = jax.value_and_grad(loss_fn)(p)
        u, o = tx.update(g, o, p)
        return optax.apply_updates(p, u), o, key, loss

    train_step = jax.jit(train_step, donate_argnums=(0, 1))
    with jax.default_device(dev):
        data = jax.jit(make_dataset, static_argnums=(1, 2, 3, 4))(jax.random.PRNGKey(7), n, n_traj, state_dim, act_dim)
        s_mu, s_sd = jnp.mean(data["s"], 0), jnp.std(data["s"], 0) + 1e-6
        params = init(jax.random.PRNGKey(0), d, layers, ffn, state_dim, act_dim, max_ep_len)
        opt_state = tx.init(params)
        key = jax.random.PRNGKey(1)
    n_params = sum(x.size for x in jax.tree_util.tree_leaves(params))
    st = {"p": params, "o": opt_state, "key": key, "loss": None, "reads": 0}

    def step(i):
        st["p"], st["o"], st["key"], loss = train_step(st["p"], st["o"], st["key"], data, s_mu, s_sd)
        if (i + 1) % 50 == 0:
            st["loss"] = round(float(jax.device_get(loss)), 5)
            st["reads"] += 1
        return loss

    cc.run("h_jax_decision_transformer_d4rl_bf16", args, step, batch,
           extra=lambda: {"params_m": round(n_params / 1e6, 1), "d_model": d, "layers": layers,
                          "context_steps": K, "tokens_per_step": batch * 3 * K, "transitions": n,
                          "loss": st["loss"], "loss_reads": st["reads"]})


if __name__ == "__main__":
    main()
