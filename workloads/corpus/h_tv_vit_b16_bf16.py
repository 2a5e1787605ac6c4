"""Healthy control: a torchvision ViT-B/16 trained in bf16 autocast at batch 128 (224 px,
1000 classes), data already on the GPU, fused AdamW, no reads of GPU values in the loop.
The GPU is busy with large matrix products; nothing here should be flagged.

--fix: nothing (control).
--alt: the model under torch.compile (default mode), at least 5 warm-up iterations: the fix of
gpuwhy's C11 finding on this control (Inductor fuses the elementwise chains).
"""
import torch
import torchvision

import cc


def main():
    args = cc.parser(__doc__).parse_args()
    dev = cc.torch_device(args)
    if args.smoke:
        model, batch, res, classes = torchvision.models.VisionTransformer(32, 16, 2, 2, 64, 128, num_classes=10), 4, 32, 10
    else:
        model, batch, res, classes = torchvision.models.vit_b_16(num_classes=1000), 128, 224, 1000
    model = model.to(dev)
    if args.alt:  # C11 fix: fuse the elementwise chains (no CUDA graphs: C11 is not launch-bound)
        model = torch.compile(model, mode=cc.alt_setup(args, "default", 5))
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.05, fused=dev.type == "cuda")
    xs = [torch.randn(batch, 3, res, res, device=dev) for _ in range(2)]
    ys = [torch.randint(0, classes, (batch,), device=dev) for _ in range(2)]

    def step(i):
        with torch.autocast(dev.type, dtype=torch.bfloat16):
            loss = torch.nn.functional.cross_entropy(model(xs[i % 2]), ys[i % 2], label_smoothing=0.1)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    cc.run("h_tv_vit_b16_bf16", args, step, batch)


if __name__ == "__main__":
    main()
