"""C3 batch too small (tiny micro-batches under gradient accumulation, timm): fine-tuning a timm
EfficientNet-B0 (random weights, 38 classes as in a plant-disease data set, drop rate 0.2, drop
path 0.2) at 224 px with bf16 autocast and channels_last, AdamW (foreach) with a cosine
schedule, label smoothing 0.1, an effective batch of 128 images an optimizer step. The training
config was copied from the project's 8 GB-laptop setup: batch_size 16 with
accumulate_grad_batches 8, so every optimizer step runs 8 forward and backward passes of 16
images (loss scaled by 1/8) before AdamW steps. The images (2,048 uint8 photos at 256 px, a
small data set loaded once) are on the GPU, randomly cropped to 224, flipped and normalized
there; the loss is accumulated on the GPU and read every 50 optimizer steps. At 16 images,
EfficientNet's ~800 kernels a micro-batch (depthwise convolutions, BatchNorm, SiLU,
squeeze-excitation) are mostly a few microseconds long, many with fewer blocks than the
H200's 132 SMs: the GPU finishes them faster than Python and autograd issue them.

--fix: gpuwhy's C3 advice (raise the batch until utilization stops rising; an H200 has room):
micro-batch 128 with accumulate_grad_batches 1 (cc.fix_batch(128): 8x the micro-batch; with
GW_FIX_BATCH=N, N images a micro-batch and 128 / N accumulated), the same 128 images an
optimizer step, model, schedule and optimizer unchanged. One iteration is one optimizer step in
both runs, so the speed-up is per image.

Written blind for the delta batch.
"""
import math
import random

import timm
import torch
import torch.nn.functional as F

import cc


def main():
    args = cc.parser(__doc__).parse_args()
    dev = cc.torch_device(args)
    if args.smoke:
        effective, stored, res, images, classes = 8, 72, 64, 32, 38
        micro = cc.fix_batch(effective) if args.fix else 2
    else:
        effective, stored, res, images, classes = 128, 256, 224, 2048, 38
        micro = cc.fix_batch(effective) if args.fix else 16  # gpuwhy: plants C3 (micro-batches of 16 images, 8 accumulated a step)
    accum = max(1, effective // micro)
    model = timm.create_model("efficientnet_b0", pretrained=False, num_classes=classes, drop_rate=0.2,
                              drop_path_rate=0.2)
    model = model.to(dev, memory_format=torch.channels_last)
    decay = [p for p in model.parameters() if p.ndim > 1]
    no_decay = [p for p in model.parameters() if p.ndim <= 1]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.05}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=1e-3)
    total = 20_000
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / 200) * 0.5 * (1 + math.cos(math.pi * min(s, total) / total)))
    g = torch.Generator(device=dev).manual_seed(0)
    data = torch.randint(0, 256, (images, 3, stored, stored), dtype=torch.uint8, device=dev, generator=g)
    labels = torch.randint(0, classes, (images,), device=dev, generator=g)
    mean = torch.tensor([0.485, 0.456, 0.406], device=dev).view(1, 3, 1, 1) * 255
    std = torch.tensor([0.229, 0.224, 0.225], device=dev).view(1, 3, 1, 1) * 255
    acc = torch.zeros((), device=dev)
    log = {"loss": None, "reads": 0}
    # the crop offsets and flips of each micro-batch are drawn on the host (Python's RNG), like a
    # transform's parameters; the pixels never leave the GPU
    rng = random.Random(0)

    def batch_at(n):
        idx = torch.randint(0, images, (n,), device=dev, generator=g)
        y0, x0 = rng.randint(0, stored - res), rng.randint(0, stored - res)
        x = data[idx, :, y0:y0 + res, x0:x0 + res].float()
        if rng.random() < 0.5:
            x = x.flip(3)
        x = ((x - mean) / std).contiguous(memory_format=torch.channels_last)
        return x, labels[idx]

    def step(i):
        for _ in range(accum):
            x, y = batch_at(micro)
            with torch.autocast(dev.type, dtype=torch.bfloat16):
                loss = F.cross_entropy(model(x), y, label_smoothing=0.1) / accum
            loss.backward()
            acc.add_(loss.detach())
        opt.step()
        sched.step()
        opt.zero_grad(set_to_none=True)
        if i % 50 == 49:
            log["loss"] = acc.item() / 50
            log["reads"] += 1
            acc.zero_()

    cc.run("c3_timm_effnet_accum_microbatch", args, step, effective,
           extra=lambda: {"micro_batch": micro, "accumulation": accum, "loss_reads": log["reads"]})


if __name__ == "__main__":
    main()
