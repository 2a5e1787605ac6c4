"""C10 serial model structure (a linear recurrence stepped one position at a time, JAX): a
byte-level language model built from Linear Recurrent Units (Orvieto et al. 2023) in plain
JAX + optax, written from the paper's equations: 4 residual blocks, each an LRU branch
(LayerNorm, complex input projection B to a 512-state diagonal recurrence
x_t = lambda * x_{t-1} + gamma * B u_t with |lambda| in [0.9, 0.999], output Re(C x_t) + D u_t,
GELU, a GLU) and an MLP branch (LayerNorm, 1024 -> 4096 -> 1024, GELU), width 1024, byte
embeddings and a 256-way head (51 M parameters), bf16 matrix products, the recurrence in
complex64; batch 32 x 512 bytes made once on the device and cycled; AdamW with warm-up/cosine and
global-norm clipping in one jitted step, parameters and optimizer state donated; the
loss read every 50 steps. The recurrence is written the way it reads in the paper, with
jax.lax.scan over the 512 positions: inside the one jitted step XLA runs it as a loop of
512 iterations a layer forward and 512 backward (4,096 a step), each a few small
dependent kernels on a (32, 512) complex state, one after the other on one stream, while
the projections and MLPs around it are a few large GEMMs.

--fix: gpuwhy's C10 advice (replace the time loop with work over the whole sequence): the
same recurrence by jax.lax.associative_scan (a parallel prefix scan over the 512 positions,
about 2 log2(512) = 18 whole-sequence elementwise passes, as the paper's reference code
does); model, parameters, data and optimizer unchanged (both scans checked against each
other at start).

Written blind for the canyon batch.
"""
import math

import numpy as np

import cc  # before jax: cc sets JAX's compilation cache directory
import jax
import jax.numpy as jnp
import optax

import jaxlm

CDT = jnp.bfloat16


def init(key, vocab, d, state, layers, mlp, r_min=0.9, r_max=0.999):
    keys = iter(jax.random.split(key, 4 + 10 * layers))

    def dense(shape, fan_in):
        return jax.random.normal(next(keys), shape, jnp.float32) / math.sqrt(fan_in)

    p = {"embed": jax.random.normal(next(keys), (vocab, d), jnp.float32) * 0.02, "ln_f": jnp.ones((d,)),
         "head": dense((d, vocab), d), "layers": []}
    for _ in range(layers):
        u1 = jax.random.uniform(next(keys), (state,))
        u2 = jax.random.uniform(next(keys), (state,))
        nu_log = jnp.log(-0.5 * jnp.log(u1 * (r_max ** 2 - r_min ** 2) + r_min ** 2))
        theta_log = jnp.log(2 * math.pi * u2)
        lam_abs = jnp.exp(-jnp.exp(nu_log))
        p["layers"].append({
            "ln1": jnp.ones((d,)), "nu_log": nu_log, "theta_log": theta_log,
            "gamma_log": jnp.log(jnp.sqrt(1 - lam_abs ** 2)),
            "B": dense((d, 2 * state), 2 * d),  # real and imaginary parts side by side
            "C": dense((2 * state, d), state), "D": jax.random.normal(next(keys), (d,)),
            "glu": dense((d, 2 * d), d),
            "ln2": jnp.ones((d,)), "w1": dense((d, mlp), d), "w2": dense((mlp, d), mlp)})
    return p


def layer_norm(x, g):
    x32 = x.astype(jnp.float32)
    m = x32.mean(-1, keepdims=True)
    v = ((x32 - m) ** 2).mean(-1, keepdims=True)
    return ((x32 - m) * jax.lax.rsqrt(v + 1e-5) * g).astype(CDT)


def scan_sequential(lam, bu):
    """x_t = lam * x_{t-1} + bu_t over axis 1, one position after the other."""
    def cell(x, b_t):
        x = lam * x + b_t
        return x, x
    _, xs = jax.lax.scan(cell, jnp.zeros_like(bu[:, 0]), bu.swapaxes(0, 1))  # gpuwhy: plants C10 (512 dependent steps)
    return xs.swapaxes(0, 1)


def scan_parallel(lam, bu):
    """The same recurrence as a parallel prefix scan: (a1, b1) o (a2, b2) = (a1 a2, a2 b1 + b2)."""
    def combine(e1, e2):
        a1, b1 = e1
        a2, b2 = e2
        return a1 * a2, a2 * b1 + b2
    a = jnp.broadcast_to(lam, bu.shape)
    return jax.lax.associative_scan(combine, (a, bu), axis=1)[1]


def make_forward(scan, state):
    def lru(lp, u):  # u (B, T, d) bf16
        lam = jnp.exp(-jnp.exp(lp["nu_log"]) + 1j * jnp.exp(lp["theta_log"]))
        bu = (u @ lp["B"].astype(CDT)).astype(jnp.float32)
        bu = jax.lax.complex(bu[..., :state], bu[..., state:]) * jnp.exp(lp["gamma_log"])
        xs = scan(lam, bu)
        y = jnp.concatenate([xs.real, -xs.imag], -1).astype(CDT) @ lp["C"].astype(CDT)  # Re(C x)
        return y + u * lp["D"].astype(CDT)

    def forward(p, ids):
        x = p["embed"][ids].astype(CDT)
        for lp in p["layers"]:
            y = jax.nn.gelu(lru(lp, layer_norm(x, lp["ln1"])))
            a, g = jnp.split(y @ lp["glu"].astype(CDT), 2, axis=-1)
            x = x + a * jax.nn.sigmoid(g)
            h = layer_norm(x, lp["ln2"])
            x = x + jax.nn.gelu(h @ lp["w1"].astype(CDT)) @ lp["w2"].astype(CDT)
        return (layer_norm(x, p["ln_f"]) @ p["head"].astype(CDT)).astype(jnp.float32)

    return forward


def main():
    args = cc.parser(__doc__).parse_args()
    dev = jaxlm.device(args)
    vocab, d, state, layers, mlp, batch, seq = \
        (256, 32, 16, 2, 64, 2, 33) if args.smoke else (256, 1024, 512, 4, 4096, 32, 513)
    forward = make_forward(scan_parallel if args.fix else scan_sequential, state)

    def loss_fn(p, ids):
        logits = forward(p, ids[:, :-1])
        return optax.softmax_cross_entropy_with_integer_labels(logits, ids[:, 1:]).mean()

    sched = optax.warmup_cosine_decay_schedule(0.0, 1e-3, 500, 100_000, end_value=1e-5)
    opt = optax.chain(optax.clip_by_global_norm(1.0), optax.adamw(sched, b1=0.9, b2=0.99, weight_decay=0.05))

    def train_step(p, s, ids):
        loss, grads = jax.value_and_grad(loss_fn)(p, ids)
        upd, s = opt.update(grads, s, p)
        return optax.apply_updates(p, upd), s, loss

    with jax.default_device(dev):
        params = init(jax.random.PRNGKey(0), vocab, d, state, layers, mlp)
        s0 = opt.init(params)
        # printable bytes (the data pipeline is not what is measured)
        data = [jax.random.randint(jax.random.PRNGKey(10 + k), (batch, seq), 32, 127, jnp.int32) for k in range(4)]
        # both scans against each other once (a small slice), outside the timed part
        lam = jnp.exp(-jnp.exp(params["layers"][0]["nu_log"]) + 1j * jnp.exp(params["layers"][0]["theta_log"]))
        bu = jax.lax.complex(jax.random.normal(jax.random.PRNGKey(1), (2, seq - 1, state)),
                             jax.random.normal(jax.random.PRNGKey(2), (2, seq - 1, state)))
        ref, par = jax.jit(scan_sequential)(lam, bu), jax.jit(scan_parallel)(lam, bu)
        err = float(jnp.abs(ref - par).max() / jnp.abs(ref).max())
    if err > 1e-3:
        raise SystemExit(f"the parallel scan disagrees with the sequential one: relative error {err}")
    n_params = sum(x.size for x in jax.tree_util.tree_leaves(params))
    train_step = jax.jit(train_step, donate_argnums=(0, 1))
    st = {"p": params, "s": s0}
    del params, s0
    losses = []
    log = {"loss": None, "reads": 0}

    def step(i):
        st["p"], st["s"], loss = train_step(st["p"], st["s"], data[i % len(data)])
        losses.append(loss)
        if len(losses) == 50:
            log["loss"] = float(np.mean(jax.device_get(losses)))
            log["reads"] += 1
            losses.clear()
        return loss

    cc.run("c10_jax_lru_sequential_scan", args, step, batch,
           extra=lambda: {"scan": "associative_scan" if args.fix else "lax.scan", "seq": seq - 1, "state": state,
                          "params_m": round(n_params / 1e6, 1), "scan_check_rel_err": round(err, 7),
                          "loss_reads": log["reads"], "jax": jax.__version__})


if __name__ == "__main__":
    main()
