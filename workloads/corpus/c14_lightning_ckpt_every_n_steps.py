"""C14 periodic stalls (a checkpoint habit under Lightning): a decoder-only language model as a
LightningModule (plain torch: 6 pre-LN causal nn.TransformerEncoder layers, d=768, 12 heads,
GELU, vocabulary 16,384 with a tied output layer, 55 M parameters; random weights;
Trainer(precision="bf16-mixed"), fused AdamW, cosine schedule) on batches of 32 x 512
token ids (made once, cycled by the DataModule's DataLoader). The user's Trainer carries
ModelCheckpoint(every_n_train_steps=50, save_top_k=1, save_last=False), set so that a
pre-empted spot instance loses little work: every 50 steps Lightning gathers the full
checkpoint (weights, both AdamW moments, the scheduler and loop state, 0.66 GB) and
torch.saves it synchronously through its default TorchCheckpointIO (device-to-host copies,
pickling into a buffer, writing the .ckpt file under GW_CORPUS_CACHE, removing the previous
one): about 0.6 s with no kernel on the GPU, every 50 steps of about 15 ms.

--fix: gpuwhy's C14 advice (asynchronous checkpointing): the same ModelCheckpoint with
Lightning's AsyncCheckpointIO plugin (Trainer(plugins=[AsyncCheckpointIO()])): the state is
cloned on the GPU and a background thread copies, pickles and writes it while training
continues; model, data, period and files unchanged.

Written blind for the peak batch.
"""
import math
import os
import shutil

import lightning as L
import torch
import torch.nn.functional as F
from lightning.pytorch.callbacks import ModelCheckpoint
from lightning.pytorch.plugins.io import AsyncCheckpointIO
from torch.utils.data import DataLoader, Dataset

import cc


class Windows(Dataset):
    def __init__(self, n, seq, vocab):
        g = torch.Generator().manual_seed(0)
        self.ids = torch.randint(0, vocab, (n, seq + 1), generator=g)

    def __len__(self):
        return 1_000_000

    def __getitem__(self, i):
        return self.ids[i % len(self.ids)]


class LM(L.LightningModule):
    def __init__(self, vocab, seq, d, layers, heads, lr=3e-4, total=100_000):
        super().__init__()
        self.save_hyperparameters()
        self.tok = torch.nn.Embedding(vocab, d)
        self.pos = torch.nn.Embedding(seq, d)
        layer = torch.nn.TransformerEncoderLayer(d, heads, 4 * d, dropout=0.0, activation="gelu", batch_first=True,
                                                 norm_first=True)
        self.blocks = torch.nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.norm = torch.nn.LayerNorm(d)
        self.register_buffer("causal", torch.nn.Transformer.generate_square_subsequent_mask(seq), persistent=False)

    def training_step(self, batch, batch_idx):
        x, y = batch[:, :-1], batch[:, 1:]
        h = self.tok(x) + self.pos.weight[:x.shape[1]]
        h = self.norm(self.blocks(h, mask=self.causal, is_causal=True))
        logits = F.linear(h, self.tok.weight)
        return F.cross_entropy(logits.flatten(0, 1).float(), y.flatten())

    def configure_optimizers(self):
        opt = torch.optim.AdamW(self.parameters(), lr=self.hparams.lr, betas=(0.9, 0.95), weight_decay=0.1,
                                fused=self.device.type == "cuda")
        total = self.hparams.total
        sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 0.5 * (1 + math.cos(math.pi * min(s, total) / total)))
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step"}}


def main():
    args = cc.parser(__doc__).parse_args()
    torch.set_float32_matmul_precision("high")
    vocab, seq, d, layers, heads, batch, every = \
        (512, 32, 64, 1, 4, 4, 5) if args.smoke else (16_384, 512, 768, 6, 12, 32, 50)
    ckdir = os.path.join(cc.CACHE, "ckpt_c14_lightning" + ("_smoke" if args.smoke else ""))
    shutil.rmtree(ckdir, ignore_errors=True)
    model = LM(vocab, seq, d, layers, heads)
    loader = DataLoader(Windows(256, seq, vocab), batch_size=batch, shuffle=True, drop_last=True, num_workers=2,
                        pin_memory=True, persistent_workers=True)
    ckpt = ModelCheckpoint(dirpath=ckdir, every_n_train_steps=every, save_top_k=1, save_last=False)  # gpuwhy: plants C14 (a full synchronous checkpoint every 50 steps)
    timer = cc.lightning_timer("c14_lightning_ckpt_every_n_steps", args, batch,
                               extra={"every_n_train_steps": every, "checkpoint_io": "async" if args.fix else "sync"})
    plugins = [AsyncCheckpointIO()] if args.fix else []
    trainer = cc.lightning_trainer(args, [timer, ckpt], precision="bf16-mixed" if args.device == "cuda" else "32-true",
                                   enable_checkpointing=True, plugins=plugins)
    try:
        trainer.fit(model, train_dataloaders=loader)
    finally:
        shutil.rmtree(ckdir, ignore_errors=True)


if __name__ == "__main__":
    main()
