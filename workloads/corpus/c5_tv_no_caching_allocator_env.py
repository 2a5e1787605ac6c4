"""C5 a debugging environment variable left on: PYTORCH_NO_CUDA_MEMORY_CACHING=1 (PyTorch's
caching allocator turned off) in the environment block of a training script after a
compute-sanitizer memcheck session: fine-tuning a torchvision ResNet-50 (random weights, 100
classes) at 224 px, batch 64, bf16 autocast, channels_last, cudnn.benchmark, SGD with
Nesterov momentum (foreach) and a cosine schedule, label smoothing 0.1; 2,048 uint8 256 x 256
images held on the GPU, random crops and flips there; the loss is read every 50 steps.

The author hunted a suspected GPU memory leak with `compute-sanitizer --tool memcheck
--leak-check full`, which only sees PyTorch's tensors when each one is its own cudaMalloc, so
the script's environment block gained `os.environ["PYTORCH_NO_CUDA_MEMORY_CACHING"] = "1"`
(the setting PyTorch's and NVIDIA's notes give for sanitizer runs) next to
TORCH_SHOW_CPP_STACKTRACES, and kept it after the hunt. With the variable set, every tensor
the step makes (activations, autocast's bf16 weight copies, gradients, the optimizer's
temporaries: about 800 a step) is a cudaMalloc and every one it drops a cudaFree, and
cudaFree waits for the whole device: the host stops about 800 times a step until the GPU has
drained its queue, and the GPU waits each time for the host to start it again.

--fix: gpuwhy's C5 advice (unset the debugging variable): the line deleted from the environment
block, so the caching allocator is back; TORCH_SHOW_CPP_STACKTRACES, model, data and optimizer
unchanged.

Written blind for the november batch.
"""
import os
import sys

# ---- environment (before torch touches CUDA) --------------------------------
os.environ.setdefault("TORCH_SHOW_CPP_STACKTRACES", "1")
if "--fix" not in sys.argv:
    os.environ["PYTORCH_NO_CUDA_MEMORY_CACHING"] = "1"  # gpuwhy: plants C5 (the caching allocator off: a cudaMalloc for every new tensor and a device-wide cudaFree for every dropped one)

import torch
import torch.nn.functional as F
import torchvision

import cc


def main():
    args = cc.parser(__doc__, warmup=4).parse_args()
    dev = cc.torch_device(args)
    gpu = dev.type == "cuda"
    if args.smoke:
        n_img, src, crop, batch, classes = 16, 40, 32, 4, 10
    else:
        n_img, src, crop, batch, classes = 2048, 256, 224, 64, 100
    torch.backends.cudnn.benchmark = True
    torch.manual_seed(0)
    model = torchvision.models.resnet50(weights=None, num_classes=classes)
    model = model.to(dev, memory_format=torch.channels_last).train()
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, nesterov=True, weight_decay=5e-5,
                          foreach=True)
    total = 50_000
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, total)
    g = torch.Generator(device=dev).manual_seed(1)
    images = torch.randint(0, 256, (n_img, 3, src, src), dtype=torch.uint8, device=dev, generator=g)
    labels = torch.randint(0, classes, (n_img,), device=dev, generator=g)
    mean = torch.tensor([0.485, 0.456, 0.406], device=dev).view(1, 3, 1, 1) * 255
    std = torch.tensor([0.229, 0.224, 0.225], device=dev).view(1, 3, 1, 1) * 255
    ar = torch.arange(crop, device=dev)
    bi = torch.arange(batch, device=dev)[:, None, None, None]
    ci = torch.arange(3, device=dev)[None, :, None, None]
    amp = torch.autocast(dev.type, dtype=torch.bfloat16, enabled=gpu)
    log = {"acc": torch.zeros((), device=dev), "loss": None, "reads": 0}

    def step(i):
        idx = torch.randint(0, n_img, (batch,), device=dev, generator=g)
        r = torch.randint(0, src - crop + 1, (batch, 1), device=dev, generator=g) + ar
        c = torch.randint(0, src - crop + 1, (batch, 1), device=dev, generator=g) + ar
        c = torch.where(torch.rand(batch, 1, device=dev, generator=g) < 0.5, c.flip(1), c)
        x = images[idx][bi, ci, r[:, None, :, None], c[:, None, None, :]]
        x = ((x.float() - mean) / std).contiguous(memory_format=torch.channels_last)
        y = labels[idx]
        with amp:
            loss = F.cross_entropy(model(x).float(), y, label_smoothing=0.1)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        log["acc"] += loss.detach()
        if i % 50 == 49:
            log["loss"] = log["acc"].item() / 50
            log["acc"].zero_()
            log["reads"] += 1

    cc.run("c5_tv_no_caching_allocator_env", args, step, batch,
           extra=lambda: {"pytorch_no_cuda_memory_caching": os.environ.get("PYTORCH_NO_CUDA_MEMORY_CACHING", ""),
                          "loss": log["loss"], "loss_reads": log["reads"]})


if __name__ == "__main__":
    main()
