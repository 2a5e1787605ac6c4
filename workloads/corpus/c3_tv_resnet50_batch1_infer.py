"""C3 small batch (inference): a torchvision ResNet-50 (bf16, channels_last,
inference_mode) serves requests one image at a time (batch 1 at 224 px): each of its
kernels fills a few of the GPU's 132 SMs, so the GPU idles and launches dominate while
the frames wait their turn. The predictions stay on the GPU.

--fix: gpuwhy's C3 advice: 64 frames per batch (the throughput is per image).
"""
import torch
import torchvision

import cc


def main():
    args = cc.parser(__doc__).parse_args()
    dev = cc.torch_device(args)
    res = 32 if args.smoke else 224
    batch = cc.fix_batch(8 if args.smoke else 64) if args.fix else 1  # gpuwhy: plants C3 (one image per batch)
    model = torchvision.models.resnet50(num_classes=1000).to(dev, torch.bfloat16)
    model = model.to(memory_format=torch.channels_last).eval()
    frames = [torch.randn(batch, 3, res, res, device=dev, dtype=torch.bfloat16).contiguous(memory_format=torch.channels_last)
              for _ in range(4)]
    preds = torch.empty(1024, batch, dtype=torch.long, device=dev)

    @torch.inference_mode()
    def step(i):
        preds[i % 1024] = model(frames[i % 4]).argmax(dim=1)

    cc.run("c3_tv_resnet50_batch1_infer", args, step, batch)


if __name__ == "__main__":
    main()
