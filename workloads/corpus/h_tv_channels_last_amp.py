"""healthy: torchvision ResNet-50, channels_last + bf16 autocast, cudnn.benchmark, batch 128
at 160 px; the data set is preloaded on the GPU and augmented there (random flips).

--fix changes nothing: this is a control.

--alt: the launch-bound (C4) fix gpuwhy ranks first: the model compiled with
torch.compile(mode="reduce-overhead", dynamic=False) (Inductor + CUDA graphs over forward and
backward; one input shape, channels_last); the GPU-side augmentation, the loss and the
foreach SGD step stay eager. At least 10 warm-up iterations unless --warmup is given
(compilation, CUDA graph warm-up and recording).
"""
import torch
import torchvision

import cc


def main():
    args = cc.parser(__doc__).parse_args()
    dev = cc.torch_device(args)
    batch, res = (4, 64) if args.smoke else (128, 160)
    torch.backends.cudnn.benchmark = True
    model = torchvision.models.resnet50(num_classes=1000).to(dev).to(memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, nesterov=True, foreach=True)
    fwd = model
    if args.alt:  # C4 fix: CUDA graphs (BN's running stats are buffers: static addresses)
        fwd = torch.compile(model, mode=cc.alt_setup(args, "reduce-overhead", 10), dynamic=False)
    crit = torch.nn.CrossEntropyLoss(label_smoothing=0.1)
    # a small data set decoded once and kept on the GPU (as DALI or a GPU cache would)
    images = torch.randint(0, 256, (8, batch, 3, res, res), dtype=torch.uint8, device=dev)
    labels = torch.randint(0, 1000, (8, batch), device=dev)
    mean = torch.tensor([0.485, 0.456, 0.406], device=dev).view(1, 3, 1, 1) * 255
    std = torch.tensor([0.229, 0.224, 0.225], device=dev).view(1, 3, 1, 1) * 255

    def step(i):
        x = images[i % 8]
        x = torch.where(torch.rand(batch, 1, 1, 1, device=dev) < 0.5, x, x.flip(3))
        x = ((x.float() - mean) / std).contiguous(memory_format=torch.channels_last)
        if args.alt:
            # grads set to None before the graphs replay: the previous step's grads (backward
            # graph outputs that autograd took over) are not alive when their memory is reused
            opt.zero_grad(set_to_none=True)
            torch.compiler.cudagraph_mark_step_begin()
        with torch.autocast(dev.type, dtype=torch.bfloat16):
            loss = crit(fwd(x), labels[i % 8])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    cc.run("h_tv_channels_last_amp", args, step, batch)


if __name__ == "__main__":
    main()
