"""Healthy control (JAX, a neural ODE integrated under lax.scan): a continuous-depth classifier
in plain JAX + optax over 1024-d embedding vectors (a dense encoder to a 1024-d state, an ODE
dz/dt = f(z, t) whose vector field is an MLP 1024 -> 4096 -> 1024 with SiLU and the time fed
to its hidden layer, integrated from t=0 to 1 by classical RK4 with 8 fixed steps, then
LayerNorm and a 1000-class head; 10.5 M parameters kept in float32, every matrix product in
bfloat16). The time loop is a jax.lax.scan inside one jax.jit that also holds the backward
pass through the solver (discretize-then-optimize), global-norm clipping and AdamW with
params and optimizer state donated: the loop is serial, but each of its 32 vector-field
evaluations is two 4096 x 1024 x 4096 matrix products (34 GFLOP each), about 6.6 TFLOP a
step forward and backward. Batches of 4096 embeddings (class means plus noise) and labels are
made once on the device and cycled; the losses stay on the device and are fetched once
every 100 steps.

--fix: nothing (control).

Written blind for the ridge batch.
"""
import math

import numpy as np

import cc
import jaxlm


def main():
    args = cc.parser(__doc__).parse_args()
    import jax
    import jax.numpy as jnp
    import optax

    dev = jaxlm.device(args)
    d_in, d, hidden, classes, batch, rk_steps = (32, 32, 64, 10, 16, 2) if args.smoke else (1024, 1024, 4096, 1000, 4096, 8)
    cdt = jnp.bfloat16

    def init(key):
        k = iter(jax.random.split(key, 8))
        dense = lambda a, b: jax.random.normal(next(k), (a, b), jnp.float32) / math.sqrt(a)  # noqa: E731
        return {"enc_w": dense(d_in, d), "enc_b": jnp.zeros((d,)),
                "f_w1": dense(d, hidden), "f_b1": jnp.zeros((hidden,)), "f_wt": jnp.zeros((hidden,)),
                "f_w2": dense(hidden, d) * 0.1, "f_b2": jnp.zeros((d,)),
                "ln_g": jnp.ones((d,)), "ln_b": jnp.zeros((d,)),
                "head_w": jnp.zeros((d, classes)), "head_b": jnp.zeros((classes,))}

    def field(p, z, t):
        c = lambda w: w.astype(cdt)  # noqa: E731
        h = jax.nn.silu(z @ c(p["f_w1"]) + c(p["f_b1"]) + t * c(p["f_wt"]))
        return h @ c(p["f_w2"]) + c(p["f_b2"])

    def rk4(p, z):
        dt = 1.0 / rk_steps

        def body(z, t):
            k1 = field(p, z, t)
            k2 = field(p, z + (0.5 * dt) * k1, t + 0.5 * dt)
            k3 = field(p, z + (0.5 * dt) * k2, t + 0.5 * dt)
            k4 = field(p, z + dt * k3, t + dt)
            return z + (dt / 6) * (k1 + 2 * k2 + 2 * k3 + k4), None

        z, _ = jax.lax.scan(body, z, jnp.arange(rk_steps, dtype=cdt) * dt)
        return z

    def loss_fn(p, x, y):
        z = (x.astype(cdt) @ p["enc_w"].astype(cdt) + p["enc_b"].astype(cdt))
        z = rk4(p, z).astype(jnp.float32)
        m = z.mean(-1, keepdims=True)
        v = ((z - m) ** 2).mean(-1, keepdims=True)
        z = (z - m) * jax.lax.rsqrt(v + 1e-5) * p["ln_g"] + p["ln_b"]
        logits = z @ p["head_w"] + p["head_b"]
        return optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()

    sched = optax.warmup_cosine_decay_schedule(0.0, 1e-3, 200, 50_000, end_value=1e-5)
    opt = optax.chain(optax.clip_by_global_norm(1.0), optax.adamw(sched, weight_decay=0.01))

    def train_step(p, s, x, y):
        loss, g = jax.value_and_grad(loss_fn)(p, x, y)
        upd, s = opt.update(g, s, p)
        return optax.apply_updates(p, upd), s, loss

    train_step = jax.jit(train_step, donate_argnums=(0, 1))
    with jax.default_device(dev):
        params = init(jax.random.PRNGKey(0))
        state = opt.init(params)
        means = jax.random.normal(jax.random.PRNGKey(1), (classes, d_in))
        data = []
        for k in range(4):
            y = jax.random.randint(jax.random.PRNGKey(10 + k), (batch,), 0, classes)
            x = (means[y] + 2.0 * jax.random.normal(jax.random.PRNGKey(20 + k), (batch, d_in))).astype(cdt)
            data.append((x, y))
    losses = []
    log = {"loss": None, "reads": 0}

    def step(i):
        nonlocal params, state
        params, state, loss = train_step(params, state, *data[i % len(data)])
        losses.append(loss)
        if len(losses) == 100:
            log["loss"] = float(np.mean(jax.device_get(losses)))
            log["reads"] += 1
            losses.clear()
        return loss

    cc.run("h_jax_neural_ode_scan", args, step, batch,
           extra=lambda: {"rk4_steps": rk_steps, "field_evals": 4 * rk_steps,
                          "tflop_per_step": round(3 * 4 * rk_steps * 2 * 2 * batch * d * hidden / 1e12, 2),
                          "loss_reads": log["reads"]})


if __name__ == "__main__":
    main()
