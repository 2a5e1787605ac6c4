"""C10 serial model structure (a Tree-LSTM evaluated node by node by recursion): fine-grained
sentiment classification on Stanford-Sentiment-Treebank-style binary constituency trees with
the N-ary (binary) Tree-LSTM of Tai, Socher and Manning (2015), written in plain PyTorch the way
the widely copied reference implementations write it: `forward(tree)` recurses into the left
and right subtrees and then runs the cell on the node, so a batch of trees is a Python walk
over every node, one small cell after another. Embeddings 300-d (random, GloVe-sized
vocabulary of 21,701 words), memory 300, a 5-class classifier on every node (SST labels all
nodes), cross-entropy averaged over nodes, Adagrad (lr 0.05, as the paper) on the cell and
classifier and plain SGD (lr 0.1) on the embedding table, batch 25 trees;
sentences of 12 to 36 words (about 47 nodes a tree, ~1,200 nodes a batch) bracketed at random
split points (depth about 9 to 12), made once on the host and cycled; the loss is read every
50 steps.

Each leaf costs an embedding lookup, one Linear and ~6 elementwise kernels, each internal node
a concatenation, one Linear, a chunk and ~10 elementwise kernels, each on a handful of 300-d
rows: ~15,000 dependent launches forward and about twice that backward a step, each kernel a
few microseconds on the GPU and several on the host.

--fix: gpuwhy's C10 advice (batching over the sequence's positions, here the tree's levels):
the same cell run level by level over the whole batch (DGL-style topological batching): all
leaves of the 25 trees in one call, then every node whose children are done, one level at a
time (~12 levels), the children's states gathered by index. Parameters, trees, labels, loss
and optimizer unchanged (both walks give the same loss; checked at start).

Written blind for the foxtrot batch.
"""
import random

import torch
import torch.nn as nn
import torch.nn.functional as F

import cc

CLASSES = 5


class Tree:
    __slots__ = ("word", "left", "right", "label", "idx", "height", "word_pos")

    def __init__(self, word=None, left=None, right=None, label=0):
        self.word, self.left, self.right, self.label = word, left, right, label
        self.idx, self.height, self.word_pos = -1, 0, -1


def random_tree(words, r):
    """Random binary bracketing of a word sequence (a constituency parse's shape)."""
    if len(words) == 1:
        return Tree(word=words[0], label=r.randrange(CLASSES))
    k = r.randint(1, len(words) - 1)
    t = Tree(left=random_tree(words[:k], r), right=random_tree(words[k:], r), label=r.randrange(CLASSES))
    t.height = 1 + max(t.left.height, t.right.height)
    return t


def nodes_postorder(t, out):
    if t.left is not None:
        nodes_postorder(t.left, out)
        nodes_postorder(t.right, out)
    out.append(t)
    return out


class BinaryTreeLSTM(nn.Module):
    def __init__(self, vocab, dim, mem):
        super().__init__()
        self.mem = mem
        self.emb = nn.Embedding(vocab, dim)
        self.leaf_iou = nn.Linear(dim, 3 * mem)
        self.node_gates = nn.Linear(2 * mem, 5 * mem)  # i, f_left, f_right, o, u from [h_l; h_r]
        self.cls = nn.Linear(mem, CLASSES)

    # -- the reference implementations' walk: recursion, one node at a time --------------
    def leaf(self, word_ids):
        i, o, u = self.leaf_iou(self.emb(word_ids)).chunk(3, -1)
        c = torch.sigmoid(i) * torch.tanh(u)
        return c, torch.sigmoid(o) * torch.tanh(c)

    def node(self, cl, hl, cr, hr):
        i, fl, fr, o, u = self.node_gates(torch.cat([hl, hr], -1)).chunk(5, -1)
        c = torch.sigmoid(i) * torch.tanh(u) + torch.sigmoid(fl) * cl + torch.sigmoid(fr) * cr
        return c, torch.sigmoid(o) * torch.tanh(c)

    def recurse(self, t, word_t, outs):
        if t.left is None:
            c, h = self.leaf(word_t[t.word_pos])  # the leaf's word id, a view of the tree's GPU tensor
        else:
            cl, hl = self.recurse(t.left, word_t, outs)
            cr, hr = self.recurse(t.right, word_t, outs)
            c, h = self.node(cl, hl, cr, hr)
        outs.append(h)
        return c, h

    # -- the fix: level by level over the whole batch -----------------------------------
    def levels(self, plan):
        leaf_words, levels = plan
        c, h = self.leaf(leaf_words)
        cs, hs = c, h
        for left, right in levels:
            c, h = self.node(cs[left], hs[left], cs[right], hs[right])
            cs, hs = torch.cat([cs, c]), torch.cat([hs, h])
        return hs


def level_plan(trees, dev):
    """Rows of the level-by-level buffer: leaves first, then each height; children by row."""
    allnodes = [n for t in trees for n in nodes_postorder(t, [])]
    leaves = [n for n in allnodes if n.left is None]
    for k, n in enumerate(leaves):
        n.idx = k
    row = len(leaves)
    levels = []
    for hgt in range(1, max(n.height for n in allnodes) + 1):
        lvl = [n for n in allnodes if n.left is not None and n.height == hgt]
        for n in lvl:
            n.idx = row
            row += 1
        levels.append((torch.tensor([n.left.idx for n in lvl], device=dev),
                       torch.tensor([n.right.idx for n in lvl], device=dev)))
    order = sorted(allnodes, key=lambda n: n.idx)
    return ((torch.tensor([n.word for n in leaves], device=dev), levels),
            torch.tensor([n.label for n in order], device=dev))


def main():
    args = cc.parser(__doc__).parse_args()
    dev = cc.torch_device(args)
    vocab, dim, mem, batch, lo, hi, nbatches = \
        (500, 16, 16, 3, 3, 6, 2) if args.smoke else (21_701, 300, 300, 25, 12, 36, 8)
    r = random.Random(0)
    batches = []
    for _ in range(nbatches):
        trees = [random_tree([r.randrange(vocab) for _ in range(r.randint(lo, hi))], r) for _ in range(batch)]
        post = [nodes_postorder(t, []) for t in trees]
        # recursion's outputs come in post-order, tree after tree
        rec_labels = torch.tensor([n.label for p in post for n in p], device=dev)
        words = [torch.tensor([n.word if n.word is not None else 0 for n in p], device=dev) for p in post]
        for p in post:  # word ids by position in the tree's post-order
            for k, n in enumerate(p):
                if n.left is None:
                    n.word_pos = k
        plan, lvl_labels = level_plan(trees, dev)
        batches.append((trees, words, rec_labels, plan, lvl_labels))

    torch.manual_seed(0)
    model = BinaryTreeLSTM(vocab, dim, mem).to(dev)
    opt = torch.optim.Adagrad([p for n, p in model.named_parameters() if not n.startswith("emb")], lr=0.05,
                              weight_decay=1e-4)
    emb_opt = torch.optim.SGD(model.emb.parameters(), lr=0.1)

    def loss_recursive(b):
        trees, words, labels, _, _ = b
        outs = []
        for t, w in zip(trees, words):
            model.recurse(t, w, outs)
        return F.cross_entropy(model.cls(torch.stack(outs)), labels)

    def loss_levels(b):
        _, _, _, plan, labels = b
        return F.cross_entropy(model.cls(model.levels(plan)), labels)

    # both walks compute the same function of the same parameters
    with torch.no_grad():
        a, z = loss_recursive(batches[0]).item(), loss_levels(batches[0]).item()
    assert abs(a - z) < 1e-4 * max(1.0, abs(a)), (a, z)

    forward = loss_levels if args.fix else loss_recursive  # gpuwhy: plants C10 (recursion over every tree node, one tiny cell at a time)
    acc = torch.zeros((), device=dev)
    log = {"loss": None, "reads": 0}

    def step(i):
        loss = forward(batches[i % nbatches])
        opt.zero_grad(set_to_none=True)
        emb_opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        emb_opt.step()
        acc.add_(loss.detach())
        if i % 50 == 49:
            log["loss"] = acc.item() / 50
            log["reads"] += 1
            acc.zero_()

    nodes = sum(len(nodes_postorder(t, [])) for t in batches[0][0])
    cc.run("c10_torch_treelstm_recursive", args, step, batch,
           extra=lambda: {"walk": "level by level" if args.fix else "recursive, node by node",
                          "nodes_per_batch": nodes, "levels": len(batches[0][3][1]), "loss_reads": log["reads"]})


if __name__ == "__main__":
    main()
