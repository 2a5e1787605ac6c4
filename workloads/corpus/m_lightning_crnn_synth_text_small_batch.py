"""C1 + C3 (synthetic text lines rendered with PIL in the training process, and a batch of 16):
a scene-text recognizer trained on synthetic word images with Lightning, the way OCR models
are bootstrapped before real data (SynthText / TextRecognitionDataGenerator style): each
sample is a random string of 8-20 characters (digits and lower-case letters) rendered on the
fly with PIL (a random size of its built-in FreeType font, random grey levels, a small random
rotation, a Gaussian blur half the time, a resize to 32 x 256, Gaussian noise in NumPy). The
model is a CRNN-style recognizer: a ResNet backbone for text lines (a stem and five stages of
basic blocks, 64-512 channels, 12 blocks, strides that keep the width: 32 x 256 -> 1 x 64
columns; 3.7 GMAC an image), two pre-LN transformer encoder layers of width 256 over the 64
columns, a linear layer over the 36 characters and the CTC blank, the CTC loss; AdamW with a
cosine schedule, Trainer(precision="bf16-mixed"). The target lengths stay on the host (the
collate function passes them as a list); PyTorch's native CTC kernels still copy their
target offsets to the GPU, waiting for the queued work, in both runs.

The DataModule was written from the PyTorch tutorial's defaults and never tuned: batch_size=16
and no num_workers (so 0), so the training process renders every line itself between steps
(~0.5 ms a line on one core), and each step is 16 images through ~500 small kernels whose
launches, autograd's and Lightning's Python take longer than the GPU needs for them.

--fix: both causes' advice at once (gpuwhy's combined prediction): the DataLoader gets one
worker per free core (cc.fix_workers(); pinned memory, persistent workers, prefetch 4), and the
batch is 256 lines (cc.fix_batch(256), the learning rate scaled linearly); data, renderer,
model, loss and optimizer unchanged. The throughput is per line.

Written blind for the juliet batch.
"""
import math
import random

import lightning as L
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from PIL import Image, ImageDraw, ImageFilter, ImageFont
from torch.utils.data import DataLoader, Dataset

import cc

CHARS = "0123456789abcdefghijklmnopqrstuvwxyz"
MAX_LEN = 20
H, W = 32, 256


class SynthText(Dataset):
    """Word images rendered on demand: sample i is always the same line."""

    def __init__(self, n=1_000_000):
        self.n = n
        try:
            self.fonts = [ImageFont.load_default(size=s) for s in (20, 22, 24, 26, 28)]
        except TypeError:  # Pillow < 10.1: the bitmap font
            self.fonts = [ImageFont.load_default()]

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        r = random.Random(i)
        text = "".join(r.choice(CHARS) for _ in range(r.randint(8, MAX_LEN)))
        font = r.choice(self.fonts)
        bg, fg = r.randint(150, 255), r.randint(0, 100)
        width = int(font.getlength(text)) + 16 if hasattr(font, "getlength") else 8 * len(text) + 16
        img = Image.new("L", (max(width, 64), 48), bg)
        ImageDraw.Draw(img).text((8, 8), text, fill=fg, font=font)
        img = img.rotate(r.uniform(-4, 4), resample=Image.BILINEAR, fillcolor=bg)
        if r.random() < 0.5:
            img = img.filter(ImageFilter.GaussianBlur(r.uniform(0.3, 1.2)))
        img = img.resize((W, H), Image.BILINEAR)
        a = np.asarray(img, dtype=np.float32) / 255.0
        a = a + np.random.default_rng(i).normal(0.0, 0.05, a.shape).astype(np.float32)
        label = np.zeros(MAX_LEN, np.int64)
        label[:len(text)] = [CHARS.index(c) + 1 for c in text]
        return torch.from_numpy((a - 0.5) / 0.5)[None], torch.from_numpy(label), len(text)


def collate(items):
    imgs, labels, lengths = zip(*items)
    return torch.stack(imgs), torch.stack(labels), list(lengths)   # lengths stay on the host


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.c1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.b1 = nn.BatchNorm2d(cout)
        self.c2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.b2 = nn.BatchNorm2d(cout)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        y = F.relu(self.b1(self.c1(x)))
        y = self.b2(self.c2(y))
        return F.relu(y + (x if self.down is None else self.down(x)))


class TextRecognizer(L.LightningModule):
    def __init__(self, lr, total=100_000, widths=(64, 128, 256, 512, 512), depths=(2, 2, 3, 3, 2), d=256):
        super().__init__()
        self.save_hyperparameters()
        self.stem = nn.Sequential(nn.Conv2d(1, widths[0], 3, 1, 1, bias=False), nn.BatchNorm2d(widths[0]), nn.ReLU())
        blocks, cin = [], widths[0]
        strides = ((2, 2), (2, 2), (2, 1), (2, 1), (2, 1))
        for c, n, s in zip(widths, depths, strides):
            for k in range(n):
                blocks.append(BasicBlock(cin, c, s if k == 0 else 1))
                cin = c
        self.backbone = nn.Sequential(*blocks)
        self.proj = nn.Linear(cin, d)
        layer = nn.TransformerEncoderLayer(d, 4, 4 * d, dropout=0.1, batch_first=True, norm_first=True)
        self.seq = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.head = nn.Linear(d, len(CHARS) + 1)
        self.acc = None
        self.loss_value, self.reads = None, 0

    def forward(self, x):
        f = self.backbone(self.stem(x))              # [B, C, 1, T]
        f = f.squeeze(2).transpose(1, 2)             # [B, T, C]
        return self.head(self.seq(self.proj(f)))     # [B, T, classes]

    def training_step(self, batch, batch_idx):
        x, labels, lengths = batch
        logits = self(x)
        log_probs = logits.float().log_softmax(-1).transpose(0, 1)       # [T, B, C]
        t, b = log_probs.shape[:2]
        loss = F.ctc_loss(log_probs, labels, torch.full((b,), t, dtype=torch.long), torch.tensor(lengths),
                          blank=0, zero_infinity=True)
        self.acc = loss.detach() if self.acc is None else self.acc + loss.detach()
        if (batch_idx + 1) % 50 == 0:
            self.loss_value = self.acc.item() / 50
            self.acc = None
            self.reads += 1
        return loss

    def configure_optimizers(self):
        opt = torch.optim.AdamW(self.parameters(), lr=self.hparams.lr, weight_decay=0.01,
                                fused=self.device.type == "cuda")
        total = self.hparams.total
        sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 0.5 * (1 + math.cos(math.pi * min(s, total) / total)))
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step"}}


def main():
    args = cc.parser(__doc__, warmup=5).parse_args()
    gpu = args.device == "cuda"
    if args.fix:
        batch = cc.fix_batch(256 if not args.smoke else 16)
        loader_kw = dict(num_workers=cc.fix_workers() if not args.smoke else 2, pin_memory=gpu,
                         persistent_workers=True, prefetch_factor=4)
    else:
        batch = 16 if not args.smoke else 4  # gpuwhy: plants C3 (the tutorial's batch_size=16: ~500 small kernels a step for 16 lines)
        loader_kw = {}  # gpuwhy: plants C1 (num_workers left at 0: every line rendered by PIL in the training process)
    loader = DataLoader(SynthText(), batch_size=batch, shuffle=True, collate_fn=collate, drop_last=True, **loader_kw)
    torch.manual_seed(0)
    kw = dict(widths=(8, 16, 16, 32, 32), depths=(1, 1, 1, 1, 1), d=32) if args.smoke else {}
    model = TextRecognizer(lr=1e-3 * batch / 256, **kw)
    timer = cc.lightning_timer("m_lightning_crnn_synth_text_small_batch", args, batch,
                               extra=lambda: {"batch": batch, "num_workers": loader_kw.get("num_workers", 0),
                                              "loss": model.loss_value, "loss_reads": model.reads})
    trainer = cc.lightning_trainer(args, [timer], precision="bf16-mixed" if gpu else "32-true")
    trainer.fit(model, train_dataloaders=loader)


if __name__ == "__main__":
    main()
