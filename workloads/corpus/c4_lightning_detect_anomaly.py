"""C4 host overhead on every operation (autograd anomaly detection left on, Lightning): masked
language-model pre-training of a protein language model as a LightningModule (ESM-style
encoder in plain torch: a 33-token amino-acid vocabulary, learned positions, 12 pre-LN
nn.TransformerEncoder layers, d=768, 12 heads, GELU MLP 3072, a tied output layer; 15% of
the residues masked 80/10/10; 86 M parameters; random weights), Trainer(precision=
"bf16-mixed"), fused AdamW with a warm-up schedule, batches of 64 sequences of 512
residues (32,768 tokens, about 19 TFLOP a step) from a DataLoader with 2 pinned workers
over sequences made once in memory. The Trainer also carries detect_anomaly=True, set
weeks ago while hunting a NaN loss and never taken out: Lightning runs the whole fit under
torch.autograd.set_detect_anomaly(True), so every operation of the forward pass that
creates an autograd node (about 780 a step, most of them nn.MultiheadAttention's views
and reshapes) records the Python stack that created it (traceback formatting, 35-45
frames deep under Lightning's loop: about 200 us of CPU time a node on a CPU-only test
machine), and in the backward pass every node's outputs are checked for NaN with
isnan(...).any() read back to the host (a small launch pair and a synchronization per
node). The GPU waits between kernels while the training thread formats stack traces.

--fix: detect_anomaly=False (the Trainer's default); model, data, precision and optimizer
unchanged.

Written blind for the canyon batch.
"""
import math

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

import cc

import lightning as L

PAD, CLS, EOS, MASK = 0, 1, 2, 32  # 4..23: the 20 amino acids, 24..31: rare and ambiguous codes


class Proteins(Dataset):
    def __init__(self, n, seq, gen):
        # residue frequencies roughly those of UniProt
        freq = torch.tensor([8.3, 5.5, 4.1, 5.5, 1.4, 3.9, 6.7, 7.1, 2.3, 5.9, 9.7, 5.8, 2.4, 3.9, 4.7, 6.6, 5.4,
                             1.1, 2.9, 6.9])
        body = torch.multinomial(freq / freq.sum(), n * (seq - 2), replacement=True, generator=gen).view(n, seq - 2) + 4
        self.seqs = torch.cat([torch.full((n, 1), CLS), body, torch.full((n, 1), EOS)], 1)

    def __len__(self):
        return 1_000_000

    def __getitem__(self, i):
        s = self.seqs[i % len(self.seqs)].clone()
        g = torch.Generator().manual_seed(i)
        r = torch.rand(s.shape, generator=g)
        chosen = (r < 0.15) & (s > EOS)
        labels = torch.where(chosen, s, torch.full_like(s, -100))
        roll = torch.rand(s.shape, generator=g)
        s = torch.where(chosen & (roll < 0.8), torch.full_like(s, MASK), s)
        s = torch.where(chosen & (roll >= 0.8) & (roll < 0.9), torch.randint(4, 24, s.shape, generator=g), s)
        return s, labels


class ProteinMLM(L.LightningModule):
    def __init__(self, vocab=33, seq=512, d=768, layers=12, heads=12, lr=4e-4, warmup=2000):
        super().__init__()
        self.save_hyperparameters()
        self.tok = torch.nn.Embedding(vocab, d, padding_idx=PAD)
        self.pos = torch.nn.Embedding(seq, d)
        layer = torch.nn.TransformerEncoderLayer(d, heads, 4 * d, dropout=0.1, activation="gelu", batch_first=True,
                                                 norm_first=True)
        self.enc = torch.nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.norm = torch.nn.LayerNorm(d)
        self.lm_dense = torch.nn.Linear(d, d)
        self.lm_norm = torch.nn.LayerNorm(d)
        self.lm_bias = torch.nn.Parameter(torch.zeros(vocab))

    def forward(self, x):
        h = self.tok(x) + self.pos.weight[:x.shape[1]]
        h = self.norm(self.enc(h))
        h = self.lm_norm(F.gelu(self.lm_dense(h)))
        return F.linear(h, self.tok.weight, self.lm_bias)

    def training_step(self, batch, batch_idx):
        x, y = batch
        logits = self(x)
        return F.cross_entropy(logits.flatten(0, 1).float(), y.flatten(), ignore_index=-100)

    def configure_optimizers(self):
        opt = torch.optim.AdamW(self.parameters(), lr=self.hparams.lr, betas=(0.9, 0.98), weight_decay=0.01,
                                fused=self.device.type == "cuda")
        w = self.hparams.warmup
        sched = torch.optim.lr_scheduler.LambdaLR(
            opt, lambda s: min(1.0, (s + 1) / w) * min(1.0, math.sqrt(w / (s + 1))))  # warm-up, then 1/sqrt
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step"}}


def main():
    args = cc.parser(__doc__).parse_args()
    torch.set_float32_matmul_precision("high")
    if args.smoke:
        seq, d, layers, heads, batch, n = 64, 64, 2, 4, 4, 64
    else:
        seq, d, layers, heads, batch, n = 512, 768, 12, 12, 64, 2048
    data = Proteins(n, seq, torch.Generator().manual_seed(0))
    loader = DataLoader(data, batch_size=batch, shuffle=False, drop_last=True, num_workers=2, pin_memory=True,
                        persistent_workers=True, prefetch_factor=4)
    model = ProteinMLM(seq=seq, d=d, layers=layers, heads=heads)
    anomaly = not args.fix  # gpuwhy: plants C4 (detect_anomaly: a Python stack trace recorded for every operation, a NaN check read back for every backward node)
    timer = cc.lightning_timer("c4_lightning_detect_anomaly", args, batch,
                               extra={"detect_anomaly": anomaly, "tokens_per_step": batch * seq})
    trainer = cc.lightning_trainer(args, [timer], precision="bf16-mixed" if args.device == "cuda" else "32-true",
                                   detect_anomaly=anomaly)
    trainer.fit(model, train_dataloaders=loader)


if __name__ == "__main__":
    main()
