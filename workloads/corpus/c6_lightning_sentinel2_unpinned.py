"""C6 pageable host memory (a Lightning DataModule whose DataLoader leaves pin_memory at its
default, False): land-cover segmentation of Sentinel-2 tiles, the way a TorchGeo-style
project fine-tunes a ViT: a timm ViT-L/16 backbone with 13 input bands (in_chans=13, random
weights, fused SDPA) and a linear per-patch decoder (Segmenter's linear head: each token to
16 x 16 pixels of 10 class logits), as a LightningModule under Trainer(precision="bf16-mixed"),
fused AdamW, cosine schedule, batch 32 tiles of 224 x 224. The DataModule holds 6 scenes of
13 x 1024 x 1024 uint16 reflectances with their uint8 land-cover rasters in memory (shared with
the workers by fork); __getitem__ cuts a random 224 tile, applies a random rot90/flip, turns the
reflectances into float32 and standardizes each band with the data set's mean and std (as
TorchGeo's transforms do), so a batch is 83.5 MB of float32 (plus 1.6 MB of labels), made by 12
persistent workers. Their DataLoader does not set pin_memory: the batch reaches the training
process in ordinary shared memory and Lightning's transfer (Tensor.to(device,
non_blocking=True)) is a pageable copy, staged by the driver while the host waits and the GPU
runs nothing: about 85 MB a step.

--fix: gpuwhy's C6 advice: DataLoader(pin_memory=True): the loader's pinning thread copies each
batch into page-locked memory while the previous step runs, and Lightning's non_blocking copy
then goes at the link's rate; model, data, workers and everything else unchanged.

Written blind for the delta batch.
"""
import math

import lightning as L
import numpy as np
import timm
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

import cc

BANDS = 13
CLASSES = 10
# per-band mean and std of the reflectances (digital numbers), as a data set's statistics file gives them
MEAN = np.array([1354, 1118, 1042, 947, 1199, 2003, 2373, 2300, 732, 12, 1819, 1118, 2599], np.float32)
STD = np.array([245, 333, 395, 593, 566, 861, 1086, 1118, 404, 4, 1003, 762, 1231], np.float32)


class Sentinel2Tiles(Dataset):
    def __init__(self, scenes, size, tile, seed=0):
        rng = np.random.default_rng(seed)
        # smooth fields plus noise, per band around its mean: what a reflectance raster looks like
        coarse = rng.normal(0, 1, (scenes, BANDS, size // 32, size // 32)).astype(np.float32)
        noise = rng.normal(0, 0.3, (BANDS, size, size)).astype(np.float32)
        self.images = np.empty((scenes, BANDS, size, size), np.uint16)
        for s in range(scenes):
            fine = np.repeat(np.repeat(coarse[s], 32, 1), 32, 2)
            img = MEAN[:, None, None] + STD[:, None, None] * (fine + np.roll(noise, 97 * s, axis=2))
            self.images[s] = np.clip(img, 0, 10000)
        self.labels = np.repeat(np.repeat((np.abs(coarse[:, 0]) * 4).astype(np.uint8) % CLASSES, 32, 1), 32, 2)
        self.tile = tile
        self.mean, self.inv_std = MEAN[:, None, None], 1.0 / STD[:, None, None]

    def __len__(self):
        return 1_000_000

    def __getitem__(self, i):
        rng = np.random.default_rng(i)
        s = rng.integers(len(self.images))
        y0, x0 = rng.integers(0, self.images.shape[2] - self.tile, 2)
        img = self.images[s, :, y0:y0 + self.tile, x0:x0 + self.tile]
        lab = self.labels[s, y0:y0 + self.tile, x0:x0 + self.tile]
        k = int(rng.integers(4))
        flip = rng.random() < 0.5
        x = np.rot90(img.astype(np.float32), k, (1, 2))
        lab = np.rot90(lab, k)
        if flip:
            x, lab = x[:, :, ::-1], lab[:, ::-1]
        x = np.ascontiguousarray(x)
        x -= self.mean  # standardized per band, in float32
        x *= self.inv_std
        return torch.from_numpy(x), torch.from_numpy(np.ascontiguousarray(lab))


class Sentinel2DataModule(L.LightningDataModule):
    def __init__(self, scenes, size, tile, batch, workers, pin):
        super().__init__()
        self.scenes, self.size, self.tile = scenes, size, tile
        self.batch, self.workers, self.pin = batch, workers, pin

    def setup(self, stage=None):
        self.train = Sentinel2Tiles(self.scenes, self.size, self.tile)

    def train_dataloader(self):
        if self.pin:
            return DataLoader(self.train, batch_size=self.batch, shuffle=True, drop_last=True,
                              num_workers=self.workers, persistent_workers=True, prefetch_factor=2,
                              pin_memory=True)
        return DataLoader(self.train, batch_size=self.batch, shuffle=True, drop_last=True,  # gpuwhy: plants C6 (pin_memory left False: 85 MB a step copied from pageable memory)
                          num_workers=self.workers, persistent_workers=True, prefetch_factor=2)


class LandCoverViT(L.LightningModule):
    def __init__(self, arch, tile, patch=16, lr=2e-4, total_steps=50_000, **kw):
        super().__init__()
        self.save_hyperparameters()
        self.backbone = timm.create_model(arch, pretrained=False, num_classes=0, in_chans=BANDS, img_size=tile,
                                          global_pool="", **kw)
        self.decode = torch.nn.Linear(self.backbone.num_features, CLASSES * patch * patch)

    def forward(self, x):
        b, _, h, w = x.shape
        p = self.hparams.patch
        tok = self.backbone.forward_features(x)[:, self.backbone.num_prefix_tokens:]  # (B, h/p * w/p, D)
        logits = self.decode(tok).view(b, h // p, w // p, CLASSES, p, p)
        return logits.permute(0, 3, 1, 4, 2, 5).reshape(b, CLASSES, h, w)

    def training_step(self, batch, batch_idx):
        x, y = batch
        return F.cross_entropy(self(x), y.long())

    def configure_optimizers(self):
        opt = torch.optim.AdamW(self.parameters(), lr=self.hparams.lr, weight_decay=0.05,
                                fused=self.device.type == "cuda")
        total = self.hparams.total_steps
        sched = torch.optim.lr_scheduler.LambdaLR(
            opt, lambda s: min(1.0, (s + 1) / 500) * 0.5 * (1 + math.cos(math.pi * min(s, total) / total)))
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step"}}


def main():
    args = cc.parser(__doc__).parse_args()
    if args.smoke:
        data = Sentinel2DataModule(2, 128, 32, batch=4, workers=2, pin=args.fix)
        model = LandCoverViT("vit_tiny_patch16_224", 32)
    else:
        data = Sentinel2DataModule(6, 1024, 224, batch=32, workers=12, pin=args.fix)
        model = LandCoverViT("vit_large_patch16_224", 224)
    timer = cc.lightning_timer("c6_lightning_sentinel2_unpinned", args, data.batch,
                               extra=lambda: {"pin_memory": bool(args.fix),
                                              "batch_mb": round(data.batch * (BANDS * 4 + 1) * data.tile ** 2 / 2 ** 20, 1)})
    trainer = cc.lightning_trainer(args, [timer], precision="bf16-mixed")
    trainer.fit(model, datamodule=data)


if __name__ == "__main__":
    main()
