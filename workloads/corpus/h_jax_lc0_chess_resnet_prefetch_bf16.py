"""Healthy control (JAX, a chess policy-value network trained from self-play chunks with a host
parser thread): supervised training of an AlphaZero/Leela-Chess-style network in plain JAX +
optax: 112 input planes of 8 x 8 (8 positions of history x 13 piece and repetition planes, 8
constant planes), a 3 x 3 input convolution to 256 filters, 20 residual blocks of two 3 x 3
convolutions of 256 with BatchNorm (batch statistics, running averages kept), a policy head
(1 x 1 convolution to 73 planes: AlphaZero's 8 x 8 x 73 = 4,672 move logits) and a
win/draw/loss value head (1 x 1 convolution to 32, a dense layer of 128, 3 logits); 24.2 M
float32 parameters, bfloat16 compute, NHWC; loss: cross-entropy against the search's visit
distribution plus the value cross-entropy; SGD with Nesterov momentum 0.9 (lr 0.02) and L2
1e-4 (optax); the whole step in one jax.jit with parameters, statistics and optimizer state
donated.

The input pipeline is lc0's chunk parser in miniature on a Python thread: the self-play games
are zlib-compressed chunks of fixed-size records (112 bit-packed planes, the 64 most-visited
moves with their probabilities as float16, the game result), made at start (128 games of 256
plies); the thread decompresses 4 games a batch into a shuffle buffer of 32,768 positions,
draws 1,024 positions from it at random and puts the batch on the device with jax.device_put
(1.4 MB: planes still packed, the policy sparse), two batches ahead (flax's
prefetch_to_device idea); the planes are unpacked (bit shifts) and the visit distribution
made dense (a scatter) inside the jitted step. Losses stay on the device and are fetched every
100 steps.

About 9.4 TFLOP a step (FlopCounterMode: 9.1 GFLOP a position forward and backward, 1,024
positions) in convolutions of 8 x 8 x 256 plus 41 BatchNorm passes, ~30-45 ms of GPU work,
against ~3-5 ms of decompression and gathering on the parser thread and one dispatch a step
on the training thread: GPU-bound, nothing to fix. (The parser thread is busy, and its copies
are from pageable NumPy buffers, a few per step and small: a naive reading could call it
input-bound.)

--fix: nothing (control).

Written blind for the papa batch.
"""
import math
import queue
import threading
import zlib

import numpy as np

import cc  # before jax: cc sets JAX's compilation cache directory
import jax
import jax.numpy as jnp
import jaxlm
import optax

N_MOVES = 4672
RECORD = np.dtype([("planes", np.uint8, (112, 8)), ("move", np.int16, (64,)), ("prob", np.float16, (64,)),
                   ("result", np.int8)])


def make_games(n_games, plies, rng):
    """Self-play-like games as compressed chunks: a board of 12 piece planes with 32 pieces,
    one piece moved a ply; each record holds the last 8 boards (13 planes each, the 13th a
    repetition flag), 8 constant planes, the 64 most-visited of ~20-40 legal moves and the
    result."""
    kinds = np.array([0] * 8 + [1, 1, 2, 2, 3, 3, 4, 5] + [6] * 8 + [7, 7, 8, 8, 9, 9, 10, 11])
    chunks = []
    for _ in range(n_games):
        where = rng.permutation(64)[:32]                 # the square of each of the 32 pieces
        boards = np.zeros((plies + 7, 12, 64), bool)
        boards[:7, kinds, where] = True
        for t in range(plies):                           # one piece to an empty square a ply
            free = np.setdiff1d(np.arange(64), where)
            where[rng.integers(0, 32)] = free[rng.integers(0, free.shape[0])]
            boards[t + 7, kinds, where] = True
        planes = np.zeros((plies, 112, 64), bool)
        for h in range(8):                               # history: the current board first
            planes[:, 13 * h:13 * h + 12] = boards[7 - h:7 - h + plies]
        planes[np.arange(plies), 104 + np.arange(plies) % 2] = True   # side to move, castling, rule-50 stand-ins
        planes[:, 111] = True
        rec = np.zeros(plies, RECORD)
        rec["planes"] = np.packbits(planes, axis=2, bitorder="little")
        n_legal = rng.integers(20, 41, plies)
        legal = np.arange(64)[None, :] < n_legal[:, None]
        rec["move"] = np.where(legal, rng.integers(0, N_MOVES, (plies, 64)), -1)
        g = rng.gamma(0.3, size=(plies, 64)) * legal       # Dirichlet(0.3) visit shares
        rec["prob"] = g / g.sum(1, keepdims=True)
        rec["result"] = rng.integers(0, 3)
        chunks.append(zlib.compress(rec.tobytes(), 1))
    return chunks


def parser(chunks, batch, buffer_size, games_per_batch, seed):
    """lc0's chunk parser and shuffle buffer, in miniature: yields host batches forever."""
    rng = np.random.default_rng(seed)
    buf = np.concatenate([np.frombuffer(zlib.decompress(c), RECORD) for c in chunks[:buffer_size // 256]])
    while True:
        for c in rng.choice(len(chunks), games_per_batch):
            rec = np.frombuffer(zlib.decompress(chunks[c]), RECORD)
            buf[rng.integers(0, buf.shape[0], rec.shape[0])] = rec
        b = buf[rng.integers(0, buf.shape[0], batch)]
        yield (np.ascontiguousarray(b["planes"]), b["move"].astype(np.int32), b["prob"].astype(np.float32),
               b["result"].astype(np.int32))


def prefetch_to_device(it, dev, size):
    """Puts the iterator's batches on the device on a thread, `size` batches ahead."""
    q = queue.Queue(maxsize=size)

    def producer():
        for host in it:
            q.put(tuple(jax.device_put(a, dev) for a in host))

    threading.Thread(target=producer, name="chunk-parser", daemon=True).start()
    while True:
        yield q.get()


def main():
    args = cc.parser(__doc__, warmup=5).parse_args()
    dev = jaxlm.device(args)
    if args.smoke:
        filters, blocks, batch, n_games, plies, buffer_size = 16, 2, 32, 8, 64, 512
    else:
        filters, blocks, batch, n_games, plies, buffer_size = 256, 20, 1024, 128, 256, 32_768
    cdt = jnp.bfloat16
    dn = ("NHWC", "HWIO", "NHWC")
    rng = np.random.default_rng(0)
    chunks = make_games(n_games, plies, rng)

    def conv_w(key, k, cin, cout):
        return jax.random.normal(key, (k, k, cin, cout), jnp.float32) * math.sqrt(2.0 / (k * k * cin))

    def init(key):
        ks = iter(jax.random.split(key, 8 + 2 * blocks))
        p, s = {"blocks": []}, {"blocks": []}

        def bn(c):
            return {"g": jnp.ones((c,)), "b": jnp.zeros((c,))}, {"mean": jnp.zeros((c,)), "var": jnp.ones((c,))}

        p["inp"], (p["inp_bn"], s["inp_bn"]) = conv_w(next(ks), 3, 112, filters), bn(filters)
        for _ in range(blocks):
            (b1, s1), (b2, s2) = bn(filters), bn(filters)
            p["blocks"].append({"c1": conv_w(next(ks), 3, filters, filters), "n1": b1,
                                "c2": conv_w(next(ks), 3, filters, filters), "n2": b2})
            s["blocks"].append({"n1": s1, "n2": s2})
        p["pol"] = conv_w(next(ks), 1, filters, 73)
        p["val"], (p["val_bn"], s["val_bn"]) = conv_w(next(ks), 1, filters, 32), bn(32)
        p["fc1"] = {"w": jax.random.normal(next(ks), (32 * 64, 128)) / math.sqrt(32 * 64), "b": jnp.zeros((128,))}
        p["fc2"] = {"w": jax.random.normal(next(ks), (128, 3)) / math.sqrt(128), "b": jnp.zeros((3,))}
        return p, s

    def conv(x, w):
        k = w.shape[0]
        return jax.lax.conv_general_dilated(x, w.astype(cdt), (1, 1), [(k // 2, k // 2)] * 2, dimension_numbers=dn)

    def batch_norm(x, p, s, relu=True):
        x32 = x.astype(jnp.float32)
        mean, var = x32.mean((0, 1, 2)), x32.var((0, 1, 2))
        new = {"mean": 0.99 * s["mean"] + 0.01 * mean, "var": 0.99 * s["var"] + 0.01 * var}
        y = (x32 - mean) * jax.lax.rsqrt(var + 1e-5) * p["g"] + p["b"]
        return (jax.nn.relu(y) if relu else y).astype(cdt), new

    def forward(p, s, x):
        ns = {"blocks": []}
        h, ns["inp_bn"] = batch_norm(conv(x, p["inp"]), p["inp_bn"], s["inp_bn"])
        for bp, bs in zip(p["blocks"], s["blocks"]):
            y, n1 = batch_norm(conv(h, bp["c1"]), bp["n1"], bs["n1"])
            y, n2 = batch_norm(conv(y, bp["c2"]), bp["n2"], bs["n2"], relu=False)
            h = jax.nn.relu(y.astype(jnp.float32) + h.astype(jnp.float32)).astype(cdt)
            ns["blocks"].append({"n1": n1, "n2": n2})
        policy = conv(h, p["pol"]).astype(jnp.float32).reshape(x.shape[0], N_MOVES)
        v, ns["val_bn"] = batch_norm(conv(h, p["val"]), p["val_bn"], s["val_bn"])
        v = jax.nn.relu(v.reshape(x.shape[0], -1) @ p["fc1"]["w"].astype(cdt) + p["fc1"]["b"].astype(cdt))
        value = (v @ p["fc2"]["w"].astype(cdt)).astype(jnp.float32) + p["fc2"]["b"]
        return policy, value, ns

    tx = optax.chain(optax.add_decayed_weights(1e-4), optax.sgd(0.02, momentum=0.9, nesterov=True))
    bits = jnp.arange(8, dtype=jnp.uint8)

    def train_step(p, s, o, planes, move, prob, result):
        x = ((planes[..., None] >> bits) & 1).reshape(planes.shape[0], 112, 64)          # unpack on the device
        x = x.reshape(-1, 112, 8, 8).transpose(0, 2, 3, 1).astype(cdt)
        b = planes.shape[0]
        target = jnp.zeros((b, N_MOVES), jnp.float32).at[jnp.arange(b)[:, None], jnp.maximum(move, 0)].add(
            jnp.where(move >= 0, prob, 0.0))

        def loss_fn(p):
            policy, value, ns = forward(p, s, x)
            lp = optax.softmax_cross_entropy(policy, target).mean()
            lv = optax.softmax_cross_entropy_with_integer_labels(value, result).mean()
            return lp + lv, (ns, lp, lv)

        (loss, (ns, lp, lv)), g = jax.value_and_grad(loss_fn, has_aux=True)(p)
        u, o = tx.update(g, o, p)
        return optax.apply_updates(p, u), ns, o, jnp.stack([lp, lv])

    train_step = jax.jit(train_step, donate_argnums=(0, 1, 2))
    with jax.default_device(dev):
        params, stats = init(jax.random.PRNGKey(0))
        opt_state = tx.init(params)
    n_params = sum(a.size for a in jax.tree_util.tree_leaves(params))
    batches = prefetch_to_device(parser(chunks, batch, buffer_size, 4, seed=1), dev, 2)
    st = {"p": params, "s": stats, "o": opt_state, "acc": [], "losses": None, "reads": 0}

    def step(i):
        planes, move, prob, result = next(batches)
        st["p"], st["s"], st["o"], losses = train_step(st["p"], st["s"], st["o"], planes, move, prob, result)
        st["acc"].append(losses)
        if len(st["acc"]) == 100:
            st["losses"] = [round(float(v), 4) for v in np.mean(jax.device_get(st["acc"]), 0)]
            st["acc"].clear()
            st["reads"] += 1
        return losses

    cc.run("h_jax_lc0_chess_resnet_prefetch_bf16", args, step, batch,
           extra=lambda: {"blocks": blocks, "filters": filters, "params_m": round(n_params / 1e6, 1),
                          "compute_dtype": "bfloat16", "prefetch": 2, "policy_value_loss": st["losses"],
                          "loss_reads": st["reads"], "chunk_mb": round(sum(len(c) for c in chunks) / 1e6, 1)})


if __name__ == "__main__":
    main()
