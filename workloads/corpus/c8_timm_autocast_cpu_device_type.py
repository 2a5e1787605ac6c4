"""C8 no mixed precision on the GPU (an autocast region written for the CPU): fine-tuning a timm
ViT-B/16 (vit_base_patch16_224, random weights standing in for the pretrained ones, 102 classes
for a flowers data set, drop path 0.1, timm's fused SDPA attention) at 224 px, batch 32, with
the usual fine-tuning recipe: random 224 crops of 256 x 256 images and flips on the GPU,
ImageNet normalization, label smoothing 0.1, fused AdamW with warm-up and cosine decay per step,
gradient clipping at 1.0; the loss is read every 50 steps. The images are 16 batches of uint8
made once on the GPU (the data set's decoded cache) and cycled.

The training script was first written for the group's CPU nodes (Sapphire Rapids, where bf16
runs on AMX), whose performance guide wraps the step in
`torch.autocast(device_type="cpu", dtype=torch.bfloat16)`. When the job moved to a GPU node
only `--device cuda` changed: an autocast region for the CPU leaves CUDA operators alone, so
the whole forward and backward run in float32 with PyTorch's default flags (TF32 off for
matrix products): the ViT's 48 nn.Linear layers and their gradients are FP32 GEMMs on the CUDA
cores, at a tenth of the tensor cores' bf16 rate, and the attention is float32 SDPA. Nothing
fails and the loss goes down as before.

--fix: gpuwhy's C8 advice (autocast with bf16): the same autocast region with the device type
of the model (`device_type="cuda"`); model, data, recipe and optimizer unchanged.

Written blind for the kilo batch.
"""
import math

import torch
import torch.nn.functional as F

import cc


def main():
    args = cc.parser(__doc__, warmup=5).parse_args()
    import timm

    dev = cc.torch_device(args)
    gpu = dev.type == "cuda"
    if args.smoke:
        arch, kw, batch, size, crop = "vit_tiny_patch16_224", dict(img_size=64), 4, 72, 64
    else:
        arch, kw, batch, size, crop = "vit_base_patch16_224", {}, 32, 256, 224
    classes = 102
    torch.manual_seed(0)
    model = timm.create_model(arch, pretrained=False, num_classes=classes, drop_path_rate=0.1, **kw).to(dev)
    model.train()
    total = 100_000
    opt = torch.optim.AdamW(model.parameters(), lr=5e-4 * batch / 512, weight_decay=0.05, fused=gpu)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / 500) * 0.5 * (1 + math.cos(math.pi * min(s, total) / total)))
    g = torch.Generator(device=dev).manual_seed(0)
    images = [torch.randint(0, 256, (batch, 3, size, size), dtype=torch.uint8, device=dev, generator=g) for _ in range(16)]
    labels = [torch.randint(0, classes, (batch,), device=dev, generator=g) for _ in range(16)]
    mean = torch.tensor([0.485, 0.456, 0.406], device=dev).view(1, 3, 1, 1) * 255
    std = torch.tensor([0.229, 0.224, 0.225], device=dev).view(1, 3, 1, 1) * 255
    rng = torch.Generator().manual_seed(1)   # crop offsets and flips, drawn on the host

    # the recipe's mixed precision, from the CPU nodes' performance guide
    amp = torch.autocast(device_type="cpu", dtype=torch.bfloat16)  # gpuwhy: plants C8 (autocast for the CPU: the CUDA model runs in float32, TF32 off)
    if args.fix:
        amp = torch.autocast(device_type=dev.type, dtype=torch.bfloat16)
    st = {"acc": torch.zeros((), device=dev), "loss": None, "reads": 0}

    def step(i):
        k = i % len(images)
        y0, x0 = (int(v) for v in torch.randint(0, size - crop + 1, (2,), generator=rng))
        x = images[k][:, :, y0:y0 + crop, x0:x0 + crop]
        if torch.rand((), generator=rng) < 0.5:
            x = x.flip(3)
        x = (x.float() - mean) / std
        with amp:
            logits = model(x)
            loss = F.cross_entropy(logits, labels[k], label_smoothing=0.1)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        st["acc"] += loss.detach().float()
        if i % 50 == 49:
            st["loss"] = st["acc"].item() / 50
            st["acc"].zero_()
            st["reads"] += 1

    cc.run("c8_timm_autocast_cpu_device_type", args, step, batch,
           extra=lambda: {"arch": arch, "autocast_device": amp.device, "autocast_dtype": str(amp.fast_dtype),
                          "matmul_tf32": torch.backends.cuda.matmul.allow_tf32, "loss": st["loss"],
                          "loss_reads": st["reads"],
                          "params_m": round(sum(p.numel() for p in model.parameters()) / 1e6, 1)})


if __name__ == "__main__":
    main()
