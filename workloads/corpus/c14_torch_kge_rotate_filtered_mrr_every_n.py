"""C14 periodic stall (filtered link-prediction evaluation every 100 steps): knowledge-graph
embedding with RotatE, written as DeepGraphLearning/KnowledgeGraphEmbedding's codes/model.py and
run.py write it, in plain PyTorch, on an FB15k-237-sized graph (14,541 entities, 237 relations,
272,115 training triples with Zipf-distributed entity degrees and a rule-like structure, made
at start on the GPU, plus a 500-triple validation subset): entity embeddings of 2 x 500
(double_entity_embedding: real and imaginary parts), relation phases of 500, gamma 9.0,
self-adversarial negative sampling (alpha 1.0), batch 512 positives with 128 negatives each
(the repository's FB15k-237 line, -b 1024 -n 256 -d 1000, halved for a tuning sweep),
alternating head-batch and tail-batch as the repository's BidirectionalOneShotIterator does
(negatives drawn uniformly on the GPU), Adam (lr 5e-5) over the dense embedding tables, float32
as KGE models are trained; the loss stays on the GPU and is read every 100 steps with the
validation.

The training step is memory-bound work over the 512 x 128 gathered negatives (0.26 GB a
tensor, ~10-12 such passes forward and backward with the embedding gradients' index_add: ~3-5 ms of
GPU time a step, estimated). Every 100 steps (`--valid_steps 100`, set while
tuning to watch the MRR, where the repository defaults to 10,000) run.py calls the model's
test_step on the validation subset, as its code does it: a TestDataset whose __getitem__ builds
each query's filter bias on the host (the known true heads or tails of (r, t) or (h, r), from a
dict of sets) and hands every entity as a candidate, collated 16 queries a batch, copied to the
GPU, scored against all 14,541 entities, argsorted, and then ranked query by query with
`(argsort[i, :] == positive_arg[i]).nonzero()` and `ranking.item()`, two host waits a query;
1,000 queries (head and tail) in 64 batches, each ~1.5 ms of host work (16 filters at ~90 us,
the collate, pageable copies), ~2-3 ms of GPU scoring (16 x 14,541 x 1,000 gathered values)
and 32 host waits: ~300-400 ms every 100 steps, the GPU idle for more than half of it,
estimated.

--fix: gpuwhy's C14 advice (evaluate less often): the validation every 10,000 steps (the
repository's default valid_steps), outside the measured window; training unchanged.

Written blind for the victor batch.
"""
import collections

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

import cc


class KGEModel(nn.Module):
    """RotatE as codes/model.py defines it (the other score functions left out)."""

    def __init__(self, nentity, nrelation, hidden_dim, gamma):
        super().__init__()
        self.epsilon = 2.0
        self.gamma = nn.Parameter(torch.tensor([gamma]), requires_grad=False)
        self.embedding_range = nn.Parameter(torch.tensor([(gamma + self.epsilon) / hidden_dim]), requires_grad=False)
        self.entity_embedding = nn.Parameter(torch.zeros(nentity, hidden_dim * 2))
        nn.init.uniform_(self.entity_embedding, -self.embedding_range.item(), self.embedding_range.item())
        self.relation_embedding = nn.Parameter(torch.zeros(nrelation, hidden_dim))
        nn.init.uniform_(self.relation_embedding, -self.embedding_range.item(), self.embedding_range.item())

    def forward(self, sample, mode="single"):
        if mode == "single":
            head = torch.index_select(self.entity_embedding, 0, sample[:, 0]).unsqueeze(1)
            relation = torch.index_select(self.relation_embedding, 0, sample[:, 1]).unsqueeze(1)
            tail = torch.index_select(self.entity_embedding, 0, sample[:, 2]).unsqueeze(1)
        elif mode == "head-batch":
            tail_part, head_part = sample
            b, n = head_part.size(0), head_part.size(1)
            head = torch.index_select(self.entity_embedding, 0, head_part.view(-1)).view(b, n, -1)
            relation = torch.index_select(self.relation_embedding, 0, tail_part[:, 1]).unsqueeze(1)
            tail = torch.index_select(self.entity_embedding, 0, tail_part[:, 2]).unsqueeze(1)
        else:
            head_part, tail_part = sample
            b, n = tail_part.size(0), tail_part.size(1)
            head = torch.index_select(self.entity_embedding, 0, head_part[:, 0]).unsqueeze(1)
            relation = torch.index_select(self.relation_embedding, 0, head_part[:, 1]).unsqueeze(1)
            tail = torch.index_select(self.entity_embedding, 0, tail_part.view(-1)).view(b, n, -1)
        return self.RotatE(head, relation, tail, mode)

    def RotatE(self, head, relation, tail, mode):
        pi = 3.14159265358979323846
        re_head, im_head = torch.chunk(head, 2, dim=2)
        re_tail, im_tail = torch.chunk(tail, 2, dim=2)
        phase_relation = relation / (self.embedding_range.item() / pi)
        re_relation, im_relation = torch.cos(phase_relation), torch.sin(phase_relation)
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
        score = torch.stack([re_score, im_score], dim=0).norm(dim=0)
        return self.gamma.item() - score.sum(dim=2)


class TestDataset(Dataset):
    """codes/dataloader.py's TestDataset: every entity a candidate, the filter bias built on the
    host from the known true triples (-1 on a known one, 0 elsewhere and on the answer)."""

    def __init__(self, triples, true_heads, true_tails, nentity, mode):
        self.triples, self.true_heads, self.true_tails = triples, true_heads, true_tails
        self.nentity, self.mode = nentity, mode

    def __len__(self):
        return len(self.triples)

    def __getitem__(self, idx):
        head, relation, tail = self.triples[idx]
        bias = np.zeros(self.nentity, dtype=np.float32)
        if self.mode == "head-batch":
            bias[list(self.true_heads[(relation, tail)])] = -1.0
            bias[head] = 0.0
        else:
            bias[list(self.true_tails[(head, relation)])] = -1.0
            bias[tail] = 0.0
        negative_sample = torch.arange(self.nentity)
        return torch.LongTensor((head, relation, tail)), negative_sample, torch.from_numpy(bias), self.mode

    @staticmethod
    def collate_fn(data):
        return (torch.stack([d[0] for d in data]), torch.stack([d[1] for d in data]),
                torch.stack([d[2] for d in data]), data[0][3])


@torch.no_grad()
def test_step(model, triples, true_heads, true_tails, nentity, dev, test_batch_size):
    """KGEModel.test_step, as run.py calls it every valid_steps."""
    model.eval()
    logs = []
    for mode in ("head-batch", "tail-batch"):
        loader = DataLoader(TestDataset(triples, true_heads, true_tails, nentity, mode),
                            batch_size=test_batch_size, num_workers=0, collate_fn=TestDataset.collate_fn)
        for positive_sample, negative_sample, filter_bias, mode in loader:
            positive_sample = positive_sample.to(dev)
            negative_sample = negative_sample.to(dev)
            filter_bias = filter_bias.to(dev)
            score = model((positive_sample, negative_sample), mode)
            score += filter_bias * 1000.0            # known true triples pushed below every candidate (filtered setting)
            argsort = torch.argsort(score, dim=1, descending=True)
            positive_arg = positive_sample[:, 0] if mode == "head-batch" else positive_sample[:, 2]
            for i in range(positive_sample.size(0)):
                ranking = (argsort[i, :] == positive_arg[i]).nonzero()
                ranking = 1 + ranking.item()  # gpuwhy: plants C14 (the filtered ranking of 1,000 validation queries, two host waits each, every 100 steps)
                logs.append({"MRR": 1.0 / ranking, "MR": float(ranking), "HITS@1": 1.0 if ranking <= 1 else 0.0,
                             "HITS@3": 1.0 if ranking <= 3 else 0.0, "HITS@10": 1.0 if ranking <= 10 else 0.0})
    model.train()
    return {k: sum(log[k] for log in logs) / len(logs) for k in logs[0]}


def make_graph(dev, nentity, nrelation, ntrain, nvalid, seed=0):
    """Triples with Zipf entity degrees and per-relation structure (each relation maps an entity
    to one of a few 'typed' answers plus noise), made on the GPU; deduplicated."""
    g = torch.Generator(device=dev).manual_seed(seed)
    n = int((ntrain + nvalid) * 1.15)
    ranks = torch.arange(1, nentity + 1, device=dev, dtype=torch.float32)
    p = ranks ** -0.75
    heads = torch.multinomial(p / p.sum(), n, replacement=True, generator=g)
    rels = torch.randint(0, nrelation, (n,), device=dev, generator=g)
    shift = torch.randint(0, nentity, (nrelation,), device=dev, generator=g)
    mult = torch.randint(1, 97, (nrelation,), device=dev, generator=g)
    typed = (heads * mult[rels] + shift[rels] + torch.randint(0, 8, (n,), device=dev, generator=g)) % nentity
    noise = torch.multinomial(p / p.sum(), n, replacement=True, generator=g)
    tails = torch.where(torch.rand(n, device=dev, generator=g) < 0.7, typed, noise)
    t = torch.stack([heads, rels, tails], 1)
    t = t[t[:, 0] != t[:, 2]]
    t = torch.unique(t, dim=0)
    t = t[torch.randperm(t.size(0), device=dev, generator=g)]
    return t[:ntrain], t[ntrain:ntrain + nvalid]


def main():
    args = cc.parser(__doc__, warmup=5).parse_args()
    dev = cc.torch_device(args)
    if args.smoke:
        nentity, nrelation, ntrain, nvalid, hidden, batch, nneg, valid_steps = 2000, 20, 20000, 64, 32, 128, 32, 10
    else:
        nentity, nrelation, ntrain, nvalid, hidden, batch, nneg, valid_steps = 14541, 237, 272115, 500, 500, 512, 128, 100
    if args.fix:
        valid_steps = 10_000                          # the repository's default: outside the measured window
    gamma, alpha, test_batch_size = 9.0, 1.0, 16

    torch.manual_seed(0)
    train_gpu, valid_gpu = make_graph(dev, nentity, nrelation, ntrain, nvalid)
    all_true = torch.cat([train_gpu, valid_gpu]).cpu().numpy()
    true_heads, true_tails = collections.defaultdict(set), collections.defaultdict(set)
    for h, r, t in all_true.tolist():
        true_tails[(h, r)].add(t)
        true_heads[(r, t)].add(h)
    valid = [tuple(x) for x in valid_gpu.cpu().tolist()]

    model = KGEModel(nentity, nrelation, hidden, gamma).to(dev)
    opt = torch.optim.Adam(filter(lambda q: q.requires_grad, model.parameters()), lr=5e-5)
    g = torch.Generator(device=dev).manual_seed(1)
    ntr = train_gpu.size(0)
    st = {"acc": torch.zeros((), device=dev), "loss": None, "valid": 0, "metrics": None}

    def step(i):
        mode = "head-batch" if i % 2 == 0 else "tail-batch"       # BidirectionalOneShotIterator
        pos = train_gpu[torch.randint(0, ntr, (batch,), device=dev, generator=g)]
        neg = torch.randint(0, nentity, (batch, nneg), device=dev, generator=g)
        negative_score = model((pos, neg), mode)
        negative_score = (F.softmax(negative_score * alpha, dim=1).detach() * F.logsigmoid(-negative_score)).sum(dim=1)
        positive_score = F.logsigmoid(model(pos)).squeeze(dim=1)
        loss = (-positive_score.mean() - negative_score.mean()) / 2
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        st["acc"] += loss.detach()
        if (i + 1) % valid_steps == 0:
            st["loss"] = st["acc"].item() / valid_steps
            st["acc"].zero_()
            st["metrics"] = test_step(model, valid, true_heads, true_tails, nentity, dev, test_batch_size)
            st["valid"] += 1

    cc.run("c14_torch_kge_rotate_filtered_mrr_every_n", args, step, batch,
           extra=lambda: {"entities": nentity, "relations": nrelation, "train_triples": ntr, "valid_triples": len(valid),
                          "negatives": nneg, "valid_steps": valid_steps, "validations": st["valid"], "loss": st["loss"],
                          "mrr": None if st["metrics"] is None else round(st["metrics"]["MRR"], 4)})


if __name__ == "__main__":
    main()
