"""C9 sync points (JAX): the training loop converts each step's loss with float(loss) to
check it for NaN and to log it; JAX's asynchronous dispatch is lost, so the next batch's
sampling and cropping on the host (numpy) waits for the GPU instead of overlapping it.

--fix: losses stay device arrays; every 50 steps they are stacked, checked and logged at once.
"""
import math

import jax
import jax.numpy as jnp
import numpy as np
import optax

import cc
import jaxlm


def main():
    args = cc.parser(__doc__).parse_args()
    dev = jaxlm.device(args)
    vocab, d, layers, heads, seq, batch = (512, 64, 1, 4, 33, 4) if args.smoke else (16000, 512, 2, 8, 257, 32)
    rng = np.random.default_rng(0)
    corpus = rng.integers(0, vocab, 4_000_000 if not args.smoke else 100_000).astype(np.int32)  # a token stream
    with jax.default_device(dev):
        params = jaxlm.init(jax.random.PRNGKey(0), vocab, d, layers, seq)
        opt = optax.adamw(3e-4)
        state = opt.init(params)
    train_step = jax.jit(jaxlm.make_step(opt, heads, jnp.bfloat16), donate_argnums=(0, 1))
    pending, log = [], open("/dev/null", "w")

    def sample():
        """Random windows of the token stream with T5-style span corruption, row by row on
        the host (numpy): about as long as the GPU's step."""
        x = np.zeros((batch, seq), np.int32)
        for k in range(batch):
            s = int(rng.integers(0, len(corpus) - 2 * seq))
            row = corpus[s:s + 2 * seq].copy()
            spans = np.sort(rng.choice(len(row) - 8, 12, replace=False))
            keep = np.ones(len(row), bool)
            for j, a in enumerate(spans):
                keep[a:a + int(rng.integers(2, 6))] = False
                row[a] = vocab - 1 - j  # sentinel
                keep[a] = True
            row = row[keep][:seq]
            x[k, :len(row)] = row
        return x

    def step(i):
        nonlocal params, state
        x = sample()
        params, state, loss = train_step(params, state, jax.device_put(x, dev))
        if args.fix:
            pending.append(loss)
            if len(pending) == 50:
                losses = np.asarray(jnp.stack(pending))
                if not np.isfinite(losses).all():
                    raise FloatingPointError("loss is not finite")
                print(f"step {i} loss {losses.mean():.4f}", file=log)
                pending.clear()
        else:
            value = float(loss)  # gpuwhy: plants C9 (a device-to-host read every step)
            if not math.isfinite(value):
                raise FloatingPointError("loss is not finite")
            print(f"step {i} loss {value:.4f}", file=log)
        return loss

    cc.run("c9_jax_float", args, step, batch)


if __name__ == "__main__":
    main()
