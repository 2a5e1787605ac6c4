"""C14 checkpoint with its device-to-host copies (JAX): a jitted language-model step (jaxlm,
4 layers, d=768, vocab 32000, seq 512, batch 16, bf16 compute, optax AdamW, donated buffers)
checkpointed every 25 steps on the training thread: jax.device_get of the parameters and the
optimizer state (about 640 MB to the host), flattened and written with np.savez under
GW_CORPUS_CACHE; training stops meanwhile.

--fix: a checkpoint every 1000 steps (outside the measured window), gpuwhy's C14 advice
(checkpoint less often; Orbax's asynchronous checkpointer is the other way).
"""
import os

import jax
import jax.numpy as jnp
import numpy as np
import optax

import cc
import jaxlm


def save(path, tree, step):
    host = jax.device_get(tree)
    flat = {jax.tree_util.keystr(k): np.asarray(v) for k, v in jax.tree_util.tree_leaves_with_path(host)}
    np.savez(path, step=step, **flat)


def main():
    args = cc.parser(__doc__).parse_args()
    dev = jaxlm.device(args)
    vocab, d, layers, heads, seq, batch = (512, 64, 2, 4, 33, 2) if args.smoke else (32000, 768, 4, 12, 513, 16)
    with jax.default_device(dev):
        params = jaxlm.init(jax.random.PRNGKey(0), vocab, d, layers, seq)
        opt = optax.adamw(3e-4, weight_decay=0.01)
        state = opt.init(params)
        batches = [jax.random.randint(jax.random.PRNGKey(i), (batch, seq), 0, vocab) for i in range(8)]
    train_step = jax.jit(jaxlm.make_step(opt, heads, jnp.bfloat16), donate_argnums=(0, 1))
    path = os.path.join(cc.CACHE, "ckpt", "c14_jax_npz_ckpt.npz")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    every = 1000 if args.fix else (2 if args.smoke else 25)

    def step(i):
        nonlocal params, state
        params, state, loss = train_step(params, state, batches[i % 8])
        if (i + 1) % every == 0:
            save(path, {"params": params, "opt_state": state}, i)  # gpuwhy: plants C14 (device_get + np.savez every 25 steps)
        return loss

    cc.run("c14_jax_npz_ckpt", args, step, batch)


if __name__ == "__main__":
    main()
