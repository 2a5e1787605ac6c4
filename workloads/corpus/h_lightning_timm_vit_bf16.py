"""Healthy control (Lightning + timm, GEMM-bound): a timm ViT-B/16 (random weights, 1000
classes, fused SDPA attention) trained by a Lightning Trainer with precision="bf16-mixed",
fused AdamW (no decay on norms, biases, position and class
tokens) with a one-cycle schedule and label smoothing, at 224 px, batch 192. A
LightningDataModule feeds it from 2048 uint8 256 x 256 images held in memory (shared with
the workers by fork): __getitem__ is a random 224 crop and a horizontal flip by numpy
slicing, 8 persistent loader workers with pin_memory and prefetch_factor 4; the uint8
batch goes to the GPU, where it is converted and normalized. No logger, no checkpointing,
no validation; nothing read back in the loop.

--fix changes nothing: this is a control.

Written blind for the summit batch.

--alt: the timm model under torch.compile (default mode), at least 5 warm-up iterations: the fix of
gpuwhy's first finding, C11 (its elementwise chains fused), to measure whether that is headroom.
"""
import random

import lightning as L
import numpy as np
import timm
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

import cc

MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)


class Crops(Dataset):
    def __init__(self, n, size, crop, classes):
        rng = np.random.default_rng(0)
        self.images = rng.integers(0, 256, (n, size, size, 3), dtype=np.uint8)
        self.labels = rng.integers(0, classes, n)
        self.crop = crop

    def __len__(self):
        return 1_000_000

    def __getitem__(self, i):
        k = i % len(self.images)
        img, c = self.images[k], self.crop
        y0, x0 = random.randint(0, img.shape[0] - c), random.randint(0, img.shape[1] - c)  # seeded per worker
        x = img[y0:y0 + c, x0:x0 + c]
        if random.random() < 0.5:
            x = x[:, ::-1]
        return torch.from_numpy(np.ascontiguousarray(x)), int(self.labels[k])


class ImageData(L.LightningDataModule):
    def __init__(self, n, size, crop, classes, batch, workers):
        super().__init__()
        self.args = (n, size, crop, classes)
        self.batch, self.workers = batch, workers

    def setup(self, stage=None):
        self.train = Crops(*self.args)

    def train_dataloader(self):
        return DataLoader(self.train, batch_size=self.batch, shuffle=True, drop_last=True, num_workers=self.workers,
                          pin_memory=True, persistent_workers=True, prefetch_factor=4)


class ViTClassifier(L.LightningModule):
    def __init__(self, arch, classes, lr=1e-3, total_steps=100_000, **kw):
        super().__init__()
        self.save_hyperparameters()
        self.model = timm.create_model(arch, pretrained=False, num_classes=classes, **kw)
        self.register_buffer("mean", torch.tensor(MEAN).view(1, 3, 1, 1) * 255, persistent=False)
        self.register_buffer("std", torch.tensor(STD).view(1, 3, 1, 1) * 255, persistent=False)

    def training_step(self, batch, batch_idx):
        x, y = batch
        x = (x.permute(0, 3, 1, 2).float() - self.mean) / self.std
        return F.cross_entropy(self.model(x), y, label_smoothing=0.1)

    def configure_optimizers(self):
        decay, no_decay = [], []
        for name, p in self.model.named_parameters():
            (no_decay if p.ndim <= 1 or name in ("pos_embed", "cls_token") else decay).append(p)
        opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.05}, {"params": no_decay, "weight_decay": 0.0}],
                                lr=self.hparams.lr, fused=self.device.type == "cuda")
        sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=self.hparams.lr, total_steps=self.hparams.total_steps,
                                                    pct_start=0.05)
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step"}}


def main():
    args = cc.parser(__doc__).parse_args()
    torch.set_float32_matmul_precision("high")
    if args.smoke:
        data = ImageData(16, 72, 64, 10, batch=4, workers=2)
        model = ViTClassifier("vit_tiny_patch16_224", 10, img_size=64)
    else:
        data = ImageData(2048, 256, 224, 1000, batch=192, workers=8)
        model = ViTClassifier("vit_base_patch16_224", 1000)
    if args.alt:  # C11 fix: fuse the elementwise chains (torch.compile, default mode: no CUDA graphs)
        model.model = torch.compile(model.model, mode=cc.alt_setup(args, "default", 5))
    timer = cc.lightning_timer("h_lightning_timm_vit_bf16", args, data.batch)
    trainer = cc.lightning_trainer(args, [timer], precision="bf16-mixed")
    trainer.fit(model, datamodule=data)


if __name__ == "__main__":
    main()
