"""C3 work too small for the GPU (per-example gradients one example at a time): differentially
private training (DP-SGD, Abadi et al. 2016) of a CIFAR-10 classifier, a timm resnet18 with
GroupNorm instead of BatchNorm (BatchNorm mixes examples, which DP-SGD forbids) and the usual
CIFAR stem (3 x 3 stride-1 first convolution, no max-pool; 11.2 M parameters). Each optimizer
step takes a logical batch of 128 images (32 x 32, random crops with reflection padding and
flips, made on the GPU from 8,192 synthetic uint8 images held there), clips each example's
gradient to L2 norm 1.0, sums the clipped gradients, adds Gaussian noise (multiplier 1.1) and
takes an SGD step with momentum; the loss is read every 50 steps. Convolutions in float32 with
cuDNN's default TF32.

The per-example gradients are computed the way TF-Privacy's `num_microbatches = batch_size`
does it and many hand-written PyTorch ports copy: a Python loop over the 128 examples, each a
forward and a torch.autograd.grad at batch 1 (about 270 aten operations on one 32 x 32 image,
kernels with a handful of blocks, most shorter than their launch), then a foreach norm, the
clip factor and a foreach accumulate.

--fix: gpuwhy's C3 advice (raise the batch): the per-example gradients of 64 examples at once
(cc.fix_batch(64); GW_FIX_BATCH times another size) with torch.func (vmap over grad of a
functional_call of the same model), the same clipping, sum, noise and step; model, data,
augmentation and optimizer unchanged (both checked against each other at start: the summed
clipped gradients of 8 examples agree).

Written blind for the lima batch.
"""
from functools import partial

import timm
import torch
import torch.nn as nn
import torch.nn.functional as F
from timm.layers import GroupNorm
from torch.func import functional_call, grad, vmap

import cc

CLIP, SIGMA = 1.0, 1.1


def main():
    args = cc.parser(__doc__).parse_args()
    dev = cc.torch_device(args)
    gpu = dev.type == "cuda"
    n_img, batch, chunk = (64, 8, 4) if args.smoke else (8192, 128, cc.fix_batch(64))
    torch.manual_seed(0)
    model = timm.create_model("resnet18", num_classes=10, norm_layer=partial(GroupNorm, num_groups=16))
    model.conv1 = nn.Conv2d(3, 64, 3, 1, 1, bias=False)        # the CIFAR stem
    model.maxpool = nn.Identity()
    model = model.to(dev).train()
    names = [k for k, _ in model.named_parameters()]
    plist = [p for _, p in model.named_parameters()]
    params = {k: p.detach() for k, p in model.named_parameters()}   # views of the live weights
    buffers = {k: b for k, b in model.named_buffers()}
    opt = torch.optim.SGD(plist, lr=0.5, momentum=0.9, foreach=True)

    g = torch.Generator(device=dev).manual_seed(1)
    images = torch.randint(0, 256, (n_img, 3, 32, 32), dtype=torch.uint8, device=dev, generator=g)
    labels = torch.randint(0, 10, (n_img,), device=dev, generator=g)
    mean = torch.tensor([0.4914, 0.4822, 0.4465], device=dev).view(1, 3, 1, 1) * 255
    std = torch.tensor([0.2470, 0.2435, 0.2616], device=dev).view(1, 3, 1, 1) * 255
    ar = torch.arange(32, device=dev)

    def get_batch():
        idx = torch.randint(0, n_img, (batch,), device=dev, generator=g)
        x = F.pad(images[idx].float(), (4, 4, 4, 4), mode="reflect")
        i = torch.randint(0, 9, (batch, 1), device=dev, generator=g) + ar
        j = torch.randint(0, 9, (batch, 1), device=dev, generator=g) + ar
        flip = torch.rand(batch, 1, device=dev, generator=g) < 0.5
        j = torch.where(flip, j.flip(1), j)
        b = torch.arange(batch, device=dev)[:, None, None, None]
        c = torch.arange(3, device=dev)[None, :, None, None]
        x = x[b, c, i[:, None, :, None], j[:, None, None, :]]
        return (x - mean) / std, labels[idx]

    def clipped_sum_loop(x, y):
        """TF-Privacy's microbatches of one: a forward and backward per example."""
        summed = [torch.zeros_like(p) for p in plist]
        total = torch.zeros((), device=dev)
        for k in range(x.shape[0]):
            loss = F.cross_entropy(model(x[k:k + 1]), y[k:k + 1])  # gpuwhy: plants C3 (one example per forward and backward: ~270 tiny kernels, 128 times a step)
            grads = list(torch.autograd.grad(loss, plist))
            norm = torch.linalg.vector_norm(torch.stack(torch._foreach_norm(grads)))
            torch._foreach_mul_(grads, (CLIP / (norm + 1e-6)).clamp(max=1.0))
            torch._foreach_add_(summed, grads)
            total += loss.detach()
        return summed, total

    def example_loss(p, b, xi, yi):
        loss = F.cross_entropy(functional_call(model, (p, b), (xi[None],)), yi[None])
        return loss, loss.detach()

    per_example = vmap(grad(example_loss, has_aux=True), in_dims=(None, None, 0, 0))

    def clipped_sum_vmap(x, y):
        """torch.func: the per-example gradients of `chunk` examples in one batched pass."""
        summed = [torch.zeros_like(p) for p in plist]
        total = torch.zeros((), device=dev)
        for s in range(0, x.shape[0], chunk):
            xs, ys = x[s:s + chunk], y[s:s + chunk]
            gs, losses = per_example(params, buffers, xs, ys)         # name -> [chunk, *shape]
            norms = torch.linalg.vector_norm(torch.stack([gs[k].flatten(1).norm(dim=1) for k in names], 1), dim=1)
            factor = (CLIP / (norms + 1e-6)).clamp(max=1.0)
            torch._foreach_add_(summed, [torch.einsum("b,b...->...", factor, gs[k]) for k in names])
            total += losses.sum()
        return summed, total

    # both ways give the same clipped sum (8 examples)
    xc, yc = get_batch()
    a, _ = clipped_sum_loop(xc[:8], yc[:8])
    b_, _ = clipped_sum_vmap(xc[:8], yc[:8])
    check = max(float((u - v).abs().max() / (u.abs().max() + 1e-12)) for u, v in zip(a, b_))
    if check > 1e-3:
        raise SystemExit(f"vmapped per-example gradients disagree with the loop: {check}")
    clipped_sum = clipped_sum_vmap if args.fix else clipped_sum_loop
    st = {"acc": torch.zeros((), device=dev), "loss": None, "reads": 0}

    def step(i):
        x, y = get_batch()
        summed, total = clipped_sum(x, y)
        noise = [torch.randn(p.shape, device=dev, generator=g) * (SIGMA * CLIP) for p in plist]
        torch._foreach_add_(summed, noise)
        torch._foreach_div_(summed, float(batch))
        for p, s in zip(plist, summed):
            p.grad = s
        opt.step()
        st["acc"] += total / batch
        if i % 50 == 49:
            st["loss"] = st["acc"].item() / 50
            st["acc"].zero_()
            st["reads"] += 1

    cc.run("c3_timm_dpsgd_per_example_loop", args, step, batch,
           extra=lambda: {"logical_batch": batch, "examples_per_pass": chunk if args.fix else 1,
                          "per_example": "torch.func vmap" if args.fix else "loop of batch-1 backward passes",
                          "check": round(check, 8), "loss": st["loss"], "loss_reads": st["reads"],
                          "params_m": round(sum(p.numel() for p in plist) / 1e6, 2), "gpu": gpu})


if __name__ == "__main__":
    main()
