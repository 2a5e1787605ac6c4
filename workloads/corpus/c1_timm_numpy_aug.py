"""C1 data loading: a timm ViT-B/16 (bf16 autocast, fused AdamW) fed by a Dataset whose
__getitem__ augments 224x224 images with numpy: a random crop out of a 256x256 uint8
image held in memory, a horizontal flip, colour jitter (brightness, contrast, saturation)
and per-pixel Gaussian noise in float32, then normalization; num_workers=0, so all of it
runs on the training thread between steps while the GPU waits.

--fix: num_workers = the free cores (cc.fix_workers(): gpuwhy's C1 advice), persistent_workers=True, pin_memory=True, prefetch_factor=4.
"""
import numpy as np
import timm
import torch
from torch.utils.data import DataLoader, Dataset

import cc

MEAN = np.array([0.485, 0.456, 0.406], np.float32)
STD = np.array([0.229, 0.224, 0.225], np.float32)


class NumpyAugment(Dataset):
    """Images made once in memory (uint8 HWC); every item is a fresh random augmentation."""

    def __init__(self, n, size, crop, classes):
        rng = np.random.default_rng(0)
        self.images = rng.integers(0, 256, (n, size, size, 3), dtype=np.uint8)
        self.labels = rng.integers(0, classes, n)
        self.crop = crop

    def __len__(self):
        return 1_000_000  # many epochs over the images

    def __getitem__(self, i):
        rng = np.random.default_rng(i)
        img = self.images[i % len(self.images)]
        c, s = self.crop, img.shape[0]
        y0, x0 = rng.integers(0, s - c + 1, 2)
        x = img[y0:y0 + c, x0:x0 + c].astype(np.float32) / 255.0
        if rng.random() < 0.5:
            x = x[:, ::-1]
        x = x * rng.uniform(0.6, 1.4)  # brightness
        x = (x - x.mean()) * rng.uniform(0.6, 1.4) + x.mean()  # contrast
        grey = x[..., 0] * 0.299 + x[..., 1] * 0.587 + x[..., 2] * 0.114  # no BLAS threads in the workers
        x = (x - grey[..., None]) * rng.uniform(0.6, 1.4) + grey[..., None]  # saturation
        x = x + rng.standard_normal(x.shape, dtype=np.float32) * 0.03  # per-pixel noise
        x = (np.clip(x, 0.0, 1.0) - MEAN) / STD
        return torch.from_numpy(np.ascontiguousarray(x.transpose(2, 0, 1))), int(self.labels[i % len(self.labels)])


def main():
    args = cc.parser(__doc__).parse_args()
    dev = cc.torch_device(args)
    if args.smoke:
        model = timm.create_model("vit_tiny_patch16_224", pretrained=False, num_classes=10, img_size=64)
        data, batch = NumpyAugment(16, 72, 64, 10), 4
    else:
        model = timm.create_model("vit_base_patch16_224", pretrained=False, num_classes=1000)
        data, batch = NumpyAugment(256, 256, 224, 1000), 64
    model = model.to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.05, fused=dev.type == "cuda")
    if args.fix:
        loader = DataLoader(data, batch_size=batch, shuffle=True, drop_last=True, num_workers=2 if args.smoke else cc.fix_workers(),
                            persistent_workers=True, pin_memory=True, prefetch_factor=4)
    else:
        loader = DataLoader(data, batch_size=batch, shuffle=True, drop_last=True,
                            num_workers=0)  # gpuwhy: plants C1 (numpy augmentation on the training thread)
    it = iter(loader)

    def step(i):
        x, y = next(it)
        x = x.to(dev, non_blocking=True)
        y = y.to(dev, non_blocking=True)
        with torch.autocast(dev.type, dtype=torch.bfloat16):
            loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    cc.run("c1_timm_numpy_aug", args, step, batch)


if __name__ == "__main__":
    main()
