"""healthy, short and compile-dominated (JAX): a jitted language-model step (jaxlm, 6 layers,
d=1024, seq 512, batch 32, bf16 compute, optax AdamW, donated buffers; token batches on the
device) run for only about 60 steps, with the persistent compilation cache off (a first run):
XLA's compilation of the step is a large part of the job's time, and after it every step is
one compiled program on the GPU.

--fix changes nothing: this is a control.
GW_COMPILE_CACHE=DIR turns the persistent compilation cache on, in DIR (a second run with the
same DIR starts warm: tests/gpu/startup_cache.sh measures what that saves).
"""
import os

# a first run: no persistent compilation cache (cc.py would turn one on), unless asked for
KEEP = os.environ.get("GW_COMPILE_CACHE")
if KEEP:
    os.environ["JAX_COMPILATION_CACHE_DIR"] = os.path.join(KEEP, "jax")
    os.environ["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"] = "0"
else:
    os.environ["JAX_ENABLE_COMPILATION_CACHE"] = "false"

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import optax  # noqa: E402

import cc  # noqa: E402
import jaxlm  # noqa: E402


def main():
    args = cc.parser(__doc__).parse_args()
    jax.config.update("jax_enable_compilation_cache", bool(KEEP))
    dev = jaxlm.device(args)
    vocab, d, layers, heads, seq, batch = (512, 64, 2, 4, 33, 2) if args.smoke else (32000, 1024, 6, 16, 513, 32)
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

    cc.run("h_jax_jit_few_steps", args, step, batch)


if __name__ == "__main__":
    main()
