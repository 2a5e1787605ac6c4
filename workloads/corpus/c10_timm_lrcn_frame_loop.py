"""C10 serial loop over time steps in Python (an LRCN-style video classifier stepped frame by
frame): action recognition on UCF101-sized clips (101 classes) with the "CNN per frame, then
an LSTM" model of LRCN (Donahue et al.) as most tutorials write it: a timm ResNet-18 frame
encoder (random weights, global average pooling to 512 features) and an nn.LSTMCell of 512,
the class scores from the mean of the hidden states; bf16 autocast, channels_last, AdamW
(foreach), clip_grad_norm_ 1.0, label smoothing 0.1, batch 32 clips of 16 frames at 112 x 112.
The clips (128 uint8 clips of 16 frames at 128 x 171, decoded once) are on the GPU; each step
takes a random 112 crop of its clips, a flip and the normalization there; the loss is summed on
the GPU and read every 50 steps.

The forward pass loops over the 16 frames in Python: the CNN on frame t of the 32 clips (a
batch of 32 images of 112 px), then the LSTM cell on its features, one step after the other,
and autograd's backward walks the same 16 steps back: about 4,400 kernel-launching operations
a step (about 280 with the fix), each over 32 images or a (32, 512) state, launched one after
another from Python; the GPU finishes most of them faster than they are issued.

--fix: gpuwhy's C10 advice (work over the whole sequence instead of a per-time-step loop): the
CNN runs once over all 512 frames of the batch (the clips' frames as one batch of 512; its
BatchNorm then takes its statistics over the 512 frames at once instead of 32 at a time) and
one nn.LSTM (cuDNN) runs over the 16 steps, its weights the LSTMCell's; data, optimizer and
loss unchanged.

Written blind for the echo batch.
"""
import math

import timm
import torch
import torch.nn as nn
import torch.nn.functional as F

import cc

MEAN = (0.43216, 0.394666, 0.37645)  # Kinetics/UCF101 clip statistics
STD = (0.22803, 0.22145, 0.216989)


class LRCN(nn.Module):
    def __init__(self, classes, hidden, fused):
        super().__init__()
        self.cnn = timm.create_model("resnet18", pretrained=False, num_classes=0)
        feat = self.cnn.num_features
        self.fused = fused
        self.hidden = hidden
        cell = nn.LSTMCell(feat, hidden)
        self.head = nn.Linear(hidden, classes)
        if fused:  # the same weights in cuDNN's layout: one nn.LSTM over the sequence
            self.lstm = nn.LSTM(feat, hidden, batch_first=True)
            with torch.no_grad():
                for a, b in (("weight_ih_l0", "weight_ih"), ("weight_hh_l0", "weight_hh"),
                             ("bias_ih_l0", "bias_ih"), ("bias_hh_l0", "bias_hh")):
                    getattr(self.lstm, a).copy_(getattr(cell, b))
        else:
            self.cell = cell

    def forward(self, clips):  # (B, T, 3, H, W)
        b, t = clips.shape[:2]
        if self.fused:
            feats = self.cnn(clips.flatten(0, 1).contiguous(memory_format=torch.channels_last)).view(b, t, -1)
            out, _ = self.lstm(feats)
            return self.head(out.mean(1))
        h = clips.new_zeros(b, self.hidden)
        c = clips.new_zeros(b, self.hidden)
        outs = []
        for s in range(t):  # gpuwhy: plants C10 (frame by frame: CNN on 32 images, then the LSTM cell, 16 dependent steps)
            f = self.cnn(clips[:, s].contiguous(memory_format=torch.channels_last))
            h, c = self.cell(f, (h, c))
            outs.append(h)
        return self.head(torch.stack(outs, 1).mean(1))


def main():
    args = cc.parser(__doc__).parse_args()
    dev = cc.torch_device(args)
    torch.backends.cudnn.benchmark = True
    if args.smoke:
        n_clips, frames, h, w, crop, batch, classes, hidden = 8, 4, 40, 48, 32, 2, 101, 64
    else:
        n_clips, frames, h, w, crop, batch, classes, hidden = 128, 16, 128, 171, 112, 32, 101, 512
    torch.manual_seed(0)
    model = LRCN(classes, hidden, fused=args.fix).to(dev).to(memory_format=torch.channels_last)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.05)
    total = 20_000
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / 200) * 0.5 * (1 + math.cos(math.pi * min(s, total) / total)))
    g = torch.Generator(device=dev).manual_seed(0)
    clips = torch.randint(0, 256, (n_clips, frames, 3, h, w), dtype=torch.uint8, device=dev, generator=g)
    labels = torch.randint(0, classes, (n_clips,), device=dev, generator=g)
    mean = torch.tensor(MEAN, device=dev).view(1, 1, 3, 1, 1) * 255
    std = torch.tensor(STD, device=dev).view(1, 1, 3, 1, 1) * 255
    acc = torch.zeros((), device=dev)
    log = {"loss": None, "reads": 0}
    offsets = torch.Generator().manual_seed(1)  # crop offsets and flips drawn on the host, like a transform's

    def step(i):
        idx = torch.randint(0, n_clips, (batch,), device=dev, generator=g)
        y0 = int(torch.randint(0, h - crop + 1, (1,), generator=offsets))
        x0 = int(torch.randint(0, w - crop + 1, (1,), generator=offsets))
        x = clips[idx, :, :, y0:y0 + crop, x0:x0 + crop].float()
        if bool(torch.rand(1, generator=offsets) < 0.5):
            x = x.flip(4)
        x = (x - mean) / std
        with torch.autocast(dev.type, dtype=torch.bfloat16):
            loss = F.cross_entropy(model(x), labels[idx], label_smoothing=0.1)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        acc.add_(loss.detach())
        if i % 50 == 49:
            log["loss"] = acc.item() / 50
            log["reads"] += 1
            acc.zero_()

    cc.run("c10_timm_lrcn_frame_loop", args, step, batch,
           extra=lambda: {"recurrence": "nn.LSTM over the clip, CNN on all frames at once" if args.fix
                          else "Python loop over frames: CNN per frame, nn.LSTMCell",
                          "frames": frames, "loss_reads": log["reads"]})


if __name__ == "__main__":
    main()
