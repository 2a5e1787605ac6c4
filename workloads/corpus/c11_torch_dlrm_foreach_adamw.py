"""C11 memory-bound kernels (an unfused optimizer over large dense-gradient tables): a
DLRM-style click-through-rate model in plain PyTorch (13 dense features through a bottom
MLP 13-512-256-128; 26 categorical features looked up in nn.Embedding tables of dimension
128, from 1,000,000 rows down to 1,000, 418 M parameters in all; pairwise dot-product
interaction of the 27 vectors; top MLP 479-1024-1024-512-256-1; BCE loss; bf16 autocast
for the MLPs) trained on batches of 16,384 impressions (power-law ids, made once on the GPU
and cycled), loss read every 50 steps. The tables are ordinary nn.Embedding modules
(dense gradients, as in most Kaggle-style CTR code) and the optimizer is
torch.optim.AdamW(model.parameters(), lr, weight_decay) with PyTorch's default
implementation on CUDA, the multi-tensor "foreach" one: each step it walks the 1.7 GB of
parameters, their gradients and both moments in eight separate passes
(_foreach_mul_ for the decay, _foreach_lerp_, _foreach_mul_ and _foreach_addcmul_ for the
moments, then _foreach_sqrt, _foreach_div_, _foreach_add_ into a new denominator list and
_foreach_addcdiv_), about 21 reads or writes of 4 bytes a parameter where one fused pass
needs 7: elementwise kernels that keep the GPU's memory busy and its arithmetic idle.

--fix: gpuwhy's C11 advice (fusion): the same AdamW with fused=True (one kernel reads the
parameter, gradient and moments once and writes them back); model, data, hyperparameters
and the dense gradients unchanged.

Written blind for the summit batch.
"""
import torch
import torch.nn.functional as F

import cc

ROWS = [1_000_000, 600_000, 400_000, 300_000, 200_000, 200_000, 100_000, 100_000,
        50_000, 50_000, 50_000, 50_000, 50_000, 50_000, 10_000, 10_000, 10_000, 10_000,
        10_000, 10_000, 1_000, 1_000, 1_000, 1_000, 1_000, 1_000]


def mlp(sizes, last_act=True):
    layers = []
    for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
        layers.append(torch.nn.Linear(a, b))
        if last_act or i < len(sizes) - 2:
            layers.append(torch.nn.ReLU())
    return torch.nn.Sequential(*layers)


class DLRM(torch.nn.Module):
    def __init__(self, rows, dim, dense_in=13):
        super().__init__()
        self.bottom = mlp([dense_in, 512, 256, dim])
        self.tables = torch.nn.ModuleList(torch.nn.Embedding(n, dim) for n in rows)
        n = len(rows) + 1
        self.register_buffer("tri", torch.tril_indices(n, n, -1), persistent=False)
        self.top = mlp([dim + n * (n - 1) // 2, 1024, 1024, 512, 256, 1], last_act=False)

    def forward(self, dense, cats):
        x = self.bottom(dense)
        t = torch.stack([x] + [emb(cats[:, k]) for k, emb in enumerate(self.tables)], 1)  # (B, 27, dim)
        z = torch.bmm(t, t.transpose(1, 2))[:, self.tri[0], self.tri[1]]  # the 351 pairwise dots
        return self.top(torch.cat([x, z.to(x.dtype)], 1)).squeeze(1)


def main():
    args = cc.parser(__doc__).parse_args()
    dev = cc.torch_device(args)
    rows, dim, batch = ([500, 200, 100, 50], 16, 64) if args.smoke else (ROWS, 128, 16_384)
    torch.manual_seed(0)
    with torch.device(dev):
        model = DLRM(rows, dim)
    gpu = dev.type == "cuda"
    if args.fix and gpu:
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=1e-5, fused=True)
    else:
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=1e-5)  # gpuwhy: plants C11 (the default foreach AdamW: eight unfused passes over 1.7 GB of tables)
    g = torch.Generator(device=dev).manual_seed(0)
    rows_t = torch.tensor(rows, device=dev, dtype=torch.float64)
    data = []
    for _ in range(8):  # power-law ids: a few rows of each table are hot
        u = torch.rand(batch, len(rows), device=dev, generator=g, dtype=torch.float64)
        cats = (rows_t * u.pow(3)).long().clamp_max(rows_t.long() - 1)
        dense = torch.log1p(torch.rand(batch, 13, device=dev, generator=g) * 100)
        labels = (torch.rand(batch, device=dev, generator=g) < 0.25).float()
        data.append((dense, cats, labels))
    losses = []
    log = {"loss": None}

    def step(i):
        dense, cats, labels = data[i % len(data)]
        with torch.autocast(dev.type, dtype=torch.bfloat16):
            logits = model(dense, cats)
        loss = F.binary_cross_entropy_with_logits(logits.float(), labels)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        losses.append(loss.detach())
        if len(losses) == 50:
            log["loss"] = torch.stack(losses).mean().item()
            losses.clear()

    params = sum(p.numel() for p in model.parameters())
    cc.run("c11_torch_dlrm_foreach_adamw", args, step, batch,
           extra={"parameters_m": round(params / 1e6, 1),
                  "optimizer": "AdamW fused" if args.fix and gpu else "AdamW default (foreach on CUDA)"})


if __name__ == "__main__":
    main()
