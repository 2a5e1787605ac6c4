"""C1 molecule featurization on the training thread (a chemprop-style D-MPNN whose Dataset
parses SMILES in __getitem__, DataLoader with num_workers=0): molecular property regression
on 100,000 SMILES strings (12-38 heavy atoms with branches, ring closures and double bonds,
random strings of the SMILES grammar made at start, 12 standardized regression targets) with
chemprop v2's bond message passing: directed-bond hidden states of width 2,048 over 6 steps
(W_i on the source atom's and the bond's features, W_h, W_o, ReLU, dropout 0.1), sum
aggregation over each molecule's atoms, a 3-layer FFN of width 2,048 to the 12 targets;
17.4 M parameters, bf16 autocast, fused Adam (lr 1e-4), MSE, batch 128 molecules (~3,400
atoms and ~7,000 directed bonds); the loss is read every 50 steps.

The Dataset is chemprop's featurization path without RDKit: __getitem__ tokenizes the SMILES
with the usual regular expression, walks it with a branch stack and a ring-closure table to
build atoms and bonds, computes implicit hydrogens from valences, and builds chemprop's
133-long atom feature lists (one-hot atomic number of 100, degree, formal charge, chirality,
hydrogens, hybridization, aromatic flag, mass / 100) and 14-long bond feature lists per
directed bond as Python lists turned into NumPy arrays; the collate_fn concatenates the
graphs (BatchMolGraph: offset edge indices, reverse-edge indices, the atom-to-molecule
vector). The DataLoader runs with the default num_workers=0 (chemprop's CLI sets workers,
the user's script does not): ~0.3-0.5 ms of Python a molecule, ~40-65 ms a batch on the
training thread before each step (timed on the CPU-only machine: 31 ms for 64 molecules, 2
loaded cores), whose GPU work (gathers and index_add over ~7,000 bonds, five 2,048 x 2,048
GEMMs on them, the FFN; ~0.9 TFLOP) is ~4-6 ms.

--fix: gpuwhy's C1 advice (load data in worker processes): the same DataLoader with
num_workers=N, one per free core (cc.fix_workers()), pin_memory=True, prefetch_factor=4 and
persistent_workers=True, the graph tensors copied with non_blocking=True; SMILES, parser,
features, model, batch and optimizer unchanged.

Written blind for the quebec batch.
"""
import random
import re

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

import cc

SMILES_RE = re.compile(r"(\[[^\]]+]|Br?|Cl?|N|O|S|P|F|I|b|c|n|o|s|p|\(|\)|\.|=|#|-|\+|\\|/|:|~|@|\?|>|\*|\$|%[0-9]{2}|[0-9])")
ATOMIC = {"C": 6, "N": 7, "O": 8, "S": 16, "F": 9, "Cl": 17, "Br": 35, "c": 6, "n": 7, "o": 8, "s": 16}
VALENCE = {6: 4, 7: 3, 8: 2, 16: 2, 9: 1, 17: 1, 35: 1}
MASS = {6: 12.011, 7: 14.007, 8: 15.999, 16: 32.06, 9: 18.998, 17: 35.45, 35: 79.904}
BOND_ORDER = {"-": 1, "=": 2, "#": 3, ":": 1.5}
MAX_ATOMIC_NUM = 100
ATOM_FDIM = MAX_ATOMIC_NUM + 1 + 7 + 6 + 5 + 6 + 6 + 1 + 1   # chemprop's 133
BOND_FDIM = 14


def make_smiles(n, rng):
    """Drug-like random SMILES: a chain with branches, ring closures and double bonds."""
    atoms = ["C"] * 10 + ["N"] * 3 + ["O"] * 3 + ["S", "F", "Cl", "Br"]
    out = []
    for _ in range(n):
        k = rng.randint(12, 38)
        s, open_rings, depth, ring_id = [], [], 0, 1
        for i in range(k):
            if i and rng.random() < 0.15:
                s.append("=")
            a = rng.choice(atoms) if i and i < k - 1 else "C"
            s.append(a)
            if a in ("F", "Cl", "Br"):
                continue
            r = rng.random()
            if r < 0.08 and ring_id < 9:
                s.append(str(ring_id))
                open_rings.append(ring_id)
                ring_id += 1
            elif r < 0.16 and open_rings:
                s.append(str(open_rings.pop()))
            elif r < 0.28 and i < k - 2:
                s.append("(")
                depth += 1
            elif r < 0.40 and depth:
                s.append(")")
                depth -= 1
        while s and s[-1] in ("(", "="):
            s.pop()
        s.extend(str(x) for x in open_rings[:1])
        s.append(")" * depth)
        out.append("".join(s))
    return out


def onek(value, choices):
    """chemprop's onek_encoding_unk: a one-hot list with an extra 'unknown' slot."""
    enc = [0] * (len(choices) + 1)
    enc[choices.index(value) if value in choices else -1] = 1
    return enc


def parse(smiles):
    """Atoms (atomic numbers, aromatic flags) and bonds (i, j, order) from a SMILES string."""
    atoms, arom, bonds = [], [], []
    prev, stack, rings, order = None, [], {}, 1
    for tok in SMILES_RE.findall(smiles):
        if tok == "(":
            stack.append(prev)
        elif tok == ")":
            prev = stack.pop()
        elif tok in BOND_ORDER:
            order = BOND_ORDER[tok]
        elif tok.isdigit():
            if tok in rings:
                j, o = rings.pop(tok)
                bonds.append((j, prev, max(o, order)))
            else:
                rings[tok] = (prev, order)
            order = 1
        else:
            atoms.append(ATOMIC.get(tok.strip("[]"), 6))
            arom.append(tok.islower())
            if prev is not None:
                bonds.append((prev, len(atoms) - 1, order))
            prev, order = len(atoms) - 1, 1
    return atoms, arom, bonds


def featurize(smiles):
    """chemprop v2's SimpleMoleculeMolGraphFeaturizer: V (atoms x 133), E (directed bonds x 14),
    edge_index (2 x directed bonds) and rev_edge_index, as NumPy arrays."""
    atoms, arom, bonds = parse(smiles)
    deg = [0] * len(atoms)
    used = [0.0] * len(atoms)
    for i, j, o in bonds:
        deg[i] += 1
        deg[j] += 1
        used[i] += o
        used[j] += o
    V = []
    for a, (z, ar) in enumerate(zip(atoms, arom)):
        hs = max(0, int(VALENCE.get(z, 4) - used[a]))
        hyb = 2 if ar or used[a] > deg[a] else 3
        V.append(onek(z - 1, list(range(MAX_ATOMIC_NUM))) + onek(deg[a], [0, 1, 2, 3, 4, 5])
                 + onek(0, [-1, -2, 1, 2, 0]) + onek(0, [0, 1, 2, 3]) + onek(hs, [0, 1, 2, 3, 4])
                 + onek(hyb, [1, 2, 3, 4, 5]) + [1 if ar else 0] + [MASS.get(z, 12.0) * 0.01])
    E, src, dst, rev = [], [], [], []
    for k, (i, j, o) in enumerate(bonds):
        fb = [0, o == 1, o == 2, o == 3, o == 1.5, 0, 0] + onek(0, [0, 1, 2, 3, 4, 5])
        E.append(fb)
        E.append(fb)
        src += [i, j]
        dst += [j, i]
        rev += [2 * k + 1, 2 * k]
    return (np.array(V, np.float32), np.array(E, np.float32).reshape(-1, BOND_FDIM),
            np.array([src, dst], np.int64).reshape(2, -1), np.array(rev, np.int64))


class MoleculeDataset(Dataset):
    def __init__(self, smiles, targets):
        self.smiles, self.targets = smiles, targets

    def __len__(self):
        return len(self.smiles)

    def __getitem__(self, i):
        return featurize(self.smiles[i]), self.targets[i]


def collate(items):
    """chemprop v2's BatchMolGraph: the graphs concatenated, indices offset, batch vector."""
    Vs, Es, eis, revs, bvec, ys = [], [], [], [], [], []
    na = nb = 0
    for m, ((V, E, ei, rev), y) in enumerate(items):
        Vs.append(V)
        Es.append(E)
        eis.append(ei + na)
        revs.append(rev + nb)
        bvec.append(np.full(V.shape[0], m, np.int64))
        ys.append(y)
        na += V.shape[0]
        nb += E.shape[0]
    return (torch.from_numpy(np.concatenate(Vs)), torch.from_numpy(np.concatenate(Es)),
            torch.from_numpy(np.concatenate(eis, 1)), torch.from_numpy(np.concatenate(revs)),
            torch.from_numpy(np.concatenate(bvec)), torch.from_numpy(np.stack(ys)))


class DMPNN(nn.Module):
    """chemprop v2's BondMessagePassing (depth steps, messages on directed bonds), sum
    aggregation over each molecule's atoms and the regression FFN."""

    def __init__(self, hidden, depth, ffn, targets, dropout=0.1):
        super().__init__()
        self.depth = depth
        self.W_i = nn.Linear(ATOM_FDIM + BOND_FDIM, hidden, bias=False)
        self.W_h = nn.Linear(hidden, hidden, bias=False)
        self.W_o = nn.Linear(ATOM_FDIM + hidden, hidden)
        self.drop = nn.Dropout(dropout)
        layers = []
        for _ in range(ffn - 1):
            layers += [nn.Linear(hidden, hidden), nn.ReLU(), nn.Dropout(dropout)]
        self.ffn = nn.Sequential(*layers, nn.Linear(hidden, targets))

    def forward(self, V, E, edge_index, rev, batch, n_mols):
        src, dst = edge_index
        H0 = self.W_i(torch.cat([V[src], E], 1))
        H = F.relu(H0)
        for _ in range(1, self.depth):
            M_all = torch.zeros(V.shape[0], H.shape[1], device=H.device, dtype=H.dtype).index_add_(0, dst, H)
            M = M_all[src] - H[rev]                          # incoming messages but the reverse bond
            H = self.drop(F.relu(H0 + self.W_h(M)))
        M = torch.zeros(V.shape[0], H.shape[1], device=H.device, dtype=H.dtype).index_add_(0, dst, H)
        atom_h = self.drop(F.relu(self.W_o(torch.cat([V.to(H.dtype), M], 1))))
        mol = torch.zeros(n_mols, atom_h.shape[1], device=atom_h.device, dtype=atom_h.dtype)
        return self.ffn(mol.index_add_(0, batch, atom_h))


def main():
    args = cc.parser(__doc__, warmup=5).parse_args()
    dev = cc.torch_device(args)
    gpu = dev.type == "cuda"
    if args.smoke:
        n_mols, hidden, depth, ffn, batch = 2_000, 64, 3, 2, 16
    else:
        n_mols, hidden, depth, ffn, batch = 100_000, 2048, 6, 3, 128
    smiles = make_smiles(n_mols, random.Random(0))
    targets = np.random.default_rng(0).standard_normal((n_mols, 12)).astype(np.float32)
    ds = MoleculeDataset(smiles, targets)
    if args.fix:
        workers = 2 if args.smoke else cc.fix_workers()
        loader = DataLoader(ds, batch_size=batch, shuffle=True, drop_last=True, collate_fn=collate,
                            num_workers=workers, pin_memory=gpu, prefetch_factor=4, persistent_workers=True)
    else:
        workers = 0
        loader = DataLoader(ds, batch_size=batch, shuffle=True, drop_last=True,
                            collate_fn=collate)  # gpuwhy: plants C1 (num_workers=0: ~40-65 ms of Python SMILES parsing and featurization on the training thread before each step)
    torch.manual_seed(0)
    model = DMPNN(hidden, depth, ffn, 12).to(dev).train()
    opt = torch.optim.Adam(model.parameters(), lr=1e-4, fused=gpu)
    amp = torch.autocast(dev.type, dtype=torch.bfloat16, enabled=gpu)
    st = {"it": iter(loader), "acc": torch.zeros((), device=dev), "loss": None, "reads": 0, "bonds": 0}

    def next_batch():
        try:
            return next(st["it"])
        except StopIteration:  # a new epoch
            st["it"] = iter(loader)
            return next(st["it"])

    def step(i):
        V, E, edge_index, rev, bvec, y = [t.to(dev, non_blocking=args.fix) for t in next_batch()]
        with amp:
            pred = model(V, E, edge_index, rev, bvec, y.shape[0])
        loss = F.mse_loss(pred.float(), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        st["acc"] += loss.detach()
        st["bonds"] = E.shape[0]
        if i % 50 == 49:
            st["loss"] = st["acc"].item() / 50
            st["acc"].zero_()
            st["reads"] += 1

    cc.run("c1_torch_mpnn_smiles_featurize_main", args, step, batch,
           extra=lambda: {"num_workers": workers, "directed_bonds": st["bonds"], "loss": st["loss"],
                          "loss_reads": st["reads"]})


if __name__ == "__main__":
    main()
