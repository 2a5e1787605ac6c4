"""C3 work too small for the GPU (JAX, a physics-informed neural network at the example's point
counts): DeepXDE's forward Burgers example (examples/pinn_forward/Burgers.py) ported to plain
JAX + optax, the way PINN codes are written there: u(x, t) on x in [-1, 1], t in [0, 0.99],
the residual u_t + u u_x - (0.01 / pi) u_xx, u(-1, t) = u(1, t) = 0 and u(x, 0) =
-sin(pi x); the example's network (2 -> 20 -> 20 -> 20 -> 1, tanh, Glorot normal) and its
point counts, num_domain=2540, num_boundary=80, num_initial=160, here drawn afresh on the
device every step (DeepXDE's PDEPointResampler with period 1); u_t, u_x and u_xx by
jax.grad of the scalar network (nested for u_xx) under jax.vmap over the points; the mean
squared residual plus the boundary and initial terms; Adam (lr 1e-3) from optax; the
sampling, derivatives, loss, gradient and update in one jax.jit with the parameters, the
optimizer state and the PRNG key donated and carried on the device. The loss is read every
100 steps.

Each step is ~100-200 XLA kernels on 2,780 points (activations of 2,780 x 20: tens of
thread blocks, a few microseconds each, far fewer blocks than the GPU's 132 SMs hold): the
GPU runs one tiny kernel after another and is never given enough work at once.

--fix: gpuwhy's C3 advice (raise the batch size): 32 times the point counts a step
(cc.fix_batch(32) sets of the example's 2,540 / 80 / 160 points: 88,960 points), the same
network, equations, loss weights, sampling distribution and optimizer; the throughput is per
collocation point.

Written blind for the papa batch.
"""
import math

import numpy as np

import cc  # before jax: cc sets JAX's compilation cache directory
import jax
import jax.numpy as jnp
import jaxlm
import optax

NU = 0.01 / math.pi
N_DOMAIN, N_BOUNDARY, N_INITIAL = 2540, 80, 160


def init(key, widths):
    """Glorot normal weights, zero biases (DeepXDE's "Glorot normal" initializer)."""
    ks = jax.random.split(key, len(widths))
    return [{"w": jax.random.normal(k, (a, b), jnp.float32) * math.sqrt(2.0 / (a + b)), "b": jnp.zeros((b,), jnp.float32)}
            for k, a, b in zip(ks, widths[:-1], widths[1:])]


def net(p, x, t):
    """The scalar network u(x, t)."""
    h = jnp.stack([x, t])
    for layer in p[:-1]:
        h = jnp.tanh(h @ layer["w"] + layer["b"])
    return (h @ p[-1]["w"] + p[-1]["b"])[0]


def residual(p, x, t):
    u = net(p, x, t)
    u_x = jax.grad(net, argnums=1)(p, x, t)
    u_t = jax.grad(net, argnums=2)(p, x, t)
    u_xx = jax.grad(jax.grad(net, argnums=1), argnums=1)(p, x, t)
    return u_t + u * u_x - NU * u_xx


def loss_fn(p, key, k):
    """The PDE, boundary and initial losses on k sets of the example's points, drawn with key."""
    kd, kb, ks, ki = jax.random.split(key, 4)
    xd = jax.random.uniform(kd, (2, k * N_DOMAIN), minval=jnp.array([[-1.0], [0.0]]), maxval=jnp.array([[1.0], [0.99]]))
    tb = jax.random.uniform(kb, (k * N_BOUNDARY,), maxval=0.99)
    xb = jnp.where(jax.random.bernoulli(ks, 0.5, (k * N_BOUNDARY,)), 1.0, -1.0)
    xi = jax.random.uniform(ki, (k * N_INITIAL,), minval=-1.0, maxval=1.0)
    r = jax.vmap(residual, in_axes=(None, 0, 0))(p, xd[0], xd[1])
    ub = jax.vmap(net, in_axes=(None, 0, 0))(p, xb, tb)
    ui = jax.vmap(net, in_axes=(None, 0, 0))(p, xi, jnp.zeros_like(xi))
    return jnp.mean(r ** 2) + jnp.mean(ub ** 2) + jnp.mean((ui + jnp.sin(math.pi * xi)) ** 2)


def main():
    args = cc.parser(__doc__, warmup=20).parse_args()
    dev = jaxlm.device(args)
    widths = [2, 20, 20, 20, 1]
    k = cc.fix_batch(4 if args.smoke else 32) if args.fix else 1  # gpuwhy: plants C3 (the example's 2,780 points a step: ~100-200 kernels of a few thousand rows each)
    points = k * (N_DOMAIN + N_BOUNDARY + N_INITIAL)
    opt = optax.adam(1e-3)

    def train_step(p, s, key):
        key, sub = jax.random.split(key)
        loss, g = jax.value_and_grad(loss_fn)(p, sub, k)
        upd, s = opt.update(g, s, p)
        return optax.apply_updates(p, upd), s, key, loss

    train_step = jax.jit(train_step, donate_argnums=(0, 1, 2))
    with jax.default_device(dev):
        params = init(jax.random.PRNGKey(0), widths)
        state = opt.init(params)
        key = jax.random.PRNGKey(1)
        first = float(jax.jit(loss_fn, static_argnums=2)(params, key, k))
    st = {"p": params, "s": state, "key": key, "acc": [], "loss": None, "reads": 0}

    def step(i):
        st["p"], st["s"], st["key"], loss = train_step(st["p"], st["s"], st["key"])
        st["acc"].append(loss)
        if len(st["acc"]) == 100:
            st["loss"] = float(np.mean(jax.device_get(st["acc"])))
            st["acc"].clear()
            st["reads"] += 1
        return loss

    cc.run("c3_jax_pinn_burgers_collocation", args, step, points,
           extra=lambda: {"point_sets": k, "points_per_step": points, "widths": widths, "first_loss": first,
                          "loss": st["loss"], "loss_reads": st["reads"]})


if __name__ == "__main__":
    main()
