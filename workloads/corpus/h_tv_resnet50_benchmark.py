"""healthy, with autotuning warm-up: the usual torchvision ResNet-50 recipe at 224 px, batch
128, NCHW, bf16 autocast, torch.backends.cudnn.benchmark = True (cuDNN times its algorithms
for every convolution shape in the first iterations, and the first kernels of each library
are loaded then), SGD with Nesterov momentum; batches from a DataLoader (8 workers, random
crop and flip of uint8 images held in RAM, pin_memory, prefetch 4) that keeps well ahead
of the GPU. Seeded: the three recordings of this control run the same work.

--fix changes nothing: this is a control.
"""
import numpy as np
import torch
import torch.nn.functional as F
import torchvision
from torch.utils.data import DataLoader, Dataset

import cc


class Images(Dataset):
    def __init__(self, n, stored, res, classes):
        rng = np.random.default_rng(0)
        self.x = rng.integers(0, 256, (256, stored, stored, 3), dtype=np.uint8)
        self.y = rng.integers(0, classes, n)
        self.n, self.stored, self.res = n, stored, res

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        rng = np.random.default_rng(i)  # per-sample seed: the same crops in every run
        top, left = rng.integers(0, self.stored - self.res + 1, 2)
        img = self.x[i % len(self.x), top:top + self.res, left:left + self.res]
        if rng.random() < 0.5:
            img = img[:, ::-1]
        return torch.from_numpy(np.ascontiguousarray(img.transpose(2, 0, 1))), int(self.y[i])


def main():
    args = cc.parser(__doc__).parse_args()
    dev = cc.torch_device(args)
    torch.manual_seed(0)
    batch, stored, res, workers = (4, 40, 32, 2) if args.smoke else (128, 256, 224, 8)
    torch.backends.cudnn.benchmark = True
    model = torchvision.models.resnet50(num_classes=1000).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, nesterov=True, weight_decay=5e-5, foreach=True)
    loader = DataLoader(Images(1_000_000, stored, res, 1000), batch_size=batch, shuffle=False, num_workers=workers,
                        pin_memory=dev.type == "cuda", persistent_workers=True, prefetch_factor=4, drop_last=True)
    mean = torch.tensor([0.485, 0.456, 0.406], device=dev).view(1, 3, 1, 1) * 255
    std = torch.tensor([0.229, 0.224, 0.225], device=dev).view(1, 3, 1, 1) * 255
    it = iter(loader)

    def step(i):
        x, y = next(it)
        x = (x.to(dev, non_blocking=True).float() - mean) / std
        with torch.autocast(dev.type, dtype=torch.bfloat16):
            loss = F.cross_entropy(model(x), y.to(dev, non_blocking=True), label_smoothing=0.1)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    cc.run("h_tv_resnet50_benchmark", args, step, batch)


if __name__ == "__main__":
    main()
