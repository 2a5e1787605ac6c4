"""C14 a periodic evaluation phase (the whole test split evaluated every 10 training steps):
supervised monocular depth estimation in the NYU Depth v2 setting, in plain PyTorch, with a
Monodepth2-style network trained the way BTS and AdaBins train on NYU: a torchvision
resnet34 encoder (weights=None) and Monodepth2's DepthDecoder (3 x 3 convolutions with ELU,
nearest upsampling to each skip's size and skip connections over five scales, widths
256-16, a sigmoid disparity mapped to 0.1-10 m; 24.4 M parameters, random weights), the
scale-invariant log loss (SILog, variance focus 0.85, x 10) on the valid pixels, bf16
autocast, channels_last, fused AdamW (lr 1e-4, weight decay 1e-2), batch 16 images of
240 x 320 (NYU at half resolution) with random flips and brightness / contrast jitter done on
the GPU, drawn from 2,048 synthetic indoor scenes made there at start (rooms and furniture
boxes ray-cast from random camera poses: depth and a shaded, textured colour image); the loss
stays on the GPU and is read every 50 steps.

The loop validates every 10 steps (the config's validate_every, set for a 50-image debug
subset and kept when the full test split came in): model.eval(), torch.no_grad(), the 654
images of the test split (NYU's size) in batches of 32, each prediction clamped to 1e-3-10 m
and scored inside the Eigen crop with the standard depth metrics (AbsRel, SqRel, RMSE,
RMSE log, log10, delta < 1.25, 1.25^2, 1.25^3), summed on the GPU and read per batch with
.tolist() into a running average, then model.train(). The 21 forward batches take about as
long as 14 training steps, so training waits most of each 10-step period.

--fix: gpuwhy's C14 advice (evaluate less often): validate_every 1,000 instead of 10 (never in
the timed part); model, data, loss, optimizer, the test split and the metrics unchanged.

Written blind for the sierra batch.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision

import cc


class ConvBlock(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, 3, padding=1, padding_mode="reflect")

    def forward(self, x):
        return F.elu(self.conv(x))


class DepthNet(nn.Module):
    """resnet34 encoder + Monodepth2's DepthDecoder (scale-0 disparity only)."""

    def __init__(self, widths=(16, 32, 64, 128, 256)):
        super().__init__()
        r = torchvision.models.resnet34(weights=None)
        self.stem = nn.Sequential(r.conv1, r.bn1, r.relu)
        self.pool, self.layers = r.maxpool, nn.ModuleList([r.layer1, r.layer2, r.layer3, r.layer4])
        enc = (64, 64, 128, 256, 512)
        self.up0, self.up1 = nn.ModuleList(), nn.ModuleList()
        for i in range(4, -1, -1):
            cin = enc[-1] if i == 4 else widths[i + 1]
            self.up0.append(ConvBlock(cin, widths[i]))
            self.up1.append(ConvBlock(widths[i] + (enc[i - 1] if i > 0 else 0), widths[i]))
        self.disp = nn.Conv2d(widths[0], 1, 3, padding=1, padding_mode="reflect")

    def forward(self, x, min_depth=0.1, max_depth=10.0):
        f = [self.stem(x)]
        h = self.pool(f[0])
        for layer in self.layers:
            h = layer(h)
            f.append(h)
        x = f[-1]
        for k, i in enumerate(range(4, -1, -1)):
            size = f[i - 1].shape[-2:] if i > 0 else (2 * f[0].shape[-2], 2 * f[0].shape[-1])
            x = F.interpolate(self.up0[k](x), size=size, mode="nearest")        # to the skip's size
            if i > 0:
                x = torch.cat([x, f[i - 1]], 1)
            x = self.up1[k](x)
        disp = torch.sigmoid(self.disp(x)).float()
        lo, hi = 1 / max_depth, 1 / min_depth
        return 1 / (lo + (hi - lo) * disp)


def make_rooms(n, h, w, dev, seed=0):
    """n indoor scenes ray-cast on the device: an axis-aligned room (3-8 m) and
    camera at a random pose inside; depth (float16, metres along the optical axis) and a
    Lambertian-shaded, textured colour image (uint8)."""
    g = torch.Generator(device=dev).manual_seed(seed)
    r = lambda *s: torch.rand(*s, device=dev, generator=g)           # noqa: E731
    fx = 518.8 * w / 640
    v, u = torch.meshgrid(torch.arange(h, device=dev, dtype=torch.float32) - h / 2 + 0.5,
                          torch.arange(w, device=dev, dtype=torch.float32) - w / 2 + 0.5, indexing="ij")
    rays = torch.stack([u / fx, v / fx, torch.ones_like(u)], -1)          # camera frame (x right, y down, z fwd)
    depth = torch.empty(n, 1, h, w, device=dev, dtype=torch.float16)
    rgb = torch.empty(n, 3, h, w, device=dev, dtype=torch.uint8)
    for s in range(0, n, 64):
        m = min(64, n - s)
        room = 3 + 5 * r(m, 1, 3)
        cam = room * (0.2 + 0.6 * r(m, 1, 3))
        cam[..., 1] = room[..., 1] * (0.35 + 0.2 * r(m, 1))                # eye height, y down from the ceiling
        yaw, pitch = r(m) * 2 * math.pi, -0.25 + (r(m) - 0.5) * 0.4     # looking slightly down
        cy, sy, cp, sp = torch.cos(yaw), torch.sin(yaw), torch.cos(pitch), torch.sin(pitch)
        z0, o1 = torch.zeros_like(cy), torch.ones_like(cy)
        ry = torch.stack([torch.stack([cy, z0, sy], -1), torch.stack([z0, o1, z0], -1), torch.stack([-sy, z0, cy], -1)], -2)
        rx = torch.stack([torch.stack([o1, z0, z0], -1), torch.stack([z0, cp, -sp], -1), torch.stack([z0, sp, cp], -1)], -2)
        rot = ry @ rx                                                       # (m, 3, 3) camera -> room
        d = torch.einsum("mij,hwj->mhwi", rot, rays)                        # (m, h, w, 3)
        o = cam[:, None, None, 0]                                           # (m, 1, 1, 3)
        inv = 1 / torch.where(d.abs() < 1e-6, torch.full_like(d, 1e-6), d)
        # the room from the inside: the far slab of each axis
        t_wall = torch.maximum((0 - o) * inv, (room[:, None, None, 0] - o) * inv)   # (m, h, w, 3)
        t, axis = t_wall.min(-1)
        albedo = 0.3 + 0.6 * r(m, 3, 3)                                     # per scene: walls / floor-ceiling, RGB
        col = torch.gather(albedo, 1, axis.clamp(max=2).reshape(m, -1, 1).expand(-1, -1, 3).long()).reshape(m, h, w, 3)
        # furniture: 6 boxes standing on the floor; keep the nearest hit
        for _ in range(6):
            size = 0.4 + 1.2 * r(m, 1, 3)
            lo = (room - size) * r(m, 1, 3)
            lo[..., 1] = room[..., 1] - size[..., 1]
            t1, t2 = (lo[:, None, None, 0] - o) * inv, (lo[:, None, None, 0] + size[:, None, None, 0] - o) * inv
            tn, tf = torch.minimum(t1, t2).amax(-1), torch.maximum(t1, t2).amin(-1)
            hit = (tn < tf) & (tn > 0.05) & (tn < t)
            t = torch.where(hit, tn, t)
            col = torch.where(hit[..., None], (0.2 + 0.7 * r(m, 1, 1, 3)).expand(-1, h, w, -1), col)
        p = o + d * t[..., None]
        light = torch.stack([torch.sin(3 * p[..., 0]), torch.cos(2 * p[..., 2]), torch.sin(p[..., 0] + p[..., 2])], -1)
        shade = 0.55 + 0.35 * torch.cos(p[..., 1:2] * 1.3) + 0.1 * light[..., :1]
        tex = 0.08 * torch.sin(p[..., 0:1] * 23) * torch.sin(p[..., 2:3] * 19) + 0.04 * torch.randn(m, h, w, 1, device=dev, generator=g)
        img = (col * shade + tex).clamp(0, 1)
        depth[s:s + m] = t.clamp(0.05, 10.0)[:, None].half()        # rays have z = 1: t is the depth
        rgb[s:s + m] = (img * 255).permute(0, 3, 1, 2).to(torch.uint8)
    return rgb, depth


MEAN = torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1)
STD = torch.tensor([0.229, 0.224, 0.225]).view(1, 3, 1, 1)


def silog(pred, gt, valid):
    """The scale-invariant log loss over the valid pixels (masked sums: no host read)."""
    v = valid.float()
    g = (torch.log(pred) - torch.log(gt.clamp(min=1e-3))) * v
    n = v.sum().clamp(min=1)
    return 10 * torch.sqrt((g ** 2).sum() / n - 0.85 * (g.sum() / n) ** 2)


def main():
    args = cc.parser(__doc__, warmup=5).parse_args()
    dev = cc.torch_device(args)
    gpu = dev.type == "cuda"
    if args.smoke:
        h, w, n_train, n_test, batch, val_batch, every = 64, 96, 64, 40, 4, 16, 3
    else:
        h, w, n_train, n_test, batch, val_batch, every = 240, 320, 2048, 654, 16, 32, 10
    if args.fix:
        every = 1000                       # the advice: evaluate less often (never in the timed part)
    rgb, depth = make_rooms(n_train, h, w, dev, seed=0)
    test_rgb, test_depth = make_rooms(n_test, h, w, dev, seed=1)
    mean, std = MEAN.to(dev), STD.to(dev)
    crop = torch.zeros(1, 1, h, w, dtype=torch.bool, device=dev)
    crop[..., int(0.0938 * h):int(0.9813 * h), int(0.0641 * w):int(0.9391 * w)] = True      # Eigen's crop

    torch.manual_seed(0)
    model = DepthNet().to(dev, memory_format=torch.channels_last).train()
    params = sum(p.numel() for p in model.parameters())
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=1e-2, fused=gpu)
    amp = torch.autocast(dev.type, dtype=torch.bfloat16, enabled=gpu)
    gen = torch.Generator(device=dev).manual_seed(2)
    st = {"acc": torch.zeros((), device=dev), "loss": None, "reads": 0, "vals": 0, "val": None}

    def prep(x):
        return ((x.float() / 255 - mean) / std).contiguous(memory_format=torch.channels_last)

    def validate():
        model.eval()
        names = ("abs_rel", "sq_rel", "rmse", "rmse_log", "log10", "d1", "d2", "d3")
        tot, count = [0.0] * len(names), 0
        with torch.no_grad():
            for s in range(0, n_test, val_batch):
                x, gt = prep(test_rgb[s:s + val_batch]), test_depth[s:s + val_batch].float()
                with amp:
                    pred = model(x)
                pred = pred.clamp(1e-3, 10.0)
                valid = (gt > 1e-3) & (gt < 10.0) & crop
                v = valid.float()
                n = v.sum()
                t = torch.where(valid, gt, torch.ones_like(gt))
                p = torch.where(valid, pred, torch.ones_like(pred))
                thresh = torch.maximum(t / p, p / t)
                avg = lambda e: (e * v).sum() / n                     # noqa: E731
                m = torch.stack([avg((t - p).abs() / t), avg((t - p) ** 2 / t), avg((t - p) ** 2).sqrt(),
                                 avg((t.log() - p.log()) ** 2).sqrt(), avg((t.log10() - p.log10()).abs()),
                                 avg((thresh < 1.25).float()), avg((thresh < 1.25 ** 2).float()),
                                 avg((thresh < 1.25 ** 3).float())])
                k = gt.shape[0]
                tot = [a + b * k for a, b in zip(tot, m.tolist())]        # the running average's update
                count += k
        model.train()
        return {n: round(v / count, 4) for n, v in zip(names, tot)}

    def step(i):
        idx = torch.randint(0, n_train, (batch,), device=dev, generator=gen)
        x, gt = rgb[idx], depth[idx].float()
        flip = torch.rand(batch, 1, 1, 1, device=dev, generator=gen) < 0.5
        x, gt = torch.where(flip, x.flip(-1), x), torch.where(flip, gt.flip(-1), gt)
        x = prep(x)
        x = (x * (0.8 + 0.4 * torch.rand(batch, 1, 1, 1, device=dev, generator=gen))
             + 0.2 * (torch.rand(batch, 1, 1, 1, device=dev, generator=gen) - 0.5))     # contrast, brightness
        with amp:
            pred = model(x)
        loss = silog(pred, gt, gt > 1e-3)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        st["acc"] += loss.detach()
        if i % 50 == 49:
            st["loss"] = st["acc"].item() / 50
            st["acc"].zero_()
            st["reads"] += 1
        if (i + 1) % every == 0:
            st["val"] = validate()  # gpuwhy: plants C14 (the 654-image test split evaluated every 10 steps, 21 forward batches and metrics; training waits)
            st["vals"] += 1

    cc.run("c14_tv_monodepth_val_every_n", args, step, batch,
           extra=lambda: {"validate_every": every, "test_images": n_test, "validations": st["vals"],
                          "params_m": round(params / 1e6, 1), "loss": st["loss"], "loss_reads": st["reads"],
                          "last_val": st["val"]})


if __name__ == "__main__":
    main()
