"""C8 no mixed precision, float64 (Lightning precision="64-true"): a PatchTST-style
forecaster for multivariate time series (64 sensor channels, look-back 512, horizon 96;
channel-independent: each channel's window is its own sequence; RevIN instance
normalization, patches of 16 with stride 8 (63 a window) embedded by a linear layer,
learned positions, 3 pre-LN Transformer encoder layers of width 384 with 6 heads and GELU
MLPs of 1536, a flatten head to the horizon, MSE loss, AdamW with a one-cycle schedule)
trained by a Lightning Trainer from a LightningDataModule (windows cut from a float32 array
in memory by 4 persistent, pinned loader workers, batch 16 windows = 1024 sequences of 63
patch tokens). The Trainer was given precision="64-true" while chasing NaN losses (the
culprit was a zero-variance channel in RevIN, fixed since with an epsilon) and it stayed:
Lightning converts the model and every batch to float64, so every matrix product runs as a
double-precision GEMM (about 60 TFLOP/s on the H200's FP64 tensor cores against 900+ for
bf16) and every elementwise kernel moves twice the bytes of float32.

--fix: gpuwhy's C8 advice (mixed precision): precision="bf16-mixed" (autocast bf16 over a
float32 model); model, data, loader and optimizer unchanged.

Written blind for the summit batch.
"""
import lightning as L
import numpy as np
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

import cc


class Windows(Dataset):
    """(look-back, horizon) windows of a (T, C) float32 series held in memory."""

    def __init__(self, series, lookback, horizon):
        self.x, self.lookback, self.horizon = series, lookback, horizon

    def __len__(self):
        return len(self.x) - self.lookback - self.horizon + 1

    def __getitem__(self, i):
        w = self.x[i:i + self.lookback + self.horizon]
        return torch.from_numpy(w[:self.lookback].copy()), torch.from_numpy(w[self.lookback:].copy())


class SensorData(L.LightningDataModule):
    def __init__(self, steps, channels, lookback, horizon, batch, workers):
        super().__init__()
        self.shape = (steps, channels)
        self.lookback, self.horizon, self.batch, self.workers = lookback, horizon, batch, workers

    def setup(self, stage=None):
        rng = np.random.default_rng(0)
        t = np.arange(self.shape[0])[:, None]
        period = rng.uniform(24, 24 * 7, self.shape[1])
        series = (np.sin(2 * np.pi * t / period) * rng.uniform(0.5, 2, self.shape[1])
                  + 0.3 * rng.standard_normal(self.shape).cumsum(0) / 30 + rng.normal(0, 0.2, self.shape))
        self.train = Windows(series.astype(np.float32), self.lookback, self.horizon)

    def train_dataloader(self):
        return DataLoader(self.train, batch_size=self.batch, shuffle=True, drop_last=True, num_workers=self.workers,
                          pin_memory=True, persistent_workers=True, prefetch_factor=4)


class PatchTST(L.LightningModule):
    def __init__(self, lookback, horizon, patch=16, stride=8, d=384, heads=6, layers=3, ff=1536, lr=1e-3,
                 total_steps=100_000):
        super().__init__()
        self.save_hyperparameters()
        self.n_patches = (lookback - patch) // stride + 1
        self.embed = torch.nn.Linear(patch, d)
        self.pos = torch.nn.Parameter(torch.randn(1, self.n_patches, d) * 0.02)
        layer = torch.nn.TransformerEncoderLayer(d, heads, ff, dropout=0.1, activation="gelu", batch_first=True,
                                                 norm_first=True)
        self.encoder = torch.nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.norm = torch.nn.LayerNorm(d)
        self.head = torch.nn.Linear(self.n_patches * d, horizon)

    def forward(self, x):  # x (B, lookback, C) -> (B, horizon, C)
        b, t, c = x.shape
        mean = x.mean(1, keepdim=True)
        std = torch.sqrt(x.var(1, keepdim=True, unbiased=False) + 1e-5)  # RevIN (the epsilon added since)
        z = ((x - mean) / std).permute(0, 2, 1).reshape(b * c, t)
        z = z.unfold(-1, self.hparams.patch, self.hparams.stride)  # (B*C, patches, patch)
        h = self.norm(self.encoder(self.embed(z) + self.pos))
        y = self.head(h.flatten(1)).view(b, c, -1).permute(0, 2, 1)
        return y * std + mean

    def training_step(self, batch, batch_idx):
        x, y = batch
        return F.mse_loss(self(x), y)

    def configure_optimizers(self):
        opt = torch.optim.AdamW(self.parameters(), lr=self.hparams.lr, weight_decay=0.05)
        sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=self.hparams.lr, total_steps=self.hparams.total_steps,
                                                    pct_start=0.1)
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step"}}


def main():
    args = cc.parser(__doc__).parse_args()
    if args.smoke:
        data = SensorData(600, 4, 64, 16, batch=4, workers=2)
        model = PatchTST(64, 16, d=32, heads=4, layers=1, ff=64)
    else:
        data = SensorData(20_000, 64, 512, 96, batch=16, workers=4)
        model = PatchTST(512, 96)
    precision = "bf16-mixed" if args.fix else "64-true"  # gpuwhy: plants C8 (set while chasing NaN losses, never reverted)
    timer = cc.lightning_timer("c8_lightning_float64_debug", args, data.batch,
                               extra=lambda: {"precision": precision,
                                              "tokens_per_step": data.batch * data.shape[1] * model.n_patches})
    trainer = cc.lightning_trainer(args, [timer], precision=precision)
    trainer.fit(model, datamodule=data)


if __name__ == "__main__":
    main()
