"""C14 periodic stalls (evaluation every N steps, plain PyTorch): collaborative filtering with
LightGCN (He et al., SIGIR 2020) as gusye1234/LightGCN-PyTorch writes it (model.py LightGCN,
Procedure.py BPR_train_original and Test, utils.py getLabel / RecallPrecision_ATk / NDCGatK_r)
on a Gowalla-shaped implicit-feedback graph made at start (29,858 users, 40,981 items, ~790,000
training and ~217,000 test interactions with power-law item popularity): 3 propagation layers
over the symmetric-normalized user-item adjacency (torch.sparse.mm, 1.57 M non-zeros), 64-dim
embeddings, BPR loss with L2 1e-4, Adam lr 1e-3, batch 2,048 (user, positive, negative)
triples drawn on the GPU (float32, as the reference). A step: ~2-3 ms of GPU work (6 SpMMs of
70,839 x 64 forward and backward, the gathers and Adam on 4.5 M parameters).

Planted: the reference's Test run every 40 steps (the loop's `eval_every`), on a 2,048-user
validation sample in batches of 1,024: for each batch the user's training items fetched from the
scipy CSR matrix (dataset.getUserPosItems), the whole graph propagated again (getUsersRating),
the training items masked through Python-built index lists, top-20 on the GPU and `.cpu()`, then
the metrics in NumPy and Python (getLabel's per-user membership test, Recall@20, Precision@20,
NDCG@20 with the per-user test matrix). The GPU idles for all of it but the propagation and the
top-k: ~200-300 ms of host work on the GPU machine's cores per evaluation (2,048 scipy row slices of
~50-100 us, ~55,000 Python-listed mask indices, 41,000 membership tests) against ~100 ms of
training between two; estimated share ~60-75% of the steady time (5-7 evaluations in 2 s).

--fix: gpuwhy's C14 advice (evaluate less often, every N steps or once per epoch): the same
Test every 10,000 steps, outside the measured window; model, data, sampling, loss and
optimizer unchanged.

Written blind for the yankee batch.
"""
import numpy as np
import scipy.sparse as sp
import torch

import cc

TOPK = 20


def make_graph(users, items, train_n, test_n, seed=0):
    """Implicit feedback with power-law item popularity; every user has >= 10 train and 1 test item."""
    rng = np.random.default_rng(seed)
    pop = 1.0 / np.arange(1, items + 1) ** 0.8
    pop = pop[rng.permutation(items)]
    pop /= pop.sum()
    n = train_n + test_n
    u = np.concatenate([np.repeat(np.arange(users), 11), rng.integers(0, users, n - 11 * users)])
    i = rng.choice(items, size=n, p=pop)
    key = np.unique(u.astype(np.int64) * items + i)
    rng.shuffle(key)
    u, i = key // items, key % items
    # one test item per user first, then a random share of the rest
    order = np.argsort(u, kind="stable")
    u, i = u[order], i[order]
    first = np.r_[True, u[1:] != u[:-1]]
    extra = (~first) & (rng.random(len(u)) < (test_n - users) / max(len(u) - users, 1))
    test = first | extra
    return (u[~test], i[~test]), (u[test], i[test])


class LightGCN(torch.nn.Module):
    def __init__(self, users, items, dim, layers, graph):
        super().__init__()
        self.users, self.items, self.layers, self.Graph = users, items, layers, graph
        self.embedding_user = torch.nn.Embedding(users, dim)
        self.embedding_item = torch.nn.Embedding(items, dim)
        torch.nn.init.normal_(self.embedding_user.weight, std=0.1)
        torch.nn.init.normal_(self.embedding_item.weight, std=0.1)

    def computer(self):
        all_emb = torch.cat([self.embedding_user.weight, self.embedding_item.weight])
        embs = [all_emb]
        for _ in range(self.layers):
            all_emb = torch.sparse.mm(self.Graph, all_emb)
            embs.append(all_emb)
        light_out = torch.mean(torch.stack(embs, dim=1), dim=1)
        return torch.split(light_out, [self.users, self.items])

    def getUsersRating(self, users):
        all_users, all_items = self.computer()
        return torch.sigmoid(torch.matmul(all_users[users.long()], all_items.t()))

    def bpr_loss(self, users, pos, neg):
        all_users, all_items = self.computer()
        u, p, n = all_users[users], all_items[pos], all_items[neg]
        u0, p0, n0 = self.embedding_user(users), self.embedding_item(pos), self.embedding_item(neg)
        reg = (1 / 2) * (u0.norm(2).pow(2) + p0.norm(2).pow(2) + n0.norm(2).pow(2)) / float(len(users))
        loss = torch.mean(torch.nn.functional.softplus(torch.sum(u * n, 1) - torch.sum(u * p, 1)))
        return loss, reg


def getLabel(test_data, pred_data):
    r = []
    for i in range(len(test_data)):
        groundTrue = test_data[i]
        predictTopK = pred_data[i]
        pred = list(map(lambda x: x in groundTrue, predictTopK))
        r.append(np.array(pred).astype("float"))
    return np.array(r).astype("float")


def RecallPrecision_ATk(test_data, r, k):
    right_pred = r[:, :k].sum(1)
    recall_n = np.array([len(test_data[i]) for i in range(len(test_data))])
    return {"recall": np.sum(right_pred / recall_n), "precision": np.sum(right_pred) / k}


def NDCGatK_r(test_data, r, k):
    pred_data = r[:, :k]
    test_matrix = np.zeros((len(pred_data), k))
    for i, items in enumerate(test_data):
        length = k if k <= len(items) else len(items)
        test_matrix[i, :length] = 1
    idcg = np.sum(test_matrix * 1. / np.log2(np.arange(2, k + 2)), axis=1)
    dcg = np.sum(pred_data * (1. / np.log2(np.arange(2, k + 2))), axis=1)
    idcg[idcg == 0.] = 1.
    ndcg = dcg / idcg
    ndcg[np.isnan(ndcg)] = 0.
    return np.sum(ndcg)


def main():
    args = cc.parser(__doc__, warmup=5).parse_args()
    dev = cc.torch_device(args)
    if args.smoke:
        users, items, train_n, test_n, batch, val_users, test_batch, eval_every = 400, 600, 8000, 1200, 256, 128, 64, 2
    else:
        users, items, train_n, test_n, batch, val_users, test_batch, eval_every = 29_858, 40_981, 810_128, 217_242, 2048, 2048, 1024, 40
    if args.fix:
        eval_every = 10_000
    (tu, ti), (su, si) = make_graph(users, items, train_n, test_n)
    UserItemNet = sp.csr_matrix((np.ones(len(tu)), (tu, ti)), shape=(users, items))
    testDict = {}
    for u, i in zip(su.tolist(), si.tolist()):
        testDict.setdefault(u, []).append(i)
    # the normalized adjacency D^-1/2 A D^-1/2 of Loader.getSparseGraph (built here in COO, not through dok/lil)
    R = UserItemNet.tocoo()
    adj = sp.coo_matrix((np.ones(2 * R.nnz, np.float32), (np.r_[R.row, R.col + users], np.r_[R.col + users, R.row])),
                        shape=(users + items, users + items)).tocsr()
    d = np.array(adj.sum(axis=1)).flatten()
    d_inv = np.zeros_like(d)
    np.power(d, -0.5, out=d_inv, where=d > 0)
    D = sp.diags(d_inv)
    norm = (D @ adj @ D).tocoo().astype(np.float32)
    graph = torch.sparse_coo_tensor(torch.from_numpy(np.vstack([norm.row, norm.col]).astype(np.int64)), torch.from_numpy(norm.data), norm.shape).coalesce().to(dev)

    torch.manual_seed(0)
    model = LightGCN(users, items, 64, 3, graph).to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    # BPR triples drawn on the GPU from the training interactions (the reference's C++ sampler's job)
    tr_u = torch.as_tensor(tu, device=dev)
    tr_i = torch.as_tensor(ti, device=dev)
    val = np.random.default_rng(1).choice(np.array(sorted(testDict)), val_users, replace=False)
    st = {"evals": 0, "eval_s": 0.0, "recall": None, "ndcg": None}

    def Test():
        import time
        t0 = time.perf_counter()
        model.eval()
        results = {"recall": 0.0, "precision": 0.0, "ndcg": 0.0}
        with torch.no_grad():
            for b in range(0, len(val), test_batch):
                batch_users = val[b:b + test_batch].tolist()
                allPos = [UserItemNet[u].nonzero()[1] for u in batch_users]
                groundTrue = [testDict[u] for u in batch_users]
                batch_users_gpu = torch.Tensor(batch_users).long().to(dev)
                rating = model.getUsersRating(batch_users_gpu)
                exclude_index, exclude_items = [], []
                for range_i, items_ in enumerate(allPos):
                    exclude_index.extend([range_i] * len(items_))
                    exclude_items.extend(items_)
                rating[exclude_index, exclude_items] = -(1 << 10)
                _, rating_K = torch.topk(rating, k=TOPK)
                sorted_items = rating_K.cpu().numpy()
                r = getLabel(groundTrue, sorted_items)
                ret = RecallPrecision_ATk(groundTrue, r, TOPK)
                results["recall"] += ret["recall"]
                results["precision"] += ret["precision"]
                results["ndcg"] += NDCGatK_r(groundTrue, r, TOPK)
        model.train()
        st["evals"] += 1
        st["eval_s"] += time.perf_counter() - t0
        st["recall"] = results["recall"] / len(val)
        st["ndcg"] = results["ndcg"] / len(val)

    def step(i):
        g = torch.randint(0, len(tr_u), (batch,), device=dev)
        users_, pos = tr_u[g], tr_i[g]
        neg = torch.randint(0, items, (batch,), device=dev)
        loss, reg = model.bpr_loss(users_, pos, neg)
        loss = loss + reg * 1e-4
        opt.zero_grad()
        loss.backward()
        opt.step()
        if i % eval_every == eval_every - 1:
            Test()  # gpuwhy: plants C14 (Test with its scipy/Python/NumPy metrics every 40 steps)

    cc.run("c14_torch_lightgcn_gowalla_recall_every_n", args, step, batch,
           extra=lambda: {"eval_every": eval_every, "evaluations": st["evals"],
                          "eval_ms_mean": round(st["eval_s"] / max(st["evals"], 1) * 1e3, 2),
                          "recall@20": st["recall"], "ndcg@20": st["ndcg"], "val_users": len(val),
                          "nnz": int(norm.nnz)})


if __name__ == "__main__":
    main()
