"""Healthy control (JAX, convolutional, BatchNorm state): ImageNet-style training of a
ResNet-18 written in plain JAX + optax, the way the JAX examples write a CNN without a layer
library: jax.lax.conv_general_dilated in NHWC / HWIO layout with bf16 inputs and weights
(cuDNN's tensor-core convolutions), BatchNorm with batch statistics in float32 and running
averages carried as state, global average pooling and a 1,000-class head; SGD with Nesterov
momentum and decoupled weight decay, label smoothing 0.1, a cosine schedule; forward,
backward, the BatchNorm state and the update in one jax.jit with parameters, state and
optimizer state donated. Batch 256 at 224 px: 8 batches of uint8 images made once on the
GPU, random horizontal flips and the normalization inside the step; the loss is fetched every
50 steps. About 1.4 TFLOP a step with nothing on the host between steps but one dispatch:
the GPU should be busy throughout after the compilation in the warm-up.

--fix: nothing (control).

Written blind for the hotel batch.
"""
import math

import numpy as np

import cc


def main():
    args = cc.parser(__doc__, warmup=5).parse_args()
    import jax
    import jax.numpy as jnp
    import optax

    if args.device == "cpu":
        dev = jax.devices("cpu")[0]
    else:
        try:
            dev = jax.devices("gpu")[0]
        except RuntimeError:
            raise SystemExit("no GPU for JAX: run with --device cpu for a smoke test")
    batch, size, classes, widths = (4, 32, 10, (8, 16, 32, 64)) if args.smoke else (256, 224, 1000, (64, 128, 256, 512))
    cdt = jnp.bfloat16
    dn = ("NHWC", "HWIO", "NHWC")

    def conv_w(key, k, cin, cout):
        return jax.random.normal(key, (k, k, cin, cout), jnp.float32) * math.sqrt(2.0 / (k * k * cin))

    def init(key):
        ks = iter(jax.random.split(key, 64))
        p, s = {}, {}

        def bn(name, c):
            p[name] = {"g": jnp.ones((c,)), "b": jnp.zeros((c,))}
            s[name] = {"mean": jnp.zeros((c,)), "var": jnp.ones((c,))}

        p["stem"] = conv_w(next(ks), 7, 3, widths[0])
        bn("stem_bn", widths[0])
        cin = widths[0]
        for si, c in enumerate(widths):
            for bi in range(2):
                n = f"s{si}b{bi}"
                p[n + "c1"] = conv_w(next(ks), 3, cin, c)
                bn(n + "n1", c)
                p[n + "c2"] = conv_w(next(ks), 3, c, c)
                bn(n + "n2", c)
                if cin != c:
                    p[n + "proj"] = conv_w(next(ks), 1, cin, c)
                    bn(n + "np", c)
                cin = c
        p["fc"] = {"w": jax.random.normal(next(ks), (cin, classes)) / math.sqrt(cin), "b": jnp.zeros((classes,))}
        return p, s

    def conv(x, w, stride):
        k = w.shape[0]
        return jax.lax.conv_general_dilated(x, w.astype(cdt), (stride, stride), [(k // 2, k // 2)] * 2,
                                            dimension_numbers=dn)

    def batch_norm(x, p, s, new_s, name, relu=True):
        x32 = x.astype(jnp.float32)
        mean = x32.mean((0, 1, 2))
        var = x32.var((0, 1, 2))
        new_s[name] = {"mean": 0.9 * s[name]["mean"] + 0.1 * mean, "var": 0.9 * s[name]["var"] + 0.1 * var}
        y = (x32 - mean) * jax.lax.rsqrt(var + 1e-5) * p[name]["g"] + p[name]["b"]
        return (jax.nn.relu(y) if relu else y).astype(cdt)

    def forward(p, s, x):
        ns = {}
        h = batch_norm(conv(x, p["stem"], 2), p, s, ns, "stem_bn")
        h = jax.lax.reduce_window(h, -jnp.inf, jax.lax.max, (1, 3, 3, 1), (1, 2, 2, 1), [(0, 0), (1, 1), (1, 1), (0, 0)])
        cin = widths[0]
        for si, c in enumerate(widths):
            for bi in range(2):
                n = f"s{si}b{bi}"
                stride = 2 if (si > 0 and bi == 0) else 1
                y = batch_norm(conv(h, p[n + "c1"], stride), p, s, ns, n + "n1")
                y = batch_norm(conv(y, p[n + "c2"], 1), p, s, ns, n + "n2", relu=False)
                sc = batch_norm(conv(h, p[n + "proj"], stride), p, s, ns, n + "np", relu=False) if cin != c else h
                h = jax.nn.relu(y.astype(jnp.float32) + sc.astype(jnp.float32)).astype(cdt)
                cin = c
        feat = h.astype(jnp.float32).mean((1, 2))
        return feat @ p["fc"]["w"] + p["fc"]["b"], ns

    sched = optax.cosine_decay_schedule(0.1 * batch / 256, 100_000)
    tx = optax.chain(optax.add_decayed_weights(5e-5), optax.sgd(sched, momentum=0.9, nesterov=True))
    mean = jnp.asarray([0.485, 0.456, 0.406]) * 255
    std = jnp.asarray([0.229, 0.224, 0.225]) * 255

    def train_step(p, s, o, imgs, labels, key):
        flip = jax.random.bernoulli(key, 0.5, (imgs.shape[0], 1, 1, 1))
        x = jnp.where(flip, imgs[:, :, ::-1], imgs).astype(jnp.float32)
        x = ((x - mean) / std).astype(cdt)

        def loss_fn(p):
            logits, ns = forward(p, s, x)
            onehot = optax.smooth_labels(jax.nn.one_hot(labels, classes), 0.1)
            return optax.softmax_cross_entropy(logits, onehot).mean(), ns

        (loss, ns), g = jax.value_and_grad(loss_fn, has_aux=True)(p)
        u, o = tx.update(g, o, p)
        return optax.apply_updates(p, u), ns, o, loss

    train_step = jax.jit(train_step, donate_argnums=(0, 1, 2))
    with jax.default_device(dev):
        params, bn_state = init(jax.random.PRNGKey(0))
        opt_state = tx.init(params)
        rng = np.random.default_rng(0)
        data = [(jnp.asarray(rng.integers(0, 256, (batch, size, size, 3), dtype=np.uint8)),
                 jnp.asarray(rng.integers(0, classes, batch).astype(np.int32))) for _ in range(8)]
        keys = jax.random.split(jax.random.PRNGKey(1), 64)
    st = {"p": params, "s": bn_state, "o": opt_state, "loss": None, "reads": 0}

    def step(i):
        imgs, labels = data[i % len(data)]
        st["p"], st["s"], st["o"], loss = train_step(st["p"], st["s"], st["o"], imgs, labels, keys[i % 64])
        if i % 50 == 49:
            st["loss"] = float(loss)
            st["reads"] += 1
        return loss

    cc.run("h_jax_resnet18_nhwc_bn_bf16", args, step, batch,
           extra=lambda: {"image_size": size, "tflop_per_step": round(3 * 1.82e9 * (size / 224) ** 2 * batch / 1e12, 2),
                          "loss": st["loss"], "loss_reads": st["reads"]})


if __name__ == "__main__":
    main()
