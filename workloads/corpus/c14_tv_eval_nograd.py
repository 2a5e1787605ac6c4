"""C14 evaluation phase (plain loop): a torchvision ConvNeXt-Tiny (128 px, 100 classes, bf16
autocast, channels_last) trained from a DataLoader, evaluated every 25 steps under
torch.no_grad() on 32 validation batches of 256 whose accuracy and loss are summed on the
GPU and read once per evaluation. The validation DataLoader (6 workers) is not persistent, so
each evaluation also starts its workers again; training stops meanwhile.

--fix: evaluation every 1000 steps (outside the measured window), gpuwhy's C14 advice
(validate less often).
"""
import numpy as np
import torch
import torch.nn.functional as F
import torchvision
from torch.utils.data import DataLoader, Dataset

import cc


class Images(Dataset):
    """uint8 HWC images held in RAM (a decoded data set); random flip for training."""

    def __init__(self, n, res, classes, seed, train):
        rng = np.random.default_rng(seed)
        self.x = rng.integers(0, 256, (min(n, 2048), res, res, 3), dtype=np.uint8)
        self.y = rng.integers(0, classes, n)
        self.n, self.train, self.rng = n, train, np.random.default_rng(seed + 1)

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        img = self.x[i % len(self.x)]
        if self.train and self.rng.random() < 0.5:
            img = img[:, ::-1]
        return torch.from_numpy(np.ascontiguousarray(img.transpose(2, 0, 1))), int(self.y[i])


def main():
    args = cc.parser(__doc__).parse_args()
    dev = cc.torch_device(args)
    res, classes, batch, val_batch, val_n, workers = (32, 10, 8, 8, 32, 2) if args.smoke else (128, 100, 128, 256, 8192, 6)
    model = torchvision.models.convnext_tiny(num_classes=classes).to(dev).to(memory_format=torch.channels_last)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.05, fused=dev.type == "cuda")
    pin = dev.type == "cuda"
    train = DataLoader(Images(1_000_000, res, classes, 0, True), batch_size=batch, shuffle=True, num_workers=workers,
                       pin_memory=pin, persistent_workers=True, prefetch_factor=4, drop_last=True)
    val = DataLoader(Images(val_n, res, classes, 1, False), batch_size=val_batch, num_workers=workers,
                     pin_memory=pin)  # not persistent: workers start again each evaluation
    mean = torch.tensor([0.485, 0.456, 0.406], device=dev).view(1, 3, 1, 1) * 255
    std = torch.tensor([0.229, 0.224, 0.225], device=dev).view(1, 3, 1, 1) * 255
    prep = lambda x: ((x.to(dev, non_blocking=True).float() - mean) / std).contiguous(memory_format=torch.channels_last)
    eval_every = 1000 if args.fix else (2 if args.smoke else 25)
    it = iter(train)
    log = open("/dev/null", "w")

    def evaluate():
        model.eval()
        correct = torch.zeros((), device=dev)
        loss = torch.zeros((), device=dev)
        with torch.no_grad(), torch.autocast(dev.type, dtype=torch.bfloat16):
            for x, y in val:
                y = y.to(dev, non_blocking=True)
                logits = model(prep(x)).float()
                correct += (logits.argmax(1) == y).sum()
                loss += F.cross_entropy(logits, y, reduction="sum")
        model.train()
        return correct.item() / len(val.dataset), loss.item() / len(val.dataset)

    def step(i):
        x, y = next(it)
        with torch.autocast(dev.type, dtype=torch.bfloat16):
            loss = F.cross_entropy(model(prep(x)), y.to(dev, non_blocking=True), label_smoothing=0.1)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if (i + 1) % eval_every == 0:
            print("eval", i, *evaluate(), file=log)  # gpuwhy: plants C14 (evaluation every 25 steps)

    cc.run("c14_tv_eval_nograd", args, step, batch)


if __name__ == "__main__":
    main()
