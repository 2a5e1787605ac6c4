"""C1 data loading (a prefetch thread, not processes, for Python preprocessing): text
classification with a transformer encoder (nn.TransformerEncoder, 6 layers, d=768, 12
heads, learned positions, mean pooling over the unpadded tokens, 50 classes, vocab 32000,
batch 128 x up to 256 tokens, bf16 autocast, fused AdamW). Input is prepared "in the
background" by a threading.Thread, as many hand-rolled loaders do to avoid DataLoader's
processes: for each document (64 to 320 words held in RAM) it lower-cases and strips
punctuation character by character, splits into words, hashes each word into the
vocabulary with an FNV-1a loop over its characters, adds a hashed bigram for every other
word, pads the batch in Python, and puts the pinned id/mask/label tensors into a
queue.Queue(maxsize=8); the training loop does q.get() and copies the batch to the GPU. The
thread's work is pure Python and holds the GIL: a batch costs one core about 40 ms, more
than a GPU step, and while the thread makes the batch that refills the slot each q.get()
frees, the training thread, which takes the GIL back after each of its ~700 kernel
launches a step, barely gets to launch: the Python preprocessing runs serialized with the
training loop through the GIL, and the GPU waits for it.

--fix: gpuwhy's C1 advice (prepare batches in parallel worker processes ahead of the loop):
the same per-sample work in a Dataset's __getitem__ and the same padding in collate_fn,
run by a DataLoader with num_workers = the free cores (cc.fix_workers()),
persistent_workers=True, prefetch_factor=4, pin_memory=True; model and loop unchanged.
"""
import queue
import random
import threading

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

import cc

VOCAB, MAX_LEN, CLASSES, PAD, CLS = 32000, 256, 50, 0, 1


def fnv(s):
    h = 2166136261
    for ch in s:
        h = ((h ^ ord(ch)) * 16777619) & 0xFFFFFFFF
    return h


def encode(text):
    """Normalize, split, hash words (and every other bigram) into ids, in Python."""
    chars = []
    for ch in text.lower():
        chars.append(ch if ch.isalnum() or ch == "'" else " ")
    words = "".join(chars).split()
    ids = [CLS]
    for k, w in enumerate(words):
        ids.append(2 + fnv(w) % (VOCAB - 2))
        if k % 2 and k + 1 < len(words):
            ids.append(2 + fnv(w + "_" + words[k + 1]) % (VOCAB - 2))
        if len(ids) >= MAX_LEN:
            break
    return ids[:MAX_LEN]


class Docs(Dataset):
    def __init__(self, lines):
        self.lines = lines
        self.labels = [fnv(line[:24]) % CLASSES for line in lines]

    def __len__(self):
        return 1_000_000  # many passes over the documents held in RAM

    def __getitem__(self, i):
        i %= len(self.lines)
        return encode(self.lines[i]), self.labels[i]


def pad_batch(items):
    longest = max(len(ids) for ids, _ in items)
    rows, masks = [], []
    for ids, _ in items:
        rows.append(ids + [PAD] * (longest - len(ids)))
        masks.append([1] * len(ids) + [0] * (longest - len(ids)))
    return (torch.tensor(rows, dtype=torch.long), torch.tensor(masks, dtype=torch.bool),
            torch.tensor([y for _, y in items], dtype=torch.long))


class Classifier(nn.Module):
    def __init__(self, d, heads, layers):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, d, padding_idx=PAD)
        self.pos = nn.Embedding(MAX_LEN, d)
        layer = nn.TransformerEncoderLayer(d, heads, 4 * d, dropout=0.1, activation="gelu", batch_first=True,
                                           norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = nn.Linear(d, CLASSES)

    def forward(self, ids, mask):
        h = self.emb(ids) + self.pos.weight[:ids.shape[1]]
        h = self.encoder(h, src_key_padding_mask=~mask)
        m = mask.unsqueeze(-1).to(h.dtype)
        return self.head((h * m).sum(1) / m.sum(1))


def main():
    args = cc.parser(__doc__, warmup=5).parse_args()
    dev = cc.torch_device(args)
    d, heads, layers, batch, n_docs, min_w, max_w = \
        (64, 4, 1, 8, 256, 8, 40) if args.smoke else (768, 12, 6, 128, 4096, 64, 320)
    pin = dev.type == "cuda"
    data = Docs(cc.text_lines(n_docs, seed=3, min_words=min_w, max_words=max_w))
    model = Classifier(d, heads, layers).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=2e-4, weight_decay=0.01, fused=dev.type == "cuda")

    if args.fix:
        loader = DataLoader(data, batch_size=batch, shuffle=True, drop_last=True, collate_fn=pad_batch,
                            num_workers=2 if args.smoke else cc.fix_workers(), prefetch_factor=4,
                            persistent_workers=True, pin_memory=pin)
        it = iter(loader)
        get = lambda: next(it)  # noqa: E731
        workers = loader.num_workers
    else:
        q = queue.Queue(maxsize=8)
        stop = threading.Event()

        def prefetch():
            r = random.Random(0)
            while not stop.is_set():
                idx = [r.randrange(len(data.lines)) for _ in range(batch)]
                ids, mask, y = pad_batch([data[i] for i in idx])
                q.put((ids.pin_memory(), mask.pin_memory(), y.pin_memory()) if pin else (ids, mask, y))

        threading.Thread(target=prefetch, daemon=True).start()  # gpuwhy: plants C1 (one Python thread prepares every batch, under the GIL)
        get = q.get
        workers = 0

    def step(i):
        ids, mask, y = (t.to(dev, non_blocking=True) for t in get())
        with torch.autocast(dev.type, dtype=torch.bfloat16):
            logits = model(ids, mask)
        loss = F.cross_entropy(logits.float(), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    cc.run("c1_torch_thread_prefetch_gil", args, step, batch,
           extra=lambda: {"prefetch": "DataLoader workers" if args.fix else "thread", "num_workers": workers})
    if not args.fix:
        stop.set()


if __name__ == "__main__":
    main()
