"""Healthy control (face recognition with an ArcFace head, GPU-bound, bf16): training a face
embedding in the InsightFace arcface_torch recipe's shape, in plain PyTorch: the IResNet-50
backbone (a 3 x 3 stem at 112 x 112 with PReLU, IBasicBlocks [3, 4, 14, 3] of widths 64-512,
BN-conv-BN-PReLU-conv-BN with the stride in the second convolution, BatchNorm and a 25,088 ->
512 fully connected layer to the embedding with a frozen-scale BatchNorm1d; 43.6 M
parameters, random weights) and the ArcFace margin head over the 93,431 identities of
MS1MV3 (a 93,431 x 512 class-centre matrix, cosine logits, additive angular margin 0.5 on
the target logit only, scale 64; 47.8 M parameters), cross-entropy. bf16 autocast with the
embedding layer and the logits in float32 as the recipe keeps them, channels_last, SGD
momentum 0.9 with weight decay 5e-4 (foreach) and a polynomial decay per step, gradient
clipping of the backbone at norm 5 (foreach), batch 128 aligned 112 x 112 crops with
horizontal flips, drawn from 16,384 synthetic faces held on the GPU as uint8 (616 MB); the
loss stays on the GPU and is read every 50 steps.

Nothing to fix: the step is ~4.9 TFLOP of convolutions and GEMMs with large kernels, the
data never leave the GPU, no host reads but the loss every 50 steps, no evaluation or
checkpoint in the loop.

--fix: nothing (control).

Written blind for the tango batch.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

import cc

N_IDS = 93_431


def conv3x3(cin, cout, stride=1):
    return nn.Conv2d(cin, cout, 3, stride, 1, bias=False)


class IBasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.bn1 = nn.BatchNorm2d(cin, eps=1e-5)
        self.conv1 = conv3x3(cin, cout)
        self.bn2 = nn.BatchNorm2d(cout, eps=1e-5)
        self.prelu = nn.PReLU(cout)
        self.conv2 = conv3x3(cout, cout, stride)
        self.bn3 = nn.BatchNorm2d(cout, eps=1e-5)
        self.downsample = None
        if stride != 1 or cin != cout:
            self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout, eps=1e-5))

    def forward(self, x):
        out = self.bn3(self.conv2(self.prelu(self.bn2(self.conv1(self.bn1(x))))))
        return out + (self.downsample(x) if self.downsample is not None else x)


class IResNet(nn.Module):
    def __init__(self, layers=(3, 4, 14, 3), widths=(64, 128, 256, 512), num_features=512):
        super().__init__()
        self.conv1 = conv3x3(3, 64)
        self.bn1 = nn.BatchNorm2d(64, eps=1e-5)
        self.prelu = nn.PReLU(64)
        blocks, cin = [], 64
        for n, w in zip(layers, widths):
            for j in range(n):
                blocks.append(IBasicBlock(cin, w, 2 if j == 0 else 1))
                cin = w
        self.blocks = nn.Sequential(*blocks)
        self.bn2 = nn.BatchNorm2d(cin, eps=1e-5)
        self.dropout = nn.Dropout(0.0)
        self.fc = nn.Linear(cin * 7 * 7, num_features)
        self.features = nn.BatchNorm1d(num_features, eps=1e-5)
        nn.init.constant_(self.features.weight, 1.0)
        self.features.weight.requires_grad = False

    def forward(self, x):
        x = self.prelu(self.bn1(self.conv1(x)))
        x = self.bn2(self.blocks(x))
        x = self.dropout(torch.flatten(x, 1))
        with torch.autocast(x.device.type, enabled=False):          # the embedding layer in float32
            x = self.features(self.fc(x.float()))
        return x


class ArcFaceHead(nn.Module):
    """Additive angular margin on the target logit (ArcFace, m=0.5, s=64)."""

    def __init__(self, dim, n_classes, s=64.0, m=0.5):
        super().__init__()
        self.weight = nn.Parameter(torch.normal(0, 0.01, (n_classes, dim)))
        self.s, self.m = s, m
        self.th, self.mm = math.cos(math.pi - m), math.sin(math.pi - m) * m

    def forward(self, emb, labels):
        cos = F.linear(F.normalize(emb), F.normalize(self.weight)).float().clamp(-1 + 1e-7, 1 - 1e-7)
        t = cos.gather(1, labels[:, None])
        t_m = torch.where(t > self.th, torch.cos(torch.acos(t) + self.m), t - self.mm)
        logits = cos.scatter(1, labels[:, None], t_m) * self.s
        return F.cross_entropy(logits, labels)


def make_faces(n, size, dev, seed=0):
    """n synthetic aligned face crops (uint8, n x 3 x size x size) on the GPU: an oval face,
    eyes, nose and mouth at the five-landmark template's places, per-identity shading."""
    g = torch.Generator(device=dev).manual_seed(seed)
    yy, xx = torch.meshgrid(torch.linspace(-1, 1, size, device=dev), torch.linspace(-1, 1, size, device=dev), indexing="ij")
    out = torch.empty(n, 3, size, size, dtype=torch.uint8, device=dev)
    for s in range(0, n, 1024):
        m = min(1024, n - s)
        r = lambda *shape: torch.rand(m, *shape, device=dev, generator=g)          # noqa: E731
        skin = 0.35 + 0.5 * r(3, 1, 1)
        face = (((xx / (0.62 + 0.08 * r(1, 1, 1))) ** 2 + ((yy + 0.05) / 0.85) ** 2) < 1).float()
        eyes = (torch.exp(-(((xx.abs() - 0.33) ** 2) / 0.006 + ((yy + 0.22 + 0.06 * r(1, 1, 1)) ** 2) / 0.003)))
        mouth = torch.exp(-((xx ** 2) / 0.05 + ((yy - 0.45 - 0.05 * r(1, 1, 1)) ** 2) / 0.002))
        nose = torch.exp(-((xx ** 2) / 0.004 + ((yy - 0.1) ** 2) / 0.03))
        bg = F.interpolate(r(3, 8, 8), size=(size, size), mode="bilinear", align_corners=False)
        img = face * (skin * (1 - 0.5 * eyes - 0.4 * mouth) + 0.1 * nose) + (1 - face) * bg
        img = img + 0.05 * r(3, size, size) + 0.1 * yy * r(1, 1, 1)                  # noise and lighting
        out[s:s + m] = (img.clamp(0, 1) * 255).to(torch.uint8)
    return out


def main():
    args = cc.parser(__doc__, warmup=5).parse_args()
    dev = cc.torch_device(args)
    gpu = dev.type == "cuda"
    if args.smoke:
        n_faces, batch, n_ids, layers, widths = 256, 8, 1000, (1, 1, 1, 1), (16, 32, 64, 128)
    else:
        n_faces, batch, n_ids, layers, widths = 16_384, 128, N_IDS, (3, 4, 14, 3), (64, 128, 256, 512)
    faces = make_faces(n_faces, 112, dev)
    g = torch.Generator(device=dev).manual_seed(1)
    labels = torch.randint(0, n_ids, (n_faces,), device=dev, generator=g)

    torch.manual_seed(0)
    backbone = IResNet(layers, widths).to(dev, memory_format=torch.channels_last).train()
    head = ArcFaceHead(512, n_ids).to(dev).train()
    params = sum(p.numel() for p in backbone.parameters()) + sum(p.numel() for p in head.parameters())
    opt = torch.optim.SGD([{"params": backbone.parameters()}, {"params": head.parameters()}],
                          lr=0.1, momentum=0.9, weight_decay=5e-4, foreach=True)
    total = 200_000
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda k: (1 - min(k, total - 1) / total) ** 2)
    amp = torch.autocast(dev.type, dtype=torch.bfloat16, enabled=gpu)
    st = {"acc": torch.zeros((), device=dev), "loss": None, "reads": 0}

    def step(i):
        idx = torch.randint(0, n_faces, (batch,), device=dev, generator=g)
        x, y = faces[idx], labels[idx]
        flip = torch.rand(batch, 1, 1, 1, device=dev, generator=g) < 0.5
        x = torch.where(flip, x.flip(-1), x)
        x = ((x.float() / 255 - 0.5) / 0.5).contiguous(memory_format=torch.channels_last)
        with amp:
            emb = backbone(x)
            loss = head(emb, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(backbone.parameters(), 5.0, foreach=True)
        opt.step()
        sched.step()
        st["acc"] += loss.detach()
        if i % 50 == 49:
            st["loss"] = st["acc"].item() / 50
            st["acc"].zero_()
            st["reads"] += 1

    cc.run("h_torch_arcface_iresnet50_bf16", args, step, batch,
           extra=lambda: {"identities": n_ids, "faces": n_faces, "params_m": round(params / 1e6, 1),
                          "loss": st["loss"], "loss_reads": st["reads"]})


if __name__ == "__main__":
    main()
