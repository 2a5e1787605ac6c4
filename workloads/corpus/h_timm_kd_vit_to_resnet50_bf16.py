"""Healthy control: knowledge distillation done as the DeiT recipe does it, compressing a timm
ViT-B/16 classifier (the frozen teacher: 86 M parameters, fused attention, eval) into a timm
ResNet-50 student for deployment (random weights for both, 1,000 classes): the teacher's
forward pass under torch.no_grad() inside the same bf16 autocast region as the student's,
the student channels_last, cudnn.benchmark, SGD with Nesterov momentum (foreach) and a cosine
schedule; loss = 0.5 x cross-entropy (label smoothing 0.1) + 0.5 x T^2 x KL(student/T ||
teacher/T) at T = 4; batch 128 random crops and flips at 224 px of 2,048 synthetic 256 x 256
uint8 images held on the GPU; the loss and the student's agreement with the teacher are read
every 50 steps. About 7.6 TFLOP a step (4.5 in the teacher's forward pass, 3.1 in the
student's forward and backward passes) against ~6-9 ms of host issue: GPU-bound, nothing to
fix.

Written blind for the november batch.
"""
import timm
import torch
import torch.nn.functional as F

import cc


def main():
    args = cc.parser(__doc__, warmup=6).parse_args()
    dev = cc.torch_device(args)
    gpu = dev.type == "cuda"
    if args.smoke:
        teacher = timm.create_model("vit_tiny_patch16_224", pretrained=False, num_classes=10, img_size=32,
                                    patch_size=8)
        student = timm.create_model("resnet18", pretrained=False, num_classes=10)
        n_img, src, crop, batch, classes = 16, 40, 32, 4, 10
    else:
        teacher = timm.create_model("vit_base_patch16_224", pretrained=False, num_classes=1000)
        student = timm.create_model("resnet50", pretrained=False, num_classes=1000)
        n_img, src, crop, batch, classes = 2048, 256, 224, 128, 1000
    torch.backends.cudnn.benchmark = True
    torch.manual_seed(0)
    teacher = teacher.to(dev).eval()
    for p in teacher.parameters():
        p.requires_grad_(False)
    student = student.to(dev, memory_format=torch.channels_last).train()
    opt = torch.optim.SGD(student.parameters(), lr=0.2, momentum=0.9, nesterov=True, weight_decay=5e-5,
                          foreach=True)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, 100_000)
    T = 4.0
    g = torch.Generator(device=dev).manual_seed(1)
    images = torch.randint(0, 256, (n_img, 3, src, src), dtype=torch.uint8, device=dev, generator=g)
    labels = torch.randint(0, classes, (n_img,), device=dev, generator=g)
    mean = torch.tensor([0.485, 0.456, 0.406], device=dev).view(1, 3, 1, 1) * 255
    std = torch.tensor([0.229, 0.224, 0.225], device=dev).view(1, 3, 1, 1) * 255
    ar = torch.arange(crop, device=dev)
    bi = torch.arange(batch, device=dev)[:, None, None, None]
    ci = torch.arange(3, device=dev)[None, :, None, None]
    amp = torch.autocast(dev.type, dtype=torch.bfloat16, enabled=gpu)
    st = {"loss": torch.zeros((), device=dev), "agree": torch.zeros((), device=dev), "last": None,
          "agreement": None, "reads": 0}

    def step(i):
        idx = torch.randint(0, n_img, (batch,), device=dev, generator=g)
        r = torch.randint(0, src - crop + 1, (batch, 1), device=dev, generator=g) + ar
        c = torch.randint(0, src - crop + 1, (batch, 1), device=dev, generator=g) + ar
        c = torch.where(torch.rand(batch, 1, device=dev, generator=g) < 0.5, c.flip(1), c)
        x = (images[idx][bi, ci, r[:, None, :, None], c[:, None, None, :]].float() - mean) / std
        y = labels[idx]
        with amp:
            with torch.no_grad():
                t_logits = teacher(x)
            s_logits = student(x.contiguous(memory_format=torch.channels_last))
            ce = F.cross_entropy(s_logits.float(), y, label_smoothing=0.1)
            kd = F.kl_div(F.log_softmax(s_logits.float() / T, -1), F.log_softmax(t_logits.float() / T, -1),
                          reduction="batchmean", log_target=True) * T * T
            loss = 0.5 * ce + 0.5 * kd
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        st["loss"] += loss.detach()
        st["agree"] += (s_logits.argmax(-1) == t_logits.argmax(-1)).float().mean()
        if i % 50 == 49:
            st["last"] = st["loss"].item() / 50
            st["agreement"] = st["agree"].item() / 50
            st["loss"].zero_()
            st["agree"].zero_()
            st["reads"] += 1

    cc.run("h_timm_kd_vit_to_resnet50_bf16", args, step, batch,
           extra=lambda: {"teacher": "vit_base_patch16_224", "student": "resnet50", "loss": st["last"],
                          "teacher_agreement": st["agreement"], "loss_reads": st["reads"]})


if __name__ == "__main__":
    main()
