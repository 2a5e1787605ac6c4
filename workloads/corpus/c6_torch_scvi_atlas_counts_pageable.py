"""C6 pageable host-to-device copies (a dense single-cell count matrix in ordinary host memory,
each batch copied with non_blocking=True that cannot be asynchronous): training an scVI-style
variational autoencoder (Lopez et al. 2018, as scvi-tools builds it) on a single-cell RNA-seq
atlas in plain PyTorch. The atlas is 16,384 cells x 16,000 genes of raw UMI counts held as
one dense float32 array in host memory (1.05 GB, as `adata.X` is once densified for
training; Poisson counts of 24 cell types' expression profiles times each cell's library
size, made at start on the GPU and copied to the host), its cells shuffled once when it was
written, as atlas exports are, so the loop takes contiguous slices of 2,048 cells in order,
epoch after epoch, plus each cell's one-hot sample (batch) covariate of 8. The model is
scVI's: log1p of the counts and the covariate into an encoder of two 1,024-wide layers
(BatchNorm, ReLU, dropout 0.1) to a 64-d Gaussian latent and a log-library latent, a decoder
of two 1,024-wide layers back to a softmax over the genes times the observed library size,
gene-wise dispersions, the negative-binomial log-likelihood over all 32.8 M entries of a
batch and the KL terms (ELBO, KL weight 1), bf16 autocast for the layers with the likelihood
in float32, fused AdamW (lr 1e-3, weight decay 1e-6); the loss stays on the GPU and is read
every 50 steps.

Each step copies its 2,048 x 16,000 slice (131 MB) with `x.to(device, non_blocking=True)`
from pageable memory: the driver stages it through a bounce buffer, the copy runs at the
pageable rate, the call returns only when it is done, and nothing overlaps it; the GPU work of
a step (0.5 TFLOP of GEMMs, 51.5 M parameters, and ~30 passes over the batch's 32.8 M entries)
is about half of the copy's time or less.

--fix: gpuwhy's C6 advice (pinned memory and non-blocking copies): the count matrix pinned
once at start (pin_memory(), outside the timed part) and each slice copied with
non_blocking=True on a copy stream one batch ahead (an event per buffer, the batch tensor's
record_stream on the compute stream), so the copy runs at the pinned rate under the previous
step's compute; data, order, model, loss and optimizer unchanged.

Written blind for the sierra batch.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

import cc


def make_atlas(n_cells, n_genes, n_types, n_samples, dev, host_dtype=torch.float32):
    """Raw UMI counts: each cell type a log-normal expression profile over the genes (a few
    hundred marker genes raised), each cell a library size and a sample effect; Poisson draws
    made on the device in blocks and copied into one dense host array (the cells shuffled)."""
    g = torch.Generator(device=dev).manual_seed(0)
    base = torch.randn(n_genes, device=dev, generator=g) * 1.5 - 1.0
    prof = base[None] + torch.randn(n_types, n_genes, device=dev, generator=g) * 0.6
    marker = torch.rand(n_types, n_genes, device=dev, generator=g) < 0.02
    prof = torch.softmax(prof + 2.5 * marker, 1)
    samp = torch.randn(n_samples, n_genes, device=dev, generator=g) * 0.15
    ctype = torch.randint(0, n_types, (n_cells,), device=dev, generator=g)
    sample = torch.randint(0, n_samples, (n_cells,), device=dev, generator=g)
    lib = torch.exp(torch.randn(n_cells, device=dev, generator=g) * 0.5 + math.log(3000.0))
    X = torch.empty(n_cells, n_genes, dtype=host_dtype)
    for s in range(0, n_cells, 1024):
        e = slice(s, min(s + 1024, n_cells))
        rate = prof[ctype[e]] * torch.exp(samp[sample[e]]) * lib[e, None]
        X[e] = torch.poisson(rate, generator=g).cpu()
    return X, F.one_hot(sample, n_samples).float().cpu()


class FC(nn.Sequential):
    def __init__(self, cin, hidden, layers, cov):
        mods = []
        for k in range(layers):
            mods += [nn.Linear((cin if k == 0 else hidden) + cov, hidden), nn.BatchNorm1d(hidden, momentum=0.01, eps=1e-3),
                     nn.ReLU(), nn.Dropout(0.1)]
        super().__init__(*mods)
        self.cov = cov

    def forward(self, x, c):
        for m in self:
            x = m(torch.cat([x, c.to(x.dtype)], 1)) if isinstance(m, nn.Linear) else m(x)
        return x


class SCVI(nn.Module):
    def __init__(self, n_genes, n_cov, hidden=1024, layers=2, latent=64):
        super().__init__()
        self.enc = FC(n_genes, hidden, layers, n_cov)
        self.mu, self.logvar = nn.Linear(hidden, latent), nn.Linear(hidden, latent)
        self.l_enc = FC(n_genes, hidden, 1, n_cov)
        self.l_mu, self.l_logvar = nn.Linear(hidden, 1), nn.Linear(hidden, 1)
        self.dec = FC(latent, hidden, layers, n_cov)
        self.scale = nn.Linear(hidden, n_genes)
        self.log_theta = nn.Parameter(torch.randn(n_genes) * 0.1)

    def forward(self, x, c, amp):
        with amp:
            xl = torch.log1p(x)
            h = self.enc(xl, c)
            mu, logvar = self.mu(h).float(), self.logvar(h).float()
            hl = self.l_enc(xl, c)
            lmu, llv = self.l_mu(hl).float(), self.l_logvar(hl).float()
            z = mu + torch.randn_like(mu) * torch.exp(0.5 * logvar)
            px = torch.softmax(self.scale(self.dec(z, c)).float(), -1)
        lib = x.sum(1, keepdim=True)
        rate = px * lib
        theta = torch.exp(self.log_theta)
        # negative binomial log-likelihood (scvi's log_nb_positive)
        log_theta_mu = torch.log(theta + rate + 1e-8)
        ll = (theta * (torch.log(theta + 1e-8) - log_theta_mu) + x * (torch.log(rate + 1e-8) - log_theta_mu)
              + torch.lgamma(x + theta) - torch.lgamma(theta) - torch.lgamma(x + 1))
        kl_z = 0.5 * (mu.pow(2) + logvar.exp() - 1 - logvar).sum(1)
        lmean = torch.log(lib)
        kl_l = 0.5 * ((lmu - lmean).pow(2) + llv.exp() - 1 - llv).sum(1)
        return (-ll.sum(1) + kl_z + kl_l).mean()


def main():
    args = cc.parser(__doc__, warmup=5).parse_args()
    dev = cc.torch_device(args)
    gpu = dev.type == "cuda"
    if args.smoke:
        n_cells, n_genes, batch, hidden = 1024, 2000, 128, 128
    else:
        n_cells, n_genes, batch, hidden = 16_384, 16_000, 2048, 1024
    n_types, n_samples = 24, 8
    X, C = make_atlas(n_cells, n_genes, n_types, n_samples, dev)
    if args.fix and gpu:   # the advice: the host array in page-locked memory, pinned once
        X, C = X.pin_memory(), C.pin_memory()
    n_batches = n_cells // batch

    torch.manual_seed(0)
    model = SCVI(n_genes, n_samples, hidden=hidden).to(dev).train()
    params = sum(p.numel() for p in model.parameters())
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=1e-6, eps=0.01, fused=gpu)
    amp = torch.autocast(dev.type, dtype=torch.bfloat16, enabled=gpu)
    st = {"acc": torch.zeros((), device=dev), "loss": None, "reads": 0, "epochs": 0}

    copy = torch.cuda.Stream() if (args.fix and gpu) else None
    ahead = {}

    def fetch(k):
        s = (k % n_batches) * batch
        return X[s:s + batch], C[s:s + batch]

    def issue(k):
        """--fix: batch k's copy on the copy stream, its event recorded there."""
        x, c = fetch(k)
        with torch.cuda.stream(copy):
            xd, cd = x.to(dev, non_blocking=True), c.to(dev, non_blocking=True)
            ev = torch.cuda.Event()
            ev.record(copy)
        ahead[k] = (xd, cd, ev)

    def get(k):
        if copy is None:
            x, c = fetch(k)
            xd = x.to(dev, non_blocking=True)  # gpuwhy: plants C6 (131 MB of counts a step from pageable host memory: non_blocking has no effect, the copy runs at the pageable rate and the thread waits for it)
            return xd, c.to(dev, non_blocking=True)
        if k not in ahead:
            issue(k)
        xd, cd, ev = ahead.pop(k)
        cur = torch.cuda.current_stream()
        cur.wait_event(ev)
        xd.record_stream(cur)
        cd.record_stream(cur)
        issue(k + 1)           # the next batch's copy runs under this step's compute
        return xd, cd

    def step(i):
        if i and i % n_batches == 0:
            st["epochs"] += 1
        x, c = get(i)
        loss = model(x, c, amp)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        st["acc"] += loss.detach()
        if i % 50 == 49:
            st["loss"] = st["acc"].item() / 50
            st["acc"].zero_()
            st["reads"] += 1

    mb = batch * n_genes * 4 / 1e6
    cc.run("c6_torch_scvi_atlas_counts_pageable", args, step, batch,
           extra=lambda: {"pinned": bool(args.fix and gpu), "copy_stream": copy is not None, "h2d_mb_per_step": round(mb, 1),
                          "cells": n_cells, "genes": n_genes, "params_m": round(params / 1e6, 1),
                          "epochs_done": st["epochs"], "loss": st["loss"], "loss_reads": st["reads"]})


if __name__ == "__main__":
    main()
