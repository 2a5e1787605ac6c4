"""Healthy control (torchvision, semantic segmentation with a well-configured input pipeline):
training torchvision's DeepLabV3-ResNet50 (output stride 8, ASPP head, the auxiliary FCN head
on layer3, 19 Cityscapes classes; random weights) on street scenes, as torchvision's
segmentation reference does it: random 512 x 512 crops of 1,024 x 2,048 images with horizontal
flips, cross-entropy ignoring label 255 plus 0.4 x the auxiliary loss, SGD with momentum 0.9,
weight decay 1e-4 and the poly learning-rate schedule, batch 8.

Configured as the performance guides say: the crops are made in 6 DataLoader workers (uint8
NumPy slices of 24 synthetic scenes held in RAM, 151 MB, made once; labels as uint8 maps),
pinned, persistent, prefetch 4, copied with non_blocking=True and normalized on the GPU;
channels_last, bf16 autocast, cudnn.benchmark=True (cuDNN's algorithm search for the fixed crop
size happens in the first iterations, inside the warm-up), the loss read every 50 steps.

About 4.5 TFLOP a step (~175 GFLOP an image forward at 512 x 512, the dilated layer3 and layer4
at 64 x 64; times three with the backward) in cuDNN convolutions, plus BatchNorm and ReLU over
large feature maps: a GPU-bound step of a few tens of milliseconds; the workers need ~1-2 ms
an image.

--fix: nothing (control).

Written blind for the kilo batch.
"""
import numpy as np
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

import cc


def scenes(n, h, w, classes, seed=0):
    """Street-like scenes: blocky label maps (regions on a coarse grid) and images coloured by
    class with texture noise; a few pixels ignored (255)."""
    rng = np.random.default_rng(seed)
    palette = rng.integers(0, 256, (classes, 3), dtype=np.uint8)
    imgs = np.empty((n, h, w, 3), np.uint8)
    labels = np.empty((n, h, w), np.uint8)
    for k in range(n):
        coarse = rng.integers(0, classes, (h // 64, w // 64)).astype(np.uint8)
        lab = np.repeat(np.repeat(coarse, 64, 0), 64, 1)
        lab[:, : w // 16][rng.random((h, w // 16)) < 0.05] = 255
        labels[k] = lab
        img = palette[np.minimum(lab, classes - 1)]
        noise = rng.integers(0, 32, (h, w, 1), dtype=np.uint8)
        imgs[k] = img // 2 + noise
    return imgs, labels


class Crops(Dataset):
    def __init__(self, imgs, labels, crop, n=1_000_000):
        self.imgs, self.labels, self.crop, self.n = imgs, labels, crop, n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        r = np.random.default_rng(i)
        k = r.integers(len(self.imgs))
        _, h, w, _ = self.imgs.shape
        y0, x0 = r.integers(0, h - self.crop + 1), r.integers(0, w - self.crop + 1)
        img = self.imgs[k, y0:y0 + self.crop, x0:x0 + self.crop]
        lab = self.labels[k, y0:y0 + self.crop, x0:x0 + self.crop]
        if r.random() < 0.5:
            img, lab = img[:, ::-1], lab[:, ::-1]
        return (torch.from_numpy(np.ascontiguousarray(img.transpose(2, 0, 1))),
                torch.from_numpy(np.ascontiguousarray(lab)))


def main():
    args = cc.parser(__doc__, warmup=5).parse_args()
    import torchvision

    dev = cc.torch_device(args)
    gpu = dev.type == "cuda"
    classes = 19
    n, h, w, crop, batch, workers = (4, 128, 256, 64, 2, 2) if args.smoke else (24, 1024, 2048, 512, 8, 6)
    imgs, labels = scenes(n, h, w, classes)
    loader = DataLoader(Crops(imgs, labels, crop), batch_size=batch, shuffle=False, num_workers=workers,
                        pin_memory=gpu, persistent_workers=True, prefetch_factor=4, drop_last=True)
    it = iter(loader)
    torch.backends.cudnn.benchmark = True
    torch.manual_seed(0)
    model = torchvision.models.segmentation.deeplabv3_resnet50(weights=None, weights_backbone=None,
                                                               num_classes=classes, aux_loss=True)
    model = model.to(dev).to(memory_format=torch.channels_last).train()
    params = [{"params": [p for p in model.backbone.parameters() if p.requires_grad]},
              {"params": [p for p in model.classifier.parameters() if p.requires_grad]},
              {"params": [p for p in model.aux_classifier.parameters() if p.requires_grad], "lr": 0.1}]
    opt = torch.optim.SGD(params, lr=0.01, momentum=0.9, weight_decay=1e-4, foreach=True)
    total = 100_000
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: (1 - min(s, total - 1) / total) ** 0.9)
    mean = torch.tensor([0.485, 0.456, 0.406], device=dev).view(1, 3, 1, 1) * 255
    std = torch.tensor([0.229, 0.224, 0.225], device=dev).view(1, 3, 1, 1) * 255
    amp = torch.autocast(dev.type, dtype=torch.bfloat16, enabled=gpu)
    st = {"acc": torch.zeros((), device=dev), "loss": None, "reads": 0}

    def step(i):
        x, y = next(it)
        x = x.to(dev, non_blocking=True)
        y = y.to(dev, non_blocking=True).long()
        x = ((x.float() - mean) / std).contiguous(memory_format=torch.channels_last)
        with amp:
            out = model(x)
            loss = (F.cross_entropy(out["out"].float(), y, ignore_index=255)
                    + 0.4 * F.cross_entropy(out["aux"].float(), y, ignore_index=255))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        st["acc"] += loss.detach()
        if i % 50 == 49:
            st["loss"] = st["acc"].item() / 50
            st["acc"].zero_()
            st["reads"] += 1

    cc.run("h_tv_deeplabv3_cudnn_benchmark_bf16", args, step, batch,
           extra=lambda: {"loader_workers": workers, "crop": crop, "cudnn_benchmark": torch.backends.cudnn.benchmark,
                          "loss": st["loss"], "loss_reads": st["reads"],
                          "params_m": round(sum(p.numel() for p in model.parameters()) / 1e6, 1)})


if __name__ == "__main__":
    main()
