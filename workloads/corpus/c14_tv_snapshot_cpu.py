"""C14 in-memory checkpoint through device-to-host copies: a torchvision ViT-B/16 (160 px, 100
classes, bf16 autocast, fused AdamW) keeps a roll-back snapshot of the model and optimizer
every 10 steps, as jobs that restore the last good state after a loss spike do: every tensor
of model.state_dict() and optimizer.state_dict() is copied with .cpu() (about 1 GB through
some 600 pageable copies, each waiting for the GPU); training stops meanwhile.

--fix: the snapshot goes into pinned host buffers allocated once, with non_blocking copies
on a side stream that start after the step's update; only the next optimizer step waits for
them (an event), so forward and backward overlap the copies: gpuwhy's C14 advice (copy the
state to host memory asynchronously while training continues).
"""
import torch
import torch.nn.functional as F
import torchvision

import cc


def to_cpu(obj):
    """The user's helper: a host copy of a (nested) state dict."""
    if isinstance(obj, torch.Tensor):
        return obj.detach().cpu()
    if isinstance(obj, dict):
        return {k: to_cpu(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(to_cpu(v) for v in obj)
    return obj


def main():
    args = cc.parser(__doc__).parse_args()
    dev = cc.torch_device(args)
    if args.smoke:
        model = torchvision.models.VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=2,
                                                     hidden_dim=32, mlp_dim=64, num_classes=10)
        batch, res, classes = 4, 32, 10
    else:
        model = torchvision.models.vit_b_16(image_size=160, num_classes=100)
        batch, res, classes = 64, 160, 100
    model = model.to(dev)
    gpu = dev.type == "cuda"
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.05, fused=gpu)
    g = torch.Generator(device=dev).manual_seed(0)
    xs = [torch.randn(batch, 3, res, res, device=dev, generator=g) for _ in range(4)]
    ys = [torch.randint(0, classes, (batch,), device=dev, generator=g) for _ in range(4)]
    every = 2 if args.smoke else 10
    snapshot = None
    side = torch.cuda.Stream() if gpu else None
    pinned, copied = {}, None

    def async_snapshot():
        """Pinned buffers (allocated on first use), non_blocking copies on the side stream."""
        nonlocal copied
        flat = {}

        def walk(prefix, obj):
            if isinstance(obj, torch.Tensor):
                if prefix not in pinned:
                    pinned[prefix] = torch.empty(obj.shape, dtype=obj.dtype, pin_memory=gpu)
                pinned[prefix].copy_(obj.detach(), non_blocking=True)
                flat[prefix] = pinned[prefix]
            elif isinstance(obj, dict):
                for k, v in obj.items():
                    walk(f"{prefix}/{k}", v)
            else:
                flat[prefix] = obj
        if not gpu:
            walk("", {"model": model.state_dict(), "opt": opt.state_dict()})
            return flat
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            walk("", {"model": model.state_dict(), "opt": opt.state_dict()})
            copied = torch.cuda.Event()
            copied.record(side)
        return flat

    def step(i):
        nonlocal snapshot, copied
        with torch.autocast(dev.type, dtype=torch.bfloat16):
            loss = F.cross_entropy(model(xs[i % 4]), ys[i % 4])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if copied is not None:  # --fix: the snapshot must be read before the update changes it
            torch.cuda.current_stream().wait_event(copied)
            copied = None
        opt.step()
        if i % every == every - 1:
            if args.fix:
                snapshot = async_snapshot()
            else:
                snapshot = to_cpu({"model": model.state_dict(), "opt": opt.state_dict()})  # gpuwhy: plants C14 (roll-back snapshot with .cpu() copies every 10 steps)

    cc.run("c14_tv_snapshot_cpu", args, step, batch)


if __name__ == "__main__":
    main()
