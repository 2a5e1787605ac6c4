"""C1 graph sampling on the training thread (GraphSAGE mini-batches, NeighborSampler with
num_workers=0): node classification on an ogbn-products-sized co-purchase graph (1,000,000
products, ~19.7 M directed edges in CSR, heavy-tailed degrees, 80% of a node's edges inside
its community of 1,000; 100-d node features and 47 categories, made at start, the features
and labels held on the GPU as in PyG's ogbn-products GraphSAGE example: `x =
data.x.to(device)`) with a 3-layer GraphSAGE (mean aggregation, hidden 256, PyG's SAGEConv:
lin_l on the neighbours' mean plus lin_r on the root, ReLU and dropout 0.5 between layers;
0.19 M parameters), bf16 autocast, fused Adam (lr 3e-3), 196,000 training nodes in mini-batches
of 1,024 seed nodes with fan-outs [15, 10, 5]; the loss is read every 50 steps.

The loader is the pre-NeighborLoader torch_geometric.loader.NeighborSampler pattern: a
DataLoader over the training node ids whose collate_fn is the sampler's sample(): for each
hop it draws the fan-out's neighbours of every frontier node from the CSR arrays (NumPy,
with replacement), relabels the new nodes after the targets (np.unique, np.setdiff1d and a
node-to-position scratch array) and returns the node ids of the 3-hop neighbourhood
(~265,000 nodes) and one (edge_index, size) bipartite block per hop (~450,000 edges). The
example's num_workers=12 was dropped when the script was adapted, so the DataLoader runs with
its default num_workers=0: the training thread spends ~40-60 ms in NumPy sampling before each
step, whose GPU work (a gather of 265,000 feature rows, three scatter-mean aggregations and
six small GEMMs) is ~1-2 ms.

--fix: gpuwhy's C1 advice (load data in worker processes): the same DataLoader with
num_workers=N, one per free core (cc.fix_workers()), pin_memory=True, prefetch_factor=4 and
persistent_workers=True, the blocks copied with non_blocking=True; the graph, sampler,
model, batch and optimizer unchanged. Each worker draws from its own generator (seeded from
torch's per-worker seed, as the sampler does in any process).

Written blind for the papa batch.
"""
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader

import cc


def make_graph(n, comm, seed=0):
    """A co-purchase-like graph in CSR: log-normal out-degrees (1..800), 80% of the edges inside
    the node's community, the rest uniform."""
    rng = np.random.default_rng(seed)
    deg = np.clip(rng.lognormal(2.6, 0.9, n).astype(np.int64), 1, 800)
    src = np.repeat(np.arange(n, dtype=np.int64), deg)
    e = src.shape[0]
    local = rng.random(e) < 0.8
    indices = np.where(local, (src // comm) * comm + rng.integers(0, comm, e), rng.integers(0, n, e))
    indices = np.minimum(indices, n - 1)
    indptr = np.zeros(n + 1, np.int64)
    np.cumsum(deg, out=indptr[1:])
    return indptr, indices


class NeighborSampler:
    """torch_geometric.loader.NeighborSampler's sample(), in NumPy: for seeds -> (batch_size,
    n_id, [(edge_index, (n_src, n_dst)) per hop, outermost first])."""

    def __init__(self, indptr, indices, sizes):
        self.indptr, self.indices, self.sizes = indptr, indices, sizes
        self.pos = None
        self.rng = None
        self.pid = None

    def _state(self):
        if self.pid != os.getpid():  # a worker: its own generator and scratch array
            self.pid = os.getpid()
            self.rng = np.random.default_rng(torch.initial_seed() % 2 ** 63)
            self.pos = np.full(self.indptr.shape[0] - 1, -1, np.int64)
        return self.rng, self.pos

    def sample(self, batch):
        rng, pos = self._state()
        nodes = np.asarray(batch, np.int64)
        adjs = []
        for k in self.sizes:
            start = self.indptr[nodes]
            deg = self.indptr[nodes + 1] - start
            pick = start[:, None] + (rng.random((nodes.shape[0], k)) * deg[:, None]).astype(np.int64)
            nbr = self.indices[pick].ravel()
            new = np.setdiff1d(np.unique(nbr), nodes, assume_unique=True)
            n_id = np.concatenate([nodes, new])                  # targets first, as PyG orders them
            pos[n_id] = np.arange(n_id.shape[0])
            col = pos[nbr]                                       # source (neighbour) positions
            row = np.repeat(np.arange(nodes.shape[0]), k)        # target positions
            pos[n_id] = -1
            adjs.append((torch.from_numpy(np.stack([col, row])), (n_id.shape[0], nodes.shape[0])))
            nodes = n_id
        return len(batch), torch.from_numpy(nodes), adjs[::-1]


class SAGEConv(nn.Module):
    """PyG's SAGEConv with mean aggregation: lin_l(mean of the neighbours) + lin_r(root)."""

    def __init__(self, cin, cout):
        super().__init__()
        self.lin_l = nn.Linear(cin, cout)
        self.lin_r = nn.Linear(cin, cout, bias=False)

    def forward(self, x, edge_index, n_dst):
        col, row = edge_index
        agg = torch.zeros(n_dst, x.shape[1], device=x.device, dtype=x.dtype).index_add_(0, row, x[col])
        cnt = torch.zeros(n_dst, device=x.device, dtype=x.dtype).index_add_(0, row, torch.ones_like(row, dtype=x.dtype))
        return self.lin_l(agg / cnt.clamp(min=1)[:, None]) + self.lin_r(x[:n_dst])


class SAGE(nn.Module):
    def __init__(self, cin, hidden, cout, layers):
        super().__init__()
        dims = [cin] + [hidden] * (layers - 1) + [cout]
        self.convs = nn.ModuleList(SAGEConv(a, b) for a, b in zip(dims[:-1], dims[1:]))

    def forward(self, x, adjs):
        for i, (edge_index, (_, n_dst)) in enumerate(adjs):
            x = self.convs[i](x, edge_index, n_dst)
            if i < len(self.convs) - 1:
                x = F.dropout(F.relu(x), p=0.5, training=self.training)
        return x


def main():
    args = cc.parser(__doc__, warmup=5).parse_args()
    dev = cc.torch_device(args)
    gpu = dev.type == "cuda"
    if args.smoke:
        n, comm, feat, classes, hidden, n_train, batch, sizes = 20_000, 100, 16, 5, 32, 4_000, 64, [5, 4, 3]
    else:
        n, comm, feat, classes, hidden, n_train, batch, sizes = 1_000_000, 1000, 100, 47, 256, 196_000, 1024, [15, 10, 5]
    indptr, indices = make_graph(n, comm)
    torch.manual_seed(0)
    g = torch.Generator(device=dev).manual_seed(1)
    # features and labels on the GPU: a community's category, class-dependent feature means
    y = ((torch.arange(n, device=dev) // comm) * 7919 % classes).long()
    centers = torch.randn(classes, feat, device=dev, generator=g)
    x = centers[y] * 0.5 + torch.randn(n, feat, device=dev, generator=g)
    train_idx = torch.from_numpy(np.random.default_rng(2).permutation(n)[:n_train])
    sampler = NeighborSampler(indptr, indices, sizes)
    if args.fix:
        workers = 2 if args.smoke else cc.fix_workers()
        loader = DataLoader(train_idx.tolist(), batch_size=batch, shuffle=True, drop_last=True,
                            collate_fn=sampler.sample, num_workers=workers, pin_memory=gpu,
                            prefetch_factor=4, persistent_workers=True)
    else:
        workers = 0
        loader = DataLoader(train_idx.tolist(), batch_size=batch, shuffle=True, drop_last=True,
                            collate_fn=sampler.sample)  # gpuwhy: plants C1 (num_workers=0: ~40-60 ms of NumPy neighbour sampling on the training thread before each step)
    model = SAGE(feat, hidden, classes, len(sizes)).to(dev).train()
    opt = torch.optim.Adam(model.parameters(), lr=3e-3, fused=gpu)
    amp = torch.autocast(dev.type, dtype=torch.bfloat16, enabled=gpu)
    st = {"it": iter(loader), "acc": torch.zeros((), device=dev), "loss": None, "reads": 0, "nodes": 0, "edges": 0}

    def next_batch():
        try:
            return next(st["it"])
        except StopIteration:  # a new epoch
            st["it"] = iter(loader)
            return next(st["it"])

    def step(i):
        bs, n_id, adjs = next_batch()
        n_id = n_id.to(dev, non_blocking=args.fix)
        adjs = [(ei.to(dev, non_blocking=args.fix), size) for ei, size in adjs]
        with amp:
            out = model(x[n_id], adjs)
        loss = F.cross_entropy(out.float(), y[n_id[:bs]])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        st["acc"] += loss.detach()
        st["nodes"], st["edges"] = n_id.shape[0], sum(ei.shape[1] for ei, _ in adjs)
        if i % 50 == 49:
            st["loss"] = st["acc"].item() / 50
            st["acc"].zero_()
            st["reads"] += 1

    cc.run("c1_torch_graphsage_neighbor_sampler_main", args, step, batch,
           extra=lambda: {"num_workers": workers, "fanouts": sizes, "graph_edges": int(indices.shape[0]),
                          "sampled_nodes": st["nodes"], "sampled_edges": st["edges"], "loss": st["loss"],
                          "loss_reads": st["reads"]})


if __name__ == "__main__":
    main()
