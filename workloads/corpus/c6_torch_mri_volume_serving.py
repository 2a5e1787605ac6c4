"""C6 pageable copies (3D segmentation inference serving): a brain-tumour segmentation
service in plain PyTorch, BraTS-style: each request batch is 4 MRI volumes of 4 modalities
(T1, T1ce, T2, FLAIR) at 128^3 voxels, z-scored float32 numpy arrays handed over by the
preprocessing stage (256 MiB a batch; 6 of them made once and cycled, as fresh arrays
would be); the model is a 3D U-Net (channels 16-32-64-128, two 3x3x3 convolutions with
InstanceNorm and LeakyReLU a level, transposed-convolution up-sampling, 4 output classes;
random weights, bf16, channels_last_3d, inference_mode). The handler does what most
serving code does: torch.from_numpy(volume).to("cuda") (a synchronous copy from pageable
memory through the driver's staging buffer, the GPU idle meanwhile), the forward pass, then
the argmax label map back with .cpu().numpy() (32 MiB of uint8, pageable and synchronous
again) before the next request is looked at.

--fix: gpuwhy's C6 advice (pinned memory, non_blocking copies): two pinned input and two
pinned output buffers made once; the next batch is copied into a pinned buffer on the host
and sent with copy_(non_blocking=True) on a copy stream while the current one is segmented,
the label map comes back with a non_blocking copy into a pinned buffer and is read one batch
later (after its event); model, volumes and outputs unchanged.

Written blind for the peak batch.
"""
import numpy as np
import torch
import torch.nn as nn

import cc


def block(a, b):
    return nn.Sequential(nn.Conv3d(a, b, 3, padding=1, bias=False), nn.InstanceNorm3d(b, affine=True),
                         nn.LeakyReLU(0.01, inplace=True),
                         nn.Conv3d(b, b, 3, padding=1, bias=False), nn.InstanceNorm3d(b, affine=True),
                         nn.LeakyReLU(0.01, inplace=True))


class UNet3D(nn.Module):
    def __init__(self, cin=4, classes=4, ch=(16, 32, 64, 128)):
        super().__init__()
        self.down = nn.ModuleList()
        a = cin
        for c in ch:
            self.down.append(block(a, c))
            a = c
        self.pool = nn.MaxPool3d(2)
        self.up = nn.ModuleList(nn.ConvTranspose3d(ch[i], ch[i - 1], 2, stride=2) for i in range(len(ch) - 1, 0, -1))
        self.dec = nn.ModuleList(block(2 * ch[i - 1], ch[i - 1]) for i in range(len(ch) - 1, 0, -1))
        self.head = nn.Conv3d(ch[0], classes, 1)

    def forward(self, x):
        skips = []
        for i, d in enumerate(self.down):
            x = d(x)
            if i < len(self.down) - 1:
                skips.append(x)
                x = self.pool(x)
        for up, dec in zip(self.up, self.dec):
            x = dec(torch.cat([up(x), skips.pop()], 1))
        return self.head(x)


def main():
    args = cc.parser(__doc__).parse_args()
    dev = cc.torch_device(args)
    batch, side = (1, 16) if args.smoke else (4, 128)
    torch.manual_seed(0)
    gpu = dev.type == "cuda"
    dtype = torch.bfloat16 if gpu else torch.float32
    model = UNet3D().to(dev, dtype=dtype, memory_format=torch.channels_last_3d).eval()
    rng = np.random.default_rng(0)
    volumes = [rng.standard_normal((batch, 4, side, side, side), dtype=np.float32) for _ in range(6)]
    results = []

    def segment(x):
        x = x.to(dtype).contiguous(memory_format=torch.channels_last_3d)
        return model(x).argmax(1).to(torch.uint8)

    if not args.fix or not gpu:
        @torch.inference_mode()
        def step(i):
            x = torch.from_numpy(volumes[i % len(volumes)]).to(dev)  # gpuwhy: plants C6 (256 MiB from pageable memory, synchronous)
            labels = segment(x).cpu().numpy()  # gpuwhy: plants C6 (32 MiB back into pageable memory)
            results.append(int(labels[0, 0, 0, 0]))
    else:
        copy = torch.cuda.Stream()
        pin_in = [torch.empty(volumes[0].shape, dtype=torch.float32).pin_memory() for _ in range(2)]
        pin_out = [torch.empty((batch, side, side, side), dtype=torch.uint8).pin_memory() for _ in range(2)]
        dev_in = [torch.empty(volumes[0].shape, dtype=torch.float32, device=dev) for _ in range(2)]
        loaded = [torch.cuda.Event() for _ in range(2)]
        used = [torch.cuda.Event() for _ in range(2)]
        back = [None, None]

        def load(i):
            s = i % 2
            copy.wait_event(used[s])  # the slot's previous batch has been read by the model
            used[s].synchronize()  # and its pinned buffer is free to fill again
            pin_in[s].numpy()[...] = volumes[i % len(volumes)]
            with torch.cuda.stream(copy):
                dev_in[s].copy_(pin_in[s], non_blocking=True)
                loaded[s].record(copy)

        state = {"next": 0}

        @torch.inference_mode()
        def step(i):
            if state["next"] == i:
                load(i)
            s = i % 2
            torch.cuda.current_stream().wait_event(loaded[s])
            labels = segment(dev_in[s])
            used[s].record()
            load(i + 1)
            state["next"] = i + 2
            pin_out[s].copy_(labels, non_blocking=True)
            ev = torch.cuda.Event()
            ev.record()
            prev = back[1 - s]
            back[s] = ev
            if prev is not None:
                prev.synchronize()
                results.append(int(pin_out[1 - s][0, 0, 0, 0]))

    cc.run("c6_torch_mri_volume_serving", args, step, batch,
           extra={"batch_mib": round(volumes[0].nbytes / 2 ** 20),
                  "copies": "pinned, non_blocking, copy stream" if args.fix and gpu else "pageable, synchronous"})


if __name__ == "__main__":
    main()
