"""C9 device-to-host reads every step (weight EMA on the CPU): a ResNet-50 written out in
the project (bottleneck blocks, 3-4-6-3; 23.7 M parameters with a 100-class head; 112 px, batch 128, bf16 autocast,
channels_last, fused AdamW, batches made once on the GPU and cycled) that keeps an
exponential moving average of its weights for evaluation, as timm's ModelEma or a
diffusion trainer does, but holds the average on the CPU "to save GPU memory": after
every optimizer step each of the 161 parameters is copied to the host
(p.detach().float().cpu(), a blocking copy that first waits for the step) and folded in
with mul_/add_ on the CPU. The GPU waits for the copies and the host arithmetic, and the
next step is launched from an empty queue.

--fix: gpuwhy's C9 advice (keep values on the GPU): the EMA held on the GPU in fp32 and
updated with torch._foreach_lerp_(ema, params, 0.001) under no_grad (the same average,
a handful of launches, no host copy).
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

import cc

DECAY = 0.999


class Bottleneck(nn.Module):
    def __init__(self, cin, width, stride):
        super().__init__()
        cout = 4 * width
        self.conv1, self.bn1 = nn.Conv2d(cin, width, 1, bias=False), nn.BatchNorm2d(width)
        self.conv2, self.bn2 = nn.Conv2d(width, width, 3, stride, 1, bias=False), nn.BatchNorm2d(width)
        self.conv3, self.bn3 = nn.Conv2d(width, cout, 1, bias=False), nn.BatchNorm2d(cout)
        self.short = None
        if stride != 1 or cin != cout:
            self.short = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        y = F.relu(self.bn2(self.conv2(y)))
        y = self.bn3(self.conv3(y))
        return F.relu(y + (x if self.short is None else self.short(x)))


class ResNet(nn.Module):
    def __init__(self, depths, classes, base=64):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, base, 7, 2, 3, bias=False), nn.BatchNorm2d(base), nn.ReLU(inplace=True),
                                  nn.MaxPool2d(3, 2, 1))
        blocks, cin = [], base
        for k, n in enumerate(depths):
            for j in range(n):
                blocks.append(Bottleneck(cin, base * 2 ** k, 2 if j == 0 and k > 0 else 1))
                cin = 4 * base * 2 ** k
        self.blocks = nn.Sequential(*blocks)
        self.fc = nn.Linear(cin, classes)

    def forward(self, x):
        return self.fc(self.blocks(self.stem(x)).mean((2, 3)))


def main():
    args = cc.parser(__doc__).parse_args()
    dev = cc.torch_device(args)
    depths, res, batch, classes = ((1, 1, 1, 1), 32, 4, 10) if args.smoke else ((3, 4, 6, 3), 112, 128, 100)
    model = ResNet(depths, classes).to(dev).to(memory_format=torch.channels_last)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.05, fused=dev.type == "cuda")
    g = torch.Generator().manual_seed(0)
    data = [(torch.randn(batch, 3, res, res, generator=g).to(dev).contiguous(memory_format=torch.channels_last),
             torch.randint(0, classes, (batch,), generator=g).to(dev)) for _ in range(4)]
    params = list(model.parameters())
    if args.fix:
        ema = [p.detach().float().clone() for p in params]  # on the GPU
    else:
        ema = [p.detach().float().cpu().clone() for p in params]  # on the host, "to save GPU memory"

    @torch.no_grad()
    def update_ema():
        if args.fix:
            torch._foreach_lerp_(ema, [p.detach() for p in params], 1 - DECAY)
            return
        for e, p in zip(ema, params):
            e.mul_(DECAY).add_(p.detach().float().cpu(), alpha=1 - DECAY)  # gpuwhy: plants C9 (161 blocking copies to the host a step)

    def step(i):
        x, y = data[i % len(data)]
        with torch.autocast(dev.type, dtype=torch.bfloat16):
            loss = F.cross_entropy(model(x), y, label_smoothing=0.1)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        update_ema()

    cc.run("c9_torch_cpu_ema", args, step, batch,
           extra=lambda: {"ema_device": str(ema[0].device), "ema_tensors": len(ema)})


if __name__ == "__main__":
    main()
