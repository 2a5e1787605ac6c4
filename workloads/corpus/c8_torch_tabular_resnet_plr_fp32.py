"""C8 float32 matrix products without tensor cores (tabular deep learning): binary
classification on a Higgs-like table (4,000,000 rows of 28 numerical features, made on the GPU
at start and held there) with the tabular ResNet of Gorishniy et al. ("Revisiting Deep Learning
Models for Tabular Data") over periodic PLR embeddings of the numerical features ("On
Embeddings for Numerical Features in Tabular Deep Learning": 48 trainable frequencies a
feature, sin and cos, a per-feature linear layer to 24 and a ReLU): the 672 embedded values
projected to width 1,024, 8 residual blocks (BatchNorm, Linear 1,024 -> 2,048, ReLU, dropout
0.15, Linear 2,048 -> 1,024, dropout 0.05), then BatchNorm, ReLU and a linear head; 34.4 M
parameters; BCE-with-logits loss, AdamW (lr 1e-4, weight decay 1e-5), batch 4,096 rows; the
loss is summed on the GPU and read every 50 steps.

The script is written the way the tabular-DL reference code runs: plain float32 everywhere, no
autocast, and PyTorch's default float32 matmul precision ("highest"), so every nn.Linear runs
as a float32 SIMT GEMM (about 50-60 TFLOP/s on an H100) and not on the tensor cores; the
GEMMs are 0.84 TFLOP a step (FlopCounterMode), most of the step's time.

--fix: the C8 advice's first step ("at least allow TF32"):
torch.set_float32_matmul_precision("high") (and cuDNN's TF32 left on, as it is by default), so
the same float32 GEMMs run on the tensor cores as TF32; parameters, activations and the
optimizer stay float32 (the advice's bf16 autocast not taken); model, data and loss unchanged.

Written blind for the oscar batch.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

import cc


class PeriodicEmbeddings(nn.Module):
    """PLR: periodic (sin, cos of 2 pi c x, c trainable), then a per-feature linear layer and ReLU."""

    def __init__(self, n_features, n_frequencies, sigma, d_embedding):
        super().__init__()
        self.c = nn.Parameter(torch.randn(n_features, n_frequencies) * sigma)
        self.w = nn.Parameter(torch.randn(n_features, 2 * n_frequencies, d_embedding) / math.sqrt(2 * n_frequencies))
        self.b = nn.Parameter(torch.zeros(n_features, d_embedding))

    def forward(self, x):                                       # (B, F)
        z = 2 * math.pi * self.c[None] * x[..., None]            # (B, F, K)
        z = torch.cat([torch.sin(z), torch.cos(z)], -1)          # (B, F, 2K)
        return F.relu(torch.einsum("bfk,fkd->bfd", z, self.w) + self.b)


class Block(nn.Module):
    def __init__(self, d, d_hidden, dropout1, dropout2):
        super().__init__()
        self.norm = nn.BatchNorm1d(d)
        self.linear1 = nn.Linear(d, d_hidden)
        self.linear2 = nn.Linear(d_hidden, d)
        self.dropout1, self.dropout2 = nn.Dropout(dropout1), nn.Dropout(dropout2)

    def forward(self, x):
        z = self.dropout1(F.relu(self.linear1(self.norm(x))))
        return x + self.dropout2(self.linear2(z))


class TabResNet(nn.Module):
    def __init__(self, n_features, d_embedding, d, d_hidden, n_blocks):
        super().__init__()
        self.embed = PeriodicEmbeddings(n_features, 48, 0.1, d_embedding)
        self.first = nn.Linear(n_features * d_embedding, d)
        self.blocks = nn.Sequential(*[Block(d, d_hidden, 0.15, 0.05) for _ in range(n_blocks)])
        self.head = nn.Sequential(nn.BatchNorm1d(d), nn.ReLU(), nn.Linear(d, 1))

    def forward(self, x):
        return self.head(self.blocks(self.first(self.embed(x).flatten(1)))).squeeze(-1)


def make_table(n, n_features, g, dev):
    """Higgs-like numerical features (heavy-tailed kinematics, angles, masses) and labels from a
    noisy nonlinear rule."""
    x = torch.empty(n, n_features, device=dev)
    y = torch.empty(n, device=dev)
    w = torch.randn(n_features, 16, device=dev, generator=g)
    for s in range(0, n, 500_000):
        m = min(500_000, n - s)
        z = torch.randn(m, n_features, device=dev, generator=g)
        z[:, ::3] = torch.exp(0.5 * z[:, ::3])                 # momenta: log-normal
        z[:, 1::3] = torch.remainder(z[:, 1::3], 2 * math.pi) - math.pi  # angles
        x[s:s + m] = z
        logit = torch.tanh(z @ w).sum(-1) / 4 + 0.3 * torch.randn(m, device=dev, generator=g)
        y[s:s + m] = (logit > 0).float()
    mean, std = x.mean(0), x.std(0)
    return (x - mean) / std, y


def main():
    args = cc.parser(__doc__, warmup=6).parse_args()
    dev = cc.torch_device(args)
    if args.smoke:
        rows, n_features, d_emb, d, d_hidden, n_blocks, batch = 20_000, 28, 8, 64, 128, 2, 256
    else:
        rows, n_features, d_emb, d, d_hidden, n_blocks, batch = 4_000_000, 28, 24, 1024, 2048, 8, 4096
    if args.fix:
        torch.set_float32_matmul_precision("high")
    torch.manual_seed(0)
    g = torch.Generator(device=dev).manual_seed(1)
    x_all, y_all = make_table(rows, n_features, g, dev)
    model = TabResNet(n_features, d_emb, d, d_hidden, n_blocks).to(dev).train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=1e-5, fused=dev.type == "cuda")
    st = {"acc": torch.zeros((), device=dev), "loss": None, "reads": 0}

    def step(i):
        idx = torch.randint(0, rows, (batch,), device=dev, generator=g)
        logits = model(x_all[idx])  # gpuwhy: plants C8 (float32 everywhere at the default "highest" matmul precision: 0.84 TFLOP a step of SIMT float32 GEMMs, no tensor cores)
        loss = F.binary_cross_entropy_with_logits(logits, y_all[idx])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        st["acc"] += loss.detach()
        if i % 50 == 49:
            st["loss"] = st["acc"].item() / 50
            st["acc"].zero_()
            st["reads"] += 1

    cc.run("c8_torch_tabular_resnet_plr_fp32", args, step, batch,
           extra=lambda: {"float32_matmul_precision": torch.get_float32_matmul_precision(),
                          "loss": st["loss"], "loss_reads": st["reads"],
                          "params_m": round(sum(p.numel() for p in model.parameters()) / 1e6, 1)})


if __name__ == "__main__":
    main()
