"""C14 a periodic stall (validation with host-side decoding and WER every 10 steps, Lightning):
a Conformer-CTC speech recognizer trained as a LightningModule, in plain torch the way NeMo's
and ESPnet's recipes build it: a 4x convolutional subsampling of 80-band log-mel features,
12 Conformer blocks of width 512 (half-step feed-forward modules of 2,048, 8-head self-attention
through scaled_dot_product_attention with a padding mask, a convolution module with a GLU, a
31-tap depthwise convolution, BatchNorm and SiLU), a linear CTC head over 256 subword units
plus the blank; 76 M parameters, random weights; Trainer(precision="bf16-mixed"), AdamW with
the Noam schedule (10,000 warm-up steps), SpecAugment (2 frequency and 2 time masks) on the
GPU; batch 64 utterances of 6-10 s (600-1,000 feature frames, 150-250 after subsampling) with
transcripts of 20-60 subword units. The features of 2,048 training and 1,024 development
utterances are held on the GPU (a feature cache; synthetic formant-like spectra made there at
start), the DataLoaders yield index batches.

The Trainer runs validation every 10 training batches (val_check_interval=10, kept from a
debugging run of the config) over the 1,024 development utterances (16 batches): each
validation_step runs the model, takes the greedy CTC path (argmax) and copies it to the host
(.cpu()), collapses repeats and drops blanks in Python, turns the subword units into words and
scores them against the references with a word-level Levenshtein distance in Python (the WER
of ESPnet's and NeMo's greedy decoders); the WER is logged at the end of the validation epoch.
Training waits for the whole pass. (The extra validation Lightning runs when the harness
stops the Trainer through should_stop is skipped: it is not part of the job's loop.)

--fix: gpuwhy's C14 advice (evaluate less often): val_check_interval=1000 (outside the measured
window); model, data, decoding and the validation set unchanged.

Written blind for the oscar batch.
"""
import itertools
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
import lightning as L
from torch.utils.data import DataLoader, Dataset

import cc


class Subsampling(nn.Module):
    """Two stride-2 3 x 3 convolutions (4x in time), then a linear projection."""

    def __init__(self, n_mels, d, ch):
        super().__init__()
        self.conv = nn.Sequential(nn.Conv2d(1, ch, 3, 2), nn.ReLU(), nn.Conv2d(ch, ch, 3, 2), nn.ReLU())
        f = ((n_mels - 1) // 2 - 1) // 2
        self.out = nn.Linear(ch * f, d)

    def forward(self, x, lengths):
        x = self.conv(x.unsqueeze(1))                              # (B, C, T', F')
        b, c, t, f = x.shape
        x = self.out(x.transpose(1, 2).reshape(b, t, c * f))
        lengths = ((lengths - 1) // 2 - 1) // 2
        return x, lengths


class ConformerBlock(nn.Module):
    def __init__(self, d, heads, ff, kernel, dropout=0.1):
        super().__init__()
        self.heads = heads
        self.ff1 = nn.Sequential(nn.LayerNorm(d), nn.Linear(d, ff), nn.SiLU(), nn.Dropout(dropout), nn.Linear(ff, d),
                                 nn.Dropout(dropout))
        self.ln_att = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ln_conv = nn.LayerNorm(d)
        self.pw1 = nn.Conv1d(d, 2 * d, 1)
        self.dw = nn.Conv1d(d, d, kernel, padding=kernel // 2, groups=d)
        self.bn = nn.BatchNorm1d(d)
        self.pw2 = nn.Conv1d(d, d, 1)
        self.ff2 = nn.Sequential(nn.LayerNorm(d), nn.Linear(d, ff), nn.SiLU(), nn.Dropout(dropout), nn.Linear(ff, d),
                                 nn.Dropout(dropout))
        self.ln_out = nn.LayerNorm(d)
        self.drop = nn.Dropout(dropout)

    def forward(self, x, attn_mask, pad):
        x = x + 0.5 * self.ff1(x)
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln_att(x)).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask,
                                           dropout_p=0.1 if self.training else 0.0)
        x = x + self.drop(self.proj(a.transpose(1, 2).reshape(b, t, d)))
        c = self.ln_conv(x).masked_fill(pad[..., None], 0.0).transpose(1, 2)
        c = F.glu(self.pw1(c), dim=1)
        c = self.pw2(F.silu(self.bn(self.dw(c))))
        x = x + self.drop(c.transpose(1, 2))
        x = x + 0.5 * self.ff2(x)
        return self.ln_out(x)


def make_corpus(n, max_frames, n_mels, vocab, g, dev):
    """Formant-like log-mel spectra with lengths, and subword transcripts (unit 1..vocab-1; units
    below vocab // 3 begin a word, as sentencepiece's '_' pieces do); made on the device."""
    lengths = torch.randint(max_frames * 3 // 5, max_frames + 1, (n,), device=dev, generator=g)
    t = torch.arange(max_frames, dtype=torch.float32, device=dev)[None, :, None]
    f = torch.arange(n_mels, dtype=torch.float32, device=dev)[None, None, :]
    feats = torch.empty(n, max_frames, n_mels, dtype=torch.bfloat16, device=dev)
    for s in range(0, n, 256):
        m = min(256, n - s)
        f1 = 10 + 20 * torch.rand(m, 1, 1, device=dev, generator=g) + \
            6 * torch.sin(t / (20 + 30 * torch.rand(m, 1, 1, device=dev, generator=g)))
        spec = torch.exp(-((f - f1) / 4) ** 2) + 0.6 * torch.exp(-((f - 2.3 * f1) / 6) ** 2)
        x = torch.log(spec + 0.05 + 0.05 * torch.rand(m, max_frames, n_mels, device=dev, generator=g))
        feats[s:s + m] = ((x - x.mean()) / x.std()).to(torch.bfloat16)
    feats = feats * (torch.arange(max_frames, device=dev)[None, :] < lengths[:, None])[..., None]
    tgt_len = torch.randint(20, 61, (n,), device=dev, generator=g)
    tgt_len = torch.minimum(tgt_len, (lengths // 4 - 4) // 2)
    targets = torch.randint(1, vocab, (n, 60), device=dev, generator=g)
    targets[:, 0] = torch.randint(1, vocab // 3, (n,), device=dev, generator=g)
    targets = targets * (torch.arange(60, device=dev)[None, :] < tgt_len[:, None])
    return feats, lengths, targets, tgt_len


def units_to_words(units, vocab):
    words, cur = [], []
    for u in units:
        if u < vocab // 3 and cur:
            words.append(" ".join(cur))
            cur = []
        cur.append(f"u{u}")
    if cur:
        words.append(" ".join(cur))
    return words


def edit_distance(ref, hyp):
    """Word-level Levenshtein distance (ESPnet's/NeMo's WER in Python)."""
    prev = list(range(len(hyp) + 1))
    for i, r in enumerate(ref, 1):
        cur = [i] + [0] * len(hyp)
        for j, h in enumerate(hyp, 1):
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (r != h))
        prev = cur
    return prev[-1]


class IndexBatches(Dataset):
    def __init__(self, n, batch, n_batches, shuffle, seed=0):
        self.n, self.b, self.nb, self.shuffle = n, batch, n_batches, shuffle
        self.g = torch.Generator().manual_seed(seed)

    def __len__(self):
        return self.nb

    def __getitem__(self, i):
        if self.shuffle:
            return torch.randint(0, self.n, (self.b,), generator=self.g)
        return torch.arange(i * self.b, (i + 1) * self.b) % self.n


class ConformerCTC(L.LightningModule):
    def __init__(self, train_set, dev_set, n_mels, d, layers, heads, ff, vocab, warmup):
        super().__init__()
        self.sub = Subsampling(n_mels, d, ch=d // 2 if d >= 256 else 16)
        self.blocks = nn.ModuleList(ConformerBlock(d, heads, ff, 31) for _ in range(layers))
        self.head = nn.Linear(d, vocab + 1)                       # + blank (id 0 is the blank here)
        self.vocab, self.d, self.warmup = vocab, d, warmup
        for name, tensors in (("tr", train_set), ("dv", dev_set)):
            for k, t in zip(("feats", "lengths", "targets", "tlen"), tensors):
                self.register_buffer(f"{name}_{k}", t, persistent=False)
        self.errors = self.words = 0
        self.wer = None
        self.validations = 0

    def forward(self, feats, lengths):
        x, lengths = self.sub(feats, lengths)
        pad = torch.arange(x.shape[1], device=x.device)[None, :] >= lengths[:, None]
        attn_mask = ~pad[:, None, None, :]
        for blk in self.blocks:
            x = blk(x, attn_mask, pad)
        return self.head(x), lengths

    def spec_augment(self, x):
        b, t, f = x.shape
        dev = x.device
        keep = torch.ones(b, t, f, device=dev, dtype=torch.bool)
        fr, tr = torch.arange(f, device=dev), torch.arange(t, device=dev)
        for _ in range(2):
            w = torch.randint(0, 28, (b, 1), device=dev)
            s = (torch.rand(b, 1, device=dev) * (f - w)).long()
            keep &= ~((fr >= s) & (fr < s + w))[:, None, :]
            w = torch.randint(0, 41, (b, 1), device=dev)
            s = (torch.rand(b, 1, device=dev) * (t - w)).long()
            keep &= ~((tr >= s) & (tr < s + w))[:, :, None]
        return x * keep

    def training_step(self, idx, batch_idx):
        feats = self.spec_augment(self.tr_feats[idx].float())
        logits, out_len = self(feats, self.tr_lengths[idx])
        logp = logits.float().log_softmax(-1).transpose(0, 1)
        return F.ctc_loss(logp, self.tr_targets[idx], out_len, self.tr_tlen[idx], blank=0, zero_infinity=True)

    def on_validation_epoch_start(self):
        self.errors = self.words = 0

    def validation_step(self, idx, batch_idx):
        if self.trainer.should_stop:
            # the harness stops the Trainer (should_stop) when its time is up, and Lightning then
            # runs one more validation before fit() returns: not part of the job's loop, skipped
            return
        logits, out_len = self(self.dv_feats[idx].float(), self.dv_lengths[idx])
        best = logits.argmax(-1).cpu().numpy()  # gpuwhy: plants C14 (16 validation batches every 10 training steps: greedy CTC decoding and word error rate in Python on the host)
        out_len = out_len.cpu().numpy()
        refs, tl = self.dv_targets[idx].cpu().numpy(), self.dv_tlen[idx].cpu().numpy()
        for k in range(best.shape[0]):
            units = [u for u, _ in itertools.groupby(best[k, :out_len[k]].tolist()) if u != 0]
            ref = units_to_words(refs[k, :tl[k]].tolist(), self.vocab)
            hyp = units_to_words(units, self.vocab)
            self.errors += edit_distance(ref, hyp)
            self.words += len(ref)

    def on_validation_epoch_end(self):
        if self.trainer.should_stop:
            return
        self.wer = self.errors / max(self.words, 1)
        self.validations += 1
        self.log("val_wer", self.wer)

    def configure_optimizers(self):
        opt = torch.optim.AdamW(self.parameters(), lr=5.0, betas=(0.9, 0.98), weight_decay=1e-3)
        noam = lambda s: self.d ** -0.5 * min((s + 1) ** -0.5, (s + 1) * self.warmup ** -1.5)
        return {"optimizer": opt,
                "lr_scheduler": {"scheduler": torch.optim.lr_scheduler.LambdaLR(opt, noam), "interval": "step"}}


def main():
    args = cc.parser(__doc__, warmup=4).parse_args()
    dev = cc.torch_device(args)
    if args.smoke:
        n_tr, n_dv, frames, n_mels, d, layers, heads, ff, vocab, batch, every = 64, 32, 200, 40, 64, 2, 4, 128, 32, 8, 3
    else:
        n_tr, n_dv, frames, n_mels, d, layers, heads, ff, vocab, batch, every = \
            2048, 1024, 1000, 80, 512, 12, 8, 2048, 256, 64, 10
    if args.fix:
        every = 1000
    torch.backends.cudnn.benchmark = True
    torch.manual_seed(0)
    g = torch.Generator(device=dev).manual_seed(0)
    train_set = make_corpus(n_tr, frames, n_mels, vocab, g, dev)
    dev_set = make_corpus(n_dv, frames, n_mels, vocab, g, dev)
    model = ConformerCTC(train_set, dev_set, n_mels, d, layers, heads, ff, vocab, warmup=10_000)
    train = DataLoader(IndexBatches(n_tr, batch, 1_000_000, True), batch_size=None)
    val = DataLoader(IndexBatches(n_dv, batch, math.ceil(n_dv / batch), False), batch_size=None)
    timer = cc.lightning_timer("c14_lightning_conformer_ctc_val_wer", args, batch,
                               extra=lambda: {"val_check_interval": every, "validations": model.validations,
                                              "val_wer": model.wer,
                                              "params_m": round(sum(p.numel() for p in model.parameters()) / 1e6, 1)})
    trainer = cc.lightning_trainer(args, [timer], precision="bf16-mixed" if dev.type == "cuda" else "32-true",
                                   val_check_interval=every, check_val_every_n_epoch=None)
    trainer.fit(model, train, val)


if __name__ == "__main__":
    main()
