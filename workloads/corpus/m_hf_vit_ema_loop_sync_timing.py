"""C4 + C9 an EMA of the weights updated one parameter at a time, and a per-step
torch.cuda.synchronize() for the throughput log: fine-tuning an HF ViTForImageClassification
(ViT-S/16 from a ViTConfig: 12 layers of width 384, 6 heads, 224 px, 100 classes; 21.7 M
parameters, random init, SDPA) with a custom loop: bf16 autocast, fused AdamW, label
smoothing 0.1, batch 64 random crops and flips of 256 x 256 uint8 images made once on the GPU;
the loss is read every 50 steps.

Two habits of hand-written fine-tuning loops: the EMA model (decay 0.9998) is updated after
each optimizer step by a Python loop over the 200 parameter tensors, `ema_p.mul_(d).add_(p,
alpha=1 - d)` (C4: ~400 small kernels a step, each a few microseconds of GPU work behind its
launch), and the step's time is measured for the images/s line with `torch.cuda.synchronize()`
and `time.perf_counter()` around it (C9: the GPU drained every step, so the launches of each
step's forward pass start on an idle GPU).

--fix: both causes' advice: the EMA as one torch._foreach_lerp_ over the parameter lists
(a few multi-tensor kernels), and the timing taken with CUDA events read every 50 steps
(no per-step synchronize); model, data, optimizer, EMA decay and what is logged unchanged
(both EMA updates checked equal at start).

Written blind for the mike batch.
"""
import copy
import time

import torch
import torch.nn.functional as F
from transformers import ViTConfig, ViTForImageClassification

import cc


def main():
    args = cc.parser(__doc__, warmup=5).parse_args()
    dev = cc.torch_device(args)
    gpu = dev.type == "cuda"
    if args.smoke:
        cfg = ViTConfig(image_size=32, patch_size=8, hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=128, num_labels=10)
        n_img, src, batch = 16, 40, 4
    else:
        cfg = ViTConfig(image_size=224, patch_size=16, hidden_size=384, num_hidden_layers=12, num_attention_heads=6,
                        intermediate_size=1536, num_labels=100)
        n_img, src, batch = 2048, 256, 64
    crop = cfg.image_size
    torch.manual_seed(0)
    model = ViTForImageClassification(cfg).to(dev).train()
    ema = copy.deepcopy(model).eval()
    for p in ema.parameters():
        p.requires_grad_(False)
    params = [p for p in model.parameters()]
    ema_params = [p for p in ema.parameters()]
    decay = 0.9998
    opt = torch.optim.AdamW(params, lr=1e-4, weight_decay=0.05, fused=gpu)

    def ema_loop():
        with torch.no_grad():
            for e, p in zip(ema_params, params):
                e.mul_(decay).add_(p, alpha=1 - decay)  # gpuwhy: plants C4 (the EMA one parameter at a time: 2 kernels for each of 200 tensors a step)

    def ema_foreach():
        with torch.no_grad():
            torch._foreach_lerp_(ema_params, params, 1 - decay)

    # equivalence at start: both EMA updates give the same weights
    saved = [e.clone() for e in ema_params]
    with torch.no_grad():
        for p in params:
            p.add_(torch.randn_like(p) * 1e-2)
    ema_loop()
    a = [e.clone() for e in ema_params]
    with torch.no_grad():
        for e, s in zip(ema_params, saved):
            e.copy_(s)
    ema_foreach()
    assert all(torch.allclose(x, y, rtol=1e-5, atol=1e-7) for x, y in zip(a, ema_params))

    g = torch.Generator(device=dev).manual_seed(1)
    images = torch.randint(0, 256, (n_img, 3, src, src), dtype=torch.uint8, device=dev, generator=g)
    labels = torch.randint(0, cfg.num_labels, (n_img,), device=dev, generator=g)
    mean = torch.tensor([0.5, 0.5, 0.5], device=dev).view(1, 3, 1, 1) * 255
    ar = torch.arange(crop, device=dev)
    bi = torch.arange(batch, device=dev)[:, None, None, None]
    ci = torch.arange(3, device=dev)[None, :, None, None]
    amp = torch.autocast(dev.type, dtype=torch.bfloat16, enabled=gpu)
    st = {"acc": torch.zeros((), device=dev), "loss": None, "reads": 0, "ips": None, "t": [],
          "ev": None}

    def get_batch():
        idx = torch.randint(0, n_img, (batch,), device=dev, generator=g)
        r = torch.randint(0, src - crop + 1, (batch, 1), device=dev, generator=g) + ar
        c = torch.randint(0, src - crop + 1, (batch, 1), device=dev, generator=g) + ar
        c = torch.where(torch.rand(batch, 1, device=dev, generator=g) < 0.5, c.flip(1), c)
        x = images[idx][bi, ci, r[:, None, :, None], c[:, None, None, :]]
        return (x.float() - mean) / 127.5, labels[idx]

    def train_step():
        x, y = get_batch()
        with amp:
            logits = model(pixel_values=x).logits
            loss = F.cross_entropy(logits.float(), y, label_smoothing=0.1)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        st["acc"] += loss.detach()

    def step(i):
        if args.fix:
            if st["ev"] is None and gpu:
                st["ev"] = torch.cuda.Event(enable_timing=True)
                st["ev"].record()
            train_step()
            ema_foreach()
            if i % 50 == 49:
                if gpu:
                    end = torch.cuda.Event(enable_timing=True)
                    end.record()
                    end.synchronize()
                    st["ips"] = 50 * batch / (st["ev"].elapsed_time(end) / 1e3)
                    st["ev"] = end
        else:
            t0 = time.perf_counter()
            train_step()
            ema_loop()
            if gpu:
                torch.cuda.synchronize()  # gpuwhy: plants C9 (the step timed with a device-wide sync every step)
            st["t"].append(time.perf_counter() - t0)
            if i % 50 == 49:
                st["ips"] = 50 * batch / sum(st["t"][-50:])
                st["t"].clear()
        if i % 50 == 49:
            st["loss"] = st["acc"].item() / 50
            st["acc"].zero_()
            st["reads"] += 1

    cc.run("m_hf_vit_ema_loop_sync_timing", args, step, batch,
           extra=lambda: {"ema": "foreach_lerp" if args.fix else "python loop", "ema_tensors": len(ema_params),
                          "logged_images_per_s": st["ips"], "loss": st["loss"], "loss_reads": st["reads"],
                          "params_m": round(sum(p.numel() for p in params) / 1e6, 1)})


if __name__ == "__main__":
    main()
