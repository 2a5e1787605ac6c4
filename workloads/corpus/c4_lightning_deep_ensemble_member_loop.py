"""C4 launch overhead (a deep ensemble trained member by member, Lightning manual optimization):
deep ensembles for predictive uncertainty (Lakshminarayanan et al. 2017) on a
YearPredictionMSD-sized regression (515,345 songs x 90 timbre features -> release year,
synthetic, standardized, held on the GPU): 16 members, each an MLP 90 -> 512 -> 512 -> 512 ->
2 with SiLU (the mean and, through softplus, the variance of a Gaussian), trained with the
Gaussian negative log-likelihood (F.gaussian_nll_loss), each member on its own random batch of
512 songs (the paper's random initialization and shuffling); Trainer(precision="bf16-mixed").

The LightningModule keeps the members in an nn.ModuleList and uses manual optimization, with
one Adam (lr 1e-3, foreach) per member from configure_optimizers, the way ensemble code is
usually written in Lightning: training_step loops over the 16 (member, optimizer) pairs,
each a forward, the loss, manual_backward and optimizer.step() (Lightning's optimizer
wrapper and precision plugin around it). A member's forward, loss, backward and Adam update
are ~110 kernel launches on tensors of 512 x 512 (a few microseconds of GPU each) plus the
Python of Lightning's optimizer wrapper, so the 16 members issue ~1,800 launches a step while
the GPU work of all of them is ~5 ms: the training thread cannot keep the GPU busy.

--fix: gpuwhy's C4 advice, the part that gives each kernel more work: the 16 members' weights
stacked (torch.func.stack_module_state) as parameters of the module and all members run at
once with torch.func.vmap over torch.func.functional_call of one member's architecture
(batched GEMMs, each member still on its own batch), one Adam over the stacked weights (the
same update element by element as 16 Adams with the same settings); architecture, loss,
data, batches and precision unchanged (the stacked forward checked equal to the loop's at
start).

Written blind for the papa batch.
"""
import copy

import torch
import torch.nn as nn
import torch.nn.functional as F
import lightning as L
from torch.func import functional_call, stack_module_state, vmap
from torch.utils.data import DataLoader, Dataset

import cc


class Member(nn.Module):
    def __init__(self, d_in, width, depth):
        super().__init__()
        dims = [d_in] + [width] * depth
        self.hidden = nn.ModuleList(nn.Linear(a, b) for a, b in zip(dims[:-1], dims[1:]))
        self.out = nn.Linear(width, 2)

    def forward(self, x):
        for lin in self.hidden:
            x = F.silu(lin(x))
        mu, raw = self.out(x).float().unbind(-1)
        return mu, F.softplus(raw) + 1e-6


class DeepEnsemble(L.LightningModule):
    def __init__(self, x, y, members, d_in, width, depth, lr, stacked):
        super().__init__()
        self.register_buffer("x", x, persistent=False)
        self.register_buffer("y", y, persistent=False)
        self.automatic_optimization = False
        self.lr, self.stacked, self.m = lr, stacked, members
        torch.manual_seed(0)
        nets = [Member(d_in, width, depth) for _ in range(members)]
        if stacked:
            params, _ = stack_module_state(nets)
            self.names = list(params)
            self.params = nn.ParameterList(nn.Parameter(params[k].detach().clone()) for k in self.names)
            base = copy.deepcopy(nets[0]).to("meta")  # the architecture only (kept out of the module tree)
            self._base = [base]
        else:
            self.members = nn.ModuleList(nets)
        self.acc = None
        self.last_nll = None
        self.reads = 0

    def forward_all(self, xb):
        """Every member's (mu, var) on its own batch: xb is (members, batch, features)."""
        if self.stacked:
            p = dict(zip(self.names, self.params))
            return vmap(lambda pm, xm: functional_call(self._base[0], pm, (xm,)), in_dims=(0, 0))(p, xb)
        outs = [m(xm) for m, xm in zip(self.members, xb)]
        return torch.stack([o[0] for o in outs]), torch.stack([o[1] for o in outs])

    def training_step(self, idx, batch_idx):
        xb, yb = self.x[idx], self.y[idx]                        # (members, batch, ...)
        if self.stacked:
            opt = self.optimizers()
            mu, var = self.forward_all(xb)
            # the sum of the members' mean NLLs: each member's gradient is that of its own loss
            loss = F.gaussian_nll_loss(mu, yb, var, reduction="none").mean(-1).sum()
            opt.zero_grad()
            self.manual_backward(loss)
            opt.step()
            total = loss.detach()
        else:
            total = torch.zeros((), device=xb.device)
            for member, opt, xm, ym in zip(self.members, self.optimizers(), xb, yb):
                mu, var = member(xm)  # gpuwhy: plants C4 (16 members trained one after another: ~110 small launches and an optimizer wrapper each)
                loss = F.gaussian_nll_loss(mu, ym, var)
                opt.zero_grad()
                self.manual_backward(loss)
                opt.step()
                total = total + loss.detach()
        self.acc = total if self.acc is None else self.acc + total
        if batch_idx % 50 == 49:
            self.last_nll = self.acc.item() / (50 * self.m)
            self.acc = None
            self.reads += 1

    def configure_optimizers(self):
        if self.stacked:
            return torch.optim.Adam(self.params.parameters(), lr=self.lr, foreach=True)
        return [torch.optim.Adam(m.parameters(), lr=self.lr, foreach=True) for m in self.members]


class MemberBatches(Dataset):
    """Each item: (members, batch) random row indices, every member its own batch."""

    def __init__(self, n_rows, members, batch, length, seed=0):
        self.n, self.m, self.b, self.len = n_rows, members, batch, length
        self.g = torch.Generator().manual_seed(seed)

    def __len__(self):
        return self.len

    def __getitem__(self, i):
        return torch.randint(0, self.n, (self.m, self.b), generator=self.g)


def make_songs(n, d, g, dev):
    """Timbre-like features and a year with a nonlinear, heteroscedastic dependence."""
    x = torch.randn(n, d, device=dev, generator=g)
    w = torch.randn(d, 32, device=dev, generator=g) / d ** 0.5
    h = torch.tanh(x @ w)
    year = 1998 + 8 * h[:, :8].sum(-1) / 8 ** 0.5 + (1 + 2 * torch.sigmoid(h[:, 8])) * torch.randn(n, device=dev, generator=g)
    return x, (year - year.mean()) / year.std()


def main():
    args = cc.parser(__doc__, warmup=6).parse_args()
    dev = cc.torch_device(args)
    gpu = dev.type == "cuda"
    if args.smoke:
        rows, d_in, members, width, depth, batch = 5_000, 90, 4, 32, 2, 64
    else:
        rows, d_in, members, width, depth, batch = 515_345, 90, 16, 512, 3, 512
    g = torch.Generator(device=dev).manual_seed(1)
    x, y = make_songs(rows, d_in, g, dev)

    # equivalence at start: the stacked, vmapped forward equals the loop's (same weights)
    loop_m = DeepEnsemble(x[:8], y[:8], 2, d_in, 16, 2, 1e-3, stacked=False)
    stack_m = DeepEnsemble(x[:8], y[:8], 2, d_in, 16, 2, 1e-3, stacked=True)
    xb = torch.randn(2, 8, d_in, generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        a, b = loop_m.forward_all(xb), stack_m.forward_all(xb)
    err = max(float((u - v).abs().max()) for u, v in zip(a, b))
    if err > 1e-5:
        raise SystemExit(f"stacked members disagree with the loop: {err}")

    model = DeepEnsemble(x, y, members, d_in, width, depth, 1e-3, stacked=args.fix)
    loader = DataLoader(MemberBatches(rows, members, batch, 10_000_000), batch_size=None)
    timer = cc.lightning_timer("c4_lightning_deep_ensemble_member_loop", args, members * batch,
                               extra=lambda: {"members": members, "member_batch": batch,
                                              "ensemble": "vmap over stacked weights" if args.fix else "loop over members",
                                              "nll": model.last_nll, "loss_reads": model.reads,
                                              "params_m": round(sum(p.numel() for p in model.parameters()) / 1e6, 2)})
    trainer = cc.lightning_trainer(args, [timer], precision="bf16-mixed" if gpu else "32-true")
    trainer.fit(model, loader)


if __name__ == "__main__":
    main()
