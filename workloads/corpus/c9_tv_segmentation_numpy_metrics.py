"""C9 GPU outputs to numpy every step (training metrics of a segmentation model): torchvision
DeepLabV3 with a ResNet-101 backbone (output stride 8, no pretrained weights) for land
cover (7 classes as in LoveDA, label 255 ignored), 256 x 512 crops, batch 8, bf16 autocast,
channels_last, SGD with momentum and a poly learning rate; images and label maps made once
on the GPU and cycled. After each step the training loop logs metrics the way many
segmentation repositories do, on the host: `probs = logits.float().softmax(1).cpu().numpy()`
(29 MB, a blocking copy to pageable memory) and the labels with it, then numpy computes the
predictions (probs.argmax(1)), their confidences (probs.max(1)), the pixel accuracy, a
7 x 7 confusion matrix with np.bincount (running mIoU) and a 15-bin calibration
histogram (expected calibration error). The GPU waits for the copy and for numpy (a few
tens of ms a step) before the next step is launched.

--fix: gpuwhy's C9 advice (keep values on the GPU, read them every N steps): the same
metrics computed with torch on the GPU (max and argmax of the softmax, fixed-size
scatter_add_ for the confusion matrix and the calibration bins, no data-dependent
shapes), accumulated in GPU tensors and read every 50 steps.
"""
import numpy as np
import torch
import torch.nn.functional as F
import torchvision

import cc

CLASSES, IGNORE, BINS = 7, 255, 15


def numpy_metrics(probs, target, hist, calib):
    """Pixel accuracy, confusion matrix (accumulated into hist) and calibration bins (calib)."""
    pred = probs.argmax(1)
    conf = probs.max(1)
    valid = target != IGNORE
    p, t, c = pred[valid], target[valid], conf[valid]
    correct = p == t
    hist += np.bincount(t * CLASSES + p, minlength=CLASSES * CLASSES).reshape(CLASSES, CLASSES)
    b = np.minimum((c * BINS).astype(np.int64), BINS - 1)
    calib[0] += np.bincount(b, minlength=BINS)
    calib[1] += np.bincount(b, weights=correct, minlength=BINS)
    calib[2] += np.bincount(b, weights=c, minlength=BINS)
    return float(correct.mean())


def miou(hist):
    iou = np.diag(hist) / np.maximum(hist.sum(0) + hist.sum(1) - np.diag(hist), 1)
    return float(iou.mean())


def ece(calib):
    n, acc, conf = calib
    return float(np.sum(np.abs(acc - conf)) / max(n.sum(), 1))


def main():
    args = cc.parser(__doc__).parse_args()
    dev = cc.torch_device(args)
    batch, h, w = (2, 32, 64) if args.smoke else (8, 256, 512)
    log_every = 50 if args.fix else 1
    model = torchvision.models.segmentation.deeplabv3_resnet101(
        weights=None, weights_backbone=None, num_classes=CLASSES, aux_loss=False)
    model = model.to(dev).to(memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=1e-4,
                          foreach=dev.type == "cuda")
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: (1 - min(s, 89_999) / 90_000) ** 0.9)
    g = torch.Generator(device=dev).manual_seed(0)
    xs = [torch.randn(batch, 3, h, w, device=dev, generator=g).contiguous(memory_format=torch.channels_last)
          for _ in range(4)]
    ys = []
    for _ in range(4):
        y = torch.randint(0, CLASSES, (batch, h, w), device=dev, generator=g)
        y[torch.rand(batch, h, w, device=dev, generator=g) < 0.05] = IGNORE
        ys.append(y)
    hist = np.zeros((CLASSES, CLASSES), np.int64)
    calib = np.zeros((3, BINS))
    hist_gpu = torch.zeros(CLASSES * CLASSES + 1, dtype=torch.long, device=dev)
    calib_gpu = torch.zeros(3, BINS + 1, device=dev)
    acc_gpu = torch.zeros((), device=dev)
    log = {"pixel_acc": None, "miou": None, "ece": None, "reads": 0}

    def step(i):
        x, y = xs[i % 4], ys[i % 4]
        with torch.autocast(dev.type, dtype=torch.bfloat16):
            logits = model(x)["out"]
        loss = F.cross_entropy(logits.float(), y, ignore_index=IGNORE)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        if not args.fix:
            probs = logits.detach().float().softmax(1).cpu().numpy()  # gpuwhy: plants C9 (outputs to numpy every step)
            log["pixel_acc"] = numpy_metrics(probs, y.cpu().numpy(), hist, calib)
            log["miou"], log["ece"] = miou(hist), ece(calib)
            log["reads"] += 1
            return
        with torch.no_grad():  # fixed-size scatters: no data-dependent shapes, no host reads
            conf, pred = logits.detach().float().softmax(1).max(1)
            valid = y != IGNORE
            correct = ((pred == y) & valid).float()
            cell = torch.where(valid, y * CLASSES + pred, CLASSES * CLASSES).flatten()  # ignored: a spare cell
            hist_gpu.scatter_add_(0, cell, torch.ones_like(cell))
            b = torch.where(valid, (conf * BINS).long().clamp_(max=BINS - 1), BINS).flatten()
            calib_gpu[0].scatter_add_(0, b, torch.ones_like(conf).flatten())
            calib_gpu[1].scatter_add_(0, b, correct.flatten())
            calib_gpu[2].scatter_add_(0, b, conf.flatten())
            acc_gpu.add_(correct.sum() / valid.sum())
        if i % log_every == log_every - 1:
            hist[:] = hist_gpu[:-1].view(CLASSES, CLASSES).cpu().numpy()
            calib[:] = calib_gpu[:, :BINS].cpu().numpy()
            log["pixel_acc"] = acc_gpu.item() / log_every
            acc_gpu.zero_()
            log["miou"], log["ece"] = miou(hist), ece(calib)
            log["reads"] += 1

    cc.run("c9_tv_segmentation_numpy_metrics", args, step, batch,
           extra=lambda: {"metrics_every": log_every, "metric_reads": log["reads"],
                          "miou": round(log["miou"], 4) if log["miou"] is not None else None})


if __name__ == "__main__":
    main()
