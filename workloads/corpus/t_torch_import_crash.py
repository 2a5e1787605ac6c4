"""too little to diagnose (a crash): a training script builds a torchvision ResNet-50, moves it
to the GPU (its weights copied from pageable memory), runs one forward pass as a shape check,
then imports NVIDIA apex for its FusedAdam, which this machine does not have: the job ends
with ModuleNotFoundError after a few milliseconds of GPU work and never reaches its loop.
The right report says there is too little to diagnose, not a bottleneck.

--fix: torch.optim.AdamW(fused=True) instead of apex's FusedAdam: the job trains (ResNet-50,
bf16 autocast, 160 px, batch 128 on the GPU) and prints its JSON line; its speed is not
compared with the crashed run's.
"""
import torch
import torch.nn.functional as F
import torchvision

import cc


def main():
    args = cc.parser(__doc__).parse_args()
    dev = cc.torch_device(args)
    batch, res = (4, 32) if args.smoke else (128, 160)
    model = torchvision.models.resnet50(num_classes=1000).to(dev)
    x = torch.randn(batch, 3, res, res, device=dev)
    y = torch.randint(0, 1000, (batch,), device=dev)
    with torch.no_grad(), torch.autocast(dev.type, dtype=torch.bfloat16):
        assert model(x[:2]).shape == (2, 1000)  # shape check before training
    if args.fix:
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3, fused=dev.type == "cuda")
    else:
        from apex.optimizers import FusedAdam  # gpuwhy: plants too-little (ModuleNotFoundError: the job ends here)
        opt = FusedAdam(model.parameters(), lr=1e-3)

    def step(i):
        with torch.autocast(dev.type, dtype=torch.bfloat16):
            loss = F.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    cc.run("t_torch_import_crash", args, step, batch)


if __name__ == "__main__":
    main()
