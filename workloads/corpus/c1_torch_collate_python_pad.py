"""C1 data loading (too few workers for Python tokenization and padding): text
classification with a 4-layer transformer encoder (d=384, 6 heads, mean pooling over the
unpadded tokens, a linear head over 20 classes, bf16 autocast, fused AdamW, batch 64).
The Dataset holds raw documents (64 to 1024 words, cut to 512 tokens once tokenized); its
__getitem__ tokenizes in Python: the text lower-cased and stripped of punctuation
character by character, split into words, each word hashed into a 30000-entry vocabulary
by an FNV-1a loop over its characters, random word dropout with Python's `random`. The
collate_fn pads the id lists to the batch's longest in Python loops and builds the id and
mask tensors. The DataLoader has num_workers=2 (persistent, pinned): a batch costs one
worker about five GPU steps, so two workers cannot keep up and the training thread waits
for batches.

--fix: gpuwhy's C1 advice (add loader workers): num_workers = the free cores
(cc.fix_workers()), prefetch_factor=4, persistent_workers=True; Dataset and collate_fn
unchanged.
"""
import random

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

import cc

VOCAB, MAX_LEN, CLASSES, PAD, CLS, UNK = 30000, 512, 20, 0, 1, 2


def normalize(text):
    """Lower case; anything but letters, digits and apostrophes becomes a space."""
    out = []
    for ch in text.lower():
        out.append(ch if ch.isalnum() or ch == "'" else " ")
    return "".join(out)


def word_id(w):
    """FNV-1a over the word's characters, folded into the vocabulary (ids 3..VOCAB-1)."""
    h = 2166136261
    for ch in w:
        h = ((h ^ ord(ch)) * 16777619) & 0xFFFFFFFF
    return 3 + h % (VOCAB - 3)


class TextLines(Dataset):
    def __init__(self, lines, word_dropout=0.1):
        self.lines = lines
        self.labels = [sum(map(ord, line[:16])) % CLASSES for line in lines]
        self.word_dropout = word_dropout

    def __len__(self):
        return 1_000_000  # an epoch of many passes over the lines held in RAM

    def __getitem__(self, i):
        i %= len(self.lines)
        ids = [CLS]
        for w in normalize(self.lines[i]).split():
            if random.random() < self.word_dropout:
                ids.append(UNK)
            else:
                ids.append(word_id(w))
        return ids[:MAX_LEN], self.labels[i]


def pad_collate(items):
    """Pads the id lists to the batch's longest, in Python, and builds the tensors."""
    longest = max(len(ids) for ids, _ in items)
    rows, masks = [], []
    for ids, _ in items:
        n = len(ids)
        rows.append(ids + [PAD] * (longest - n))
        masks.append([1] * n + [0] * (longest - n))
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
    d, heads, layers, batch, n_lines, min_w, max_w = \
        (64, 4, 1, 8, 256, 8, 40) if args.smoke else (384, 6, 4, 64, 4096, 64, 1024)
    model = Classifier(d, heads, layers).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=2e-4, weight_decay=0.01, fused=dev.type == "cuda")
    data = TextLines(cc.text_lines(n_lines, seed=1, min_words=min_w, max_words=max_w))
    pin = dev.type == "cuda"
    if args.fix:
        loader = DataLoader(data, batch_size=batch, shuffle=True, drop_last=True, collate_fn=pad_collate,
                            num_workers=2 if args.smoke else cc.fix_workers(), prefetch_factor=4,
                            persistent_workers=True, pin_memory=pin)
    else:
        loader = DataLoader(data, batch_size=batch, shuffle=True, drop_last=True, collate_fn=pad_collate,
                            num_workers=2,  # gpuwhy: plants C1 (two workers for Python tokenization and padding)
                            persistent_workers=True, pin_memory=pin)
    it = iter(loader)

    def step(i):
        ids, mask, y = (t.to(dev, non_blocking=True) for t in next(it))
        with torch.autocast(dev.type, dtype=torch.bfloat16):
            logits = model(ids, mask)
        loss = F.cross_entropy(logits.float(), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    cc.run("c1_torch_collate_python_pad", args, step, batch,
           extra=lambda: {"num_workers": loader.num_workers})


if __name__ == "__main__":
    main()
