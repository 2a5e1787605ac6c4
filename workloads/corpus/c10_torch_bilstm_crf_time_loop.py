"""C10 serial structure (a linear-chain CRF's forward algorithm looped over time steps): Chinese
named-entity recognition with a character BiLSTM-CRF (Lample et al. 2016, the classic recipe on
MSRA-style data): a character vocabulary of 4,768, embeddings of 128, a 2-layer bidirectional
nn.LSTM of 256 a direction (cuDNN, through pack_padded_sequence), dropout 0.5, a linear layer to
the 7 BIO tags (PER, LOC, ORG), and a CRF layer as pytorch-crf implements it (start, end and
transition scores; the gold path's score and the log-partition by the forward algorithm);
loss -crf(emissions, tags, mask) averaged over the batch; Adam (lr 1e-3, foreach), gradient
clipping at 5 (foreach); batch 64 sentences of 20-128 characters padded to the batch's
longest (~127), 320 batches made once at start and held on the GPU (tags from a Markov chain
over entity spans); the loss is read every 50 steps.

pytorch-crf's _compute_score and _compute_normalizer are Python loops over the time steps
(index tensors made on the device here): at each of the ~127 steps the gold score adds a
transition and an emission gathered for the 64 sentences, and the forward algorithm adds the
(64, 7) scores to the transition matrix and the step's emissions, takes a logsumexp over the
previous tag and keeps the old scores where the sentence has ended (torch.where). That is
~12 kernels a time step forward and about twice that backward, ~4,500 launches a step, each
on a few hundred to a few thousand numbers and each depending on the one before: one long
chain of tiny kernels, while the BiLSTM itself is a few cuDNN calls.

--fix: gpuwhy's C10 advice (batching over time, as torch-struct's linear-chain CRF does): the
gold score by gathers over all time steps at once, and the log-partition by a parallel
reduction over time in the log semiring: each step's (7 x 7) potential matrix (transitions
plus the step's emissions; the identity where the sentence has ended), multiplied pairwise
in 7 levels (logsumexp over the shared tag) instead of 127 sequential steps; model, data,
loss and optimizer unchanged (both losses checked equal on a batch at start).

Written blind for the papa batch.
"""
import numpy as np
import torch
import torch.nn as nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

import cc

TAGS = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC", "B-ORG", "I-ORG"]
NEG = -1e4  # the log-semiring zero off the identity's diagonal (exp underflows to 0 in float32)


class CRF(nn.Module):
    """pytorch-crf's CRF (batch_first=True): the score and the normalizer looped over time."""

    def __init__(self, num_tags, parallel):
        super().__init__()
        self.num_tags, self.parallel = num_tags, parallel
        self.start_transitions = nn.Parameter(torch.empty(num_tags).uniform_(-0.1, 0.1))
        self.end_transitions = nn.Parameter(torch.empty(num_tags).uniform_(-0.1, 0.1))
        self.transitions = nn.Parameter(torch.empty(num_tags, num_tags).uniform_(-0.1, 0.1))

    def forward(self, emissions, tags, mask):
        """Log-likelihood of the tags, averaged over the batch (reduction="mean")."""
        emissions, tags, mask = emissions.transpose(0, 1), tags.transpose(0, 1), mask.transpose(0, 1)
        if self.parallel:
            llh = self._score_parallel(emissions, tags, mask) - self._normalizer_parallel(emissions, mask)
        else:
            llh = self._compute_score(emissions, tags, mask) - self._compute_normalizer(emissions, mask)
        return llh.mean()

    # ---- pytorch-crf's loops over the time steps -----------------------------------------
    def _compute_score(self, emissions, tags, mask):
        seq_length, batch_size = tags.shape
        mask = mask.float()
        ar = torch.arange(batch_size, device=tags.device)
        score = self.start_transitions[tags[0]]
        score = score + emissions[0, ar, tags[0]]
        for i in range(1, seq_length):
            score = score + self.transitions[tags[i - 1], tags[i]] * mask[i]
            score = score + emissions[i, ar, tags[i]] * mask[i]
        seq_ends = mask.long().sum(dim=0) - 1
        last_tags = tags[seq_ends, ar]
        return score + self.end_transitions[last_tags]

    def _compute_normalizer(self, emissions, mask):
        seq_length = emissions.size(0)
        score = self.start_transitions + emissions[0]
        for i in range(1, seq_length):
            next_score = score.unsqueeze(2) + self.transitions + emissions[i].unsqueeze(1)  # gpuwhy: plants C10 (the forward algorithm: ~127 dependent time steps of tiny kernels, forward and backward)
            next_score = torch.logsumexp(next_score, dim=1)
            score = torch.where(mask[i].unsqueeze(1), next_score, score)
        score = score + self.end_transitions
        return torch.logsumexp(score, dim=1)

    # ---- the same quantities over all time steps at once ------------------------------------
    def _score_parallel(self, emissions, tags, mask):
        seq_length, batch_size = tags.shape
        maskf = mask.float()
        ar = torch.arange(batch_size, device=tags.device)
        emit = emissions.gather(2, tags.unsqueeze(2)).squeeze(2)                 # (T, B)
        trans = self.transitions[tags[:-1], tags[1:]]                           # (T-1, B)
        score = self.start_transitions[tags[0]] + emit[0]
        score = score + (trans * maskf[1:]).sum(0) + (emit[1:] * maskf[1:]).sum(0)
        last_tags = tags[mask.long().sum(0) - 1, ar]
        return score + self.end_transitions[last_tags]

    def _normalizer_parallel(self, emissions, mask):
        seq_length, batch_size, k = emissions.shape
        eye = torch.full((k, k), NEG, device=emissions.device, dtype=emissions.dtype).fill_diagonal_(0.0)
        pot = self.transitions + emissions[1:].unsqueeze(2)                     # (T-1, B, K, K): [prev, next]
        pot = torch.where(mask[1:, :, None, None], pot, eye)
        n = 1
        while n < pot.shape[0]:
            n *= 2
        if n > pot.shape[0]:
            pot = torch.cat([pot, eye.expand(n - pot.shape[0], batch_size, k, k)], 0)
        while pot.shape[0] > 1:                                                 # log-semiring products
            a, b = pot[0::2], pot[1::2]
            pot = torch.logsumexp(a.unsqueeze(-1) + b.unsqueeze(-3), dim=-2)
        alpha = self.start_transitions + emissions[0]                           # (B, K)
        score = torch.logsumexp(alpha.unsqueeze(2) + pot[0], dim=1) + self.end_transitions
        return torch.logsumexp(score, dim=1)


class BiLSTMCRF(nn.Module):
    def __init__(self, vocab, emb, hidden, layers, num_tags, parallel):
        super().__init__()
        self.embed = nn.Embedding(vocab, emb, padding_idx=0)
        self.lstm = nn.LSTM(emb, hidden, num_layers=layers, bidirectional=True, batch_first=True, dropout=0.5)
        self.drop = nn.Dropout(0.5)
        self.fc = nn.Linear(2 * hidden, num_tags)
        self.crf = CRF(num_tags, parallel)

    def forward(self, ids, lengths, tags, mask):
        x = self.drop(self.embed(ids))
        packed = pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
        out, _ = self.lstm(packed)
        out, _ = pad_packed_sequence(out, batch_first=True, total_length=ids.shape[1])
        emissions = self.fc(self.drop(out))
        return -self.crf(emissions, tags, mask)


def make_batches(n_batches, batch, max_len, vocab, rng, dev):
    """Sentences of 20..max_len characters with BIO tags from a Markov chain over entity
    spans; each batch padded to its longest sentence. The lengths stay on the host
    (pack_padded_sequence wants them there)."""
    out = []
    for _ in range(n_batches):
        lengths = rng.integers(20, max_len + 1, batch)
        t = int(lengths.max())
        ids = np.zeros((batch, t), np.int64)
        tags = np.zeros((batch, t), np.int64)
        for b, n in enumerate(lengths):
            ids[b, :n] = rng.integers(1, vocab, n)
            ent = None
            for i in range(n):
                if ent is None and rng.random() < 0.08:
                    ent, tag = int(rng.integers(0, 3)), 1
                elif ent is not None and rng.random() < 0.3:
                    ent, tag = None, 0
                else:
                    tag = 0 if ent is None else 2
                tags[b, i] = 0 if ent is None else 2 * ent + tag
        mask = np.arange(t)[None, :] < lengths[:, None]
        out.append((torch.from_numpy(ids).to(dev), torch.from_numpy(lengths), torch.from_numpy(tags).to(dev),
                    torch.from_numpy(mask).to(dev)))
    return out


def main():
    args = cc.parser(__doc__, warmup=5).parse_args()
    dev = cc.torch_device(args)
    gpu = dev.type == "cuda"
    if args.smoke:
        vocab, emb, hidden, layers, batch, max_len, n_batches = 500, 16, 16, 1, 8, 24, 8
    else:
        vocab, emb, hidden, layers, batch, max_len, n_batches = 4768, 128, 256, 2, 64, 128, 320
    rng = np.random.default_rng(0)
    batches = make_batches(n_batches, batch, max_len, vocab, rng, dev)

    # equivalence at start: the loops' and the parallel CRF's log-likelihoods on one batch
    torch.manual_seed(0)
    crf = CRF(len(TAGS), parallel=False).to(dev)
    em = torch.randn(batch, batches[0][0].shape[1], len(TAGS), device=dev, generator=torch.Generator(device=dev).manual_seed(2))
    _, _, tg, mk = batches[0]
    with torch.no_grad():
        a = crf(em, tg, mk)
        crf.parallel = True
        b = crf(em, tg, mk)
    if abs(float(a) - float(b)) > 1e-3 * max(1.0, abs(float(a))):
        raise SystemExit(f"parallel CRF disagrees with the loops: {float(a)} vs {float(b)}")

    torch.manual_seed(0)
    model = BiLSTMCRF(vocab, emb, hidden, layers, len(TAGS), parallel=args.fix).to(dev).train()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, foreach=True)
    st = {"acc": torch.zeros((), device=dev), "loss": None, "reads": 0, "tokens": 0}

    def step(i):
        ids, lengths, tags, mask = batches[i % len(batches)]
        loss = model(ids, lengths, tags, mask)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0, foreach=True)
        opt.step()
        st["acc"] += loss.detach()
        st["tokens"] += int(lengths.sum())
        if i % 50 == 49:
            st["loss"] = st["acc"].item() / 50
            st["acc"].zero_()
            st["reads"] += 1

    cc.run("c10_torch_bilstm_crf_time_loop", args, step, batch,
           extra=lambda: {"crf": "parallel over time" if args.fix else "loop over time steps (pytorch-crf)",
                          "check_llh": [round(float(a), 4), round(float(b), 4)], "loss": st["loss"],
                          "loss_reads": st["reads"], "cudnn": gpu and torch.backends.cudnn.enabled})


if __name__ == "__main__":
    main()
