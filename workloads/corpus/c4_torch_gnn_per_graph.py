"""C4 launch-bound graph network: a GIN-style graph classifier in plain PyTorch (node
features of 32 -> 256, four message-passing layers: gather the neighbours' states with
h[src], sum them into their targets with index_add_, (1 + eps) * h + messages through a
two-layer MLP, LayerNorm, residual; mean readout; 10 classes; AdamW, FP32 as GNN code
usually is) trained on batches of 64 random k-nearest-neighbour graphs (40 to 400 nodes,
16 directed edges a node) drawn from a pool of 512 graphs kept on the GPU. The model is
written the way the graphs are stored, one at a time: the training loop runs the message
passing for each graph of the batch in a Python loop and stacks the 64 graph embeddings for
the classifier, so a step is some 8,000 small kernels (each a few microseconds on the GPU)
issued one after another by the Python interpreter.

--fix: the 64 graphs batched into one disjoint union, as PyG's Batch does: node features
concatenated, edge indices offset by each graph's first node (one small host-to-device copy
of the offsets and counts, repeat_interleave on the GPU), a batch vector for the readout
(index_add_ per graph, divided by the node counts); the message passing runs once over the
union. Same layers, same parameters, same loss.

Written blind for the harbor batch.
"""
import itertools
import random

import torch
import torch.nn as nn
import torch.nn.functional as F

import cc


class Graph:
    def __init__(self, x, edge_index, y):
        self.x, self.edge_index, self.y = x, edge_index, y
        self.num_nodes, self.num_edges = x.shape[0], edge_index.shape[1]


def random_graph(gen, n, k, feat):
    """k nearest neighbours of n random points in 3-D (a point cloud or a mesh patch),
    both directions; node features: the coordinates and random attributes."""
    pos = torch.rand(n, 3, generator=gen)
    d = torch.cdist(pos, pos)
    d.fill_diagonal_(float("inf"))
    nbr = d.topk(k, largest=False).indices
    src = torch.arange(n).repeat_interleave(k)
    dst = nbr.reshape(-1)
    edge_index = torch.cat([torch.stack([src, dst]), torch.stack([dst, src])], 1)
    x = torch.cat([pos, torch.randn(n, feat - 3, generator=gen)], 1)
    return x, edge_index


class GINLayer(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.eps = nn.Parameter(torch.zeros(()))
        self.mlp = nn.Sequential(nn.Linear(d, d), nn.ReLU(), nn.Linear(d, d))
        self.norm = nn.LayerNorm(d)

    def forward(self, h, edge_index):
        src, dst = edge_index
        msg = torch.zeros_like(h).index_add_(0, dst, h[src])
        return h + F.relu(self.norm(self.mlp((1 + self.eps) * h + msg)))


class GIN(nn.Module):
    def __init__(self, feat, d, layers, classes):
        super().__init__()
        self.embed = nn.Linear(feat, d)
        self.layers = nn.ModuleList(GINLayer(d) for _ in range(layers))
        self.head = nn.Sequential(nn.Linear(d, d), nn.ReLU(), nn.Linear(d, classes))

    def node_states(self, x, edge_index):
        h = self.embed(x)
        for layer in self.layers:
            h = layer(h, edge_index)
        return h

    def forward_graphs(self, graphs):
        """One graph at a time (the planted way)."""
        pooled = []
        for g in graphs:  # gpuwhy: plants C4 (message passing per graph in a Python loop: ~130 kernels a graph)
            pooled.append(self.node_states(g.x, g.edge_index).mean(0))
        return self.head(torch.stack(pooled))

    def forward_batch(self, x, edge_index, batch, counts, num_graphs):
        """The disjoint union of the graphs (the fix)."""
        h = self.node_states(x, edge_index)
        pooled = h.new_zeros(num_graphs, h.shape[1]).index_add_(0, batch, h) / counts.unsqueeze(1)
        return self.head(pooled)


def collate(graphs, dev):
    """PyG-style Batch: one graph of len(graphs) components."""
    n = [g.num_nodes for g in graphs]
    e = [g.num_edges for g in graphs]
    first = [0] + list(itertools.accumulate(n))[:-1]
    meta = torch.tensor([first, n, e])
    if dev.type == "cuda":
        meta = meta.pin_memory()
    meta = meta.to(dev, non_blocking=True)
    x = torch.cat([g.x for g in graphs])
    edge_index = torch.cat([g.edge_index for g in graphs], 1)
    edge_index = edge_index + torch.repeat_interleave(meta[0], meta[2], output_size=sum(e))
    batch = torch.repeat_interleave(torch.arange(len(graphs), device=dev), meta[1], output_size=sum(n))
    y = torch.stack([g.y for g in graphs])
    return x, edge_index, batch, meta[1].float(), y


def main():
    args = cc.parser(__doc__).parse_args()
    dev = cc.torch_device(args)
    pool_n, per_batch, nmin, nmax, k, feat, d, layers, classes = \
        (32, 8, 8, 24, 4, 8, 32, 2, 4) if args.smoke else (512, 64, 40, 400, 8, 32, 256, 4, 10)
    gen = torch.Generator().manual_seed(0)
    pool = []
    for j in range(pool_n):
        n = int(torch.randint(nmin, nmax + 1, (), generator=gen))
        x, ei = random_graph(gen, n, k, feat)
        pool.append(Graph(x.to(dev), ei.to(dev), torch.tensor(j % classes, device=dev)))
    model = GIN(feat, d, layers, classes).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=1e-4, fused=dev.type == "cuda")
    rnd = random.Random(0)

    def step(i):
        graphs = rnd.sample(pool, per_batch)
        if args.fix:
            x, edge_index, batch, counts, y = collate(graphs, dev)
            logits = model.forward_batch(x, edge_index, batch, counts, len(graphs))
        else:
            y = torch.stack([g.y for g in graphs])
            logits = model.forward_graphs(graphs)
        loss = F.cross_entropy(logits, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    cc.run("c4_torch_gnn_per_graph", args, step, per_batch,
           extra={"graphs_per_step": per_batch, "mean_nodes": round(sum(g.num_nodes for g in pool) / pool_n, 1),
                  "batched": bool(args.fix)})


if __name__ == "__main__":
    main()
