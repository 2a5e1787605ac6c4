"""C8+C14 (two causes, Lightning): a Transformer encoder classifier trained by a Lightning
Trainer with precision="32-true" (FP32 SGEMMs: no autocast, TF32 left off) and
val_check_interval=10 with 20 validation batches: every 10 steps training stops for a
validation pass.

--fix: precision="bf16-mixed" and validation every 1000 steps (outside the measured window).
"""
import lightning as L
import torch
from torch.utils.data import DataLoader, Dataset

import cc


class Tokens(Dataset):
    def __init__(self, batch, seq, vocab, n=1_000_000):
        self.batch, self.seq, self.vocab, self.n = batch, seq, vocab, n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        return torch.randint(0, self.vocab, (self.batch, self.seq), generator=g), torch.randint(0, 10, (self.batch,), generator=g)


class Classifier(L.LightningModule):
    def __init__(self, vocab, d, layers):
        super().__init__()
        self.emb = torch.nn.Embedding(vocab, d)
        layer = torch.nn.TransformerEncoderLayer(d, nhead=8, dim_feedforward=4 * d, batch_first=True, norm_first=True)
        self.enc = torch.nn.TransformerEncoder(layer, layers)
        self.head = torch.nn.Linear(d, 10)

    def forward(self, ids):
        return self.head(self.enc(self.emb(ids)).mean(1))

    def training_step(self, batch, batch_idx):
        ids, y = batch
        return torch.nn.functional.cross_entropy(self(ids), y)

    def validation_step(self, batch, batch_idx):
        ids, y = batch
        acc = (self(ids).argmax(-1) == y).float().mean()
        self.log("val_acc", acc)  # no logger: Lightning still reduces it at the epoch's end

    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=1e-4)


def main():
    args = cc.parser(__doc__).parse_args()
    vocab, d, layers, batch, seq = (1000, 64, 1, 4, 32) if args.smoke else (16000, 768, 4, 32, 256)
    train = DataLoader(Tokens(batch, seq, vocab), batch_size=None, num_workers=4, pin_memory=True,
                       persistent_workers=True, prefetch_factor=4)
    val = DataLoader(Tokens(batch, seq, vocab, n=20), batch_size=None, num_workers=2, pin_memory=True,
                     persistent_workers=True)
    timer = cc.lightning_timer("m_lightning_fp32_val", args, batch)
    # gpuwhy: plants C8 (32-true) and C14 (val_check_interval=10)
    trainer = cc.lightning_trainer(args, [timer], precision="bf16-mixed" if args.fix else "32-true",
                                   val_check_interval=1000 if args.fix else 10, limit_val_batches=20,
                                   check_val_every_n_epoch=None)
    trainer.fit(Classifier(vocab, d, layers), train, val)


if __name__ == "__main__":
    main()
