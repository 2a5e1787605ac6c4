"""C14 evaluation phase inside the repeating unit (Lightning): a torchvision ResNet-18 (96 px,
100 classes) trained by a Lightning Trainer with precision="bf16-mixed" and
val_check_interval=10, limit_val_batches=100: every 10 training batches the Trainer runs 100
validation batches (loss and accuracy logged with self.log), so one repeating unit is 10
training and 100 validation batches, and most of the GPU's time goes to validation. The
validation DataLoader was written without pin_memory (pageable copies), the training one
with it.

--fix: val_check_interval=1000 (validation once per 1000 training batches: outside the
measured window), gpuwhy's C14 advice (validate less often).
"""
import lightning as L
import torch
import torch.nn.functional as F
import torchvision
from torch.utils.data import DataLoader, Dataset

import cc


class Batches(Dataset):
    """Pre-made uint8 image batches in host memory (a decoded data set held in RAM)."""

    def __init__(self, n, batch, res, classes, seed):
        g = torch.Generator().manual_seed(seed)
        self.x = [torch.randint(0, 256, (batch, 3, res, res), dtype=torch.uint8, generator=g) for _ in range(min(n, 16))]
        self.y = [torch.randint(0, classes, (batch,), generator=g) for _ in range(min(n, 16))]
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return self.x[i % len(self.x)], self.y[i % len(self.y)]


class Classifier(L.LightningModule):
    def __init__(self, classes):
        super().__init__()
        self.net = torchvision.models.resnet18(num_classes=classes)
        self.register_buffer("mean", torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1) * 255)
        self.register_buffer("std", torch.tensor([0.229, 0.224, 0.225]).view(1, 3, 1, 1) * 255)

    def forward(self, x):
        return self.net((x.float() - self.mean) / self.std)

    def training_step(self, batch, batch_idx):
        x, y = batch
        return F.cross_entropy(self(x), y, label_smoothing=0.1)

    def validation_step(self, batch, batch_idx):
        x, y = batch
        logits = self(x)  # gpuwhy: plants C14 (100 validation batches every 10 training batches)
        self.log("val_loss", F.cross_entropy(logits, y))
        self.log("val_acc", (logits.argmax(-1) == y).float().mean())

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1, momentum=0.9, nesterov=True)


def main():
    args = cc.parser(__doc__).parse_args()
    batch, res, classes, val_batches = (4, 32, 10, 5) if args.smoke else (256, 96, 100, 100)
    train = DataLoader(Batches(1_000_000, batch, res, classes, 0), batch_size=None, shuffle=False,
                       num_workers=2, pin_memory=True, persistent_workers=True)
    val = DataLoader(Batches(val_batches, batch, res, classes, 1), batch_size=None, num_workers=2,
                     persistent_workers=True)
    timer = cc.lightning_timer("c14_lightning_val_every10", args, batch)
    trainer = cc.lightning_trainer(args, [timer], precision="bf16-mixed",
                                   val_check_interval=1000 if args.fix else (2 if args.smoke else 10), limit_val_batches=val_batches,
                                   check_val_every_n_epoch=None)
    trainer.fit(Classifier(classes), train, val)


if __name__ == "__main__":
    main()
