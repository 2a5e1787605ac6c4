"""healthy (Lightning): a Transformer encoder classifier trained by a Lightning Trainer with
precision="bf16-mixed", batches made by 4 DataLoader workers with pin_memory, large batch;
no logger, no checkpointing, no progress bar.

--fix changes nothing: this is a control.
--alt: the encoder under torch.compile (default mode), at least 5 warm-up iterations: the fix of
the C11 warning gpuwhy gives this control (measured 1.33x: docs/ACCURACY.md).
"""
import lightning as L
import torch
from torch.utils.data import DataLoader, Dataset

import cc


class Tokens(Dataset):
    def __init__(self, batch, seq, vocab):
        self.batch, self.seq, self.vocab = batch, seq, vocab

    def __len__(self):
        return 1_000_000

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

    def training_step(self, batch, batch_idx):
        ids, y = batch
        h = self.enc(self.emb(ids))
        return torch.nn.functional.cross_entropy(self.head(h.mean(1)), y)

    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=1e-4, fused=self.device.type == "cuda")


def main():
    args = cc.parser(__doc__).parse_args()
    vocab, d, layers, batch, seq = (1000, 64, 2, 4, 32) if args.smoke else (32000, 1024, 6, 64, 256)
    loader = DataLoader(Tokens(batch, seq, vocab), batch_size=None, num_workers=4, pin_memory=True,
                        persistent_workers=True, prefetch_factor=4)
    model = Classifier(vocab, d, layers)
    if args.alt:  # C11 fix: fuse the elementwise chains (no CUDA graphs: C11 is not launch-bound)
        model.enc = torch.compile(model.enc, mode=cc.alt_setup(args, "default", 5))
    timer = cc.lightning_timer("h_lightning_bf16", args, batch)
    trainer = cc.lightning_trainer(args, [timer], precision="bf16-mixed")
    trainer.fit(model, loader)


if __name__ == "__main__":
    main()
