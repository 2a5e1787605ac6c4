"""wait (the feeding thread asleep): a GPT-style language model (nn.TransformerEncoder with a
causal mask, 6 layers, d=768, bf16 autocast) trained nanoGPT-style on random windows of a
uint16 token file (np.memmap, made once under GW_CORPUS_CACHE). A reader thread fills a
deque with up to 2 pinned batches; both sides poll with time.sleep(0.05) (the config's
poll interval) when the deque is empty or full, so the training thread sleeps most of each
step's wait although a batch takes well under a millisecond to make.

--fix: a queue.Queue(maxsize=8) with blocking put/get: the training thread wakes as soon as a
batch is there, and the reader keeps 8 ahead (block on the queue instead of polling: the
advice for a feeding thread that sleeps).
"""
import collections
import os
import queue
import threading
import time

import numpy as np
import torch
import torch.nn.functional as F

import cc

POLL_S = 0.05


def token_file(n):
    """n random uint16 tokens, written once (a tokenized corpus as nanoGPT's train.bin)."""
    path = os.path.join(cc.CACHE, f"tokens_{n}.bin")
    if not os.path.exists(path):
        os.makedirs(cc.CACHE, exist_ok=True)
        np.random.default_rng(0).integers(0, 32000, n, dtype=np.uint16).tofile(path + ".tmp")
        os.replace(path + ".tmp", path)
    return np.memmap(path, dtype=np.uint16, mode="r")


class GPT(torch.nn.Module):
    def __init__(self, vocab, d, layers, seq):
        super().__init__()
        self.tok = torch.nn.Embedding(vocab, d)
        self.pos = torch.nn.Embedding(seq, d)
        layer = torch.nn.TransformerEncoderLayer(d, nhead=d // 64, dim_feedforward=4 * d, batch_first=True,
                                                 norm_first=True, activation="gelu", dropout=0.0)
        self.blocks = torch.nn.TransformerEncoder(layer, layers)
        self.ln = torch.nn.LayerNorm(d)
        self.head = torch.nn.Linear(d, vocab, bias=False)
        self.register_buffer("mask", torch.nn.Transformer.generate_square_subsequent_mask(seq), persistent=False)

    def forward(self, ids):
        t = ids.shape[1]
        h = self.tok(ids) + self.pos.weight[:t]
        h = self.blocks(h, mask=self.mask[:t, :t], is_causal=True)
        return self.head(self.ln(h))


def main():
    args = cc.parser(__doc__).parse_args()
    dev = cc.torch_device(args)
    vocab, d, layers, batch, seq = (1000, 64, 1, 2, 32) if args.smoke else (32000, 768, 6, 16, 512)
    data = token_file(1 << 20 if args.smoke else 50_000_000)
    model = GPT(vocab, d, layers, seq).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=6e-4, betas=(0.9, 0.95), fused=dev.type == "cuda")
    pin = dev.type == "cuda"
    stop = threading.Event()

    def get_batch(rng):
        ix = rng.integers(0, len(data) - seq - 1, batch)
        xy = torch.from_numpy(np.stack([data[i:i + seq + 1] for i in ix]).astype(np.int64) % vocab)
        return xy.pin_memory() if pin else xy

    if args.fix:
        q = queue.Queue(maxsize=8)

        def reader():
            rng = np.random.default_rng(0)
            while not stop.is_set():
                q.put(get_batch(rng))

        def next_batch():
            return q.get()
    else:
        buf = collections.deque()

        def reader():
            rng = np.random.default_rng(0)
            while not stop.is_set():
                while len(buf) >= 2 and not stop.is_set():
                    time.sleep(POLL_S)
                buf.append(get_batch(rng))

        def next_batch():
            while not buf:
                time.sleep(POLL_S)  # gpuwhy: plants C16 (the training thread polls with sleep)
            return buf.popleft()
    threading.Thread(target=reader, daemon=True).start()

    def step(i):
        xy = next_batch().to(dev, non_blocking=True)
        x, y = xy[:, :-1], xy[:, 1:]
        with torch.autocast(dev.type, dtype=torch.bfloat16):
            logits = model(x)
        loss = F.cross_entropy(logits.float().view(-1, vocab), y.reshape(-1))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)

    cc.run("w_torch_sleep_poll", args, step, batch)
    stop.set()


if __name__ == "__main__":
    main()
