"""C1 Cloze masking of user histories on the training thread (sequential recommendation,
BERT4Rec with its DataLoader left at num_workers=0): next-item recommendation on a
MovieLens-1M-sized log (6,040 users, 3,416 items, ~1.0 M interactions, 163.5 a user on average,
as the BERT4Rec paper's Table 1 gives it; synthetic, Zipf item popularity and log-normal
history lengths from 5 to 2,314, made at start) with BERT4Rec (Sun et al., CIKM 2019) in plain
PyTorch at the paper's ML-1m configuration: hidden 64, 2 pre-LN Transformer blocks of 2 heads
(feed-forward 256, GELU, dropout 0.1), learned positions, maximum length 200, mask probability
0.2, batch 256 users, an output layer over all 3,418 tokens (items, padding, [mask]) at every
position, cross-entropy with ignore_index 0 (only the masked positions count), Adam (lr 1e-3),
bf16 autocast; each user's history served 10 times an epoch, the original code's dupe_factor.
The loss stays on the GPU and is read every 100 steps.

The Dataset is the one of jaywonchung/BERT4Rec-VAE-Pytorch (dataloaders/bert.py,
BertTrainDataset), which many BERT4Rec ports copy: __getitem__ walks the user's whole history
in Python, one random.Random draw an item (mask with 80% [mask], 10% a random item, 10% kept),
builds the token and label lists, keeps the last 200, left-pads them and returns two
LongTensors; the default collate stacks 256 of them. The port's train loader has its own worker
count; this script leaves num_workers=0, as notebook copies of it do, so ~42,000 Python loop
iterations and 512 tensor creations a batch (27.7 ms a batch timed on a CPU-only machine of two
loaded cores, ~12-18 ms estimated on a server core) run on the training thread before each
step, whose GPU work (the 51,200 x 3,417 logits, their float32 cross-entropy, ~6 GB of memory
traffic, two small encoder blocks and Adam) is ~3-4.5 ms: the masking is ~75-85% of a plain
step, the GPU idle about that share.

--fix: gpuwhy's C1 advice (load data in worker processes): DataLoader(num_workers=N) with one
worker per free core (cc.fix_workers()), pin_memory=True, prefetch_factor=4,
persistent_workers=True, the batches copied with non_blocking=True; a worker_init_fn reseeds
each worker's random.Random (the forked copies would otherwise draw the same masks; no cost
change); data, masking, model, batch and optimizer unchanged.

Written blind for the whiskey batch.
"""
import random

import numpy as np
import torch
import torch.nn as nn
import torch.utils.data as data_utils

import cc


def make_log(n_users, n_items, mean_len, max_len_hist, seed=0):
    """user -> chronological item list: Zipf item popularity, log-normal history lengths."""
    rng = np.random.default_rng(seed)
    lens = np.exp(rng.normal(np.log(mean_len) - 0.5, 1.0, n_users)).astype(np.int64)
    lens = np.clip(lens, 5, max_len_hist)
    pop = 1.0 / np.arange(1, n_items + 1) ** 0.9
    pop /= pop.sum()
    items = rng.choice(n_items, int(lens.sum()), p=pop) + 1          # item ids 1..n_items, 0 = padding
    u2seq, off = {}, 0
    for u, n in enumerate(lens):
        u2seq[u] = items[off:off + n].tolist()
        off += n
    return u2seq


class BertTrainDataset(data_utils.Dataset):
    """jaywonchung/BERT4Rec-VAE-Pytorch's BertTrainDataset (dupe_factor: the original code's
    repeated masking of each user, here as a longer epoch)."""

    def __init__(self, u2seq, max_len, mask_prob, mask_token, num_items, rng, dupe_factor=10):
        self.u2seq = u2seq
        self.users = sorted(self.u2seq.keys())
        self.max_len = max_len
        self.mask_prob = mask_prob
        self.mask_token = mask_token
        self.num_items = num_items
        self.rng = rng
        self.dupe_factor = dupe_factor

    def __len__(self):
        return len(self.users) * self.dupe_factor

    def __getitem__(self, index):
        user = self.users[index % len(self.users)]
        seq = self._getseq(user)
        tokens = []
        labels = []
        for s in seq:
            prob = self.rng.random()
            if prob < self.mask_prob:
                prob /= self.mask_prob
                if prob < 0.8:
                    tokens.append(self.mask_token)
                elif prob < 0.9:
                    tokens.append(self.rng.randint(1, self.num_items))
                else:
                    tokens.append(s)
                labels.append(s)
            else:
                tokens.append(s)
                labels.append(0)
        tokens = tokens[-self.max_len:]
        labels = labels[-self.max_len:]
        mask_len = self.max_len - len(tokens)
        tokens = [0] * mask_len + tokens
        labels = [0] * mask_len + labels
        return torch.LongTensor(tokens), torch.LongTensor(labels)

    def _getseq(self, user):
        return self.u2seq[user]


def reseed_worker(worker_id):
    info = data_utils.get_worker_info()
    info.dataset.rng = random.Random(1234 + worker_id)


class BERT4Rec(nn.Module):
    def __init__(self, num_items, max_len, hidden, blocks, heads, dropout):
        super().__init__()
        self.token = nn.Embedding(num_items + 2, hidden, padding_idx=0)  # items, 0 = padding, n + 1 = [mask]
        self.position = nn.Embedding(max_len, hidden)
        self.drop = nn.Dropout(dropout)
        layer = nn.TransformerEncoderLayer(hidden, heads, dim_feedforward=4 * hidden, dropout=dropout,
                                           activation="gelu", batch_first=True, norm_first=True)
        self.blocks = nn.TransformerEncoder(layer, blocks, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(hidden)
        self.out = nn.Linear(hidden, num_items + 1)

    def forward(self, x):
        pad = x == 0
        h = self.drop(self.token(x) + self.position.weight[: x.shape[1]])
        h = self.blocks(h, src_key_padding_mask=pad)
        return self.out(self.norm(h))  # B x T x (num_items + 1)


def main():
    args = cc.parser(__doc__, warmup=5).parse_args()
    dev = cc.torch_device(args)
    gpu = dev.type == "cuda"
    if args.smoke:
        n_users, n_items, mean_len, max_hist, max_len, hidden, batch = 300, 200, 40, 300, 50, 32, 32
    else:
        n_users, n_items, mean_len, max_hist, max_len, hidden, batch = 6040, 3416, 163.5, 2314, 200, 64, 256
    blocks, heads, dropout, mask_prob, lr = 2, 2, 0.1, 0.2, 1e-3
    u2seq = make_log(n_users, n_items, mean_len, max_hist)
    ds = BertTrainDataset(u2seq, max_len, mask_prob, n_items + 1, n_items, random.Random(98765))
    kw = dict(batch_size=batch, shuffle=True, drop_last=True)
    if args.fix:
        # the advice: the masking in worker processes, one per free core, ahead of the loop
        workers = 2 if args.smoke else cc.fix_workers()
        loader = data_utils.DataLoader(ds, **kw, num_workers=workers, pin_memory=gpu, prefetch_factor=4,
                                       persistent_workers=True, worker_init_fn=reseed_worker)
    else:
        workers = 0
        loader = data_utils.DataLoader(ds, **kw)  # gpuwhy: plants C1 (num_workers=0: 256 users' Cloze masking, ~42,000 Python loop iterations and 512 LongTensors, on the training thread before each step)

    def batches():
        while True:
            for b in loader:
                yield b

    it = batches()
    torch.manual_seed(0)
    model = BERT4Rec(n_items, max_len, hidden, blocks, heads, dropout).to(dev)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    ce = nn.CrossEntropyLoss(ignore_index=0)
    st = {"acc": torch.zeros((), device=dev), "loss": None, "reads": 0, "masked": torch.zeros((), device=dev), "n": 0}

    def step(i):
        model.train()
        seqs, labels = next(it)
        seqs = seqs.to(dev, non_blocking=args.fix)
        labels = labels.to(dev, non_blocking=args.fix)
        optimizer.zero_grad()
        with torch.autocast(dev.type, dtype=torch.bfloat16):
            logits = model(seqs)
        loss = ce(logits.float().view(-1, logits.size(-1)), labels.view(-1))
        loss.backward()
        optimizer.step()
        st["acc"] += loss.detach()
        st["masked"] += (labels > 0).sum()
        st["n"] += 1
        if i % 100 == 99:
            st["loss"] = round(st["acc"].item() / 100, 4)
            st["acc"].zero_()
            st["reads"] += 1

    cc.run("c1_torch_bert4rec_cloze_mask_main", args, step, batch,
           extra=lambda: {"num_workers": workers, "users": n_users, "items": n_items,
                          "interactions": sum(len(s) for s in u2seq.values()), "max_len": max_len,
                          "masked_per_step": round(st["masked"].item() / max(1, st["n"]), 1),
                          "params_m": round(sum(p.numel() for p in model.parameters()) / 1e6, 3),
                          "loss": st["loss"], "loss_reads": st["reads"]})


if __name__ == "__main__":
    main()
