"""C9 host metrics every step: a torchvision ResNet-50 classifier (20 classes, 96 px, bf16
autocast, channels_last, batches already on the GPU) whose training loop logs scikit-learn
metrics of every batch: the softmax outputs are copied to the host (.cpu().numpy()) and
f1_score, roc_auc_score (one-vs-rest) and log_loss run on them before the next step is
launched, so the GPU waits for the copy and then for scikit-learn.

--fix: the same metrics on the outputs of every 100th step only (log_every=100), as
gpuwhy's C9 advice says (read GPU values every N steps); the other steps keep nothing on
the host.

scikit-learn is imported guarded: where it is missing, numpy versions of the three metrics
stand in (the JSON line says which ran, "metrics_lib").
"""
import numpy as np
import torch
import torch.nn.functional as F
import torchvision

import cc

try:
    from sklearn.metrics import f1_score, log_loss, roc_auc_score
    LIB = "sklearn"
except ImportError:  # numpy stand-ins: the same host work, roughly
    LIB = "numpy"

    def f1_score(y, pred, average="macro"):
        k = max(y.max(), pred.max()) + 1
        tp = np.bincount(y[pred == y], minlength=k)
        fp = np.bincount(pred, minlength=k) - tp
        fn = np.bincount(y, minlength=k) - tp
        return float(np.mean(2 * tp / np.maximum(2 * tp + fp + fn, 1)))

    def roc_auc_score(y, probs, multi_class="ovr"):
        aucs = []
        for c in range(probs.shape[1]):
            pos = y == c
            ranks = np.argsort(np.argsort(probs[:, c])) + 1
            n1, n0 = pos.sum(), (~pos).sum()
            aucs.append((ranks[pos].sum() - n1 * (n1 + 1) / 2) / max(n1 * n0, 1))
        return float(np.mean(aucs))

    def log_loss(y, probs, labels=None):
        return float(-np.mean(np.log(np.clip(probs[np.arange(len(y)), y], 1e-15, 1))))


def main():
    args = cc.parser(__doc__).parse_args()
    dev = cc.torch_device(args)
    batch, res, classes = (32, 32, 5) if args.smoke else (256, 96, 20)
    torch.backends.cudnn.benchmark = True
    model = torchvision.models.resnet50(num_classes=classes).to(dev).to(memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, nesterov=True, foreach=True)
    g = torch.Generator(device=dev).manual_seed(0)
    xs = [torch.randn(batch, 3, res, res, device=dev, generator=g).contiguous(memory_format=torch.channels_last)
          for _ in range(4)]
    # every class in every batch: roc_auc_score needs all of them present
    ys = [torch.arange(batch, device=dev)[torch.randperm(batch, device=dev, generator=g)] % classes for _ in range(4)]
    log_every = 100 if args.fix else 1
    history = []
    labels = list(range(classes))

    def step(i):
        x, y = xs[i % 4], ys[i % 4]
        with torch.autocast(dev.type, dtype=torch.bfloat16):
            logits = model(x)
        loss = F.cross_entropy(logits.float(), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if i % log_every == 0:
            probs, yh = logits.detach().float().softmax(1).cpu().numpy(), y.cpu().numpy()
            pred = probs.argmax(1)
            history.append((f1_score(yh, pred, average="macro"), roc_auc_score(yh, probs, multi_class="ovr"), log_loss(yh, probs, labels=labels)))  # gpuwhy: plants C9 (scikit-learn on .cpu() outputs every step)

    cc.run("c9_sklearn_metrics_step", args, step, batch, extra={"metrics_lib": LIB})


if __name__ == "__main__":
    main()
