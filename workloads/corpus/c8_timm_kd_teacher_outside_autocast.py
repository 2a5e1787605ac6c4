"""C8 no mixed precision where most of the FLOPs are (a distillation teacher called outside the
autocast region): DeiT-style hard-label distillation (Touvron et al. 2021) of a timm
deit_small_distilled_patch16_224 student (22 M parameters, class and distillation tokens)
from a ViT-B/16 teacher (timm vit_base_patch16_224, 86 M parameters, frozen, eval; random
weights standing in for a fine-tuned one), 100 classes, batch 128 at 224 px: random 224 crops
and flips of 256 x 256 uint8 images (2,048 made once on the GPU), ImageNet normalization,
loss = 0.5 x label-smoothed cross-entropy of the class head + 0.5 x cross-entropy of the
distillation head against the teacher's argmax; fused AdamW with warm-up and cosine decay;
the loss is read every 50 steps.

The training loop is the one many distillation scripts write: the teacher's logits first,
under `torch.no_grad()`, then the student's forward and loss under
`torch.autocast("cuda", dtype=torch.bfloat16)`. The teacher's forward is outside the autocast
region, so its 12 blocks run in float32 with PyTorch's default flags (matmul TF32 off): 4.3
TFLOP of FP32 GEMMs a step on the CUDA cores, more than the student's whole forward and
backward in bf16.

--fix: gpuwhy's C8 advice (autocast bf16 around the forward passes): the teacher's forward
inside the same autocast region (still under no_grad); models, data, losses and optimizer
unchanged.

Written blind for the lima batch.
"""
import math

import timm
import torch
import torch.nn.functional as F

import cc


def main():
    args = cc.parser(__doc__, warmup=5).parse_args()
    dev = cc.torch_device(args)
    gpu = dev.type == "cuda"
    if args.smoke:
        n_img, src, crop, batch, classes = 16, 40, 32, 4, 10
        skw = dict(img_size=crop, patch_size=8, embed_dim=64, depth=2, num_heads=2)
        tkw = dict(img_size=crop, patch_size=8, embed_dim=96, depth=2, num_heads=2)
    else:
        n_img, src, crop, batch, classes = 2048, 256, 224, 128, 100
        skw, tkw = {}, {}
    torch.manual_seed(0)
    student = timm.create_model("deit_small_distilled_patch16_224", num_classes=classes, drop_path_rate=0.1, **skw)
    student.set_distilled_training(True)
    student = student.to(dev).train()
    teacher = timm.create_model("vit_base_patch16_224", num_classes=classes, **tkw).to(dev).eval()
    for p in teacher.parameters():
        p.requires_grad_(False)
    opt = torch.optim.AdamW(student.parameters(), lr=5e-4 * batch / 512, weight_decay=0.05, fused=gpu)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / 500) * 0.5 * (1 + math.cos(math.pi * min(s, 300_000) / 300_000)))

    g = torch.Generator(device=dev).manual_seed(1)
    images = torch.randint(0, 256, (n_img, 3, src, src), dtype=torch.uint8, device=dev, generator=g)
    labels = torch.randint(0, classes, (n_img,), device=dev, generator=g)
    mean = torch.tensor([0.485, 0.456, 0.406], device=dev).view(1, 3, 1, 1) * 255
    std = torch.tensor([0.229, 0.224, 0.225], device=dev).view(1, 3, 1, 1) * 255
    ar = torch.arange(crop, device=dev)
    bi = torch.arange(batch, device=dev)[:, None, None, None]
    ci = torch.arange(3, device=dev)[None, :, None, None]
    amp = torch.autocast(dev.type, dtype=torch.bfloat16, enabled=gpu)

    def get_batch():
        idx = torch.randint(0, n_img, (batch,), device=dev, generator=g)
        r = torch.randint(0, src - crop + 1, (batch, 1), device=dev, generator=g) + ar
        c = torch.randint(0, src - crop + 1, (batch, 1), device=dev, generator=g) + ar
        c = torch.where(torch.rand(batch, 1, device=dev, generator=g) < 0.5, c.flip(1), c)
        x = images[idx][bi, ci, r[:, None, :, None], c[:, None, None, :]]
        return ((x.float() - mean) / std).contiguous(), labels[idx]

    st = {"acc": torch.zeros((), device=dev), "loss": None, "reads": 0}

    def step(i):
        x, y = get_batch()
        if args.fix:
            with torch.no_grad(), amp:
                t_logits = teacher(x)
        else:
            with torch.no_grad():
                t_logits = teacher(x)  # gpuwhy: plants C8 (the teacher's forward outside the autocast region: 4.3 TFLOP of FP32 GEMMs a step, TF32 off)
        with amp:
            out, out_dist = student(x)
            loss = 0.5 * F.cross_entropy(out.float(), y, label_smoothing=0.1) \
                + 0.5 * F.cross_entropy(out_dist.float(), t_logits.argmax(1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        st["acc"] += loss.detach()
        if i % 50 == 49:
            st["loss"] = st["acc"].item() / 50
            st["acc"].zero_()
            st["reads"] += 1

    cc.run("c8_timm_kd_teacher_outside_autocast", args, step, batch,
           extra=lambda: {"teacher_precision": "bf16 autocast" if args.fix else "float32",
                          "tf32_matmul": torch.backends.cuda.matmul.allow_tf32, "loss": st["loss"],
                          "loss_reads": st["reads"],
                          "student_params_m": round(sum(p.numel() for p in student.parameters()) / 1e6, 1),
                          "teacher_params_m": round(sum(p.numel() for p in teacher.parameters()) / 1e6, 1)})


if __name__ == "__main__":
    main()
