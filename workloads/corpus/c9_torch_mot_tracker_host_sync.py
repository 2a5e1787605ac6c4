"""C9 a sync point each batch followed by host work (multi-camera tracking with a FairMOT-style
detector and a JDE/ByteTrack-style tracker on the host): the inference loop of a
multi-object tracking service over 12 camera streams of 768 x 1344 frames (FairMOT's
1088 x 608 input scaled up for 1080p cameras), one frame of each camera a batch: a CenterNet-style one-shot tracker in PyTorch
(torchvision resnet34 trunk, weights=None, then three 4 x 4 transposed convolutions with
BatchNorm and ReLU to stride 4 and 64 channels, and 3 x 3 + 1 x 1 heads for the person
heatmap, the box's left/top/right/bottom, the centre offset and a 128-d re-identification
embedding; 24.7 M parameters, random weights), eval, inference_mode, bf16 autocast,
channels_last; the frames are crops of a slowly panning canvas per camera held on the GPU.
Decoding stays on the GPU (sigmoid, 3 x 3 max-pool peak extraction, the top 64 peaks of
each frame, their boxes and L2-normalized embeddings).

Then, as FairMOT's and JDE's trackers do, the detections are copied to the host with
.cpu().numpy() (a synchronization: the host waits for the whole batch) and each camera's
tracker runs in NumPy/SciPy: constant-velocity prediction of the tracks, an embedding
cosine-distance matrix fused with IoU and gated, scipy.optimize.linear_sum_assignment, a
second IoU-only association of the leftovers (ByteTrack's second stage), the embedding
moving average, new tracks and removal of tracks lost for 10 frames. Only then is the next
batch launched, so the GPU idles during the tracking of 12 cameras (~8-14 ms) and the
launch of the next forward, against ~11-15 ms of detector work a batch (2.9 TFLOP).

--fix: gpuwhy's C9 advice (host work on GPU results off the critical path, the small result
copied asynchronously): the detections copied into pinned buffers with non_blocking=True and
a CUDA event recorded; the loop launches batch t, then waits for batch t-1's event and tracks
it while the GPU runs batch t (one batch of latency, the same tracks); detector, decoding
and tracker unchanged.

Written blind for the quebec batch.
"""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision
from scipy.optimize import linear_sum_assignment

import cc


class OneShotTracker(nn.Module):
    """FairMOT's layout on a ResNet-34: stride-32 features, deconvolutions to stride 4, heads."""

    def __init__(self, emb_dim=128, head=256):
        super().__init__()
        r = torchvision.models.resnet34(weights=None)
        self.trunk = nn.Sequential(r.conv1, r.bn1, r.relu, r.maxpool, r.layer1, r.layer2, r.layer3, r.layer4)
        up, c = [], 512
        for o in (256, 128, 64):
            up += [nn.ConvTranspose2d(c, o, 4, stride=2, padding=1, bias=False), nn.BatchNorm2d(o), nn.ReLU(inplace=True)]
            c = o
        self.up = nn.Sequential(*up)
        self.heads = nn.ModuleDict({k: nn.Sequential(nn.Conv2d(64, head, 3, padding=1), nn.ReLU(inplace=True),
                                                     nn.Conv2d(head, n, 1))
                                    for k, n in (("hm", 1), ("wh", 4), ("reg", 2), ("id", emb_dim))})

    def forward(self, x):
        f = self.up(self.trunk(x))
        return {k: h(f) for k, h in self.heads.items()}


def decode(out, k):
    """Peaks of the heatmap (3 x 3 max-pool NMS), the top k a frame, boxes in input pixels."""
    hm = torch.sigmoid(out["hm"].float())
    peak = hm * (F.max_pool2d(hm, 3, 1, 1) == hm)
    b, _, h, w = hm.shape
    scores, inds = peak.view(b, -1).topk(k)
    ys, xs = (inds // w).float(), (inds % w).float()
    take = lambda t: t.float().flatten(2).gather(2, inds[:, None].expand(-1, t.shape[1], -1))
    wh, reg = take(out["wh"]).exp().clamp(max=64), take(out["reg"])
    cx, cy = xs + reg[:, 0], ys + reg[:, 1]
    boxes = torch.stack([cx - wh[:, 0], cy - wh[:, 1], cx + wh[:, 2], cy + wh[:, 3]], -1) * 4
    emb = F.normalize(take(out["id"]).transpose(1, 2), dim=-1)
    return torch.cat([boxes, scores[..., None]], -1), emb              # (b, k, 5), (b, k, 128)


def iou_matrix(a, b):
    lt = np.maximum(a[:, None, :2], b[None, :, :2])
    rb = np.minimum(a[:, None, 2:], b[None, :, 2:])
    inter = np.prod(np.clip(rb - lt, 0, None), axis=2)
    area = lambda x: (x[:, 2] - x[:, 0]) * (x[:, 3] - x[:, 1])
    return inter / (area(a)[:, None] + area(b)[None, :] - inter + 1e-9)


class CameraTracker:
    """JDE/ByteTrack-style association, one per camera; the state in NumPy arrays."""

    def __init__(self, emb_dim, max_lost=10):
        self.boxes = np.zeros((0, 4), np.float32)
        self.vel = np.zeros((0, 4), np.float32)
        self.emb = np.zeros((0, emb_dim), np.float32)
        self.lost = np.zeros(0, np.int64)
        self.ids = np.zeros(0, np.int64)
        self.next_id, self.max_lost = 0, max_lost

    def _match(self, cost, thresh):
        if cost.size == 0:
            return np.zeros((0, 2), np.int64)
        r, c = linear_sum_assignment(cost)
        ok = cost[r, c] < thresh
        return np.stack([r[ok], c[ok]], 1)

    def update(self, dets, emb):
        boxes = self.boxes + self.vel                                  # constant-velocity prediction
        iou = iou_matrix(boxes, dets[:, :4])
        cost = 0.98 * (1.0 - self.emb @ emb.T) + 0.02 * (1.0 - iou)     # appearance fused with motion
        cost[iou < 0.05] = 1e5                                          # gating
        m1 = self._match(cost, 0.4)
        tr_left = np.setdiff1d(np.arange(boxes.shape[0]), m1[:, 0])
        de_left = np.setdiff1d(np.arange(dets.shape[0]), m1[:, 1])
        m2 = self._match(1.0 - iou[np.ix_(tr_left, de_left)], 0.5)      # second stage: IoU only
        m2 = np.stack([tr_left[m2[:, 0]], de_left[m2[:, 1]]], 1) if m2.size else m2
        matches = np.concatenate([m1, m2])
        t, d = matches[:, 0], matches[:, 1]
        new_box = dets[d, :4]
        self.vel[t] = 0.6 * self.vel[t] + 0.4 * (new_box - self.boxes[t])
        self.boxes = boxes
        self.boxes[t] = new_box
        e = 0.9 * self.emb[t] + 0.1 * emb[d]
        self.emb[t] = e / np.linalg.norm(e, axis=1, keepdims=True)
        self.lost += 1
        self.lost[t] = 0
        fresh = np.setdiff1d(np.arange(dets.shape[0]), d)
        fresh = fresh[dets[fresh, 4] > np.median(dets[:, 4])]            # only confident ones start tracks
        keep = self.lost <= self.max_lost
        self.boxes = np.concatenate([self.boxes[keep], dets[fresh, :4]])
        self.vel = np.concatenate([self.vel[keep], np.zeros((fresh.shape[0], 4), np.float32)])
        self.emb = np.concatenate([self.emb[keep], emb[fresh]])
        self.lost = np.concatenate([self.lost[keep], np.zeros(fresh.shape[0], np.int64)])
        self.ids = np.concatenate([self.ids[keep], self.next_id + np.arange(fresh.shape[0])])
        self.next_id += fresh.shape[0]
        return self.ids[:matches.shape[0]]


def main():
    args = cc.parser(__doc__, warmup=5).parse_args()
    dev = cc.torch_device(args)
    gpu = dev.type == "cuda"
    if args.smoke:
        cams, h, w, k = 2, 96, 160, 16
    else:
        cams, h, w, k = 12, 768, 1344, 64
    pan = 96
    torch.manual_seed(0)
    model = OneShotTracker().to(dev).eval()
    if gpu:
        model = model.to(memory_format=torch.channels_last)
    g = torch.Generator(device=dev).manual_seed(1)
    low = torch.rand(cams, 3, (h + pan) // 16, (w + pan) // 16, device=dev, generator=g)
    canvas = F.interpolate(low, size=(h + pan, w + pan), mode="bicubic", align_corners=False)
    canvas = ((canvas - 0.45) / 0.25).to(torch.bfloat16 if gpu else torch.float32)
    mean_dtype = canvas.dtype
    amp = torch.autocast(dev.type, dtype=torch.bfloat16, enabled=gpu)
    trackers = [CameraTracker(128) for _ in range(cams)]
    st = {"tracked": 0, "tracks": 0, "pending": None}

    def frames(i):
        o = i % pan                                       # a slow pan: one pixel a frame
        x = canvas[:, :, o:o + h, o:o + w]
        return x.contiguous(memory_format=torch.channels_last) if gpu else x.contiguous()

    def detect(i):
        with torch.inference_mode(), amp:
            return decode(model(frames(i).to(mean_dtype)), k)

    def track(dets, emb):
        for c in range(cams):
            st["tracked"] += trackers[c].update(dets[c], emb[c]).shape[0]
        st["tracks"] = sum(t.boxes.shape[0] for t in trackers)

    if args.fix:
        pinned = [(torch.empty(cams, k, 5, pin_memory=gpu), torch.empty(cams, k, 128, pin_memory=gpu)) for _ in range(2)]

    def step(i):
        dets, emb = detect(i)
        if not args.fix:
            dets, emb = dets.cpu().numpy(), emb.cpu().numpy()  # gpuwhy: plants C9 (the host waits for the batch, then tracks 12 cameras while the GPU idles)
            track(dets, emb)
            return
        hd, he = pinned[i % 2]
        hd.copy_(dets, non_blocking=True)
        he.copy_(emb, non_blocking=True)
        ev = torch.cuda.Event() if gpu else None
        if gpu:
            ev.record()
        prev, st["pending"] = st["pending"], (hd, he, ev)
        if prev is not None:                             # batch t-1, while the GPU runs batch t
            if prev[2] is not None:
                prev[2].synchronize()
            track(prev[0].numpy(), prev[1].numpy())

    cc.run("c9_torch_mot_tracker_host_sync", args, step, cams,
           extra=lambda: {"cameras": cams, "frame": [h, w], "top_k": k, "pipelined": bool(args.fix),
                          "live_tracks": st["tracks"], "matched": st["tracked"]})


if __name__ == "__main__":
    main()
