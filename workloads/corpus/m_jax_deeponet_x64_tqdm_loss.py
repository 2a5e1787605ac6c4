"""C8 + C9 (float64 everywhere from a leftover jax_enable_x64, and the loss read every step for a
progress bar): operator learning with a DeepONet in plain JAX + optax for the 1D heat equation
u_t = nu u_xx on [0, 1] with zero boundary values: the branch net (100 sensor values of the
initial condition -> 3 tanh layers of 768 -> 256) and the trunk net (a query point (x, t) -> 4
tanh layers of 768 -> 256) combined by a dot product over the 256 basis terms, mean squared
error, Adam. Each step draws 64 random initial conditions (8 sine modes, amplitudes ~ N(0, 1/k))
and 2,048 random query points per function on the host in NumPy, with the exact solution
(each mode decays as exp(-nu k^2 pi^2 t)) as the target: the trunk net runs on 131,072 points a
step, one jax.jit (value_and_grad and the Adam update, parameters and optimizer state donated).

Two habits of the notebook the script came from:
- its first cell turns on jax.config.update("jax_enable_x64", True), needed once to check a
  spectral reference solver in double precision and never turned off: the parameters
  (jax.random.normal's default dtype), the NumPy batches and every matrix product are float64,
  cuBLAS DGEMMs on the FP64 units where float32/bf16 tensor-core GEMMs would do (C8);
- a tqdm progress bar shows the loss each step, set_postfix(loss=f"{float(loss):.3e}"): the
  host waits for every step to finish before it draws the next batch, so the ~20 ms of NumPy
  batch generation never overlaps the GPU's work (C9).

--fix: both causes' advice at once (gpuwhy's combined prediction): jax_enable_x64 not turned on
(float32 parameters, the batches cast to float32, the matrix products in bf16 with float32
accumulation), and the losses kept as device arrays, their mean shown every 50 steps; model,
data, batch and optimizer unchanged.

Written blind for the india batch.
"""
import sys
import time

import numpy as np

import cc


def main():
    args = cc.parser(__doc__).parse_args()
    import jax
    if not args.fix:
        jax.config.update("jax_enable_x64", True)  # gpuwhy: plants C8 (every parameter, batch and matrix product in float64)
    import jax.numpy as jnp
    import optax
    from tqdm import tqdm

    if args.device == "cpu":
        dev = jax.devices("cpu")[0]
    else:
        try:
            dev = jax.devices("gpu")[0]
        except RuntimeError:
            raise SystemExit("no GPU for JAX: run with --device cpu for a smoke test")
    funcs, queries, modes, sensors, width, p = (4, 64, 8, 100, 32, 16) if args.smoke else (64, 2048, 8, 100, 768, 256)
    nu, t_max = 0.05, 0.2
    cdt = jnp.bfloat16 if args.fix else None      # the fix's compute dtype for the matrix products

    def glorot(key, i, o):
        return {"w": jax.random.normal(key, (i, o)) * np.sqrt(2.0 / (i + o)), "b": jnp.zeros((o,))}

    def init(key):
        ks = jax.random.split(key, 9)
        branch = [glorot(ks[0], sensors, width), glorot(ks[1], width, width), glorot(ks[2], width, width),
                  glorot(ks[3], width, p)]
        trunk = [glorot(ks[4], 2, width), glorot(ks[5], width, width), glorot(ks[6], width, width),
                 glorot(ks[7], width, width), glorot(ks[8], width, p)]
        return {"branch": branch, "trunk": trunk, "b0": jnp.zeros(())}

    def linear(x, layer):
        if cdt is None:
            return x @ layer["w"] + layer["b"]
        return jnp.dot(x.astype(cdt), layer["w"].astype(cdt), preferred_element_type=jnp.float32) + layer["b"]

    def mlp(layers, x):
        for layer in layers[:-1]:
            x = jnp.tanh(linear(x, layer))
        return linear(x, layers[-1])

    def loss_fn(params, u0, y, u):
        b = mlp(params["branch"], u0)                                      # (funcs, p)
        t = mlp(params["trunk"], y.reshape(-1, 2)).reshape(funcs, queries, p)  # (funcs, queries, p)
        pred = jnp.einsum("fp,fqp->fq", b, t) + params["b0"]
        return jnp.mean((pred - u) ** 2)

    tx = optax.adam(1e-3)

    def update(params, opt_state, u0, y, u):
        loss, g = jax.value_and_grad(loss_fn)(params, u0, y, u)
        upd, opt_state = tx.update(g, opt_state, params)
        return optax.apply_updates(params, upd), opt_state, loss

    update = jax.jit(update, donate_argnums=(0, 1))
    with jax.default_device(dev):
        params = init(jax.random.PRNGKey(0))
        opt_state = tx.init(params)

    rng = np.random.default_rng(0)
    k = np.arange(1, modes + 1)
    xs = np.linspace(0.0, 1.0, sensors)
    sens = np.sin(np.pi * k[:, None] * xs[None])

    def make_batch():
        """Random initial conditions and the exact solution at random (x, t): NumPy, float64."""
        a = rng.standard_normal((funcs, modes)) / k
        u0 = a @ sens
        x = rng.random((funcs, queries))
        t = rng.random((funcs, queries)) * t_max
        basis = np.sin(np.pi * x[..., None] * k) * np.exp(-nu * (np.pi * k) ** 2 * t[..., None])
        u = np.einsum("fqk,fk->fq", basis, a)
        y = np.stack([x, t], -1)
        if args.fix:
            return u0.astype(np.float32), y.astype(np.float32), u.astype(np.float32)
        return u0, y, u

    pbar = tqdm(desc="deeponet", unit="step", mininterval=0.5, file=sys.stderr)
    st = {"params": params, "opt": opt_state, "pending": [], "loss": None, "reads": 0, "host_s": 0.0, "n": 0}

    def step(i):
        t0 = time.perf_counter()
        u0, y, u = make_batch()
        st["host_s"] += time.perf_counter() - t0
        st["n"] += 1
        st["params"], st["opt"], loss = update(st["params"], st["opt"], u0, y, u)
        if args.fix:
            st["pending"].append(loss)
            if i % 50 == 49:
                st["loss"] = float(jnp.mean(jnp.stack(st["pending"])))
                st["pending"].clear()
                st["reads"] += 1
                pbar.set_postfix(loss=f"{st['loss']:.3e}", refresh=False)
        else:
            st["loss"] = float(loss)  # gpuwhy: plants C9 (the host waits for every step before it makes the next batch)
            st["reads"] += 1
            pbar.set_postfix(loss=f"{st['loss']:.3e}", refresh=False)
        pbar.update()
        return loss

    cc.run("m_jax_deeponet_x64_tqdm_loss", args, step, funcs * queries,
           extra=lambda: {"x64": bool(jax.config.jax_enable_x64), "param_dtype": str(st["params"]["trunk"][0]["w"].dtype),
                          "matmul_dtype": "bfloat16" if args.fix else "float64", "loss_reads": st["reads"],
                          "host_batch_ms": round(st["host_s"] / max(st["n"], 1) * 1e3, 2), "loss": st["loss"],
                          "jax": jax.__version__})
    pbar.close()


if __name__ == "__main__":
    main()
