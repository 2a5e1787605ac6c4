"""C6 pageable copies (training): a torchvision ResNet-18 (bf16 autocast, channels_last,
fused SGD) trained on batches of 256 x 3 x 224 x 224 float32 images that a host stage has
already decoded and normalized into ordinary CPU tensors; each batch goes to the GPU with
x.to("cuda", non_blocking=True), as the tutorials write it. From pageable memory that copy
is not asynchronous: the driver stages its 154 MB through a pinned buffer while the
training thread waits.

--fix: gpuwhy's C6 advice for PyTorch: the host tensors are allocated pinned
(tensor.pin_memory()), the same .to(device, non_blocking=True) copy.
"""
import torch
import torchvision

import cc


def main():
    args = cc.parser(__doc__).parse_args()
    dev = cc.torch_device(args)
    gpu = dev.type == "cuda"
    batch, res, classes = (4, 32, 10) if args.smoke else (256, 224, 1000)
    model = torchvision.models.resnet18(num_classes=classes).to(dev).to(memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, fused=gpu)
    g = torch.Generator().manual_seed(0)
    # the host stage's output: a few ready batches in turn (their making is not timed)
    pool = [torch.randn(batch, 3, res, res, generator=g) for _ in range(3)]
    labels = [torch.randint(0, classes, (batch,), generator=g) for _ in range(3)]
    if args.fix and gpu:
        pool = [x.pin_memory() for x in pool]
        labels = [y.pin_memory() for y in labels]

    def step(i):
        x = pool[i % 3].to(dev, non_blocking=True)  # gpuwhy: plants C6 (154 MB from pageable memory)
        y = labels[i % 3].to(dev, non_blocking=True)
        with torch.autocast(dev.type, dtype=torch.bfloat16):
            loss = torch.nn.functional.cross_entropy(model(x.contiguous(memory_format=torch.channels_last)), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    cc.run("c6_torch_nonblocking_unpinned", args, step, batch)


if __name__ == "__main__":
    main()
