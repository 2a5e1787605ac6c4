"""C1 data loading (JAX): raw text is tokenized on the fly on the main thread by a
pure-Python greedy longest-match subword tokenizer, then padded with numpy, before each
jitted step of a small language model; the GPU waits while Python tokenizes.

--fix: the same tokenizer runs in a multiprocessing Pool (8 processes) that works ahead
of the training loop (imap over the text stream), as a user would move it off the main thread.
"""
import itertools
import unicodedata
import multiprocessing as mp

import jax
import jax.numpy as jnp
import numpy as np
import optax

import cc
import jaxlm

SEQ = 257


def build_vocab(lines, size):
    """Subwords: every word, and its prefixes and suffixes of 2-4 characters."""
    counts = {}
    for line in lines:
        for w in line.split():
            for piece in [w] + [w[:k] for k in (2, 3, 4)] + ["##" + w[-k:] for k in (2, 3, 4)]:
                counts[piece] = counts.get(piece, 0) + 1
    vocab = {"[PAD]": 0, "[UNK]": 1}
    for piece, _ in sorted(counts.items(), key=lambda kv: -kv[1])[: size - 2]:
        vocab[piece] = len(vocab)
    return vocab


VOCAB = {}


def normalize(text):
    """Clean-up and punctuation split, character by character, as BERT's basic tokenizer does."""
    out = []
    for ch in unicodedata.normalize("NFD", text):
        cat = unicodedata.category(ch)
        if cat == "Mn" or cat.startswith("C") and ch not in "\t\n\r":
            continue  # accents and control characters
        if ch.isspace():
            out.append(" ")
        elif cat.startswith("P") or not ch.isalnum():
            out.extend((" ", ch, " "))
        else:
            out.append(ch.lower())
    return "".join(out).split()


def tokenize(line):
    """Greedy longest-match subwords (the slow part, in Python)."""
    ids = []
    for word in normalize(line):
        start = 0
        while start < len(word):
            for end in range(len(word), start, -1):
                piece = word[start:end] if start == 0 else "##" + word[start:end]
                if piece in VOCAB:
                    ids.append(VOCAB[piece])
                    start = end
                    break
            else:
                for ch in word[start:]:
                    ids.append(VOCAB.get(ch, 1))
                start = len(word)
    return ids[:SEQ]


def encode_batch(lines):
    """Tokenizes and pads a batch of lines."""
    out = np.zeros((len(lines), SEQ), np.int32)
    for k, line in enumerate(lines):
        ids = tokenize(line)
        out[k, : len(ids)] = ids
    return out


def main():
    global VOCAB
    args = cc.parser(__doc__).parse_args()
    d, layers, heads, batch = (64, 1, 4, 4) if args.smoke else (512, 2, 8, 32)
    lines = cc.text_lines(4000, min_words=80, max_words=250)
    VOCAB = build_vocab(lines, 3000)
    stream = (lines[k * batch % len(lines):][:batch] for k in itertools.count())
    if args.fix:
        pool = mp.get_context("fork").Pool(8)  # forked before JAX starts its threads
        batches = cc.prefetch(pool, encode_batch, stream, 16)  # 16 batches in flight
    else:
        batches = map(encode_batch, stream)  # gpuwhy: plants C1 (tokenization on the main thread)
    dev = jaxlm.device(args)
    with jax.default_device(dev):
        params = jaxlm.init(jax.random.PRNGKey(0), len(VOCAB), d, layers, SEQ)
        opt = optax.adamw(3e-4)
        state = opt.init(params)
    train_step = jax.jit(jaxlm.make_step(opt, heads, jnp.bfloat16), donate_argnums=(0, 1))

    def step(i):
        nonlocal params, state
        ids = jax.device_put(next(batches), dev)
        params, state, loss = train_step(params, state, ids)
        return loss

    try:
        cc.run("c1_jax_tokenize_main", args, step, batch)
    finally:
        if args.fix:
            pool.terminate()


if __name__ == "__main__":
    main()
