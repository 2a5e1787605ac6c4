"""healthy: a JAX language model (4 layers, d=1024, seq 512, batch 32) trained with one
jitted step (bf16 compute, float32 master weights, optax AdamW, donated buffers); the token
batches are already on the device.

--fix changes nothing: this is a control.
"""
import jax
import jax.numpy as jnp
import optax

import cc
import jaxlm


def main():
    args = cc.parser(__doc__).parse_args()
    dev = jaxlm.device(args)
    vocab, d, layers, heads, seq, batch = (512, 64, 2, 4, 33, 2) if args.smoke else (32000, 1024, 4, 16, 513, 32)
    with jax.default_device(dev):
        params = jaxlm.init(jax.random.PRNGKey(0), vocab, d, layers, seq)
        opt = optax.adamw(3e-4, weight_decay=0.01)
        state = opt.init(params)
        batches = [jax.random.randint(jax.random.PRNGKey(i), (batch, seq), 0, vocab) for i in range(8)]
    train_step = jax.jit(jaxlm.make_step(opt, heads, jnp.bfloat16), donate_argnums=(0, 1))

    def step(i):
        nonlocal params, state
        params, state, loss = train_step(params, state, batches[i % 8])
        return loss

    cc.run("h_jax_transformer_jit", args, step, batch)


if __name__ == "__main__":
    main()
