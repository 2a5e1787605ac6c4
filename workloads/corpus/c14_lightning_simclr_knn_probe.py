"""C14 a periodic stall (a scikit-learn kNN probe of the features every 20 steps): SimCLR
self-supervised pre-training of a CIFAR-style ResNet-18 (torchvision resnet18 with a 3 x 3
stem and no max-pool, 512-d features, a 2-layer projector to 128-d) as a LightningModule:
Trainer(precision="bf16-mixed"), channels_last, SGD with momentum (foreach) and a cosine
schedule, NT-Xent loss at temperature 0.2, batch 512 images a step seen as two views each.
The 50,000 32 x 32 uint8 training images (10 classes of synthetic textures) are held on the
GPU; the DataLoader yields index batches and the two views are made on the GPU (random
resized crops through affine_grid/grid_sample, flips, colour jitter, random grayscale).

Like the "kNN monitor" of many SSL repositories, a Callback measures representation quality
during training: every 20 optimizer steps it embeds a labelled probe set (10,000 bank and
2,000 query images, no augmentation) with the backbone in eval mode, brings the features to
the host with .cpu().numpy() and scores a scikit-learn KNeighborsClassifier(n_neighbors=20,
metric="cosine", weights="distance") fitted on the bank; the accuracy goes to the module's
log. The features take ~40-60 ms of GPU work, the kNN a few hundred milliseconds on the host
with the GPU idle.

--fix: gpuwhy's C14 advice (do the periodic evaluation less often): the probe every 1,000 steps
(never in the measured window); model, data, augmentation, loss, optimizer and the probe
itself unchanged.

Written blind for the november batch.
"""
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision
from torch.utils.data import DataLoader, Dataset
import lightning as L

import cc

try:
    from sklearn.neighbors import KNeighborsClassifier
except ImportError:  # numpy stand-in (brute-force cosine kNN, distance-weighted vote)
    KNeighborsClassifier = None


class NumpyKNN:
    def __init__(self, n_neighbors):
        self.k = n_neighbors

    def fit(self, x, y):
        self.x = x / np.linalg.norm(x, axis=1, keepdims=True)
        self.y = y
        return self

    def score(self, q, yq):
        q = q / np.linalg.norm(q, axis=1, keepdims=True)
        d = 1.0 - q @ self.x.T
        nn_ = np.argpartition(d, self.k, axis=1)[:, :self.k]
        w = 1.0 / np.maximum(np.take_along_axis(d, nn_, 1), 1e-12)
        votes = np.zeros((q.shape[0], int(self.y.max()) + 1))
        np.add.at(votes, (np.arange(q.shape[0])[:, None], self.y[nn_]), w)
        return float((votes.argmax(1) == yq).mean())


def make_images(n, classes, size, g, dev):
    """Synthetic CIFAR-like images: per-class colour and texture, per-image noise and shifts."""
    base = F.interpolate(torch.rand(classes, 3, 4, 4, device=dev, generator=g), size=(size, size),
                         mode="bicubic", align_corners=False)
    y = torch.randint(0, classes, (n,), device=dev, generator=g)
    imgs = torch.empty(n, 3, size, size, dtype=torch.uint8, device=dev)
    for s in range(0, n, 5000):
        yy = y[s:s + 5000]
        sh = torch.randint(-4, 5, (2,), generator=torch.Generator().manual_seed(s)).tolist()
        x = base[yy].roll(shifts=(sh[0], sh[1]), dims=(2, 3))
        x = x + 0.25 * torch.randn(x.shape, device=dev, generator=g)
        imgs[s:s + 5000] = (x.clamp(0, 1) * 255).to(torch.uint8)
    return imgs, y


class IndexBatches(Dataset):
    """Batches of shuffled image indices (the images live on the GPU); a new permutation each
    epoch."""

    def __init__(self, n, batch, seed=0):
        self.n, self.b = n, batch
        self.g = torch.Generator().manual_seed(seed)
        self.perm = torch.randperm(n, generator=self.g)

    def __len__(self):
        return self.n // self.b

    def __getitem__(self, i):
        if i == 0:
            self.perm = torch.randperm(self.n, generator=self.g)
        return self.perm[i * self.b:(i + 1) * self.b]


class SimCLR(L.LightningModule):
    def __init__(self, images, lr, total_steps, smoke):
        super().__init__()
        net = torchvision.models.resnet18(weights=None)
        net.conv1 = nn.Conv2d(3, 64, 3, 1, 1, bias=False)
        net.maxpool = nn.Identity()
        net.fc = nn.Identity()
        self.backbone = net
        self.projector = nn.Sequential(nn.Linear(512, 2048), nn.BatchNorm1d(2048), nn.ReLU(inplace=True),
                                       nn.Linear(2048, 128))
        self.register_buffer("images", images, persistent=False)
        self.register_buffer("mean", torch.tensor([0.4914, 0.4822, 0.4465]).view(1, 3, 1, 1))
        self.register_buffer("std", torch.tensor([0.247, 0.243, 0.261]).view(1, 3, 1, 1))
        self.lr, self.total = lr, total_steps
        self.channels_last = not smoke
        self.acc = None
        self.last_loss = None
        self.reads = 0
        self.knn_acc = None
        self.probes = 0

    def normalize(self, x):
        x = (x - self.mean) / self.std
        return x.contiguous(memory_format=torch.channels_last) if self.channels_last else x

    def view(self, x):
        """SimCLR's CIFAR augmentation, batched on the GPU; x float in [0, 1]."""
        b = x.shape[0]
        dev = x.device
        scale = torch.empty(b, device=dev).uniform_(0.2, 1.0).sqrt()
        ratio = torch.exp(torch.empty(b, device=dev).uniform_(math.log(3 / 4), math.log(4 / 3))).sqrt()
        sx, sy = (scale * ratio).clamp(max=1.0), (scale / ratio).clamp(max=1.0)
        tx = (torch.rand(b, device=dev) * 2 - 1) * (1 - sx)
        ty = (torch.rand(b, device=dev) * 2 - 1) * (1 - sy)
        flip = torch.where(torch.rand(b, device=dev) < 0.5, -1.0, 1.0)
        theta = torch.zeros(b, 2, 3, device=dev)
        theta[:, 0, 0], theta[:, 0, 2], theta[:, 1, 1], theta[:, 1, 2] = sx * flip, tx, sy, ty
        grid = F.affine_grid(theta, list(x.shape), align_corners=False)
        x = F.grid_sample(x, grid, mode="bilinear", padding_mode="reflection", align_corners=False)
        jit = (torch.rand(b, 1, 1, 1, device=dev) < 0.8).float()
        bri = 1 + jit * (torch.rand(b, 1, 1, 1, device=dev) * 0.8 - 0.4)
        con = 1 + jit * (torch.rand(b, 1, 1, 1, device=dev) * 0.8 - 0.4)
        sat = 1 + jit * (torch.rand(b, 1, 1, 1, device=dev) * 0.8 - 0.4)
        x = x * bri
        m = x.mean((1, 2, 3), keepdim=True)
        x = (x - m) * con + m
        gray = (0.299 * x[:, :1] + 0.587 * x[:, 1:2] + 0.114 * x[:, 2:]).expand_as(x)
        x = (x - gray) * sat + gray
        x = torch.where(torch.rand(b, 1, 1, 1, device=dev) < 0.2, gray, x)
        return self.normalize(x.clamp(0, 1))

    def features(self, x_uint8):
        return self.backbone(self.normalize(x_uint8.float() / 255))

    def training_step(self, batch, batch_idx):
        idx = batch
        x = self.images[idx].float() / 255
        z = self.projector(self.backbone(torch.cat([self.view(x), self.view(x)])))
        z = F.normalize(z.float(), dim=1)
        n = idx.shape[0]
        sim = z @ z.T / 0.2
        sim = sim.masked_fill(torch.eye(2 * n, device=sim.device, dtype=torch.bool), float("-inf"))
        target = torch.cat([torch.arange(n, 2 * n), torch.arange(0, n)]).to(sim.device)
        loss = F.cross_entropy(sim, target)
        self.acc = loss.detach() if self.acc is None else self.acc + loss.detach()
        if batch_idx % 50 == 49:
            self.last_loss = self.acc.item() / 50
            self.acc = None
            self.reads += 1
        return loss

    def configure_optimizers(self):
        opt = torch.optim.SGD(self.parameters(), lr=self.lr, momentum=0.9, weight_decay=5e-4, foreach=True)
        sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, self.total)
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step"}}


class KNNProbe(L.Callback):
    """The kNN monitor: every `every` optimizer steps, features of the probe set and a
    scikit-learn kNN classifier's accuracy."""

    def __init__(self, every, bank, bank_y, query, query_y, k=20, chunk=1000):
        self.every, self.k, self.chunk = every, k, chunk
        self.bank, self.bank_y, self.query, self.query_y = bank, bank_y, query, query_y

    @torch.no_grad()
    def embed(self, module, imgs):
        out = []
        with torch.autocast(module.device.type, dtype=torch.bfloat16, enabled=module.device.type == "cuda"):
            for s in range(0, imgs.shape[0], self.chunk):
                out.append(module.features(imgs[s:s + self.chunk].to(module.device)).float())
        return torch.cat(out)

    def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx):
        if trainer.global_step % self.every:
            return
        module.eval()
        fb = self.embed(module, self.bank).cpu().numpy()
        fq = self.embed(module, self.query).cpu().numpy()
        module.train()
        if KNeighborsClassifier is not None:
            clf = KNeighborsClassifier(n_neighbors=self.k, metric="cosine", weights="distance")
        else:
            clf = NumpyKNN(self.k)
        clf.fit(fb, self.bank_y)
        module.knn_acc = float(clf.score(fq, self.query_y))  # gpuwhy: plants C14 (every 20 steps: probe features to the host and a scikit-learn kNN over 10,000 x 2,000 pairs, the GPU idle)
        module.probes += 1


def main():
    args = cc.parser(__doc__, warmup=3).parse_args()
    cc.torch_device(args)
    gpu = args.device == "cuda"
    dev = torch.device(args.device)
    if args.smoke:
        n_train, n_bank, n_query, batch, every, size = 512, 256, 64, 16, 4, 16
    else:
        n_train, n_bank, n_query, batch, every, size = 50_000, 10_000, 2_000, 512, 20, 32
    if args.fix:
        every = 1000
    torch.backends.cudnn.benchmark = True
    torch.manual_seed(0)
    g = torch.Generator(device=dev).manual_seed(0)
    images, _ = make_images(n_train, 10, size, g, dev)
    probe, probe_y = make_images(n_bank + n_query, 10, size, g, dev)
    probe_y = probe_y.cpu().numpy()
    model = SimCLR(images, lr=0.06 * batch / 256, total_steps=100_000, smoke=args.smoke)
    if not args.smoke:
        model.backbone.to(memory_format=torch.channels_last)
    loader = DataLoader(IndexBatches(n_train, batch), batch_size=None)
    knn = KNNProbe(every, probe[:n_bank], probe_y[:n_bank], probe[n_bank:], probe_y[n_bank:])
    timer = cc.lightning_timer("c14_lightning_simclr_knn_probe", args, batch,
                               extra=lambda: {"probe_every": every, "probes": model.probes, "knn_acc": model.knn_acc,
                                              "knn_lib": "sklearn" if KNeighborsClassifier is not None else "numpy",
                                              "loss": model.last_loss, "loss_reads": model.reads})
    trainer = cc.lightning_trainer(args, [knn, timer], precision="bf16-mixed" if gpu else "32-true")
    trainer.fit(model, loader)


if __name__ == "__main__":
    main()
