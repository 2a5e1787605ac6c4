"""C12 many small host-to-device copies (a batch as a dict of per-feature tensors) and C4
launch overhead (one embedding table per feature, called in a Python loop): training a
DLRM-style click-through-rate model as a LightningModule. Each example has 13 dense features
and 64 sparse id-score-list features (bags of 1-15 hashed ids, 8 on average, each with a
score); the model embeds each feature's bag as a score-weighted sum of 64-wide rows of its
table (20,000 rows a feature), runs the dense features through a bottom MLP
(13-512-256-64), takes DLRM's pairwise dot interaction of the 65 vectors and a top MLP
(2,144-512-256-1), BCE loss; Adagrad, bf16-mixed, batch 4,096, loss read every 50 steps.
The click log is held in RAM (made at start with NumPy: 65,536 examples, Zipf-like ids), laid
out once at start in host tensors pinned for the copies, and a Dataset returns whole batches
(batch_size=None) as views of them, the way in-memory recommender trainers serve a day's log
(no loader workers needed: a batch is a few slices).

The batch layout is the readable one: a dict with a values, an offsets and a scores tensor
per feature (194 tensors, 16-256 KB each), which Lightning's transfer_batch_to_device moves
one `.to(device, non_blocking=True)` at a time, 194 small copies a step far under the link's
bandwidth (C12); and the model keeps an `nn.ModuleDict` of 64 `nn.EmbeddingBag` tables called
one feature at a time, 64 small lookups forward and 64 dense bag backwards (several kernels
each) a step (C4).

--fix: gpuwhy's advice for both: the log stored in the layout it is copied in (laid out so at
start instead of per feature), TorchRec's KeyedJaggedTensor layout per batch (all features'
ids in one tensor, shifted to their table's rows,
one scores tensor and one offsets tensor over the feature-major bags: 5 copies a step with
the dense features and labels), and
the 64 tables as one `nn.EmbeddingBag` of 64 x 20,000 rows looked up in one call (FBGEMM's
table-batched embedding, in plain PyTorch); the same rows, sums, MLPs, loss, optimizer and
data (the two layouts' pooled embeddings checked equal at start).

Written blind for the lima batch.
"""
import lightning as L
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

import cc


def make_log(n, n_feat, rows, n_dense, seed=0):
    """Columns of a click log: dense features, labels, and per sparse feature its bag lengths
    (as offsets [n + 1]), hashed ids and scores (NumPy, in RAM)."""
    rng = np.random.default_rng(seed)
    dense = np.log1p(rng.exponential(3.0, (n, n_dense))).astype(np.float32)
    label = (rng.random(n) < 0.25).astype(np.float32)
    feats = []
    for k in range(n_feat):
        lens = rng.integers(1, 16, n)
        off = np.zeros(n + 1, np.int64)
        np.cumsum(lens, out=off[1:])
        ids = (rng.zipf(1.2, off[-1]) * 2_654_435_761 + k) % rows
        feats.append((off, ids.astype(np.int64), rng.random(off[-1]).astype(np.float32)))
    return dense, label, feats


class ClickBatches(Dataset):
    """Item i is a whole batch (contiguous examples of the log) as views of host tensors laid
    out once at start, pinned on a GPU: per feature (a values, a scores and an offsets tensor
    each), or packed per batch (KeyedJaggedTensor: feature-major bags, ids shifted to their
    table's rows in one big table)."""

    def __init__(self, log, batch, rows, packed, pin):
        dense, label, feats = log
        self.batch, self.packed = batch, packed
        self.n_batches = len(label) // batch
        t = (lambda a: torch.from_numpy(np.ascontiguousarray(a)).pin_memory()) if pin else \
            (lambda a: torch.from_numpy(np.ascontiguousarray(a)))
        self.dense, self.label = t(dense), t(label)
        nb, B = self.n_batches, batch
        if not packed:
            self.cols = []
            for off, ids, sc in feats:
                starts = off[::B][:nb + 1]                        # where each batch's ids start
                rel = np.stack([off[b * B:(b + 1) * B] - off[b * B] for b in range(nb)])
                self.cols.append((t(ids), t(sc), t(rel), starts))
            return
        vals, scores, offs, starts = [], [], [], [0]
        for b in range(nb):
            base = 0
            for k, (off, ids, sc) in enumerate(feats):
                o = off[b * B:(b + 1) * B + 1]
                vals.append(ids[o[0]:o[-1]] + k * rows)
                scores.append(sc[o[0]:o[-1]])
                offs.append(o[:-1] - o[0] + base)
                base += o[-1] - o[0]
            offs.append(np.array([base], np.int64))
            starts.append(starts[-1] + base)
        self.values, self.scores = t(np.concatenate(vals)), t(np.concatenate(scores))
        self.offsets = t(np.concatenate(offs).reshape(nb, len(feats) * B + 1))
        self.starts = starts

    def __len__(self):
        return 10_000_000

    def __getitem__(self, i):
        b = i % self.n_batches
        s = b * self.batch
        out = {"dense": self.dense[s:s + self.batch], "label": self.label[s:s + self.batch]}
        if not self.packed:
            for k, (ids, sc, rel, st) in enumerate(self.cols):
                out.update({f"f{k:02d}_values": ids[st[b]:st[b + 1]], f"f{k:02d}_offsets": rel[b], f"f{k:02d}_scores": sc[st[b]:st[b + 1]]})  # gpuwhy: plants C12 (three small tensors per feature: 194 separate host-to-device copies a step)
            return out
        a, e = self.starts[b], self.starts[b + 1]
        out.update(values=self.values[a:e], scores=self.scores[a:e], offsets=self.offsets[b])
        return out


def mlp(sizes, last_act=True):
    layers = []
    for j, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
        layers.append(nn.Linear(a, b))
        if last_act or j < len(sizes) - 2:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


class DLRM(L.LightningModule):
    def __init__(self, n_feat, rows, dim, n_dense, packed):
        super().__init__()
        self.n_feat, self.rows, self.dim, self.packed = n_feat, rows, dim, packed
        self.names = [f"f{k:02d}" for k in range(n_feat)]
        torch.manual_seed(0)
        tables = [nn.EmbeddingBag(rows, dim, mode="sum") for _ in range(n_feat)]
        for t in tables:
            nn.init.uniform_(t.weight, -rows ** -0.5, rows ** -0.5)
        if packed:
            self.emb = nn.EmbeddingBag(n_feat * rows, dim, mode="sum", include_last_offset=True)
            with torch.no_grad():
                self.emb.weight.copy_(torch.cat([t.weight for t in tables]))
        else:
            self.tables = nn.ModuleDict(dict(zip(self.names, tables)))
        self.bottom = mlp([n_dense, 512, 256, dim])
        n_int = (n_feat + 1) * n_feat // 2
        self.top = mlp([n_int + dim, 512, 256, 1], last_act=False)
        self.register_buffer("tril", torch.tril_indices(n_feat + 1, n_feat + 1, -1), persistent=False)
        self.acc, self.loss_value, self.reads = None, None, 0

    def embed(self, b):
        if self.packed:
            pooled = self.emb(b["values"], b["offsets"], per_sample_weights=b["scores"])     # [F * B, dim]
            return pooled.view(self.n_feat, -1, self.dim).transpose(0, 1)
        return torch.stack([self.tables[n](b[n + "_values"], b[n + "_offsets"], per_sample_weights=b[n + "_scores"]) for n in self.names], 1)  # gpuwhy: plants C4 (64 tables, one small lookup and one bag backward each, in a Python loop)

    def forward(self, b):
        x = self.bottom(b["dense"])
        z = torch.cat([x[:, None], self.embed(b).to(x.dtype)], 1)                            # [B, F + 1, dim]
        inter = torch.bmm(z, z.transpose(1, 2))[:, self.tril[0], self.tril[1]]
        return self.top(torch.cat([x, inter], 1)).squeeze(1)

    def training_step(self, b, batch_idx):
        loss = F.binary_cross_entropy_with_logits(self(b).float(), b["label"])
        self.acc = loss.detach() if self.acc is None else self.acc + loss.detach()
        if (batch_idx + 1) % 50 == 0:
            self.loss_value = self.acc.item() / 50
            self.acc = None
            self.reads += 1
        return loss

    def configure_optimizers(self):
        return torch.optim.Adagrad(self.parameters(), lr=0.02, foreach=True)


def check_layouts(batch, rows, n_feat, dim):
    """The per-feature loop and the packed lookup pool the same rows (a small log of two
    batches, on the CPU)."""
    log = make_log(2 * batch, n_feat, rows, 13, seed=1)
    a = DLRM(n_feat, rows, dim, log[0].shape[1], packed=False)
    b = DLRM(n_feat, rows, dim, log[0].shape[1], packed=True)
    with torch.no_grad():
        ea = a.embed(ClickBatches(log, batch, rows, packed=False, pin=False)[1])
        eb = b.embed(ClickBatches(log, batch, rows, packed=True, pin=False)[1])
    return float((ea - eb).abs().max() / (ea.abs().max() + 1e-12))


def main():
    args = cc.parser(__doc__, warmup=5).parse_args()
    gpu = args.device == "cuda"
    if args.smoke:
        n, n_feat, rows, dim, batch = 512, 6, 500, 16, 64
    else:
        n, n_feat, rows, dim, batch = 65_536, 64, 20_000, 64, 4096
    log = make_log(n, n_feat, rows, 13)
    check = check_layouts(batch, rows, n_feat, dim)
    if check > 1e-5:
        raise SystemExit(f"the packed layout pools other rows than the per-feature tables: {check}")
    # batches are views of host tensors laid out (and pinned) once: no loader workers needed
    loader = DataLoader(ClickBatches(log, batch, rows, packed=args.fix, pin=gpu), batch_size=None, shuffle=False,
                        num_workers=0)
    model = DLRM(n_feat, rows, dim, 13, packed=args.fix)
    timer = cc.lightning_timer("m_lightning_recsys_feature_dict_copies", args, batch,
                               extra=lambda: {"sparse_features": n_feat, "tables": 1 if args.fix else n_feat,
                                              "tensors_per_batch": 5 if args.fix else 3 * n_feat + 2,
                                              "layout": "keyed jagged (packed)" if args.fix else "dict per feature",
                                              "layout_check": round(check, 9), "loss": model.loss_value,
                                              "loss_reads": model.reads,
                                              "params_m": round(sum(p.numel() for p in model.parameters()) / 1e6, 1)})
    trainer = cc.lightning_trainer(args, [timer], precision="bf16-mixed" if gpu else "32-true")
    trainer.fit(model, loader)


if __name__ == "__main__":
    main()
