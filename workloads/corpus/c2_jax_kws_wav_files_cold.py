"""C2 storage reads (one small WAV file per example, read cold on the training thread):
keyword spotting on a Speech Commands-style data set in plain JAX + optax. The data set is
what the download unpacks to, one directory per label (ten keywords, "silence" and
"unknown") holding 24,576 one-second clips, each its own 16 kHz mono 16-bit WAV file of
32 KB (768 MB, written once under GW_CORPUS_CACHE). The model is a Keyword-Transformer-style
classifier written in JAX: the log-mel front end on the GPU inside the jitted step (random
gain and a random time shift of up to 100 ms, 25 ms Hann frames every 10 ms, a 512-point
rfft, 64 mel bands, log), each of the 98 frames one token, a class token and learned
positions, 16 pre-LN Transformer layers of width 512 (8 heads, GELU MLP 2,048,
jax.nn.dot_product_attention) under lax.scan, matrix products in bf16 and parameters in
float32; cross-entropy with label smoothing, global-norm clipping and AdamW with
warm-up/cosine decay in one jax.jit with parameters and optimizer state donated; batch 384
clips; the loss stays on the device and is fetched every 50 steps.

The input pipeline is the hand-written generator of many JAX repositories, on the training
thread: each batch takes the next 384 paths of the epoch's random order and reads each with
Python's `wave` module (open, header, readframes) into an int16 array that the step consumes.
The clips are dropped from the page cache at every start (posix_fadvise(POSIX_FADV_DONTNEED)
on each file, no root needed), as when the data set sits on a disk the page cache does not
hold, so each file is a cold read: about 400 small synchronous reads a batch while the thread
sits in them. JAX's dispatch is asynchronous, so the GPU waits for whatever the reads take
beyond its own step.

--fix: gpuwhy's C2 advice (keep the data set in RAM): every clip read once into one int16
array before training (the same reader, outside the timed part), the generator taking its
batches from it; model, order, batch and augmentation unchanged.

Written blind for the golf batch.
"""
import math
import os
import wave

import numpy as np

import cc

RATE = 16000
LABELS = ("yes", "no", "up", "down", "left", "right", "on", "off", "stop", "go", "_silence_", "_unknown_")


def clip_dir(n):
    """n one-second clips, one WAV file each in a directory per label, written once and synced.
    Each label has its own two-formant 'word' (chirped tones under an envelope) at a random
    place in the clip, mixed with background noise at a random level."""
    root = os.path.join(cc.CACHE, f"speech_commands_{n}")
    index = os.path.join(root, "index.txt")
    if os.path.exists(os.path.join(root, ".done")):
        return [line.split("\t") for line in open(index).read().splitlines()]
    rng = np.random.default_rng(0)
    t = np.arange(RATE, dtype=np.float32) / RATE
    y_all = np.arange(n) % len(LABELS)
    f1, f2 = 300 + 70 * np.arange(len(LABELS)), 1200 + 160 * np.arange(len(LABELS))
    words = (np.sin(2 * np.pi * f1[:, None] * t * (1 + 0.2 * t)) + 0.5 * np.sin(2 * np.pi * f2[:, None] * t))
    words[LABELS.index("_silence_")] = 0
    words = words.astype(np.float32)
    for lab in LABELS:
        os.makedirs(os.path.join(root, lab), exist_ok=True)
    rows = []
    for c0 in range(0, n, 512):  # a chunk of clips at a time, vectorized
        y = y_all[c0:c0 + 512]
        m = len(y)
        start = rng.uniform(0.05, 0.45, (m, 1)).astype(np.float32)
        dur = rng.uniform(0.35, 0.5, (m, 1)).astype(np.float32)
        env = np.clip(np.minimum(t - start, start + dur - t) / 0.05, 0, 1)
        x = (6000 * rng.uniform(0.3, 1.0, (m, 1)).astype(np.float32)) * env * words[y]
        x += rng.standard_normal((m, RATE), dtype=np.float32) * rng.uniform(50, 600, (m, 1)).astype(np.float32)
        pcm = np.clip(x, -32768, 32767).astype(np.int16)
        for j in range(m):
            k = c0 + j
            speaker = k * 2654435761 % (1 << 32)  # the speaker hash of the file name
            path = os.path.join(root, LABELS[y[j]], f"{speaker:08x}_nohash_0.wav")
            with wave.open(path, "wb") as w:
                w.setnchannels(1)
                w.setsampwidth(2)
                w.setframerate(RATE)
                w.writeframes(pcm[j].tobytes())
            rows.append([path, str(y[j])])
    with open(index, "w") as f:
        f.write("\n".join("\t".join(r) for r in rows) + "\n")
    os.sync()  # written back, so that the pages can be dropped
    open(os.path.join(root, ".done"), "w").close()
    return rows


def drop_from_page_cache(paths):
    for p in paths:
        fd = os.open(p, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def read_clip(path, out):
    """One clip into out (int16, RATE samples; shorter clips are zero-padded)."""
    with wave.open(path, "rb") as w:
        raw = w.readframes(RATE)
    a = np.frombuffer(raw, np.int16)
    out[:len(a)] = a
    out[len(a):] = 0


def mel_matrix(n_fft, n_mels, rate):
    """Slaney-style triangular mel filters, (n_fft // 2 + 1, n_mels)."""
    mel = lambda f: 2595 * np.log10(1 + f / 700)  # noqa: E731
    imel = lambda m: 700 * (10 ** (m / 2595) - 1)  # noqa: E731
    edges = imel(np.linspace(mel(20), mel(rate / 2), n_mels + 2))
    freqs = np.linspace(0, rate / 2, n_fft // 2 + 1)
    lo, mid, hi = edges[:-2, None], edges[1:-1, None], edges[2:, None]
    fb = np.maximum(0, np.minimum((freqs - lo) / (mid - lo), (hi - freqs) / (hi - mid)))
    return (fb * (2 / (hi - lo))).T.astype(np.float32)


def main():
    args = cc.parser(__doc__).parse_args()
    import jax
    import jax.numpy as jnp
    import optax

    n, batch, d, layers, heads, mels = (96, 8, 32, 2, 2, 16) if args.smoke else (24_576, 384, 512, 16, 8, 64)
    if args.device == "cpu":
        dev = jax.devices("cpu")[0]
    else:
        try:
            dev = jax.devices("gpu")[0]
        except RuntimeError:
            raise SystemExit("no GPU for JAX: run with --device cpu for a smoke test")

    rows = clip_dir(n)
    paths = [r[0] for r in rows]
    labels = np.array([int(r[1]) for r in rows], np.int32)
    drop_from_page_cache(paths)
    if args.fix:  # the whole data set in RAM, read once before training
        clips = np.empty((n, RATE), np.int16)
        for k, p in enumerate(paths):
            read_clip(p, clips[k])
    else:
        clips = None
    counts = {"files_read": 0, "epochs": 0}

    def batches():
        rng = np.random.default_rng(1)
        while True:
            order = rng.permutation(n)
            for s in range(0, n - batch + 1, batch):
                idx = order[s:s + batch]
                if clips is not None:
                    x = clips[idx]
                else:
                    x = np.empty((batch, RATE), np.int16)
                    for j, k in enumerate(idx):
                        read_clip(paths[k], x[j])  # gpuwhy: plants C2 (one small WAV file read from the disk per clip, on the training thread)
                    counts["files_read"] += batch
                yield x, labels[idx]
            counts["epochs"] += 1

    # front end constants: frame indices, window, mel filters
    n_fft, win, hop = 512, 400, 160
    frames = 1 + (RATE - win) // hop                                   # 98
    frame_idx = jnp.asarray(np.arange(frames)[:, None] * hop + np.arange(win)[None, :])
    window = jnp.asarray(np.hanning(win).astype(np.float32))
    fb = jnp.asarray(mel_matrix(n_fft, mels, RATE))
    classes = len(LABELS)
    cdt = jnp.bfloat16
    hd = d // heads

    def init(key):
        k = iter(jax.random.split(key, 12))
        nrm = lambda shape, fan: jax.random.normal(next(k), shape, jnp.float32) / math.sqrt(fan)  # noqa: E731
        L = layers
        return {
            "proj": nrm((mels, d), mels), "cls": jnp.zeros((d,)),
            "pos": jax.random.normal(next(k), (frames + 1, d)) * 0.02,
            "blocks": {"g1": jnp.ones((L, d)), "b1": jnp.zeros((L, d)), "qkv": nrm((L, d, 3 * d), d),
                       "o": nrm((L, d, d), d), "g2": jnp.ones((L, d)), "b2": jnp.zeros((L, d)),
                       "w1": nrm((L, d, 4 * d), d), "c1": jnp.zeros((L, 4 * d)), "w2": nrm((L, 4 * d, d), 4 * d),
                       "c2": jnp.zeros((L, d))},
            "gf": jnp.ones((d,)), "bf": jnp.zeros((d,)), "head": nrm((d, classes), d),
        }

    def ln(x, g, b):
        x32 = x.astype(jnp.float32)
        mu = x32.mean(-1, keepdims=True)
        var = ((x32 - mu) ** 2).mean(-1, keepdims=True)
        return ((x32 - mu) * jax.lax.rsqrt(var + 1e-5) * g + b).astype(cdt)

    def block(h, p):
        bsz, t, _ = h.shape
        q, kk, v = jnp.split(ln(h, p["g1"], p["b1"]) @ p["qkv"].astype(cdt), 3, -1)
        sp = lambda z: z.reshape(bsz, t, heads, hd)  # noqa: E731
        a = jax.nn.dot_product_attention(sp(q), sp(kk), sp(v)).reshape(bsz, t, d)
        h = h + a @ p["o"].astype(cdt)
        m = jax.nn.gelu(ln(h, p["g2"], p["b2"]) @ p["w1"].astype(cdt) + p["c1"].astype(cdt))
        return h + m @ p["w2"].astype(cdt) + p["c2"].astype(cdt), None

    def logits_fn(p, wav, key):
        x = wav.astype(jnp.float32) / 32768.0
        kg, ks = jax.random.split(key)
        gain = jnp.exp(jax.random.uniform(kg, (x.shape[0], 1), minval=-0.22, maxval=0.22))
        shift = jax.random.randint(ks, (x.shape[0],), -RATE // 10, RATE // 10 + 1)
        x = jax.vmap(jnp.roll)(x * gain, shift)
        spec = jnp.fft.rfft(x[:, frame_idx] * window, n=n_fft)             # (B, 98, 257)
        logmel = jnp.log((spec.real ** 2 + spec.imag ** 2) @ fb + 1e-6)    # (B, 98, mels)
        logmel = (logmel - logmel.mean((1, 2), keepdims=True)) / (logmel.std((1, 2), keepdims=True) + 1e-5)
        h = logmel.astype(cdt) @ p["proj"].astype(cdt)
        cls = jnp.broadcast_to(p["cls"].astype(cdt), (h.shape[0], 1, d))
        h = jnp.concatenate([cls, h], 1) + p["pos"].astype(cdt)[None]
        h, _ = jax.lax.scan(block, h, p["blocks"])
        return ln(h[:, 0], p["gf"], p["bf"]).astype(jnp.float32) @ p["head"]

    def loss_fn(p, wav, y, key):
        onehot = optax.smooth_labels(jax.nn.one_hot(y, classes), 0.1)
        return optax.softmax_cross_entropy(logits_fn(p, wav, key), onehot).mean()

    total = 100_000
    sched = optax.warmup_cosine_decay_schedule(0.0, 1e-3, 1000, total)
    opt = optax.chain(optax.clip_by_global_norm(1.0), optax.adamw(sched, weight_decay=0.05))
    base_key = jax.random.PRNGKey(0)

    def train_step(p, s, wav, y, i):
        key = jax.random.fold_in(base_key, i)
        loss, grads = jax.value_and_grad(loss_fn)(p, wav, y, key)
        updates, s = opt.update(grads, s, p)
        return optax.apply_updates(p, updates), s, loss

    step_fn = jax.jit(train_step, donate_argnums=(0, 1))
    with jax.default_device(dev):
        params = init(jax.random.PRNGKey(1))
        state = opt.init(params)
    gen = batches()
    losses = []
    box = {"p": params, "s": state, "fetched": 0}

    def step(i):
        wav, y = next(gen)
        box["p"], box["s"], loss = step_fn(box["p"], box["s"], wav, y, np.int32(i))
        losses.append(loss)
        if len(losses) == 50:
            jax.device_get(losses)
            losses.clear()
            box["fetched"] += 1
        return loss

    cc.run("c2_jax_kws_wav_files_cold", args, step, batch,
           extra=lambda: {"clips": "in RAM (read once before training)" if args.fix else "WAV files, cold",
                          "files": n, "files_read_in_loop": counts["files_read"], "epochs_done": counts["epochs"],
                          "mb_per_step": round(batch * (2 * RATE + 44) / 2 ** 20, 1), "jax": jax.__version__,
                          "loss_fetches": box["fetched"]})


if __name__ == "__main__":
    main()
