"""C6 pageable copies (PyTorch inference): a torchvision ResNet-50 (bf16 weights,
channels_last, inference_mode) classifies batches of 256 x 3 x 224 x 224 float32 frames
that an upstream stage hands over as fresh numpy arrays; each batch goes to the GPU with
torch.from_numpy(x).cuda(): a synchronous copy from pageable memory through the driver's
staging buffer (154 MB a batch) while the GPU waits. Predictions stay on the GPU.

--fix: two pinned staging tensors (pin_memory()) reused in turn; the next batch is copied
into one on the host and sent with .cuda(non_blocking=True) on a copy stream while the
current batch is classified (double buffering).
"""
import numpy as np
import torch
import torchvision

import cc


def main():
    args = cc.parser(__doc__).parse_args()
    dev = cc.torch_device(args)
    gpu = dev.type == "cuda"
    batch, res = (4, 64) if args.smoke else (256, 224)
    rng = np.random.default_rng(0)
    # the upstream stage's output: a few decoded batches, handed over as numpy arrays
    frames = [rng.standard_normal((batch, 3, res, res), dtype=np.float32) for _ in range(4)]
    model = torchvision.models.resnet50(num_classes=1000).to(dev, torch.bfloat16)
    model = model.to(memory_format=torch.channels_last).eval()
    preds = torch.empty(1024, batch, dtype=torch.long, device=dev)

    def classify(i, x):
        x = x.to(torch.bfloat16, memory_format=torch.channels_last)
        preds[i % 1024] = model(x).argmax(dim=1)

    if args.fix and gpu:
        staging = [torch.empty(frames[0].shape, dtype=torch.float32).pin_memory() for _ in range(2)]
        copy = torch.cuda.Stream()
        ready = [None, None]  # event: the batch in slot k has arrived on the GPU
        ondev = [None, None]

        def send(i):
            k = i % 2
            if ready[k] is not None:
                ready[k].synchronize()  # the DMA out of staging[k] (two batches ago) is done
            staging[k].copy_(torch.from_numpy(frames[i % 4]))
            with torch.cuda.stream(copy):
                ondev[k] = staging[k].cuda(non_blocking=True)
                ready[k] = torch.cuda.Event()
                ready[k].record(copy)

        send(0)

        @torch.inference_mode()
        def step(i):
            k = i % 2
            cur = torch.cuda.current_stream()
            cur.wait_event(ready[k])
            x = ondev[k]
            x.record_stream(cur)  # made on the copy stream, read on this one
            classify(i, x)
            send(i + 1)  # the next batch crosses while this one is classified
    else:
        @torch.inference_mode()
        def step(i):
            x = torch.from_numpy(frames[i % 4])
            if gpu:
                x = x.cuda()  # gpuwhy: plants C6 (pageable host memory)
            classify(i, x)

    cc.run("c6_torch_pageable_infer", args, step, batch)


if __name__ == "__main__":
    main()
