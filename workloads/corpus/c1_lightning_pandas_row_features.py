"""C1 data preparation on the training thread (a pandas feature pipeline in a Dataset's
__getitem__, num_workers=0): an FT-Transformer (Gorishniy et al. 2021) for tabular
churn-style classification as a LightningModule: 24 numeric and 12 categorical columns, each
a token of width 192 (numeric: a per-feature linear embedding; categorical: an embedding
table), a [CLS] token, 4 transformer layers with 8 heads (PyTorch's
nn.TransformerEncoderLayer, pre-norm, SDPA), cross-entropy over 2 classes, AdamW;
Trainer(precision="bf16-mixed"), batch 256; the loss is read every 50 steps.

The data is a pandas DataFrame of 200,000 rows (made at start, as read from a CSV): numeric
columns with missing values, categorical columns as strings. The Dataset is the one in many
tabular tutorials: `row = self.df.iloc[i]`, the numeric values filled with the training
medians and standardized, each categorical string mapped through a vocabulary dict (unknown
-> 0), the label read, three tensors returned; the DataModule's loader is
DataLoader(ds, batch_size=256, shuffle=True) with the default num_workers=0, so the training
thread builds 256 rows with pandas before every step while the GPU waits.

--fix: gpuwhy's C1 advice (load data in worker processes): DataLoader(num_workers=N,
pin_memory=True, prefetch_factor=4, persistent_workers=True), N one per free core
(cc.fix_workers()); Dataset, model, batch and optimizer unchanged.

Written blind for the mike batch.
"""
import numpy as np
import pandas as pd
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset
import lightning as L

import cc

NUM, CAT, CARD = 24, 12, 50


def make_frame(n, seed=0):
    """The table as read from a CSV: float columns with ~5% missing, string categoricals."""
    rng = np.random.default_rng(seed)
    cols = {}
    for j in range(NUM):
        v = rng.normal(j * 0.3, 1.0 + j * 0.1, n)
        v[rng.random(n) < 0.05] = np.nan
        cols[f"num_{j}"] = v
    for j in range(CAT):
        cols[f"cat_{j}"] = np.array([f"c{j}_{k}" for k in range(CARD)])[rng.zipf(1.5, n) % CARD]
    logit = np.nan_to_num(cols["num_0"]) * 0.8 - np.nan_to_num(cols["num_3"]) * 0.5 + (cols["cat_0"] == "c0_1") * 1.5
    cols["churn"] = (logit + rng.logistic(size=n) > 0).astype(np.int64)
    return pd.DataFrame(cols)


class RowDataset(Dataset):
    def __init__(self, df):
        self.df = df
        self.num_cols = [f"num_{j}" for j in range(NUM)]
        self.cat_cols = [f"cat_{j}" for j in range(CAT)]
        self.median = df[self.num_cols].median()
        self.mean = df[self.num_cols].fillna(self.median).mean()
        self.std = df[self.num_cols].fillna(self.median).std()
        self.vocab = {c: {v: k + 1 for k, v in enumerate(sorted(df[c].unique()))} for c in self.cat_cols}

    def __len__(self):
        return len(self.df)

    def __getitem__(self, i):
        row = self.df.iloc[i]
        num = row[self.num_cols].astype("float64").fillna(self.median)
        num = ((num - self.mean) / self.std).to_numpy(np.float32)
        cat = np.array([self.vocab[c].get(row[c], 0) for c in self.cat_cols], np.int64)
        return torch.from_numpy(num), torch.from_numpy(cat), torch.tensor(row["churn"], dtype=torch.long)


class FTTransformer(L.LightningModule):
    def __init__(self, d=192, layers=4, heads=8):
        super().__init__()
        self.w = nn.Parameter(torch.randn(NUM, d) * 0.1)
        self.b = nn.Parameter(torch.zeros(NUM, d))
        self.cat = nn.Embedding(CAT * (CARD + 1), d)
        self.register_buffer("cat_off", torch.arange(CAT) * (CARD + 1))
        self.cls = nn.Parameter(torch.randn(1, 1, d) * 0.02)
        layer = nn.TransformerEncoderLayer(d, heads, 4 * d // 3 * 2, dropout=0.1, activation="gelu",
                                           batch_first=True, norm_first=True)
        self.enc = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = nn.Sequential(nn.LayerNorm(d), nn.ReLU(), nn.Linear(d, 2))
        self.acc = None
        self.last_loss = None
        self.reads = 0

    def forward(self, num, cat):
        t = torch.cat([self.cls.expand(num.shape[0], -1, -1), num[..., None] * self.w + self.b,
                       self.cat(cat + self.cat_off)], 1)
        return self.head(self.enc(t)[:, 0])

    def training_step(self, batch, batch_idx):
        num, cat, y = batch
        loss = F.cross_entropy(self(num, cat), y)
        self.acc = loss.detach() if self.acc is None else self.acc + loss.detach()
        if batch_idx % 50 == 49:
            self.last_loss = self.acc.item() / 50
            self.acc = None
            self.reads += 1
        return loss

    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=1e-4, weight_decay=1e-5)


def main():
    args = cc.parser(__doc__, warmup=3).parse_args()
    cc.torch_device(args)
    gpu = args.device == "cuda"
    n, batch = (4_000, 64) if args.smoke else (200_000, 256)
    torch.manual_seed(0)
    ds = RowDataset(make_frame(n))
    if args.fix:
        loader = DataLoader(ds, batch_size=batch, shuffle=True, drop_last=True, num_workers=cc.fix_workers(),
                            pin_memory=gpu, prefetch_factor=4, persistent_workers=True)
    else:
        loader = DataLoader(ds, batch_size=batch, shuffle=True, drop_last=True)  # gpuwhy: plants C1 (num_workers=0: 256 pandas rows built on the training thread before each step)
    model = FTTransformer()
    timer = cc.lightning_timer("c1_lightning_pandas_row_features", args, batch,
                               extra=lambda: {"loader_workers": loader.num_workers, "rows": n,
                                              "loss": model.last_loss, "loss_reads": model.reads})
    trainer = cc.lightning_trainer(args, [timer], precision="bf16-mixed" if gpu else "32-true")
    trainer.fit(model, loader)


if __name__ == "__main__":
    main()
