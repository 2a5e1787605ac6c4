"""Healthy control (PyTorch, 3D convolutions): CT organ segmentation with a 3D U-Net in the
nnU-Net style written in plain PyTorch: four resolution stages plus a bottleneck (32, 64, 128,
256 and 320 channels), each two 3 x 3 x 3 convolutions with InstanceNorm and LeakyReLU,
strided-convolution downsampling, transposed-convolution upsampling with skip concatenation,
14 classes (BTCV-like); Dice + cross-entropy loss, bf16 autocast, channels_last_3d,
cudnn.benchmark, SGD with Nesterov momentum (0.99, foreach) and the poly schedule. Patches of
128 x 128 x 128 voxels, batch 2, cropped at random from four synthetic CT volumes of 192 x 256
x 256 (Hounsfield-like intensities with ellipsoid organs and their label maps) held on the GPU,
random flips on the GPU (volumes made on the GPU at start); the loss is read every 50 steps. About 5.7 TFLOP a step in cuDNN's 3D
convolutions and nothing on the host between steps but the launches: the GPU should be busy
throughout after the warm-up (cudnn.benchmark autotunes each convolution in the first steps).

--fix: nothing (control).

Written blind for the hotel batch.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

import cc


def block(cin, cout, stride=1):
    return nn.Sequential(
        nn.Conv3d(cin, cout, 3, stride=stride, padding=1, bias=False), nn.InstanceNorm3d(cout, affine=True),
        nn.LeakyReLU(0.01, inplace=True),
        nn.Conv3d(cout, cout, 3, padding=1, bias=False), nn.InstanceNorm3d(cout, affine=True),
        nn.LeakyReLU(0.01, inplace=True))


class UNet3D(nn.Module):
    def __init__(self, widths, classes):
        super().__init__()
        self.enc = nn.ModuleList([block(1, widths[0])] +
                                 [block(widths[i - 1], widths[i], stride=2) for i in range(1, len(widths))])
        self.up = nn.ModuleList([nn.ConvTranspose3d(widths[i], widths[i - 1], 2, stride=2, bias=False)
                                 for i in range(len(widths) - 1, 0, -1)])
        self.dec = nn.ModuleList([block(2 * widths[i - 1], widths[i - 1]) for i in range(len(widths) - 1, 0, -1)])
        self.out = nn.Conv3d(widths[0], classes, 1)

    def forward(self, x):
        skips = []
        for e in self.enc:
            x = e(x)
            skips.append(x)
        x = skips.pop()
        for up, dec in zip(self.up, self.dec):
            x = dec(torch.cat([up(x), skips.pop()], 1))
        return self.out(x)


def make_volumes(n, shape, classes, dev, gen):
    """CT-like volumes made on the device: a body ellipse of soft tissue, organs as
    ellipsoids, noise; and their label maps."""
    zz, yy, xx = torch.meshgrid(*[torch.linspace(-1, 1, s, device=dev) for s in shape], indexing="ij")
    vols, labs = [], []
    for _ in range(n):
        img = torch.full(shape, -1000.0, device=dev)
        lab = torch.zeros(shape, dtype=torch.long, device=dev)
        img[(yy / 0.8) ** 2 + (xx / 0.9) ** 2 < 1] = 40.0
        for c in range(1, classes):
            cz, cy, cx = (torch.rand(3, generator=gen) * 1.2 - 0.6).tolist()
            rz, ry, rx = (torch.rand(3, generator=gen) * 0.22 + 0.08).tolist()
            m = ((zz - cz) / rz) ** 2 + ((yy - cy) / ry) ** 2 + ((xx - cx) / rx) ** 2 < 1
            img[m] = float(torch.rand(1, generator=gen)) * 400 - 100
            lab[m] = c
        img += torch.randn(shape, device=dev) * 20
        vols.append(img)
        labs.append(lab)
    return torch.stack(vols), torch.stack(labs)


def main():
    args = cc.parser(__doc__, warmup=5).parse_args()
    dev = cc.torch_device(args)
    gpu = dev.type == "cuda"
    torch.backends.cudnn.benchmark = True
    classes = 14
    if args.smoke:
        widths, patch, batch, vshape = (4, 8, 16), 16, 1, (24, 32, 32)
    else:
        widths, patch, batch, vshape = (32, 64, 128, 256, 320), 128, 2, (192, 256, 256)
    torch.manual_seed(0)
    vols, labs = make_volumes(4, vshape, classes, dev, torch.Generator().manual_seed(0))
    vols = ((vols + 200) / 500).clamp_(-1, 3)  # windowed intensities
    model = UNet3D(widths, classes).to(dev).to(memory_format=torch.channels_last_3d)
    opt = torch.optim.SGD(model.parameters(), lr=1e-2, momentum=0.99, nesterov=True, weight_decay=3e-5, foreach=True)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: (1 - min(s, 99_999) / 100_000) ** 0.9)
    amp = torch.autocast(dev.type, dtype=torch.bfloat16)
    gen = torch.Generator(device=dev).manual_seed(0)
    hi = torch.tensor([vshape[0] - patch, vshape[1] - patch, vshape[2] - patch], device=dev)
    ar = torch.arange(patch, device=dev)
    state = {"loss": None, "reads": 0}

    def crop(vol_i):
        # a random patch by gathered indices (no host round trip for the offsets)
        o = (torch.rand(3, device=dev, generator=gen) * (hi + 1).float()).long()
        z, y, x = (o[0] + ar)[:, None, None], (o[1] + ar)[None, :, None], (o[2] + ar)[None, None, :]
        return vols[vol_i][z, y, x], labs[vol_i][z, y, x]

    def step(i):
        xs, ys = zip(*(crop((i * batch + b) % len(vols)) for b in range(batch)))
        x = torch.stack(xs)[:, None]
        y = torch.stack(ys)
        if i % 2:
            x, y = x.flip(-1), y.flip(-1)
        x = x.contiguous(memory_format=torch.channels_last_3d)
        with amp:
            logits = model(x)
        logits = logits.float()
        ce = F.cross_entropy(logits, y)
        prob = logits.softmax(1)
        onehot = F.one_hot(y, classes).permute(0, 4, 1, 2, 3).float()
        inter = (prob * onehot).sum((2, 3, 4))
        dice = 1 - ((2 * inter + 1e-5) / (prob.sum((2, 3, 4)) + onehot.sum((2, 3, 4)) + 1e-5)).mean()
        loss = ce + dice
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 12.0, foreach=True)
        opt.step()
        sched.step()
        if i % 50 == 49:
            state["loss"] = loss.item()
            state["reads"] += 1

    cc.run("h_torch_unet3d_ct_bf16", args, step, batch,
           extra=lambda: {"patch": patch, "widths": list(widths), "cuda": gpu,
                          "loss": state["loss"], "loss_reads": state["reads"]})


if __name__ == "__main__":
    main()
