"""C4 a Python loop over 325 field pairs, one nn.Linear and one mul each (CTR prediction,
FiBiNET's bilinear interaction as DeepCTR-Torch writes it): click-through-rate prediction on a
Criteo-Kaggle-shaped log (13 numeric and 26 categorical fields, the categorical vocabularies of
Criteo's 26 fields capped at 200,000 by hashing, 1.48 M embedding rows; 1 M synthetic
impressions with Zipf-distributed ids, made on the GPU at start and sampled there) with
FiBiNET (Huang et al., RecSys 2019) in plain PyTorch as shenweichen/DeepCTR-Torch's
deepctr_torch/models/fibinet.py and layers/interaction.py write it: embeddings of 16 (init std
1e-4) looked up field by field from the float input matrix, a linear part, the SENET layer
(reduction ratio 3), the BilinearInteraction layer in its "interaction" type (one 16 x 16
weight per field pair, 325 nn.Linear layers in an nn.ModuleList) applied to the SENET output
and to the raw embeddings, the 2 x 325 x 16 products and the numeric fields into a DNN of 400,
400, 400 (ReLU), a sigmoid output, binary cross-entropy summed over the batch as DeepCTR's fit
sums it, Adam (lr 1e-3), float32 as DeepCTR-Torch trains (the DNN's GEMMs are small), batch
1,024 impressions. The loss stays on the GPU and is read every 100 steps (DeepCTR's fit reads it
and computes host metrics every batch; left out, so that only the loop is planted), and the
embedding L2 regularization is off (l2_reg_embedding=0).

Planted as the library writes it: BilinearInteraction.forward splits the 26 field embeddings and
runs a list comprehension over itertools.combinations, torch.mul(bilinear(v_i), v_j) for each of
the 325 pairs; the layer runs twice a step: 3,479 aten operations forward and 9,945 backward a
step with the loop against 237 and 923 without it (views included; counted with a dispatch-mode
counter on the CPU), some 5,000-6,000 kernels a step (the per-pair matmuls and muls, their
gradients, the gradient sums into the 26 split inputs and the two uses of each weight), each
over 1,024 x 16 floats (64 KB, ~2-3 us on the GPU), issued at ~5-10 us of host time each:
~30-40 ms of host time a step against ~3-5 ms for a step without the loop (itself host-bound
by its ~1,200 operations, the GPU work ~1-2 ms), so the GPU waits on the launches: the loop is
~85-90% of a plain step.

--fix: gpuwhy's C4 advice (fewer, larger kernels), beyond its text (which names CUDA graphs,
torch.compile, fused optimizers, batch size) as the corpus's earlier loop fixes are: the 325
per-pair weights held as one 325 x 16 x 16 parameter (initialized from the same nn.Linear
layers), the pairs' left and right embeddings gathered with two index tensors and transformed in
one batched matmul and one mul; the same outputs (checked equal at start, the largest difference
in the JSON line); embeddings, SENET, DNN, data, batch and optimizer unchanged.

Written blind for the whiskey batch.
"""
import itertools

import torch
import torch.nn as nn
import torch.nn.functional as F

import cc

# Criteo Kaggle's categorical cardinalities (C1..C26), hashed to at most 200,000 ids
CRITEO_CARD = [1460, 583, 10131227, 2202608, 305, 24, 12517, 633, 3, 93145, 5683, 8351593, 3194,
               27, 14992, 5461306, 10, 5652, 2173, 4, 7046547, 18, 15, 286181, 105, 142572]


class SENETLayer(nn.Module):
    def __init__(self, filed_size, reduction_ratio=3):
        super().__init__()
        self.filed_size = filed_size
        self.reduction_size = max(1, filed_size // reduction_ratio)
        self.excitation = nn.Sequential(
            nn.Linear(self.filed_size, self.reduction_size, bias=False), nn.ReLU(),
            nn.Linear(self.reduction_size, self.filed_size, bias=False), nn.ReLU())

    def forward(self, inputs):
        Z = torch.mean(inputs, dim=-1, out=None)
        A = self.excitation(Z)
        V = torch.mul(inputs, torch.unsqueeze(A, dim=2))
        return V


class BilinearInteraction(nn.Module):
    """DeepCTR-Torch's layer, bilinear_type="interaction": a weight per field pair."""

    def __init__(self, filed_size, embedding_size):
        super().__init__()
        self.bilinear = nn.ModuleList()
        for _, _ in itertools.combinations(range(filed_size), 2):
            self.bilinear.append(nn.Linear(embedding_size, embedding_size, bias=False))

    def forward(self, inputs):
        inputs = torch.split(inputs, 1, dim=1)
        p = [torch.mul(bilinear(v[0]), v[1])  # gpuwhy: plants C4 (one nn.Linear and one mul per field pair, 325 pairs, two calls a step)
             for v, bilinear in zip(itertools.combinations(inputs, 2), self.bilinear)]
        return torch.cat(p, dim=1)


class BatchedBilinearInteraction(nn.Module):
    """The fix: the 325 weights as one parameter, all pairs in one batched matmul."""

    def __init__(self, looped):
        super().__init__()
        n = len(looped.bilinear)
        fields = int(round((1 + (1 + 8 * n) ** 0.5) / 2))
        i, j = zip(*itertools.combinations(range(fields), 2))
        self.register_buffer("left", torch.tensor(i), persistent=False)
        self.register_buffer("right", torch.tensor(j), persistent=False)
        # nn.Linear computes v @ W^T: keep W^T per pair
        self.weight = nn.Parameter(torch.stack([l.weight.detach().t().clone() for l in looped.bilinear]))

    def forward(self, inputs):  # (B, F, k) -> (B, P, k)
        vi = inputs[:, self.left]
        vj = inputs[:, self.right]
        return torch.bmm(vi.transpose(0, 1), self.weight).transpose(0, 1) * vj


class FiBiNET(nn.Module):
    def __init__(self, n_dense, vocab, emb, hidden, batched):
        super().__init__()
        self.n_dense, self.vocab = n_dense, vocab
        self.embedding_dict = nn.ModuleDict({f"C{i + 1}": nn.Embedding(v, emb) for i, v in enumerate(vocab)})
        self.linear_embedding = nn.ModuleDict({f"C{i + 1}": nn.Embedding(v, 1) for i, v in enumerate(vocab)})
        for m in list(self.embedding_dict.values()) + list(self.linear_embedding.values()):
            nn.init.normal_(m.weight, mean=0, std=1e-4)
        self.linear_dense = nn.Parameter(torch.empty(n_dense, 1).normal_(0, 1e-4))
        fields = len(vocab)
        self.SE = SENETLayer(fields, 3)
        self.Bilinear = BilinearInteraction(fields, emb)
        if batched:
            self.Bilinear = BatchedBilinearInteraction(self.Bilinear)
        pairs = fields * (fields - 1) // 2
        dims = [2 * pairs * emb + n_dense] + list(hidden)
        self.dnn = nn.ModuleList(nn.Linear(a, b) for a, b in zip(dims[:-1], dims[1:]))
        for lin in self.dnn:
            nn.init.normal_(lin.weight, mean=0, std=1e-4)
        self.dnn_linear = nn.Linear(hidden[-1], 1, bias=False)
        self.bias = nn.Parameter(torch.zeros((1,)))

    def input_from_feature_columns(self, X, table):
        """DeepCTR's lookups: each field sliced from the float input and cast, one at a time."""
        sparse = [table[f"C{i + 1}"](X[:, self.n_dense + i:self.n_dense + i + 1].long()) for i in range(len(self.vocab))]
        dense = [X[:, i:i + 1] for i in range(self.n_dense)]
        return sparse, dense

    def forward(self, X):
        sparse_embedding_list, dense_value_list = self.input_from_feature_columns(X, self.embedding_dict)
        sparse_embedding_input = torch.cat(sparse_embedding_list, dim=1)
        senet_output = self.SE(sparse_embedding_input)
        senet_bilinear_out = self.Bilinear(senet_output)
        bilinear_out = self.Bilinear(sparse_embedding_input)
        lin_sparse, lin_dense = self.input_from_feature_columns(X, self.linear_embedding)
        linear_logit = torch.sum(torch.cat(lin_sparse, dim=-1), dim=-1, keepdim=False)
        linear_logit = linear_logit + torch.cat(lin_dense, dim=-1).matmul(self.linear_dense)
        temp = torch.split(torch.cat((senet_bilinear_out, bilinear_out), dim=1), 1, dim=1)
        sparse_dnn_input = torch.flatten(torch.cat(temp, dim=-1), start_dim=1)
        dense_dnn_input = torch.flatten(torch.cat(dense_value_list, dim=-1), start_dim=1)
        deep_input = torch.cat([sparse_dnn_input, dense_dnn_input], dim=-1)
        for lin in self.dnn:
            deep_input = F.relu(lin(deep_input))
        dnn_logit = self.dnn_linear(deep_input)
        return torch.sigmoid(linear_logit + dnn_logit + self.bias)


def make_log(n, n_dense, vocab, dev, seed=0):
    """Impressions as DeepCTR feeds them: one float matrix, numeric fields then category ids."""
    g = torch.Generator(device=dev).manual_seed(seed)
    dense = torch.log1p(torch.empty(n, n_dense, device=dev).exponential_(0.05, generator=g).floor())
    ids = []
    for v in vocab:  # Zipf-like ids: floor(v ** u) - 1 with u uniform
        u = torch.rand(n, device=dev, generator=g)
        ids.append((torch.pow(float(v), u).floor() - 1).clamp_(0, v - 1))
    X = torch.cat([dense, torch.stack(ids, 1)], 1)
    score = dense[:, :3].sum(1) * 0.3 - (ids[0] < 10).float() + (ids[5] % 3 == 0).float() * 0.5 - 1.5
    y = (torch.rand(n, device=dev, generator=g) < torch.sigmoid(score)).float()
    return X, y


def main():
    args = cc.parser(__doc__, warmup=5).parse_args()
    dev = cc.torch_device(args)
    if args.smoke:
        n_rows, cap, fields, emb, hidden, batch = 20_000, 1_000, 8, 8, (32, 32), 128
    else:
        n_rows, cap, fields, emb, hidden, batch = 1_000_000, 200_000, 26, 16, (400, 400, 400), 1024
    n_dense = 13
    vocab = [min(c, cap) for c in CRITEO_CARD[:fields]]
    X_all, y_all = make_log(n_rows, n_dense, vocab, dev)
    torch.manual_seed(0)
    model = FiBiNET(n_dense, vocab, emb, hidden, batched=args.fix).to(dev)

    # the two bilinear paths give the same outputs (checked once)
    with torch.no_grad():
        torch.manual_seed(1)
        looped = BilinearInteraction(fields, emb).to(dev)
        batched = BatchedBilinearInteraction(looped).to(dev)
        v = torch.randn(64, fields, emb, device=dev)
        max_diff = float((looped(v) - batched(v)).abs().max())
        del looped, batched

    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    g = torch.Generator(device=dev).manual_seed(2)
    st = {"acc": torch.zeros((), device=dev), "loss": None, "reads": 0}

    def step(i):
        idx = torch.randint(0, n_rows, (batch,), device=dev, generator=g)
        x, y = X_all[idx], y_all[idx]
        y_pred = model(x).squeeze()
        optimizer.zero_grad()
        loss = F.binary_cross_entropy(y_pred, y.squeeze(), reduction="sum")
        loss.backward()
        optimizer.step()
        st["acc"] += loss.detach()
        if i % 100 == 99:
            st["loss"] = round(st["acc"].item() / (100 * batch), 5)
            st["acc"].zero_()
            st["reads"] += 1

    pairs = fields * (fields - 1) // 2
    cc.run("c4_torch_fibinet_bilinear_pair_loop", args, step, batch,
           extra=lambda: {"bilinear": "one batched matmul" if args.fix else "loop over field pairs",
                          "fields": fields, "pairs": pairs, "embedding_rows": sum(vocab),
                          "param_tensors": len(list(model.parameters())),
                          "params_m": round(sum(p.numel() for p in model.parameters()) / 1e6, 2),
                          "paths_max_abs_diff": max_diff, "loss": st["loss"], "loss_reads": st["reads"]})


if __name__ == "__main__":
    main()
