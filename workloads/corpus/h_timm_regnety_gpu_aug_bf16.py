"""Healthy control: ImageNet-style training of a timm RegNetY-4.0GF (regnety_040: 20.6 M
parameters, grouped convolutions with squeeze-excitation, random init, 1,000 classes) written
the way timm's train.py runs it on one GPU: bf16 autocast, channels_last, cudnn.benchmark,
SGD with Nesterov momentum (foreach) and cosine decay, label smoothing 0.1, mixup (alpha 0.2)
on the GPU, batch 128 random crops and flips at 224 px of 256 x 256 uint8 images (2,048 made
once on the GPU, normalized there); the loss is read every 50 steps. About 1.55 TFLOP a step of
convolutions (grouped ones included) with their batch-norm and activation passes:
GPU-bound, nothing to fix.

Written blind for the mike batch.
"""
import math

import timm
import torch
import torch.nn.functional as F

import cc


def main():
    args = cc.parser(__doc__, warmup=8).parse_args()
    dev = cc.torch_device(args)
    gpu = dev.type == "cuda"
    if args.smoke:
        name, n_img, src, crop, batch, classes = "regnety_002", 16, 72, 64, 4, 10
    else:
        name, n_img, src, crop, batch, classes = "regnety_040", 2048, 256, 224, 128, 1000
    torch.manual_seed(0)
    torch.backends.cudnn.benchmark = True
    model = timm.create_model(name, num_classes=classes).to(dev).train().to(memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=0.1 * batch / 256, momentum=0.9, nesterov=True,
                          weight_decay=5e-5, foreach=True)
    fwd = model
    if args.alt:  # C4's fix: CUDA graphs (reduce-overhead) over the model's forward and backward
        fwd = torch.compile(model, mode=cc.alt_setup(args, "reduce-overhead", 10), dynamic=False)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 0.5 * (1 + math.cos(math.pi * min(s, 500_000) / 500_000)))
    g = torch.Generator(device=dev).manual_seed(1)
    images = torch.randint(0, 256, (n_img, 3, src, src), dtype=torch.uint8, device=dev, generator=g)
    labels = torch.randint(0, classes, (n_img,), device=dev, generator=g)
    mean = torch.tensor([0.485, 0.456, 0.406], device=dev).view(1, 3, 1, 1) * 255
    std = torch.tensor([0.229, 0.224, 0.225], device=dev).view(1, 3, 1, 1) * 255
    ar = torch.arange(crop, device=dev)
    bi = torch.arange(batch, device=dev)[:, None, None, None]
    ci = torch.arange(3, device=dev)[None, :, None, None]
    amp = torch.autocast(dev.type, dtype=torch.bfloat16, enabled=gpu)
    beta = torch.distributions.Beta(torch.tensor(0.2, device=dev), torch.tensor(0.2, device=dev))
    st = {"acc": torch.zeros((), device=dev), "loss": None, "reads": 0}

    def step(i):
        idx = torch.randint(0, n_img, (batch,), device=dev, generator=g)
        r = torch.randint(0, src - crop + 1, (batch, 1), device=dev, generator=g) + ar
        c = torch.randint(0, src - crop + 1, (batch, 1), device=dev, generator=g) + ar
        c = torch.where(torch.rand(batch, 1, device=dev, generator=g) < 0.5, c.flip(1), c)
        x = ((images[idx][bi, ci, r[:, None, :, None], c[:, None, None, :]].float() - mean) / std)
        x = x.contiguous(memory_format=torch.channels_last)
        y = F.one_hot(labels[idx], classes).float() * 0.9 + 0.1 / classes
        lam = beta.sample()
        x = lam * x + (1 - lam) * x.flip(0)
        y = lam * y + (1 - lam) * y.flip(0)
        with amp:
            out = fwd(x)
        loss = torch.sum(-y * F.log_softmax(out.float(), -1), -1).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        st["acc"] += loss.detach()
        if i % 50 == 49:
            st["loss"] = st["acc"].item() / 50
            st["acc"].zero_()
            st["reads"] += 1

    cc.run("h_timm_regnety_gpu_aug_bf16", args, step, batch,
           extra=lambda: {"model": name, "loss": st["loss"], "loss_reads": st["reads"],
                          "params_m": round(sum(p.numel() for p in model.parameters()) / 1e6, 1)})


if __name__ == "__main__":
    main()
