"""C8 FP32 math: a small UNet (torch.nn only: 4 levels of two 3x3 conv + BatchNorm + ReLU,
32..256 channels, max-pool down, transposed-conv up, skip connections) trained for 8-class
segmentation of 256x256 images, batch 32, data on the GPU, in FP32 with TF32 disabled
(torch.backends.cuda.matmul.allow_tf32 = False, torch.backends.cudnn.allow_tf32 = False):
the convolutions run on the CUDA cores, not the tensor cores.

--fix: bf16 autocast, and TF32 allowed.
"""
import torch
import torch.nn.functional as F
from torch import nn

import cc


def block(cin, cout):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True),
                         nn.Conv2d(cout, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True))


class UNet(nn.Module):
    def __init__(self, cin=3, classes=8, base=32, levels=4):
        super().__init__()
        ch = [base * 2 ** k for k in range(levels)]
        self.down = nn.ModuleList([block(cin, ch[0])] + [block(ch[k - 1], ch[k]) for k in range(1, levels)])
        self.up = nn.ModuleList([nn.ConvTranspose2d(ch[k], ch[k - 1], 2, stride=2) for k in range(levels - 1, 0, -1)])
        self.dec = nn.ModuleList([block(2 * ch[k - 1], ch[k - 1]) for k in range(levels - 1, 0, -1)])
        self.out = nn.Conv2d(ch[0], classes, 1)

    def forward(self, x):
        skips = []
        for k, b in enumerate(self.down):
            x = b(x if k == 0 else F.max_pool2d(x, 2))
            skips.append(x)
        for up, dec, skip in zip(self.up, self.dec, reversed(skips[:-1])):
            x = dec(torch.cat([up(x), skip], dim=1))
        return self.out(x)


def main():
    args = cc.parser(__doc__).parse_args()
    dev = cc.torch_device(args)
    batch, res, base = (2, 32, 8) if args.smoke else (32, 256, 32)
    allow = bool(args.fix)
    torch.backends.cuda.matmul.allow_tf32 = allow
    torch.backends.cudnn.allow_tf32 = allow  # gpuwhy: plants C8 (FP32 convolutions, TF32 off)
    torch.backends.cudnn.benchmark = True
    model = UNet(base=base).to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, foreach=True)
    xs = [torch.randn(batch, 3, res, res, device=dev) for _ in range(2)]
    ys = [torch.randint(0, 8, (batch, res, res), device=dev) for _ in range(2)]

    def step(i):
        with torch.autocast(dev.type, dtype=torch.bfloat16, enabled=args.fix):
            loss = F.cross_entropy(model(xs[i % 2]), ys[i % 2])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    cc.run("c8_torch_fp32_unet", args, step, batch)


if __name__ == "__main__":
    main()
