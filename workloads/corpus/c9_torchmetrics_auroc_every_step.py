"""C9 synchronization (a metric library computed every step): an image classifier in plain
PyTorch (timm ResNet-26d, random weights, 100 classes, 160 px, batch 256, channels_last,
bf16 autocast, SGD with Nesterov momentum, data made once on the GPU and cycled) whose
training loop keeps a torchmetrics MetricCollection (MulticlassAccuracy, macro
MulticlassF1Score, macro MulticlassAUROC and MulticlassAveragePrecision, exact curves:
thresholds=None; validate_args left at its default True) and, every step, calls the
collection on the batch (forward: update plus a compute on the batch) and turns each value
into a Python float for the progress-bar postfix ({k: v.item()}). The argument checks
(torch.unique of the targets, value-range checks read as Python bools), the logits check
before softmax and the exact curves (a per-class loop of sort/cumsum/torch.where with
data-dependent sizes) each wait for the GPU: about a hundred device-to-host waits a step,
each followed by a host-side gap while the next small kernels are issued.

--fix: gpuwhy's C9 advice (keep values on the GPU, log every N steps): the same collection
built with validate_args=False, update() each step on the GPU, compute() and the floats
for the postfix every 100 steps (then reset); model, data, metrics and their definitions
unchanged.

Written blind for the peak batch.
"""
import timm
import torch
import torch.nn.functional as F
import torchmetrics
from torchmetrics.classification import (MulticlassAccuracy, MulticlassAUROC, MulticlassAveragePrecision,
                                         MulticlassF1Score)

import cc


def metrics(classes, dev, validate):
    return torchmetrics.MetricCollection({
        "acc": MulticlassAccuracy(classes, validate_args=validate),
        "f1": MulticlassF1Score(classes, average="macro", validate_args=validate),
        "auroc": MulticlassAUROC(classes, thresholds=None, validate_args=validate),
        "ap": MulticlassAveragePrecision(classes, thresholds=None, validate_args=validate),
    }).to(dev)


def main():
    args = cc.parser(__doc__, warmup=5).parse_args()
    dev = cc.torch_device(args)
    arch, classes, px, batch = ("resnet18", 10, 32, 8) if args.smoke else ("resnet26d", 100, 160, 256)
    torch.manual_seed(0)
    model = timm.create_model(arch, pretrained=False, num_classes=classes).to(dev, memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, nesterov=True, weight_decay=5e-5)
    g = torch.Generator(device=dev).manual_seed(0)
    data = [(torch.randn(batch, 3, px, px, device=dev, generator=g).contiguous(memory_format=torch.channels_last),
             torch.randint(0, classes, (batch,), device=dev, generator=g)) for _ in range(4)]
    mc = metrics(classes, dev, validate=not args.fix)
    amp = dev.type == "cuda"
    postfix = {}

    def step(i):
        x, y = data[i % len(data)]
        with torch.autocast(dev.type, dtype=torch.bfloat16, enabled=amp):
            logits = model(x)
            loss = F.cross_entropy(logits, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if args.fix:
            mc.update(logits.detach().float(), y)
            if (i + 1) % 100 == 0:
                postfix.update({k: v.item() for k, v in mc.compute().items()})
                mc.reset()
        else:
            vals = mc(logits.detach().float(), y)  # gpuwhy: plants C9 (checks and exact curves wait for the GPU)
            postfix.update({k: v.item() for k, v in vals.items()})  # gpuwhy: plants C9 (four .item() a step)
            postfix["loss"] = loss.item()  # gpuwhy: plants C9

    cc.run("c9_torchmetrics_auroc_every_step", args, step, batch,
           extra={"metrics": "update each step, compute every 100" if args.fix else "forward + .item() every step"})


if __name__ == "__main__":
    main()
