"""healthy: a JAX language model (jaxlm: 6 layers, d=768, seq 512, vocab 32000) trained with
gradient accumulation inside one jitted step: jax.lax.scan runs forward and backward over 4
micro-batches of 8 sequences, summing the float32 gradients in the carry, then one optax
AdamW update (bf16 compute, float32 master weights, donated parameter and optimizer
buffers). The token batches are already on the device.

--fix changes nothing: this is a control.
"""
import jax
import jax.numpy as jnp
import optax

import cc
import jaxlm


def make_step(opt, heads, micro, dtype):
    grad_fn = jax.value_and_grad(jaxlm.loss_fn)

    def step(p, s, ids):  # ids: (micro, micro_batch, seq)
        def body(carry, mb):
            g_acc, l_acc = carry
            loss, g = grad_fn(p, mb, heads, dtype)
            return (jax.tree_util.tree_map(jnp.add, g_acc, g), l_acc + loss), None

        zeros = jax.tree_util.tree_map(jnp.zeros_like, p)
        (g, loss), _ = jax.lax.scan(body, (zeros, jnp.zeros((), jnp.float32)), ids)
        g = jax.tree_util.tree_map(lambda t: t / micro, g)
        upd, s = opt.update(g, s, p)
        return optax.apply_updates(p, upd), s, loss / micro
    return step


def main():
    args = cc.parser(__doc__).parse_args()
    dev = jaxlm.device(args)
    vocab, d, layers, heads, seq, mb = (512, 64, 2, 4, 33, 2) if args.smoke else (32000, 768, 6, 12, 513, 8)
    micro = 4
    with jax.default_device(dev):
        params = jaxlm.init(jax.random.PRNGKey(0), vocab, d, layers, seq)
        opt = optax.adamw(3e-4, weight_decay=0.01)
        state = opt.init(params)
        batches = [jax.random.randint(jax.random.PRNGKey(i), (micro, mb, seq), 0, vocab) for i in range(8)]
    train_step = jax.jit(make_step(opt, heads, micro, jnp.bfloat16), donate_argnums=(0, 1))

    def step(i):
        nonlocal params, state
        params, state, loss = train_step(params, state, batches[i % 8])
        return loss

    cc.run("h_jax_scan_microbatch", args, step, micro * mb)


if __name__ == "__main__":
    main()
