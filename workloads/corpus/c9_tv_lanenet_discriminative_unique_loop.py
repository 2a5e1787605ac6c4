"""C9 host syncs from data-dependent shapes in the loss (an instance-embedding loss built lane
by lane): lane detection in the TuSimple setting with LaneNet (Neven et al., 2018), in plain
PyTorch: a shared torchvision resnet18 encoder (weights=None) and two U-Net-style decoders, a
binary lane/background segmentation branch and a 4-d pixel-embedding branch (13.8 M parameters,
random weights), bf16 autocast, channels_last, fused AdamW (lr 5e-4, weight decay 1e-4),
batch 16 road images of 256 x 512 drawn on the GPU from 512 synthetic TuSimple-like frames made
there at start (2-5 lanes each, solid or dashed, curved toward a vanishing point; a lane-id
map per frame), mirrored at random. The binary branch has LaneNet's bounded inverse class
weighting (weights computed once at start); the loss stays on the device and is read every
50 steps.

The embedding branch is trained with the discriminative loss (De Brabandere et al., 2017:
delta_v 0.5, delta_d 3, regularization 0.001) written as LaneNet's PyTorch ports write it: a
Python loop over the images of the batch that finds each image's lanes with torch.unique,
drops the background with a boolean index, then loops over the lanes, skipping a lane with
`if not mask.any()`, and cuts the lane's pixels out of the embedding by boolean-mask indexing
to take their mean (the centroid), the variance hinge and, after the lanes, the pairwise
distance hinge between centroids. torch.unique and every boolean index must tell the host
their output size, and `.any()` in an `if` is read by the host: 2 + 2 x lanes host waits an
image (~140 a step with 3.7 lanes an image), each followed by a handful of tiny launches while
the GPU idles (~1,340 operations forward, ~2,000 backward, against ~100 and ~100 for the
masked loss), before the backward pass can be launched.

--fix: gpuwhy's C9 advice (avoid Python control flow on GPU values and data-dependent shapes):
the same loss without host reads, over a fixed number of lane slots (one-hot lane masks,
centroids by einsum, per-pixel hinge weighted by the masks, the pair hinge masked to the
lanes present), checked equal to the loop at start; model, data, batch, binary loss and
optimizer unchanged.

Written blind for the tango batch.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision

import cc

MAX_LANES = 5


class DiscriminativeLoss(nn.Module):
    """The loop as LaneNet's PyTorch ports write it (var + dist + 0.001 reg, averaged over the batch)."""

    def __init__(self, delta_var=0.5, delta_dist=3.0, alpha=1.0, beta=1.0, gamma=0.001):
        super().__init__()
        self.delta_var, self.delta_dist = delta_var, delta_dist
        self.alpha, self.beta, self.gamma = alpha, beta, gamma

    def forward(self, embedding, seg_gt):
        batch_size, embed_dim = embedding.shape[:2]
        var_loss = torch.zeros((), dtype=embedding.dtype, device=embedding.device)
        dist_loss = torch.zeros((), dtype=embedding.dtype, device=embedding.device)
        reg_loss = torch.zeros((), dtype=embedding.dtype, device=embedding.device)
        for b in range(batch_size):
            embedding_b = embedding[b]                    # (embed_dim, H, W)
            seg_gt_b = seg_gt[b]                          # (H, W)
            labels = torch.unique(seg_gt_b)  # gpuwhy: plants C9 (torch.unique, boolean indexing and `if mask.any()` per lane: host waits)
            labels = labels[labels != 0]
            num_lanes = len(labels)
            if num_lanes == 0:
                # keep the graph connected when an image has no lane
                var_loss = var_loss + embedding_b.sum() * 0
                continue
            centroid_mean = []
            for lane_idx in labels:
                seg_mask_i = seg_gt_b == lane_idx
                if not seg_mask_i.any():
                    continue
                embedding_i = embedding_b[:, seg_mask_i]  # (embed_dim, pixels of the lane)
                mean_i = torch.mean(embedding_i, dim=1)
                centroid_mean.append(mean_i)
                # pull: pixels further than delta_var from their centroid
                var_loss = var_loss + torch.mean(
                    F.relu(torch.norm(embedding_i - mean_i.reshape(embed_dim, 1), dim=0) - self.delta_var) ** 2) / num_lanes
            centroid_mean = torch.stack(centroid_mean)    # (num_lanes, embed_dim)
            if num_lanes > 1:
                c1 = centroid_mean.reshape(-1, 1, embed_dim)
                c2 = centroid_mean.reshape(1, -1, embed_dim)
                dist = torch.norm(c1 - c2, dim=2)         # (num_lanes, num_lanes)
                # the diagonal set to delta_dist contributes nothing
                dist = dist + torch.eye(num_lanes, dtype=dist.dtype, device=dist.device) * self.delta_dist
                # push: centroids closer than 2 delta_dist (each pair counted twice, hence / 2)
                dist_loss = dist_loss + torch.sum(F.relu(-dist + self.delta_dist) ** 2) / (num_lanes * (num_lanes - 1)) / 2
            reg_loss = reg_loss + torch.mean(torch.norm(centroid_mean, dim=1))
        var_loss = var_loss / batch_size
        dist_loss = dist_loss / batch_size
        reg_loss = reg_loss / batch_size
        return self.alpha * var_loss + self.beta * dist_loss + self.gamma * reg_loss


class DiscriminativeLossMasked(DiscriminativeLoss):
    """The same loss over MAX_LANES fixed lane slots: masks and reductions, no host reads."""

    def forward(self, embedding, seg_gt):
        batch_size, embed_dim = embedding.shape[:2]
        e = embedding.flatten(2)                                                  # (B, D, P)
        slots = torch.arange(1, MAX_LANES + 1, device=e.device)
        oh = (seg_gt.flatten(1)[..., None] == slots).to(e.dtype)                  # (B, P, K) lane masks
        cnt = oh.sum(1)                                                           # (B, K) pixels a lane
        present = cnt > 0
        n = present.sum(1).to(e.dtype)                                            # lanes an image
        mu = torch.einsum("bdp,bpk->bkd", e, oh) / cnt.clamp_min(1)[..., None]    # centroids (B, K, D)
        mu_pix = torch.einsum("bkd,bpk->bdp", mu, oh)                             # each pixel's centroid
        hinge = F.relu(torch.norm(e - mu_pix, dim=1) - self.delta_var) ** 2       # (B, P)
        var_k = torch.einsum("bp,bpk->bk", hinge, oh) / cnt.clamp_min(1)          # mean over a lane's pixels
        var_loss = (var_k.sum(1) / n.clamp_min(1)).sum()
        pair = present[:, :, None] & present[:, None, :] & ~torch.eye(MAX_LANES, dtype=torch.bool, device=e.device)
        dist = torch.norm(mu[:, :, None, :] - mu[:, None, :, :], dim=3)          # (B, K, K)
        push = torch.where(pair, F.relu(self.delta_dist - dist) ** 2, torch.zeros_like(dist)).sum((1, 2))
        dist_loss = torch.where(n > 1, push / (n * (n - 1)).clamp_min(1) / 2, torch.zeros_like(push)).sum()
        reg = (torch.norm(mu, dim=2) * present).sum(1) / n.clamp_min(1)
        reg_loss = reg.sum()
        return (self.alpha * var_loss + self.beta * dist_loss + self.gamma * reg_loss) / batch_size


def conv_bn(cin, cout):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True))


class Decoder(nn.Module):
    """U-Net-style: upsample, concatenate the encoder's skip, two 3 x 3 convolutions."""

    def __init__(self, out_ch, widths=(512, 256, 128, 64, 64), dec=(128, 64, 32, 32)):
        super().__init__()
        self.blocks = nn.ModuleList()
        cin = widths[0]
        for skip, w in zip(widths[1:], dec):
            self.blocks.append(nn.Sequential(conv_bn(cin + skip, w), conv_bn(w, w)))
            cin = w
        self.final = nn.Sequential(conv_bn(cin, 16), nn.Conv2d(16, out_ch, 1))

    def forward(self, feats):
        x = feats[0]
        for blk, skip in zip(self.blocks, feats[1:]):
            x = F.interpolate(x, size=skip.shape[-2:], mode="bilinear", align_corners=False)
            x = blk(torch.cat([x, skip], 1))
        x = F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=False)
        return self.final(x)


class LaneNet(nn.Module):
    def __init__(self, embed_dim=4):
        super().__init__()
        r = torchvision.models.resnet18(weights=None)
        self.stem = nn.Sequential(r.conv1, r.bn1, r.relu)            # /2, 64
        self.pool = r.maxpool
        self.layers = nn.ModuleList([r.layer1, r.layer2, r.layer3, r.layer4])   # /4 .. /32
        self.binary = Decoder(2)
        self.instance = Decoder(embed_dim)

    def forward(self, x):
        s = self.stem(x)
        f = [s]
        y = self.pool(s)
        for layer in self.layers:
            y = layer(y)
            f.append(y)
        feats = [f[4], f[3], f[2], f[1], f[0]]
        return self.binary(feats), self.instance(feats)


def make_frames(n, h, w, dev, seed=0):
    """n TuSimple-like frames: sky and road, 2-5 lanes (solid or dashed) curving toward a
    vanishing point, lane markings painted white or yellow; a lane-id map (0 background)."""
    g = torch.Generator(device=dev).manual_seed(seed)
    imgs = torch.empty(n, 3, h, w, device=dev, dtype=torch.uint8)
    ids = torch.empty(n, h, w, device=dev, dtype=torch.uint8)
    ys = torch.arange(h, device=dev, dtype=torch.float32)[:, None]
    xs = torch.arange(w, device=dev, dtype=torch.float32)[None, :]
    for s in range(0, n, 64):
        m = min(64, n - s)
        horizon = h * (0.30 + 0.1 * torch.rand(m, 1, 1, device=dev, generator=g))
        vp_x = w * (0.4 + 0.2 * torch.rand(m, 1, 1, device=dev, generator=g))
        below = (ys[None] - horizon).clamp_min(0)                            # (m, H, 1)
        depth = below / (h - horizon)                                         # 0 at the horizon, 1 at the bottom
        sky = torch.tensor([150.0, 170.0, 200.0], device=dev)[None, :, None, None]
        road = torch.tensor([80.0, 80.0, 85.0], device=dev)[None, :, None, None]
        img = torch.where((ys[None] < horizon)[:, None], sky, road + 30 * depth[:, None])
        img = img.expand(m, 3, h, w).clone()
        lane_id = torch.zeros(m, h, w, device=dev)
        n_lanes = torch.randint(2, MAX_LANES + 1, (m,), device=dev, generator=g)
        curve = (torch.rand(m, 1, 1, device=dev, generator=g) - 0.5) * 0.6 * w
        spacing = w * (0.35 + 0.2 * torch.rand(m, 1, 1, device=dev, generator=g))
        for k in range(MAX_LANES):
            offset = (k - (n_lanes[:, None, None] - 1) / 2) * spacing          # lane position at the bottom
            x_k = vp_x + offset * depth + curve * (1 - depth) ** 2 * depth
            half = 1.0 + 5.0 * depth                                           # wider near the camera
            on = ((xs[None] - x_k).abs() < half) & (below > 2) & (k < n_lanes[:, None, None])
            dashed = torch.rand(m, 1, 1, device=dev, generator=g) < 0.5
            dash = torch.sin(40 * torch.log1p(4 * depth) + k) > -0.2
            on = on & (~dashed | dash)
            colour = torch.where(torch.rand(m, 1, 1, 1, device=dev, generator=g) < 0.3,
                                 torch.tensor([230.0, 200.0, 60.0], device=dev)[None, :, None, None],
                                 torch.tensor([235.0, 235.0, 235.0], device=dev)[None, :, None, None])
            img = torch.where(on[:, None], colour, img)
            lane_id = torch.where(on, torch.full_like(lane_id, k + 1), lane_id)
        img = img + 12 * torch.randn(m, 3, h, w, device=dev, generator=g)
        imgs[s:s + m] = img.clamp(0, 255).to(torch.uint8)
        ids[s:s + m] = lane_id.to(torch.uint8)
    return imgs, ids


def main():
    args = cc.parser(__doc__, warmup=3).parse_args()
    dev = cc.torch_device(args)
    gpu = dev.type == "cuda"
    if args.smoke:
        n_frames, h, w, batch = 16, 64, 128, 4
    else:
        n_frames, h, w, batch = 512, 256, 512, 16
    frames, lane_ids = make_frames(n_frames, h, w, dev)
    # LaneNet's bounded inverse class weighting, once over the frames: 1 / ln(1.02 + frequency)
    lane_frac = (lane_ids > 0).float().mean().item()
    ce_weight = torch.tensor([1 / math.log(1.02 + 1 - lane_frac), 1 / math.log(1.02 + lane_frac)], device=dev)
    mean = torch.tensor([0.485, 0.456, 0.406], device=dev)[None, :, None, None] * 255
    std = torch.tensor([0.229, 0.224, 0.225], device=dev)[None, :, None, None] * 255

    torch.manual_seed(0)
    model = LaneNet().to(dev).train()
    if gpu:
        model = model.to(memory_format=torch.channels_last)
    params = sum(p.numel() for p in model.parameters())
    disc = DiscriminativeLossMasked() if args.fix else DiscriminativeLoss()

    # the masked loss equals the lane loop (checked once, on random embeddings and a real lane map)
    gc = torch.Generator(device=dev).manual_seed(3)
    e = torch.randn(2, 4, h, w, device=dev, generator=gc, dtype=torch.float64) * 2
    ref, new = DiscriminativeLoss()(e, lane_ids[:2].long()), DiscriminativeLossMasked()(e, lane_ids[:2].long())
    if not torch.allclose(ref, new, rtol=1e-6, atol=1e-9):
        raise SystemExit(f"masked discriminative loss differs: {float(new)} vs {float(ref)}")

    opt = torch.optim.AdamW(model.parameters(), lr=5e-4, weight_decay=1e-4, fused=gpu)
    amp = torch.autocast(dev.type, dtype=torch.bfloat16, enabled=gpu)
    g = torch.Generator(device=dev).manual_seed(1)
    st = {"acc": torch.zeros((), device=dev), "loss": None, "reads": 0}

    def sample():
        idx = torch.randint(0, n_frames, (batch,), device=dev, generator=g)
        x = frames[idx].float()
        y = lane_ids[idx].long()
        flip = (torch.rand(batch, device=dev, generator=g) < 0.5)[:, None, None]
        x = torch.where(flip[:, None], x.flip(-1), x)
        y = torch.where(flip, y.flip(-1), y)
        x = (x * (0.8 + 0.4 * torch.rand(batch, 1, 1, 1, device=dev, generator=g)) - mean) / std
        if gpu:
            x = x.contiguous(memory_format=torch.channels_last)
        return x, y

    def step(i):
        x, inst = sample()
        with amp:
            binary_logits, embedding = model(x)
        binary_loss = F.cross_entropy(binary_logits.float(), (inst > 0).long(), weight=ce_weight)
        instance_loss = disc(embedding.float(), inst)
        loss = binary_loss + instance_loss
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        st["acc"] += loss.detach()
        if i % 50 == 49:
            st["loss"] = st["acc"].item() / 50
            st["acc"].zero_()
            st["reads"] += 1

    cc.run("c9_tv_lanenet_discriminative_unique_loop", args, step, batch,
           extra=lambda: {"batch": batch, "image": [h, w], "params_m": round(params / 1e6, 1),
                          "masked_loss": bool(args.fix), "loss": st["loss"], "loss_reads": st["reads"]})


if __name__ == "__main__":
    main()
