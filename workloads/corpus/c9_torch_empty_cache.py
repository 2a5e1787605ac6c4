"""C9 sync points: a torchvision ConvNeXt-T (bf16 autocast, channels_last, fused AdamW,
batch 64 at 160 px, data on the GPU) whose loop follows a common "memory hygiene" habit:
after every step it calls torch.cuda.empty_cache() and torch.cuda.synchronize() and logs
loss.item(). Each step ends with the GPU drained and the caching allocator emptied, so the
next step's forward also waits on fresh cudaMalloc calls.

--fix: none of those; losses stay on the GPU and are read and logged every 100 steps.
--alt: the launch-bound (C4) fix gpuwhy ranks first: the model under
torch.compile(mode="reduce-overhead") (CUDA graphs), the planted habit kept.
"""
import torch
import torchvision

import cc


def main():
    args = cc.parser(__doc__).parse_args()
    dev = cc.torch_device(args)
    gpu = dev.type == "cuda"
    batch, res, classes = (4, 32, 10) if args.smoke else (64, 160, 100)
    model = torchvision.models.convnext_tiny(num_classes=classes).to(dev).to(memory_format=torch.channels_last)
    fwd = torch.compile(model, mode=cc.alt_setup(args, "reduce-overhead", 10), dynamic=False) if args.alt else model
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.05, fused=gpu)
    xs = [torch.randn(batch, 3, res, res, device=dev).contiguous(memory_format=torch.channels_last) for _ in range(4)]
    ys = [torch.randint(0, classes, (batch,), device=dev) for _ in range(4)]
    log = open("/dev/null", "w")
    pending = []

    def step(i):
        with torch.autocast(dev.type, dtype=torch.bfloat16):
            loss = torch.nn.functional.cross_entropy(fwd(xs[i % 4]), ys[i % 4])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if args.fix:
            pending.append(loss.detach())
            if len(pending) == 100:
                print(f"step {i} loss {torch.stack(pending).mean().item():.4f}", file=log)
                pending.clear()
        else:
            if gpu:
                torch.cuda.empty_cache()
                torch.cuda.synchronize()  # gpuwhy: plants C9 (drained and emptied after every step)
            print(f"step {i} loss {loss.item():.4f}", file=log)

    cc.run("c9_torch_empty_cache", args, step, batch)


if __name__ == "__main__":
    main()
