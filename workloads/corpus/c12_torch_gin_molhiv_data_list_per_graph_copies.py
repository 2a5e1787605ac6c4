"""C12 many small host-to-device copies: molecular property prediction on an OGB ogbg-molhiv-shaped
dataset (Hu et al., NeurIPS 2020, snap-stanford/ogb examples/graphproppred/mol: GIN, 5 layers,
embedding 300, batch norm, dropout 0.5, AtomEncoder / BondEncoder sums of the 9 atom and 3 bond
feature embeddings, mean pooling, binary cross-entropy) in plain PyTorch: 41,127 molecules made
at start (25.5 atoms and 27.5 bonds, 55 directed edges, on average), stored as PyG's
InMemoryDataset stores them: the graphs' tensors concatenated (x int64 [N, 9], edge_index int64
[2, E] with each graph's own node numbering, edge_attr int64 [E, 3], y [G, 1]) with slice
offsets, `dataset[i]` the views of graph i, and the concatenated tensors pinned once at start
("pinned for fast transfers"). Adam lr 1e-3, float32 as the example, batch 256 molecules
(~6,500 atoms, ~14,000 directed edges).

Planted: the batch comes as torch_geometric's DataListLoader gives it (a Python list of Data
objects, the loader of DataParallel code kept for one GPU), and the training loop moves each
graph to the GPU, `[g.to(device, non_blocking=True) for g in graphs]`, before batching them on
the GPU (one cat per attribute, node offsets added with one repeat_interleave): 4 pinned copies
of 8 bytes to ~2 KB per graph, 1,024 copies a step, each ~8-15 us of host time (a view, a
caching-allocator block, cudaMemcpyAsync) and a few microseconds of the copy engine, bandwidth
far under the link's.

Estimated (not measured): the copies ~9-14 ms of host time a step, the model ~4-6 ms of host
issue (869 aten operations a step forward, backward and Adam counted on the CPU-only machine,
views included, ~600 kernels: GIN's small gathers, scatters and GEMMs over 6,500 x 300; 1.89 M
parameters in 71 tensors) against ~1.5-2.5 ms
of GPU work: plain ~14-20 ms a step, the copies ~65-75% of it, the GPU idle most of the step;
fixed ~5-7 ms (host-bound by the model's own launches): about 2.5-3x.

--fix: gpuwhy's C12 advice (replace many small copies with one large copy, in the layout it is
copied in): the batch collated on the host as Batch.from_data_list does (each attribute's 256
slices concatenated with torch.cat into a pinned staging buffer, two used in turn and guarded by
an event; node offsets added there), then one non_blocking copy per attribute, 5 copies a step;
dataset, sampling order, model, loss and optimizer unchanged.

Written blind for the xray batch.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

import cc

ATOM_DIMS = (119, 5, 12, 12, 10, 6, 6, 2, 2)   # ogb.utils.features.get_atom_feature_dims()
BOND_DIMS = (5, 6, 2)                          # get_bond_feature_dims()


def make_dataset(n_graphs, g):
    """Molecule-like graphs: a spanning chain plus ring closures, collated as InMemoryDataset."""
    sizes = (torch.randn(n_graphs, generator=g) * 12 + 25.5).clamp(6, 120).long()
    xs, eis, eas = [], [], []
    for n in sizes.tolist():
        src = torch.arange(1, n)
        dst = (torch.rand(n - 1, generator=g) * src).long()          # a tree
        rings = max(1, n // 8)
        a = torch.randint(0, n, (rings,), generator=g)
        b = (a + torch.randint(4, 7, (rings,), generator=g)) % n       # ring closures
        s, d = torch.cat([src, a]), torch.cat([dst, b])
        eis.append(torch.stack([torch.cat([s, d]), torch.cat([d, s])]))  # both directions
        xs.append(torch.stack([torch.randint(0, k, (n,), generator=g) for k in ATOM_DIMS], 1))
        ea = torch.stack([torch.randint(0, k, (s.numel(),), generator=g) for k in BOND_DIMS], 1)
        eas.append(torch.cat([ea, ea]))
    node_ptr = torch.cat([torch.zeros(1, dtype=torch.long), sizes.cumsum(0)])
    edge_ptr = torch.cat([torch.zeros(1, dtype=torch.long), torch.tensor([e.shape[1] for e in eis]).cumsum(0)])
    y = (torch.rand(n_graphs, 1, generator=g) < 0.035).float()       # molhiv's ~3.5% positives
    return torch.cat(xs), torch.cat(eis, 1), torch.cat(eas), y, node_ptr, edge_ptr


class Encoder(nn.Module):
    def __init__(self, dims, d):
        super().__init__()
        self.emb = nn.ModuleList(nn.Embedding(k, d) for k in dims)
        for e in self.emb:
            nn.init.xavier_uniform_(e.weight)

    def forward(self, x):
        return sum(e(x[:, i]) for i, e in enumerate(self.emb))


class GINConv(nn.Module):
    """ogb's GINConv: mlp((1 + eps) x + sum_j relu(x_j + bond(e_ij)))."""

    def __init__(self, d):
        super().__init__()
        self.mlp = nn.Sequential(nn.Linear(d, 2 * d), nn.BatchNorm1d(2 * d), nn.ReLU(), nn.Linear(2 * d, d))
        self.eps = nn.Parameter(torch.zeros(1))
        self.bond = Encoder(BOND_DIMS, d)

    def forward(self, x, edge_index, edge_attr):
        msg = F.relu(x[edge_index[0]] + self.bond(edge_attr))
        agg = torch.zeros_like(x).index_add_(0, edge_index[1], msg)
        return self.mlp((1 + self.eps) * x + agg)


class GIN(nn.Module):
    def __init__(self, d, layers, drop):
        super().__init__()
        self.atom = Encoder(ATOM_DIMS, d)
        self.convs = nn.ModuleList(GINConv(d) for _ in range(layers))
        self.bns = nn.ModuleList(nn.BatchNorm1d(d) for _ in range(layers))
        self.drop = drop
        self.head = nn.Linear(d, 1)

    def forward(self, x, edge_index, edge_attr, batch, n_graphs):
        h = self.atom(x)
        for i, (conv, bn) in enumerate(zip(self.convs, self.bns)):
            h = bn(conv(h, edge_index, edge_attr))
            if i < len(self.convs) - 1:
                h = F.relu(h)
            h = F.dropout(h, self.drop, self.training)
        pooled = torch.zeros(n_graphs, h.shape[1], device=h.device).index_add_(0, batch, h)
        counts = torch.zeros(n_graphs, device=h.device).index_add_(0, batch, torch.ones_like(batch, dtype=h.dtype))
        return self.head(pooled / counts[:, None])


def main():
    args = cc.parser(__doc__).parse_args()
    dev = cc.torch_device(args)
    n_graphs, batch, d, layers = (512, 32, 32, 2) if args.smoke else (41_127, 256, 300, 5)
    pin = dev.type == "cuda"
    g = torch.Generator().manual_seed(0)
    x_all, ei_all, ea_all, y_all, node_ptr, edge_ptr = make_dataset(n_graphs, g)
    if pin:  # "pinned for fast transfers", once
        x_all, ei_all, ea_all, y_all = (t.pin_memory() for t in (x_all, ei_all, ea_all, y_all))
    nptr, eptr = node_ptr.tolist(), edge_ptr.tolist()

    def get(i):  # InMemoryDataset.get: the views of graph i
        return {"x": x_all[nptr[i]:nptr[i + 1]], "edge_index": ei_all[:, eptr[i]:eptr[i + 1]],
                "edge_attr": ea_all[eptr[i]:eptr[i + 1]], "y": y_all[i:i + 1]}

    torch.manual_seed(0)
    model = GIN(d, layers, 0.5).to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    crit = nn.BCEWithLogitsLoss()
    order = {"perm": torch.randperm(n_graphs, generator=g).tolist(), "pos": 0}
    max_nodes, max_edges = batch * 130, batch * 300
    stage = [{"x": torch.empty((max_nodes, 9), dtype=torch.long, pin_memory=pin),
              "edge_index": torch.empty(2 * max_edges, dtype=torch.long, pin_memory=pin),  # viewed (2, E) per batch
              "edge_attr": torch.empty((max_edges, 3), dtype=torch.long, pin_memory=pin),
              "y": torch.empty((batch, 1), pin_memory=pin),
              "batch": torch.empty(max_nodes, dtype=torch.long, pin_memory=pin)} for _ in range(2)]
    used = [None, None]
    acc = torch.zeros((), device=dev)
    st = {"loss": None, "reads": 0, "copies": 0}

    def next_ids():
        if order["pos"] + batch > n_graphs:
            order["perm"], order["pos"] = torch.randperm(n_graphs, generator=g).tolist(), 0
        ids = order["perm"][order["pos"]:order["pos"] + batch]
        order["pos"] += batch
        return ids

    def load_plain(ids):
        graphs = [get(i) for i in ids]                    # DataListLoader's list of Data objects
        graphs = [{k: t.to(dev, non_blocking=True) for k, t in gr.items()} for gr in graphs]  # gpuwhy: plants C12 (4 small pinned copies per graph, 1,024 a step)
        st["copies"] = 4 * len(graphs) + 1
        n_nodes = torch.tensor([gr["x"].shape[0] for gr in graphs])
        n_edges = torch.tensor([gr["edge_index"].shape[1] for gr in graphs])
        sizes = torch.stack([n_nodes, n_edges]).to(dev, non_blocking=True)
        x = torch.cat([gr["x"] for gr in graphs])
        ei = torch.cat([gr["edge_index"] for gr in graphs], 1)
        ea = torch.cat([gr["edge_attr"] for gr in graphs])
        y = torch.cat([gr["y"] for gr in graphs])
        offs = torch.cumsum(sizes[0], 0) - sizes[0]
        ei = ei + torch.repeat_interleave(offs, sizes[1], output_size=ei.shape[1])[None]
        b = torch.repeat_interleave(torch.arange(len(graphs), device=dev), sizes[0], output_size=x.shape[0])
        return x, ei, ea, y, b

    def load_fix(i, ids):
        k = i % 2
        if used[k] is not None:
            used[k].synchronize()   # the copies that last read this staging buffer are done
        s = stage[k]
        graphs = [get(j) for j in ids]
        nn_, ne = sum(gr["x"].shape[0] for gr in graphs), sum(gr["edge_index"].shape[1] for gr in graphs)
        n_nodes = torch.tensor([gr["x"].shape[0] for gr in graphs])
        n_edges = torch.tensor([gr["edge_index"].shape[1] for gr in graphs])
        torch.cat([gr["x"] for gr in graphs], out=s["x"][:nn_])
        ei = s["edge_index"][:2 * ne].view(2, ne)   # contiguous, so that its copy stays a pinned one
        torch.cat([gr["edge_index"] for gr in graphs], 1, out=ei)
        # Batch.from_data_list's increments and batch vector, on the host
        ei += torch.repeat_interleave(n_nodes.cumsum(0) - n_nodes, n_edges)[None]
        s["batch"][:nn_].copy_(torch.repeat_interleave(torch.arange(len(graphs)), n_nodes))
        torch.cat([gr["edge_attr"] for gr in graphs], out=s["edge_attr"][:ne])
        torch.cat([gr["y"] for gr in graphs], out=s["y"])
        out = (s["x"][:nn_].to(dev, non_blocking=True), ei.to(dev, non_blocking=True),
               s["edge_attr"][:ne].to(dev, non_blocking=True), s["y"].to(dev, non_blocking=True),
               s["batch"][:nn_].to(dev, non_blocking=True))
        st["copies"] = 5
        if pin:
            used[k] = torch.cuda.Event()
            used[k].record()
        return out

    def step(i):
        ids = next_ids()
        x, ei, ea, y, b = load_fix(i, ids) if args.fix else load_plain(ids)
        logits = model(x, ei, ea, b, len(ids))
        loss = crit(logits, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        acc.add_(loss.detach())
        if i % 100 == 99:
            st["loss"] = round(acc.item() / 100, 4)
            st["reads"] += 1
            acc.zero_()

    cc.run("c12_torch_gin_molhiv_data_list_per_graph_copies", args, step, batch,
           extra=lambda: {"h2d_copies_per_step": st["copies"],
                          "batching": "host collate into pinned staging, one copy per attribute" if args.fix
                          else "one copy per graph and attribute, batched on the GPU",
                          "graphs": n_graphs, "avg_atoms": round(nptr[-1] / n_graphs, 1),
                          "avg_directed_edges": round(eptr[-1] / n_graphs, 1),
                          "loss": st["loss"], "loss_reads": st["reads"]})


if __name__ == "__main__":
    main()
