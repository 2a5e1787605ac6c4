"""C1 filtered negative sampling on the training thread (knowledge-graph embedding, RotatE with
its DataLoaders left at num_workers=0): link prediction on an FB15k-237-sized knowledge graph
(14,541 entities, 237 relations, 272,115 training triples; synthetic, with a power-law entity
degree as in Freebase, made at start) with RotatE (Sun et al. 2019) in plain PyTorch, written
the way the authors' KnowledgeGraphEmbedding code (and the many ports of it) writes it: the
published FB15k-237 configuration, entity embeddings of 2 x 1000 (real and imaginary parts),
relation phases of 1000, gamma 9, batch 1,024 positive triples with 256 negatives each,
self-adversarial negative sampling (temperature 1.0), subsampling weights, Adam (lr 5e-5),
float32 as the reference trains it; two loaders, head-batch and tail-batch, alternated by a
BidirectionalOneShotIterator. The loss stays on the GPU and is read every 100 steps (the
reference's log_steps); gamma and the embedding range are Python floats here (the reference
keeps them as GPU parameters and reads them with .item() in every forward).

The TrainDataset is the reference's: __getitem__ draws 2 x 256 random entities with
np.random.randint, drops the true heads (or tails) of the triple's (relation, tail) key with
np.isin(..., invert=True) (the reference's np.in1d, gone from NumPy 2) against the filter
dictionaries built at start, loops until it has
256, and returns four tensors; the collate_fn stacks 1,024 of them. The reference gives each
DataLoader max(1, cpu_num // 2) workers; this script, like many a notebook port, leaves
num_workers=0, so the ~1,024 NumPy filterings and tensor creations of a batch run
on the training thread before each step (117-122 ms a batch timed on a CPU-only machine of two
loaded cores, ~50-90 ms estimated on a server core), whose GPU work (a 1 GB gather of negative
embeddings, the complex rotation and the L2 norm over 1,024 x 256 x 500, their backward and
an index_add into the entity table; memory-bound) is ~6-10 ms.

--fix: gpuwhy's C1 advice (load data in worker processes): both DataLoaders with workers,
together one per free core (cc.fix_workers(), split between the head-batch and tail-batch
loaders), pin_memory=True, prefetch_factor=4 and persistent_workers=True, the batches copied
with non_blocking=True; graph, sampler, model, batch and optimizer unchanged.

Written blind for the victor batch.
"""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

import cc


def make_graph(nentity, nrelation, ntriples, seed=0):
    """Training triples (h, r, t) of a Freebase-like graph: entity degrees follow a power law,
    each relation links a typed subset of entities (its own head and tail pools)."""
    rng = np.random.default_rng(seed)
    rank = rng.permutation(nentity)
    p = 1.0 / (1.0 + rank) ** 0.75
    p /= p.sum()
    rel_p = 1.0 / (1.0 + np.arange(nrelation)) ** 0.9
    rel_p /= rel_p.sum()
    out = np.empty((0, 3), np.int64)
    while len(out) < ntriples:
        n = int((ntriples - len(out)) * 1.3) + 1000
        r = rng.choice(nrelation, n, p=rel_p)
        h = rng.choice(nentity, n, p=p)
        # a relation's tails come from a slice of the entity space (its range type)
        t = (rng.choice(nentity, n, p=p) + r * 977) % nentity
        tr = np.stack([h, r, t], 1)
        tr = tr[h != t]
        out = np.unique(np.concatenate([out, tr]), axis=0)
    return out[rng.permutation(len(out))[:ntriples]]


def count_frequency(triples, start=4):
    """The reference's subsampling counts, (head, relation) and (tail, -relation - 1)."""
    count = {}
    for head, relation, tail in triples:
        count[(head, relation)] = count.get((head, relation), start) + 1
        count[(tail, -relation - 1)] = count.get((tail, -relation - 1), start) + 1
    return count


def get_true_head_and_tail(triples):
    """The reference's filter dictionaries: true heads of (relation, tail), true tails of
    (head, relation), as NumPy arrays."""
    true_head, true_tail = {}, {}
    for head, relation, tail in triples:
        true_tail.setdefault((head, relation), []).append(tail)
        true_head.setdefault((relation, tail), []).append(head)
    for k in true_head:
        true_head[k] = np.array(list(set(true_head[k])))
    for k in true_tail:
        true_tail[k] = np.array(list(set(true_tail[k])))
    return true_head, true_tail


class TrainDataset(Dataset):
    def __init__(self, triples, nentity, nrelation, negative_sample_size, mode, count, true_head, true_tail):
        self.triples = triples
        self.nentity = nentity
        self.nrelation = nrelation
        self.negative_sample_size = negative_sample_size
        self.mode = mode
        self.count = count
        self.true_head = true_head
        self.true_tail = true_tail

    def __len__(self):
        return len(self.triples)

    def __getitem__(self, idx):
        positive_sample = self.triples[idx]
        head, relation, tail = positive_sample
        subsampling_weight = self.count[(head, relation)] + self.count[(tail, -relation - 1)]
        subsampling_weight = torch.sqrt(1 / torch.Tensor([subsampling_weight]))
        negative_sample_list = []
        negative_sample_size = 0
        while negative_sample_size < self.negative_sample_size:
            negative_sample = np.random.randint(self.nentity, size=self.negative_sample_size * 2)
            if self.mode == "head-batch":
                mask = np.isin(negative_sample, self.true_head[(relation, tail)], assume_unique=True, invert=True)
            else:
                mask = np.isin(negative_sample, self.true_tail[(head, relation)], assume_unique=True, invert=True)
            negative_sample = negative_sample[mask]
            negative_sample_list.append(negative_sample)
            negative_sample_size += negative_sample.size
        negative_sample = np.concatenate(negative_sample_list)[:self.negative_sample_size]
        negative_sample = torch.LongTensor(negative_sample)
        positive_sample = torch.LongTensor(positive_sample)
        return positive_sample, negative_sample, subsampling_weight, self.mode

    @staticmethod
    def collate_fn(data):
        positive_sample = torch.stack([_[0] for _ in data], dim=0)
        negative_sample = torch.stack([_[1] for _ in data], dim=0)
        subsample_weight = torch.cat([_[2] for _ in data], dim=0)
        mode = data[0][3]
        return positive_sample, negative_sample, subsample_weight, mode


class BidirectionalOneShotIterator:
    def __init__(self, dataloader_head, dataloader_tail):
        self.iterator_head = self.one_shot_iterator(dataloader_head)
        self.iterator_tail = self.one_shot_iterator(dataloader_tail)
        self.step = 0

    def __next__(self):
        self.step += 1
        if self.step % 2 == 0:
            return next(self.iterator_head)
        return next(self.iterator_tail)

    @staticmethod
    def one_shot_iterator(dataloader):
        while True:
            for data in dataloader:
                yield data


class KGEModel(nn.Module):
    """RotatE as the reference writes it (double entity embedding, phases for relations)."""

    def __init__(self, nentity, nrelation, hidden_dim, gamma):
        super().__init__()
        self.epsilon = 2.0
        self.gamma = gamma
        self.embedding_range = (gamma + self.epsilon) / hidden_dim
        self.entity_embedding = nn.Parameter(torch.zeros(nentity, hidden_dim * 2))
        nn.init.uniform_(self.entity_embedding, -self.embedding_range, self.embedding_range)
        self.relation_embedding = nn.Parameter(torch.zeros(nrelation, hidden_dim))
        nn.init.uniform_(self.relation_embedding, -self.embedding_range, self.embedding_range)

    def forward(self, sample, mode="single"):
        if mode == "single":
            head = torch.index_select(self.entity_embedding, 0, sample[:, 0]).unsqueeze(1)
            relation = torch.index_select(self.relation_embedding, 0, sample[:, 1]).unsqueeze(1)
            tail = torch.index_select(self.entity_embedding, 0, sample[:, 2]).unsqueeze(1)
        elif mode == "head-batch":
            tail_part, head_part = sample
            batch_size, negative_sample_size = head_part.size(0), head_part.size(1)
            head = torch.index_select(self.entity_embedding, 0, head_part.view(-1)).view(batch_size, negative_sample_size, -1)
            relation = torch.index_select(self.relation_embedding, 0, tail_part[:, 1]).unsqueeze(1)
            tail = torch.index_select(self.entity_embedding, 0, tail_part[:, 2]).unsqueeze(1)
        else:
            head_part, tail_part = sample
            batch_size, negative_sample_size = tail_part.size(0), tail_part.size(1)
            head = torch.index_select(self.entity_embedding, 0, head_part[:, 0]).unsqueeze(1)
            relation = torch.index_select(self.relation_embedding, 0, head_part[:, 1]).unsqueeze(1)
            tail = torch.index_select(self.entity_embedding, 0, tail_part.view(-1)).view(batch_size, negative_sample_size, -1)
        return self.RotatE(head, relation, tail, mode)

    def RotatE(self, head, relation, tail, mode):
        pi = 3.14159265358979323846
        re_head, im_head = torch.chunk(head, 2, dim=2)
        re_tail, im_tail = torch.chunk(tail, 2, dim=2)
        phase_relation = relation / (self.embedding_range / pi)
        re_relation = torch.cos(phase_relation)
        im_relation = torch.sin(phase_relation)
        if mode == "head-batch":
            re_score = re_relation * re_tail + im_relation * im_tail
            im_score = re_relation * im_tail - im_relation * re_tail
            re_score = re_score - re_head
            im_score = im_score - im_head
        else:
            re_score = re_head * re_relation - im_head * im_relation
            im_score = re_head * im_relation + im_head * re_relation
            re_score = re_score - re_tail
            im_score = im_score - im_tail
        score = torch.stack([re_score, im_score], dim=0)
        score = score.norm(dim=0)
        return self.gamma - score.sum(dim=2)


def main():
    args = cc.parser(__doc__, warmup=5).parse_args()
    dev = cc.torch_device(args)
    gpu = dev.type == "cuda"
    if args.smoke:
        nentity, nrelation, ntriples, hidden, batch, nneg = 1_000, 20, 8_000, 32, 32, 16
    else:
        nentity, nrelation, ntriples, hidden, batch, nneg = 14_541, 237, 272_115, 1000, 1024, 256
    gamma, adv_temp, lr = 9.0, 1.0, 5e-5
    train_triples = [tuple(int(v) for v in t) for t in make_graph(nentity, nrelation, ntriples)]
    count = count_frequency(train_triples)
    true_head, true_tail = get_true_head_and_tail(train_triples)
    kw = dict(batch_size=batch, shuffle=True, drop_last=True, collate_fn=TrainDataset.collate_fn)
    ds_head = TrainDataset(train_triples, nentity, nrelation, nneg, "head-batch", count, true_head, true_tail)
    ds_tail = TrainDataset(train_triples, nentity, nrelation, nneg, "tail-batch", count, true_head, true_tail)
    if args.fix:
        # the advice: the sampling in worker processes, one per free core over the two loaders
        workers = 2 if args.smoke else cc.fix_workers()
        wk = dict(num_workers=max(1, workers // 2), pin_memory=gpu, prefetch_factor=4, persistent_workers=True)
        train_dataloader_head = DataLoader(ds_head, **kw, **wk)
        train_dataloader_tail = DataLoader(ds_tail, **kw, **wk)
        workers = 2 * wk["num_workers"]
    else:
        workers = 0
        train_dataloader_head = DataLoader(ds_head, **kw)  # gpuwhy: plants C1 (num_workers=0: ~1,024 NumPy filterings of random negatives and tensor creations, ~50-120 ms, on the training thread before each step)
        train_dataloader_tail = DataLoader(ds_tail, **kw)
    train_iterator = BidirectionalOneShotIterator(train_dataloader_head, train_dataloader_tail)

    torch.manual_seed(0)
    model = KGEModel(nentity, nrelation, hidden, gamma).to(dev)
    optimizer = torch.optim.Adam(filter(lambda p: p.requires_grad, model.parameters()), lr=lr)
    st = {"acc": torch.zeros((), device=dev), "loss": None, "reads": 0}

    def train_step(i):
        model.train()
        optimizer.zero_grad()
        positive_sample, negative_sample, subsampling_weight, mode = next(train_iterator)
        positive_sample = positive_sample.to(dev, non_blocking=args.fix)
        negative_sample = negative_sample.to(dev, non_blocking=args.fix)
        subsampling_weight = subsampling_weight.to(dev, non_blocking=args.fix)
        negative_score = model((positive_sample, negative_sample), mode=mode)
        # self-adversarial sampling: no gradient through the sampling weights
        negative_score = (F.softmax(negative_score * adv_temp, dim=1).detach() * F.logsigmoid(-negative_score)).sum(dim=1)
        positive_score = model(positive_sample)
        positive_score = F.logsigmoid(positive_score).squeeze(dim=1)
        positive_sample_loss = -(subsampling_weight * positive_score).sum() / subsampling_weight.sum()
        negative_sample_loss = -(subsampling_weight * negative_score).sum() / subsampling_weight.sum()
        loss = (positive_sample_loss + negative_sample_loss) / 2
        loss.backward()
        optimizer.step()
        st["acc"] += loss.detach()
        if i % 100 == 99:  # the reference's log_steps
            st["loss"] = st["acc"].item() / 100
            st["acc"].zero_()
            st["reads"] += 1

    cc.run("c1_torch_kge_rotate_filtered_negatives_main", args, train_step, batch,
           extra=lambda: {"num_workers": workers, "entities": nentity, "relations": nrelation,
                          "train_triples": len(train_triples), "negatives": nneg,
                          "params_m": round(sum(p.numel() for p in model.parameters()) / 1e6, 2),
                          "loss": st["loss"], "loss_reads": st["reads"]})


if __name__ == "__main__":
    main()
