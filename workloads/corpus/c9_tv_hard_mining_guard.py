"""C9 syncs that gate the whole step: a torchvision EfficientNet-B0 (128 px, batch 128, bf16
autocast, channels_last, batches on the GPU) trained eagerly with online hard-example
mining and a loss-spike guard, as written in many training scripts: the loss is the mean of
the per-sample losses above their median (per_sample[hard]: boolean-mask indexing, a sync),
the step is skipped when `if not torch.isfinite(loss) or loss > 10 * ema` (a Python branch on
a GPU value, a sync) and the running average is a Python float (loss.item()). Each sync
lets the GPU drain before the host launches the backward's and the optimizer's ~800 small
kernels, so the launch cost is no longer hidden.

--fix: the same loss and guard without syncs: hard samples weighted by a 0/1 mask
((per_sample * hard).sum() / hard.sum()), the skip as a 0/1 factor on the loss computed
on the GPU, the average a GPU tensor (gpuwhy's C9 advice: no Python control flow on GPU
values, keep values on the GPU).
"""
import torch
import torch.nn.functional as F
import torchvision

import cc


def main():
    args = cc.parser(__doc__).parse_args()
    dev = cc.torch_device(args)
    batch, res, classes = (8, 32, 10) if args.smoke else (128, 128, 1000)
    torch.backends.cudnn.benchmark = True
    model = torchvision.models.efficientnet_b0(num_classes=classes).to(dev).to(memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=0.005, momentum=0.9, nesterov=True, weight_decay=1e-5, foreach=True)
    g = torch.Generator(device=dev).manual_seed(0)
    xs = [torch.randn(batch, 3, res, res, device=dev, generator=g).contiguous(memory_format=torch.channels_last)
          for _ in range(4)]
    ys = [torch.randint(0, classes, (batch,), device=dev, generator=g) for _ in range(4)]
    ema = 7.0
    ema_t = torch.full((), 7.0, device=dev)
    skipped = 0

    def step(i):
        nonlocal ema, skipped
        with torch.autocast(dev.type, dtype=torch.bfloat16):
            logits = model(xs[i % 4])
        per_sample = F.cross_entropy(logits.float(), ys[i % 4], reduction="none")
        hard = per_sample >= per_sample.median()
        opt.zero_grad(set_to_none=True)
        if args.fix:
            loss = (per_sample * hard).sum() / hard.sum().clamp_min(1)
            ok = torch.isfinite(loss) & (loss < 10 * ema_t)
            (loss * ok).backward()
            ema_t.mul_(0.98).add_(0.02 * torch.where(ok, loss.detach(), ema_t))
            opt.step()
            return
        loss = per_sample[hard].mean()  # gpuwhy: plants C9 (boolean-mask indexing: a sync)
        if not torch.isfinite(loss) or loss > 10 * ema:  # gpuwhy: plants C9 (a Python branch on a GPU value)
            skipped += 1
            return
        loss.backward()
        opt.step()
        ema = 0.98 * ema + 0.02 * loss.item()

    cc.run("c9_tv_hard_mining_guard", args, step, batch, extra=lambda: {"skipped": skipped})


if __name__ == "__main__":
    main()
