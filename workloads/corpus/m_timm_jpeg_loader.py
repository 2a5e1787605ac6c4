"""C1+C8 (+C6) (three causes): a timm ViT-S/16 trained on JPEG files decoded with OpenCV by
only 3 DataLoader workers (RandomResizedCrop, flip, normalize in numpy), with
pin_memory=False and in plain float32 (the Linear layers run as FP32 SGEMMs).

--fix: 14 workers with pin_memory, bf16 autocast.
"""
import cv2
import numpy as np
import timm
import torch
from torch.utils.data import DataLoader, Dataset

import cc

MEAN = np.array([0.485, 0.456, 0.406], np.float32) * 255
STD = np.array([0.229, 0.224, 0.225], np.float32) * 255


class CvJpegs(Dataset):
    def __init__(self, files, res):
        self.files, self.res = files, res

    def __len__(self):
        return 1_000_000

    def __getitem__(self, i):
        rng = np.random.default_rng(i)
        img = cv2.imread(self.files[i % len(self.files)], cv2.IMREAD_COLOR)
        img = cv2.cvtColor(img, cv2.COLOR_BGR2RGB)
        h, w = img.shape[:2]
        s = int(rng.uniform(0.35, 1.0) * min(h, w))
        y0, x0 = rng.integers(0, h - s + 1), rng.integers(0, w - s + 1)
        img = cv2.resize(img[y0:y0 + s, x0:x0 + s], (self.res, self.res), interpolation=cv2.INTER_LINEAR)
        if rng.random() < 0.5:
            img = img[:, ::-1]
        img = (img.astype(np.float32) - MEAN) / STD
        return torch.from_numpy(img.transpose(2, 0, 1).copy()), int(i % 1000)


def main():
    args = cc.parser(__doc__).parse_args()
    dev = cc.torch_device(args)
    cv2.setNumThreads(1)
    batch, res = (4, 32) if args.smoke else (64, 224)
    _, files = cc.jpeg_dir(n=64 if args.smoke else 512, size=256)
    if args.smoke:
        model = timm.create_model("vit_tiny_patch16_224", pretrained=False, img_size=32, patch_size=8, num_classes=1000)
    else:
        model = timm.create_model("vit_small_patch16_224", pretrained=False, num_classes=1000)
    model = model.to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, fused=dev.type == "cuda")
    workers = 14 if args.fix else 3  # gpuwhy: plants C1 (3 decode workers)
    loader = DataLoader(CvJpegs(files, res), batch_size=batch, shuffle=True, num_workers=workers,
                        pin_memory=args.fix,  # gpuwhy: plants C6 (pageable batches)
                        persistent_workers=True, prefetch_factor=4, drop_last=True)
    it = iter(loader)
    # gpuwhy: plants C8 (float32 training: no autocast)
    amp = torch.autocast(dev.type, dtype=torch.bfloat16, enabled=args.fix)

    def step(i):
        x, y = next(it)
        x, y = x.to(dev, non_blocking=True), y.to(dev, non_blocking=True)
        with amp:
            loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    cc.run("m_timm_jpeg_loader", args, step, batch)


if __name__ == "__main__":
    main()
