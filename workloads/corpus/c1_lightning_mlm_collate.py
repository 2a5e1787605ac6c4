"""C1 preprocessing on the training thread (a Lightning DataModule with num_workers=0):
masked-language-model pre-training of a BERT-style encoder written as a LightningModule
(plain torch: token and position embeddings, 6 pre-LN nn.TransformerEncoder layers, d=512,
8 heads, GELU, tied MLM head over the WordPiece vocabulary; random weights;
Trainer(precision="bf16-mixed"), fused AdamW, linear warm-up) on raw text lines (synthetic
sentences of 8 to 120 words, 100,000 of them, made once and kept in memory). The
DataModule's DataLoader has num_workers=0, the default most Lightning examples leave in,
and its collate_fn does the text work per batch: Unicode NFKC normalization, a regex
clean-up and lower-casing of each line in Python, the HF fast tokenizer
(PreTrainedTokenizerFast over a WordPiece model trained once in memory with the tokenizers
library, vocab_size 16,384 asked for; the synthetic text's words give about 330 tokens) with padding and truncation to 256, then whole-word masking written in Python
(15% of words chosen with random.random(), 80/10/10 replacement) over the token lists.
The Trainer's loop asks for the next batch only after the optimizer step has been issued,
so the training thread spends its time in the collate while the GPU waits.

--fix: gpuwhy's C1 advice (more loader workers): DataLoader(num_workers=cc.fix_workers(),
persistent_workers=True, pin_memory=True, prefetch_factor=4); the collate, tokenizer,
model and Trainer unchanged.

Written blind for the peak batch.
"""
import random
import re
import unicodedata

import lightning as L
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

import cc

MAXLEN = 256
_CLEAN = re.compile(r"[^\w\s'.,!?-]+")
_SPACE = re.compile(r"\s+")


def train_tokenizer(lines, vocab):
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.train_from_iterator(lines, trainers.WordPieceTrainer(
        vocab_size=vocab, special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]))
    return PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="[PAD]", unk_token="[UNK]", cls_token="[CLS]",
                                   sep_token="[SEP]", mask_token="[MASK]")


class Lines(Dataset):
    def __init__(self, lines):
        self.lines = lines

    def __len__(self):
        return len(self.lines)

    def __getitem__(self, i):
        return self.lines[i]


class MLMCollate:
    def __init__(self, tok):
        self.tok = tok
        self.mask_id, self.vocab = tok.mask_token_id, len(tok)
        self.special = set(tok.all_special_ids)

    def clean(self, line):
        line = unicodedata.normalize("NFKC", line)
        return _SPACE.sub(" ", _CLEAN.sub(" ", line)).strip().lower()

    def __call__(self, lines):
        enc = self.tok([self.clean(s) for s in lines], padding="max_length", truncation=True, max_length=MAXLEN)
        ids, labels = [], []
        for b, row in enumerate(enc["input_ids"]):
            words = enc.word_ids(b)
            row, lab = list(row), [-100] * len(row)
            chosen, prev = False, None
            for j, w in enumerate(words):
                if w is None:
                    continue
                if w != prev:
                    chosen, prev = random.random() < 0.15, w
                if chosen:
                    lab[j] = row[j]
                    r = random.random()
                    row[j] = self.mask_id if r < 0.8 else (random.randrange(5, self.vocab) if r < 0.9 else row[j])
            ids.append(row)
            labels.append(lab)
        return (torch.tensor(ids), torch.tensor(enc["attention_mask"]), torch.tensor(labels))


class TextData(L.LightningDataModule):
    def __init__(self, lines, tok, batch, workers):
        super().__init__()
        self.lines, self.tok, self.batch, self.workers = lines, tok, batch, workers

    def train_dataloader(self):
        if self.workers == 0:
            return DataLoader(Lines(self.lines), batch_size=self.batch, shuffle=True, drop_last=True,
                              collate_fn=MLMCollate(self.tok))  # gpuwhy: plants C1 (num_workers=0: the collate runs on the training thread)
        return DataLoader(Lines(self.lines), batch_size=self.batch, shuffle=True, drop_last=True,
                          collate_fn=MLMCollate(self.tok), num_workers=self.workers, persistent_workers=True,
                          pin_memory=True, prefetch_factor=4)


class MLM(L.LightningModule):
    def __init__(self, vocab, d, layers, heads, lr=2e-4, warmup=1000):
        super().__init__()
        self.save_hyperparameters()
        self.tok = torch.nn.Embedding(vocab, d)
        self.pos = torch.nn.Embedding(MAXLEN, d)
        layer = torch.nn.TransformerEncoderLayer(d, heads, 4 * d, dropout=0.1, activation="gelu", batch_first=True,
                                                 norm_first=True)
        self.enc = torch.nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.norm = torch.nn.LayerNorm(d)
        self.bias = torch.nn.Parameter(torch.zeros(vocab))

    def training_step(self, batch, batch_idx):
        ids, att, labels = batch
        x = self.tok(ids) + self.pos.weight[:ids.shape[1]]
        h = self.norm(self.enc(x, src_key_padding_mask=att == 0))
        logits = F.linear(h, self.tok.weight, self.bias)
        return F.cross_entropy(logits.flatten(0, 1).float(), labels.flatten(), ignore_index=-100)

    def configure_optimizers(self):
        opt = torch.optim.AdamW(self.parameters(), lr=self.hparams.lr, weight_decay=0.01,
                                fused=self.device.type == "cuda")
        sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / self.hparams.warmup))
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step"}}


def main():
    args = cc.parser(__doc__).parse_args()
    torch.set_float32_matmul_precision("high")
    n, vocab, d, layers, batch = (2000, 2000, 64, 1, 8) if args.smoke else (100_000, 16_384, 512, 6, 64)
    random.seed(0)
    lines = cc.text_lines(n, seed=1)
    tok = train_tokenizer(lines[:20_000], vocab)
    workers = cc.fix_workers() if args.fix else 0
    if args.smoke and args.fix:
        workers = 2
    data = TextData(lines, tok, batch, workers)
    model = MLM(len(tok), d, layers, 8 if d >= 512 else 4)
    timer = cc.lightning_timer("c1_lightning_mlm_collate", args, batch,
                               extra={"loader_workers": workers})
    trainer = cc.lightning_trainer(args, [timer], precision="bf16-mixed" if args.device == "cuda" else "32-true")
    trainer.fit(model, datamodule=data)


if __name__ == "__main__":
    main()
