"""C9 host reads of GPU values (jax_debug_nans left on after a NaN hunt): nuclei segmentation
in fluorescence microscopy with a U-Net in plain JAX + optax: 1-channel 256 x 256 crops, an
encoder of four levels (16, 32, 64, 128 channels, two 3 x 3 convolutions with ReLU a level,
2 x 2 max pooling), a 256-channel bottleneck, a decoder of 2 x 2 transposed convolutions and
two 3 x 3 convolutions a level over the skip concatenation, a 1 x 1 head (1.94 M parameters
in 46 arrays, float32, the convolutions computed in bf16, NHWC), BCE plus soft Dice, AdamW,
batch 64, one jax.jit for the step (value_and_grad and the update, parameters and optimizer
state donated). The data set is 256 synthetic microscope fields of 320 x 320 (blurred
elliptical nuclei, background and shot noise, their masks), made once under
GW_CORPUS_CACHE; each step the host takes 64 random crops with random flips and 90-degree
rotations in NumPy (uint8) and the step normalizes them on the device. The mean loss is read
every 50 steps.

The script has jax.config.update("jax_debug_nans", True) near its top, from the week its Dice
loss produced NaNs (a 0/0 on empty crops, since fixed with a smoothing term). With the flag
on, JAX checks every floating-point output of every jitted call on the host: each of the
step's 139 outputs (46 parameters, 92 Adam moments, the loss) is copied to the host with
np.asarray and scanned with np.isnan, so the training thread waits for every step to finish,
copies 23 MB back in 139 transfers and scans it, and only then makes the next batch of crops:
the crop making and the dispatch that ran ahead of the GPU now run while it waits (and
buffer donation is switched off).

--fix: gpuwhy's C9 advice (no host read of device values every step): the flag not turned on.
The step's own NaN guard stays as it was in both runs: it returns jnp.isfinite(loss), and the
losses and flags are kept on the device and read every 50 steps. Model, data, batch and
optimizer unchanged.

Written blind for the juliet batch.
"""
import math
import os
import time

import numpy as np

import cc


def fields(n, size, seed=0):
    """Synthetic fluorescence fields (uint8) and nucleus masks, made once."""
    path = os.path.join(cc.CACHE, f"nuclei_{n}_{size}.npz")
    if os.path.exists(path):
        d = np.load(path)
        return d["img"], d["mask"]
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:size, 0:size].astype(np.float32)
    imgs = np.empty((n, size, size), np.uint8)
    masks = np.empty((n, size, size), np.uint8)
    k = np.fft.fftfreq(size)
    blur = np.exp(-(k[:, None] ** 2 + k[None, :] ** 2) * (size / 1.2) ** 2)
    for i in range(n):
        m = np.zeros((size, size), np.float32)
        for _ in range(rng.integers(30, 70)):
            cy, cx = rng.uniform(0, size, 2)
            a, b = rng.uniform(5, 14, 2)
            th = rng.uniform(0, np.pi)
            y0, y1, x0, x1 = (max(0, int(cy) - 15), min(size, int(cy) + 16), max(0, int(cx) - 15), min(size, int(cx) + 16))
            dy, dx = yy[y0:y1, x0:x1] - cy, xx[y0:y1, x0:x1] - cx
            u = (dx * np.cos(th) + dy * np.sin(th)) / a
            v = (-dx * np.sin(th) + dy * np.cos(th)) / b
            win = m[y0:y1, x0:x1]
            np.maximum(win, (u * u + v * v < 1).astype(np.float32) * rng.uniform(0.5, 1.0), out=win)
        img = np.real(np.fft.ifft2(np.fft.fft2(m) * blur)) + 0.08
        img = rng.poisson(np.clip(img, 0, None) * 120) / 120.0
        imgs[i] = np.clip(img * 200, 0, 255).astype(np.uint8)
        masks[i] = (m > 0).astype(np.uint8)
    os.makedirs(cc.CACHE, exist_ok=True)
    tmp = path + f".{os.getpid()}.tmp.npz"
    np.savez(tmp, img=imgs, mask=masks)
    os.replace(tmp, path)
    return imgs, masks


def main():
    args = cc.parser(__doc__, warmup=5).parse_args()
    import jax
    if not args.fix:
        jax.config.update("jax_debug_nans", True)  # gpuwhy: plants C9 (every output of every jitted call copied back and scanned)
    import jax.numpy as jnp
    import optax

    if args.device == "cpu":
        dev = jax.devices("cpu")[0]
    else:
        try:
            dev = jax.devices("gpu")[0]
        except RuntimeError:
            raise SystemExit("no GPU for JAX: run with --device cpu for a smoke test")
    batch, crop, pool, size, widths = (4, 64, 16, 96, (8, 16, 32, 64)) if args.smoke else (64, 256, 256, 320, (16, 32, 64, 128))
    cdt = jnp.bfloat16
    dn = ("NHWC", "HWIO", "NHWC")
    imgs, masks = fields(pool, size)

    def conv_p(key, k, cin, cout):
        return {"w": jax.random.normal(key, (k, k, cin, cout), jnp.float32) * math.sqrt(2.0 / (k * k * cin)),
                "b": jnp.zeros((cout,), jnp.float32)}

    def init(key):
        ks = iter(jax.random.split(key, 32))
        p = {"down": [], "up": []}
        cin = 1
        for c in widths:
            p["down"].append({"c1": conv_p(next(ks), 3, cin, c), "c2": conv_p(next(ks), 3, c, c)})
            cin = c
        bott = 2 * widths[-1]
        p["bott"] = {"c1": conv_p(next(ks), 3, cin, bott), "c2": conv_p(next(ks), 3, bott, bott)}
        cin = bott
        for c in reversed(widths):
            p["up"].append({"t": conv_p(next(ks), 2, cin, c), "c1": conv_p(next(ks), 3, 2 * c, c),
                            "c2": conv_p(next(ks), 3, c, c)})
            cin = c
        p["head"] = conv_p(next(ks), 1, cin, 1)
        return p

    def conv(x, q):
        k = q["w"].shape[0]
        y = jax.lax.conv_general_dilated(x, q["w"].astype(cdt), (1, 1), [(k // 2, (k - 1) // 2)] * 2, dimension_numbers=dn)
        return y + q["b"].astype(cdt)

    def up(x, q):
        y = jax.lax.conv_transpose(x, q["w"].astype(cdt), (2, 2), "SAME", dimension_numbers=dn)
        return y + q["b"].astype(cdt)

    def pool2(x):
        b, h, w, c = x.shape
        return x.reshape(b, h // 2, 2, w // 2, 2, c).max(axis=(2, 4))

    def forward(p, x):
        skips = []
        h = x
        for lvl in p["down"]:
            h = jax.nn.relu(conv(jax.nn.relu(conv(h, lvl["c1"])), lvl["c2"]))
            skips.append(h)
            h = pool2(h)
        h = jax.nn.relu(conv(jax.nn.relu(conv(h, p["bott"]["c1"])), p["bott"]["c2"]))
        for lvl, s in zip(p["up"], reversed(skips)):
            h = jnp.concatenate([up(h, lvl["t"]), s], axis=-1)
            h = jax.nn.relu(conv(jax.nn.relu(conv(h, lvl["c1"])), lvl["c2"]))
        return conv(h, p["head"])[..., 0].astype(jnp.float32)

    def loss_fn(p, img_u8, mask_u8):
        x = ((img_u8.astype(jnp.float32) - 40.0) / 50.0).astype(cdt)[..., None]
        y = mask_u8.astype(jnp.float32)
        logits = forward(p, x)
        bce = optax.sigmoid_binary_cross_entropy(logits, y).mean()
        prob = jax.nn.sigmoid(logits)
        inter = (prob * y).sum((1, 2))
        dice = 1.0 - (2.0 * inter + 1.0) / (prob.sum((1, 2)) + y.sum((1, 2)) + 1.0)   # smoothed: no 0/0 on empty crops
        return bce + dice.mean()

    tx = optax.adamw(optax.cosine_decay_schedule(1e-3, 100_000), weight_decay=1e-4)

    def update(p, opt_state, img_u8, mask_u8):
        loss, g = jax.value_and_grad(loss_fn)(p, img_u8, mask_u8)
        upd, opt_state = tx.update(g, opt_state, p)
        return optax.apply_updates(p, upd), opt_state, loss, jnp.isfinite(loss)

    update = jax.jit(update, donate_argnums=(0, 1))
    with jax.default_device(dev):
        params = init(jax.random.PRNGKey(0))
        opt_state = tx.init(params)
    n_leaves = len(jax.tree_util.tree_leaves(params))
    n_bytes = sum(x.size * 4 for x in jax.tree_util.tree_leaves(params))

    rng = np.random.default_rng(0)

    def make_batch():
        """64 random crops, flips and 90-degree rotations in NumPy (uint8), on the training thread."""
        ids = rng.integers(0, pool, batch)
        ys = rng.integers(0, size - crop + 1, batch)
        xs = rng.integers(0, size - crop + 1, batch)
        ops = rng.integers(0, 8, batch)
        xi, yi = [], []
        for j in range(batch):
            a = imgs[ids[j], ys[j]:ys[j] + crop, xs[j]:xs[j] + crop]
            b = masks[ids[j], ys[j]:ys[j] + crop, xs[j]:xs[j] + crop]
            if ops[j] & 1:
                a, b = a[:, ::-1], b[:, ::-1]
            a, b = np.rot90(a, ops[j] >> 1), np.rot90(b, ops[j] >> 1)
            xi.append(a)
            yi.append(b)
        return np.stack(xi), np.stack(yi)

    st = {"params": params, "opt": opt_state, "losses": [], "flags": [], "loss": None, "reads": 0,
          "host_s": 0.0, "n": 0}

    def step(i):
        t0 = time.perf_counter()
        x, y = make_batch()
        st["host_s"] += time.perf_counter() - t0
        st["n"] += 1
        st["params"], st["opt"], loss, finite = update(st["params"], st["opt"], x, y)
        st["losses"].append(loss)
        st["flags"].append(finite)
        if i % 50 == 49:
            if not bool(jnp.all(jnp.stack(st["flags"]))):
                raise FloatingPointError("non-finite loss in the last 50 steps")
            st["loss"] = float(jnp.mean(jnp.stack(st["losses"])))
            st["losses"].clear()
            st["flags"].clear()
            st["reads"] += 1
        return loss

    cc.run("c9_jax_unet_debug_nans_left_on", args, step, batch,
           extra=lambda: {"debug_nans": bool(jax.config.jax_debug_nans), "param_arrays": n_leaves,
                          "param_mb": round(n_bytes / 2 ** 20, 2), "host_batch_ms": round(st["host_s"] / max(st["n"], 1) * 1e3, 2),
                          "loss": st["loss"], "loss_reads": st["reads"], "jax": jax.__version__})


if __name__ == "__main__":
    main()
