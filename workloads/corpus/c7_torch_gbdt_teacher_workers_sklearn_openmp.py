"""C7 CPU thread oversubscription (scikit-learn's own OpenMP runtime in every DataLoader worker):
distilling a gradient-boosted-trees credit-default model into a neural network (for GPU
serving and for end-to-end fine-tuning later), in plain PyTorch. The teacher is a
scikit-learn HistGradientBoostingClassifier (300 trees of 31 leaves) trained by the pipeline's
earlier stage on 100,000 of the 200,000 loan applications (48 numeric features: amounts,
ratios, counts and coded categories) and loaded with pickle; the student is an FT-Transformer
(Gorishniy et al., 2021: a per-feature linear tokenizer, a [CLS] token, 4 pre-norm blocks of
width 256 with 8 heads and a ReGLU FFN, 2.1 M parameters) trained on the teacher's
probabilities with BCE, bf16 autocast, fused AdamW (lr 3e-4, weight decay 1e-5), batch 2,048
rows, the loss read every 50 steps. As distillation with augmentation does, every batch is
new: 12 persistent DataLoader workers (fork, pinned memory) draw 2,048 rows, apply swap noise
(15% of the entries taken from other rows) and Gaussian noise, and label them with the
teacher's predict_proba.

PyTorch sets one intra-op thread in each worker, but scikit-learn ships its own OpenMP runtime
(its wheel's libgomp), which the DataLoader does not touch: each worker's predict_proba runs
every tree's pass over the 2,048 rows as an OpenMP region of one thread per physical core
(checked on the CPU-only machine: in a forked worker threadpoolctl reports torch's OpenMP at 1
thread and scikit-learn's at the core count). 12 workers x 16 threads = 192 threads on 16
cores, 300 small statically scheduled regions a batch, each one waiting at its barrier for
threads that the other workers' spinning threads keep off the cores; the loader falls far
behind the GPU and the training thread queues behind them. The JSON line gives the threads
scikit-learn used in a worker.

The script imports scikit-learn before torch (its data-preparation part comes first), so
scikit-learn's extension modules bind to their own libgomp; had torch been imported first,
they would bind to the libgomp torch loads into the global scope, and the DataLoader's one
thread would hold for them too (checked on the CPU-only machine: 1 thread in a worker with
torch imported first, the core count with scikit-learn first). The parent process never runs
scikit-learn's OpenMP before the workers fork (libgomp's pool does not survive a fork): the
teacher is fitted in a separate process the first time and cached under GW_CORPUS_CACHE
(9 s on the 2-core CPU-only machine, ~4-8 s on 16 cores), and the workers fork before CUDA starts.

--fix: gpuwhy's C7 advice (bound the thread pools: OpenMP threads 1 inside the loader
workers): the workers' worker_init_fn calls threadpoolctl.threadpool_limits(1, "openmp"), so
scikit-learn's OpenMP runs one thread in each worker; workers, augmentation, teacher, student,
batch and optimizer unchanged.

Written blind for the tango batch.
"""
import math
import os
import pickle

# the data-preparation part of the script comes first (the teacher's stage), then the student's
import numpy as np
from sklearn.ensemble import HistGradientBoostingClassifier

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

import cc

N_FEAT = 48
FIX = False


def make_loans(n, seed=0):
    """n loan applications: 48 numeric features (log-normal amounts, ratios, counts, coded
    categories) and a default label from a nonlinear risk score. NumPy only (no BLAS)."""
    rng = np.random.default_rng(seed)
    x = np.empty((n, N_FEAT), np.float32)
    x[:, 0:12] = rng.lognormal(mean=rng.uniform(6, 10, 12), sigma=rng.uniform(0.4, 1.0, 12), size=(n, 12))
    x[:, 12:24] = rng.beta(2, 5, (n, 12))
    x[:, 24:34] = rng.poisson(rng.uniform(0.5, 6, 10), (n, 10))
    x[:, 34:44] = rng.integers(0, rng.integers(3, 20, 10), (n, 10))
    x[:, 44:48] = rng.normal(0, 1, (n, 4))
    debt_ratio = x[:, 1] / (x[:, 0] + 1)
    score = (1.5 * np.tanh(debt_ratio - 1) + 2.0 * x[:, 12] - 1.2 * x[:, 13] + 0.3 * x[:, 24]
             - 0.15 * np.sqrt(x[:, 25]) + 0.4 * (x[:, 34] % 3 == 1) + 0.5 * x[:, 44] * x[:, 45]
             + 0.3 * np.sin(3 * x[:, 46]) - 1.0)
    y = (rng.random(n) < 1 / (1 + np.exp(-score))).astype(np.int64)
    return x, y


def fit_teacher(x, y, path, max_iter):
    """The earlier stage: fit the gradient-boosted trees and pickle them (its own process)."""
    teacher = HistGradientBoostingClassifier(max_iter=max_iter, max_leaf_nodes=31, learning_rate=0.1,
                                             l2_regularization=1.0, early_stopping=False, random_state=0)
    teacher.fit(x, y)
    with open(path + ".tmp", "wb") as f:
        pickle.dump(teacher, f)
    os.replace(path + ".tmp", path)


def load_teacher(x, y, max_iter, tag):
    import multiprocessing as mp
    import sklearn
    os.makedirs(cc.CACHE, exist_ok=True)
    path = os.path.join(cc.CACHE, f"loan_hgb_{tag}_{max_iter}_sklearn{sklearn.__version__}.pkl")
    if not os.path.exists(path):
        p = mp.get_context("spawn").Process(target=fit_teacher, args=(x, y, path, max_iter))
        p.start()
        p.join()
        if p.exitcode != 0:
            raise SystemExit(f"fitting the teacher failed (exit {p.exitcode})")
    with open(path, "rb") as f:
        return pickle.load(f)


class AugmentedBatches(Dataset):
    """One item = one batch: rows drawn at random, swap noise and Gaussian noise, teacher labels."""

    def __init__(self, x, teacher, batch, length, swap=0.15, noise=0.05):
        self.x, self.teacher, self.batch, self.length = x, teacher, batch, length
        self.swap, self.noise = swap, noise
        self.std = x.std(0).astype(np.float32)
        self.omp_threads = None

    def __len__(self):
        return self.length

    def __getitem__(self, i):
        rng = np.random.default_rng([i, os.getpid()])
        n = len(self.x)
        rows = self.x[rng.integers(0, n, self.batch)]
        donors = self.x[rng.integers(0, n, self.batch)]
        xb = np.where(rng.random(rows.shape) < self.swap, donors, rows)
        xb += rng.normal(0, self.noise, xb.shape).astype(np.float32) * self.std
        p = self.teacher.predict_proba(xb)[:, 1]  # gpuwhy: plants C7 (scikit-learn's OpenMP: one thread per core in each of the 12 workers)
        if self.omp_threads is None:        # the threads scikit-learn's predict used in this worker
            from sklearn.utils._openmp_helpers import _openmp_effective_n_threads
            self.omp_threads = _openmp_effective_n_threads()
        return torch.from_numpy(xb.astype(np.float32)), torch.from_numpy(p.astype(np.float32)), self.omp_threads


def init_worker(worker_id):
    if FIX:
        from threadpoolctl import threadpool_limits
        threadpool_limits(limits=1, user_api="openmp")   # kept for the worker's life


class FTTransformer(nn.Module):
    def __init__(self, n_feat, d=256, blocks=4, heads=8, ffn_factor=4 / 3, drop=0.1, attn_drop=0.2):
        super().__init__()
        self.w = nn.Parameter(torch.randn(n_feat, d) / math.sqrt(d))
        self.b = nn.Parameter(torch.randn(n_feat, d) / math.sqrt(d))
        self.cls = nn.Parameter(torch.randn(1, 1, d) / math.sqrt(d))
        self.heads, self.attn_drop, self.drop = heads, attn_drop, drop
        hid = int(d * ffn_factor)
        self.blocks = nn.ModuleList()
        for k in range(blocks):
            self.blocks.append(nn.ModuleDict({
                "ln1": nn.LayerNorm(d) if k else nn.Identity(),          # the first block has no pre-norm
                "qkv": nn.Linear(d, 3 * d), "out": nn.Linear(d, d),
                "ln2": nn.LayerNorm(d), "ffn1": nn.Linear(d, 2 * hid), "ffn2": nn.Linear(hid, d)}))
        self.head = nn.Sequential(nn.LayerNorm(d), nn.ReLU(), nn.Linear(d, 1))

    def forward(self, x):
        b = x.shape[0]
        t = x[..., None] * self.w + self.b                                # (B, F, d)
        t = torch.cat([self.cls.expand(b, -1, -1), t], 1)
        for blk in self.blocks:
            h = blk["ln1"](t)
            q, k, v = blk["qkv"](h).view(b, t.shape[1], 3, self.heads, -1).permute(2, 0, 3, 1, 4)
            a = F.scaled_dot_product_attention(q, k, v, dropout_p=self.attn_drop if self.training else 0.0)
            t = t + F.dropout(blk["out"](a.transpose(1, 2).reshape(t.shape)), self.drop, self.training)
            g, u = blk["ffn1"](blk["ln2"](t)).chunk(2, -1)
            t = t + F.dropout(blk["ffn2"](F.relu(g) * u), self.drop, self.training)      # ReGLU
        return self.head(t[:, 0]).squeeze(-1)


def main():
    global FIX
    args = cc.parser(__doc__, warmup=5).parse_args()
    FIX = args.fix
    dev = cc.torch_device(args)
    gpu = dev.type == "cuda"
    if args.smoke:
        rows, fit_rows, trees, batch, workers, d, blocks, tag = 4000, 2000, 20, 256, 2, 32, 1, "smoke"
    else:
        rows, fit_rows, trees, batch, workers, d, blocks, tag = 200_000, 100_000, 300, 2048, 12, 256, 4, "full"
    x, y = make_loans(rows)
    teacher = load_teacher(x[:fit_rows], y[:fit_rows], trees, tag)
    mean, std = x.mean(0), x.std(0) + 1e-6          # the student's input scaling

    loader = DataLoader(AugmentedBatches(x, teacher, batch, length=1 << 30), batch_size=None, shuffle=False,
                        num_workers=workers, worker_init_fn=init_worker, pin_memory=gpu,
                        persistent_workers=True, prefetch_factor=4)
    it = iter(loader)                              # the workers fork here, before CUDA
    first = next(it)

    torch.manual_seed(0)
    model = FTTransformer(N_FEAT, d=d, blocks=blocks).to(dev).train()
    params = sum(p.numel() for p in model.parameters())
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=1e-5, fused=gpu)
    amp = torch.autocast(dev.type, dtype=torch.bfloat16, enabled=gpu)
    mean_t = torch.from_numpy(mean).to(dev)
    std_t = torch.from_numpy(std).to(dev)
    st = {"acc": torch.zeros((), device=dev), "loss": None, "reads": 0, "pending": first, "omp": None}

    def step(i):
        xb, pb, omp = st["pending"] if st["pending"] is not None else next(it)
        st["pending"] = None
        st["omp"] = int(omp)
        xb = (xb.to(dev, non_blocking=True) - mean_t) / std_t
        pb = pb.to(dev, non_blocking=True)
        with amp:
            logits = model(xb)
        loss = F.binary_cross_entropy_with_logits(logits.float(), pb)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        st["acc"] += loss.detach()
        if i % 50 == 49:
            st["loss"] = st["acc"].item() / 50
            st["acc"].zero_()
            st["reads"] += 1

    cc.run("c7_torch_gbdt_teacher_workers_sklearn_openmp", args, step, batch,
           extra=lambda: {"loader_workers": workers, "worker_sklearn_omp_threads": st["omp"],
                          "cores": len(os.sched_getaffinity(0)), "trees": trees, "batch": batch,
                          "params_m": round(params / 1e6, 2), "loss": st["loss"], "loss_reads": st["reads"]})


if __name__ == "__main__":
    main()
