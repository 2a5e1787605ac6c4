"""C9 host reads in forward hooks (an activation monitor): a torchvision ViT-B/16 (224 px,
1000 classes, bf16 autocast, AdamW fused, label smoothing, batch 64 images made on the GPU)
trained with an activation-statistics monitor of the kind written to watch for dying
units and exploding activations: register_forward_hook on every LayerNorm, Linear, GELU and
MultiheadAttention module (86 hooks; 74 of them fire, MultiheadAttention using its
out_proj's weights without calling it), each recording the output's mean absolute value,
standard deviation and fraction of near-zero entries as Python floats
(`.item()`) into a dict of lists, every step. That is 222 reads a step in the middle of
the forward pass: each waits for the layers queued so far, copies 4 bytes back, and the
GPU sits idle until Python has launched the next layer's kernels. The loss is kept on the
GPU and read every 50 steps.

--fix: gpuwhy's C9 advice (keep values on the GPU, read them every N steps): the hooks are
armed on every 50th step only, keep their statistics as GPU tensors (torch.stack of the
three), and the monitor reads them all at once after that step; model, data and optimizer
unchanged.

Written blind for the quarry batch.
"""
import collections

import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision

import cc

MONITOR_EVERY = 50


class ActivationMonitor:
    """Forward hooks recording |x| mean, std and near-zero fraction of module outputs."""

    def __init__(self, model, types, host_floats, every):
        self.host_floats, self.every = host_floats, every
        self.stats = collections.defaultdict(list)
        self.pending = []
        self.armed = True
        self.reads = 0
        self.handles = [m.register_forward_hook(self.hook(name)) for name, m in model.named_modules()
                        if isinstance(m, types)]

    def hook(self, name):
        def fn(module, inputs, output):
            if not self.armed or not module.training:
                return
            out = output[0] if isinstance(output, tuple) else output
            out = out.detach().float()
            if self.host_floats:
                self.stats[name].append((out.abs().mean().item(), out.std().item(),  # gpuwhy: plants C9 (three .item() per hooked module, 222 a step)
                                         (out.abs() < 1e-2).float().mean().item()))
                self.reads += 3
            else:
                self.pending.append((name, torch.stack([out.abs().mean(), out.std(),
                                                        (out.abs() < 1e-2).float().mean()])))
        return fn

    def before_step(self, i):
        self.armed = self.host_floats or i % self.every == 0

    def after_step(self, i):
        if self.pending:  # one read for all the step's statistics
            names = [n for n, _ in self.pending]
            values = torch.stack([v for _, v in self.pending]).cpu().tolist()
            for n, v in zip(names, values):
                self.stats[n].append(tuple(v))
            self.pending.clear()
            self.reads += 1
        if i % 200 == 0:  # keep the last values only (what a dashboard would show)
            for v in self.stats.values():
                del v[:-1]


def main():
    args = cc.parser(__doc__).parse_args()
    dev = cc.torch_device(args)
    if args.smoke:
        model = torchvision.models.VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=4,
                                                     hidden_dim=64, mlp_dim=128, num_classes=10)
        batch, res, classes = 4, 32, 10
    else:
        model = torchvision.models.vit_b_16(num_classes=1000)
        batch, res, classes = 64, 224, 1000
    model = model.to(dev).train()
    monitor = ActivationMonitor(model, (nn.LayerNorm, nn.Linear, nn.GELU, nn.MultiheadAttention),
                                host_floats=not args.fix, every=MONITOR_EVERY)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.05, fused=dev.type == "cuda")
    g = torch.Generator(device=dev).manual_seed(0)
    xs = [torch.randn(batch, 3, res, res, device=dev, generator=g) for _ in range(4)]
    ys = [torch.randint(0, classes, (batch,), device=dev, generator=g) for _ in range(4)]
    losses = []
    log = {"loss": None}

    def step(i):
        monitor.before_step(i)
        with torch.autocast(dev.type, dtype=torch.bfloat16):
            loss = F.cross_entropy(model(xs[i % 4]), ys[i % 4], label_smoothing=0.1)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        monitor.after_step(i)
        losses.append(loss.detach())
        if len(losses) == 50:
            log["loss"] = torch.stack(losses).mean().item()
            losses.clear()

    cc.run("c9_tv_activation_hooks", args, step, batch,
           extra=lambda: {"hooks": len(monitor.handles), "host_reads": monitor.reads,
                          "monitor_every": 1 if not args.fix else MONITOR_EVERY})


if __name__ == "__main__":
    main()
