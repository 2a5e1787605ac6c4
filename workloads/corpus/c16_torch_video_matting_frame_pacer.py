"""C16 the feeding thread asleep (a real-time frame pacer left on in an offline conversion):
background replacement for recorded video calls with a Robust-Video-Matting-style recurrent
matting network in PyTorch: 4 recorded 1080p streams converted together, one frame of each
a step; each frame is downsampled by 0.5 (540 x 960), a torchvision resnet50 trunk
(weights=None, layers 1-3: strides 4, 8, 16) feeds an LR-ASPP-style bottleneck and a
recurrent decoder (at strides 16, 8 and 4: upsample, concatenate the skip, 3 x 3
convolution, BatchNorm, ReLU, and a ConvGRU over half the channels whose state carries over
from frame to frame, as RVM's does), a head to the foreground residual and alpha, bilinear
upsampling to 1080p and the composite over a new background; 9.7 M parameters, random
weights, eval, inference_mode, bf16 autocast, channels_last; the frames are crops of slowly
panning canvases held on the GPU, the composites stay there (the encoder's input).

The conversion reuses the live application's loop, and with it its FramePacer at the
call's 30 frames per second: after each frame is launched the thread computes the next
frame's deadline and time.sleep()s until it (the live app must not run ahead of the
camera). Offline there is no camera to wait for: the GPU finishes a step's ~4-7 ms of work
and idles for the rest of the 33.3 ms period, the thread asleep in clock_nanosleep.

--fix: gpuwhy's C16 advice (do not leave the feeding thread waiting on something other than
the GPU): the pacer off for offline input (pacer=None: no camera
to keep pace with); model, frames and compositing unchanged.

Written blind for the quebec batch.
"""
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision

import cc


class ConvGRU(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.ih = nn.Conv2d(2 * c, 2 * c, 3, padding=1)
        self.hh = nn.Conv2d(2 * c, c, 3, padding=1)

    def forward(self, x, h):
        if h is None:
            h = torch.zeros_like(x)
        r, z = torch.sigmoid(self.ih(torch.cat([x, h], 1))).chunk(2, 1)
        c = torch.tanh(self.hh(torch.cat([x, r * h], 1)))
        h = (1 - z) * h + z * c
        return h, h


class UpBlock(nn.Module):
    """RVM's UpsamplingBlock: upsample, concatenate the skip, conv, ConvGRU on half the channels."""

    def __init__(self, cin, cskip, cout):
        super().__init__()
        self.conv = nn.Sequential(nn.Conv2d(cin + cskip, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout),
                                  nn.ReLU(True))
        self.gru = ConvGRU(cout // 2)

    def forward(self, x, skip, h):
        x = F.interpolate(x, size=skip.shape[-2:], mode="bilinear", align_corners=False)
        x = self.conv(torch.cat([x, skip], 1))
        a, b = x.chunk(2, 1)
        b, h = self.gru(b, h)
        return torch.cat([a, b], 1), h


class Matting(nn.Module):
    def __init__(self):
        super().__init__()
        r = torchvision.models.resnet50(weights=None)
        self.stem = nn.Sequential(r.conv1, r.bn1, r.relu, r.maxpool)
        self.l1, self.l2, self.l3 = r.layer1, r.layer2, r.layer3
        self.aspp = nn.Sequential(nn.Conv2d(1024, 128, 1, bias=False), nn.BatchNorm2d(128), nn.ReLU(True))
        self.gate = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Conv2d(1024, 128, 1, bias=False), nn.Sigmoid())
        self.gru16 = ConvGRU(64)
        self.up8 = UpBlock(128, 512, 80)
        self.up4 = UpBlock(80, 256, 40)
        self.head = nn.Conv2d(40, 4, 3, padding=1)

    def forward(self, src_lr, rec):
        f1 = self.l1(self.stem(src_lr))
        f2 = self.l2(f1)
        f3 = self.l3(f2)
        x = self.aspp(f3) * self.gate(f3)
        a, b = x.chunk(2, 1)
        b, r16 = self.gru16(b, rec[0])
        x, r8 = self.up8(torch.cat([a, b], 1), f2, rec[1])
        x, r4 = self.up4(x, f1, rec[2])
        return self.head(x), [r16, r8, r4]


class FramePacer:
    """The live app's pacing: one frame per period, sleeping until the next deadline."""

    def __init__(self, fps):
        self.period, self.next = 1.0 / fps, None
        self.slept = 0.0

    def wait(self):
        now = time.perf_counter()
        self.next = (now if self.next is None else self.next) + self.period
        delay = self.next - now
        if delay > 0:
            time.sleep(delay)
            self.slept += delay
        else:                                  # fell behind the camera: resynchronize
            self.next = now


def main():
    args = cc.parser(__doc__, warmup=5).parse_args()
    dev = cc.torch_device(args)
    gpu = dev.type == "cuda"
    if args.smoke:
        streams, h, w, fps = 2, 144, 256, 30.0
    else:
        streams, h, w, fps = 4, 1080, 1920, 30.0
    pan, ratio = 64, 0.5
    torch.manual_seed(0)
    model = Matting().to(dev).eval()
    if gpu:
        model = model.to(memory_format=torch.channels_last)
    cdt = torch.bfloat16 if gpu else torch.float32
    g = torch.Generator(device=dev).manual_seed(1)
    low = torch.rand(streams, 3, (h + pan) // 16, (w + pan) // 16, device=dev, generator=g)
    canvas = F.interpolate(low, size=(h + pan, w + pan), mode="bicubic", align_corners=False).clamp(0, 1).to(cdt)
    background = torch.tensor([0.12, 0.47, 0.71], device=dev, dtype=cdt).view(1, 3, 1, 1)
    amp = torch.autocast(dev.type, dtype=torch.bfloat16, enabled=gpu)
    pacer = None if args.fix else FramePacer(fps)
    st = {"rec": [None, None, None], "out": None, "checks": 0}

    def step(i):
        o = i % pan
        src = canvas[:, :, o:o + h, o:o + w]
        with torch.inference_mode(), amp:
            lr = F.interpolate(src, scale_factor=ratio, mode="bilinear", align_corners=False)
            if gpu:
                lr = lr.contiguous(memory_format=torch.channels_last)
            out, st["rec"] = model(lr, st["rec"])
            out = F.interpolate(out, size=(h, w), mode="bilinear", align_corners=False)
            fgr = (out[:, :3] + src).clamp(0, 1)
            pha = out[:, 3:].sigmoid()
            st["out"] = (fgr * pha + background * (1 - pha)).mul(255).to(torch.uint8)   # to the encoder
        if pacer is not None:
            pacer.wait()  # gpuwhy: plants C16 (the live app's 30 fps pacer: the thread sleeps out the rest of each 33 ms period)
        if i % 100 == 99:
            st["checks"] += int(st["out"][0, 0, 0, 0].item() >= 0)

    cc.run("c16_torch_video_matting_frame_pacer", args, step, streams,
           extra=lambda: {"streams": streams, "frame": [h, w], "downsample_ratio": ratio,
                          "pacer_fps": None if pacer is None else fps,
                          "slept_s": None if pacer is None else round(pacer.slept, 3)})


if __name__ == "__main__":
    main()
