"""C1 data loading (tabular): a click-through-rate MLP (embedding bags over 26 hashed
categorical fields, 13 numeric ones, three 1024-wide layers, bf16 autocast, batch 2048)
fed by a Dataset whose __getitem__ builds each row's features in Python: the raw row is a
list of strings, each categorical field is hashed into its table (zlib.crc32 of the
field's name and value), each numeric one parsed, log-scaled and clipped. num_workers=0,
so every row of every batch is built on the training thread while the GPU waits.

--fix: gpuwhy's C1 advice for PyTorch: num_workers = the free cores (cc.fix_workers()), persistent_workers=True,
pin_memory=True, prefetch_factor=4 (the same Dataset, in worker processes).
"""
import math
import random
import zlib

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset

import cc

NUM, CAT, BUCKETS = 13, 26, 100_003


class RawRows(Dataset):
    """Rows as a log file holds them: strings. A few thousand made once, read round-robin."""

    def __init__(self, n):
        r = random.Random(0)
        self.rows = [[str(r.randint(0, 5000)) if r.random() > 0.1 else "" for _ in range(NUM)] +
                     [f"{r.getrandbits(32):08x}" for _ in range(CAT)] for _ in range(n)]
        self.labels = [r.random() < 0.25 for _ in range(n)]

    def __len__(self):
        return 10_000_000

    def __getitem__(self, i):
        row = self.rows[i % len(self.rows)]
        num = [min(math.log1p(float(v)), 10.0) / 10.0 if v else 0.0 for v in row[:NUM]]
        cat = [zlib.crc32(f"C{k}={v}".encode()) % BUCKETS for k, v in enumerate(row[NUM:])]
        return torch.tensor(num), torch.tensor(cat), torch.tensor(float(self.labels[i % len(self.labels)]))


class CTR(nn.Module):
    def __init__(self, dim, width):
        super().__init__()
        self.emb = nn.ModuleList(nn.Embedding(BUCKETS, dim) for _ in range(CAT))
        self.mlp = nn.Sequential(nn.Linear(NUM + CAT * dim, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU(),
                                 nn.Linear(width, width), nn.ReLU(), nn.Linear(width, 1))

    def forward(self, num, cat):
        e = [t(cat[:, k]) for k, t in enumerate(self.emb)]
        return self.mlp(torch.cat([num] + e, dim=1)).squeeze(1)


def main():
    args = cc.parser(__doc__).parse_args()
    dev = cc.torch_device(args)
    dim, width, batch = (4, 32, 16) if args.smoke else (16, 1024, 2048)
    model = CTR(dim, width).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, fused=dev.type == "cuda")
    data = RawRows(4096)
    if args.fix:
        loader = DataLoader(data, batch_size=batch, shuffle=True, drop_last=True, num_workers=2 if args.smoke else cc.fix_workers(),
                            persistent_workers=True, pin_memory=dev.type == "cuda", prefetch_factor=4)
    else:
        loader = DataLoader(data, batch_size=batch, shuffle=True, drop_last=True,
                            num_workers=0)  # gpuwhy: plants C1 (rows parsed and hashed on the training thread)
    it = iter(loader)

    def step(i):
        num, cat, y = (t.to(dev, non_blocking=True) for t in next(it))
        with torch.autocast(dev.type, dtype=torch.bfloat16):
            loss = nn.functional.binary_cross_entropy_with_logits(model(num, cat).float(), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    cc.run("c1_torch_tabular_features", args, step, batch)


if __name__ == "__main__":
    main()
