"""C4 launch-bound (a hand-written optimizer): an MLP-Mixer for 32 px images (patch 4, so 64
tokens; 24 blocks at d=256, token-mixing hidden 128, channel-mixing hidden 1024; about
290 parameter tensors, 13 M weights) trained with bf16 autocast at batch 64 on batches made
once on the GPU, with a Lion optimizer written the way it is usually copied into a
project: a torch.optim.Optimizer whose step loops over the parameters in Python and
updates each with eight small tensor ops (weight decay, the interpolated sign update,
the momentum update). About 2,300 tiny kernels a step come from the optimizer alone; the
host cannot launch them as fast as the GPU runs them.

--fix: gpuwhy's C4 advice (use foreach/fused optimizers): the same Lion update written
with torch._foreach_* ops over the whole parameter list (seven foreach calls, each a few
multi-tensor kernels, instead of ~2,300 single kernels), the same arithmetic.

--alt: the first remedy of the same advice: the whole step (forward, backward and the
hand-written Lion step, unchanged) captured once in a torch.cuda.CUDAGraph after warm-up
iterations on a side stream, and replayed each step on static input buffers (autocast
without its cast cache, as graph capture needs). Written after gpuwhy's report of the
wild batch, to measure what its C4 prediction models.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

import cc


class Lion(torch.optim.Optimizer):
    """Lion (Chen et al. 2023, "Symbolic Discovery of Optimization Algorithms")."""

    def __init__(self, params, lr=1e-4, betas=(0.9, 0.99), weight_decay=0.0, foreach=False):
        super().__init__(params, dict(lr=lr, betas=betas, weight_decay=weight_decay, foreach=foreach))

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            lr, wd, (beta1, beta2) = group["lr"], group["weight_decay"], group["betas"]
            ps = [p for p in group["params"] if p.grad is not None]
            for p in ps:
                if "exp_avg" not in self.state[p]:
                    self.state[p]["exp_avg"] = torch.zeros_like(p)
            if group["foreach"]:
                grads = [p.grad for p in ps]
                exp_avgs = [self.state[p]["exp_avg"] for p in ps]
                torch._foreach_mul_(ps, 1 - lr * wd)
                update = torch._foreach_mul(exp_avgs, beta1)
                torch._foreach_add_(update, grads, alpha=1 - beta1)
                torch._foreach_sign_(update)
                torch._foreach_add_(ps, update, alpha=-lr)
                torch._foreach_mul_(exp_avgs, beta2)
                torch._foreach_add_(exp_avgs, grads, alpha=1 - beta2)
                continue
            for p in ps:  # gpuwhy: plants C4 (eight small kernels per parameter, launched one by one)
                grad, exp_avg = p.grad, self.state[p]["exp_avg"]
                p.mul_(1 - lr * wd)
                update = exp_avg.clone().mul_(beta1).add(grad, alpha=1 - beta1).sign_()
                p.add_(update, alpha=-lr)
                exp_avg.mul_(beta2).add_(grad, alpha=1 - beta2)


class MixerBlock(nn.Module):
    def __init__(self, tokens, d, token_hidden, channel_hidden):
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.token_mlp = nn.Sequential(nn.Linear(tokens, token_hidden), nn.GELU(), nn.Linear(token_hidden, tokens))
        self.channel_mlp = nn.Sequential(nn.Linear(d, channel_hidden), nn.GELU(), nn.Linear(channel_hidden, d))

    def forward(self, x):
        x = x + self.token_mlp(self.norm1(x).transpose(1, 2)).transpose(1, 2)
        return x + self.channel_mlp(self.norm2(x))


class Mixer(nn.Module):
    def __init__(self, res, patch, d, depth, token_hidden, channel_hidden, classes):
        super().__init__()
        tokens = (res // patch) ** 2
        self.stem = nn.Conv2d(3, d, patch, stride=patch)
        self.blocks = nn.Sequential(*(MixerBlock(tokens, d, token_hidden, channel_hidden) for _ in range(depth)))
        self.norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, classes)

    def forward(self, x):
        x = self.stem(x).flatten(2).transpose(1, 2)
        return self.head(self.norm(self.blocks(x)).mean(1))


def main():
    args = cc.parser(__doc__).parse_args()
    dev = cc.torch_device(args)
    res, d, depth, token_hidden, channel_hidden, batch = (16, 32, 4, 16, 64, 4) if args.smoke else (32, 256, 24, 128, 1024, 64)
    model = Mixer(res, 4, d, depth, token_hidden, channel_hidden, 100).to(dev)
    opt = Lion(model.parameters(), lr=1e-4, weight_decay=0.1, foreach=args.fix)
    g = torch.Generator().manual_seed(0)
    data = [(torch.randn(batch, 3, res, res, generator=g).to(dev), torch.randint(0, 100, (batch,), generator=g).to(dev))
            for _ in range(4)]
    n_tensors = sum(1 for _ in model.parameters())

    if args.alt and dev.type == "cuda":  # graph capture needs a GPU: the smoke test runs eager
        cc.alt_setup(args, "cudagraph", 0)
        static_x, static_y = data[0][0].clone(), data[0][1].clone()

        def train_once():
            with torch.autocast(dev.type, dtype=torch.bfloat16, cache_enabled=False):
                loss = F.cross_entropy(model(static_x), static_y)
            loss.backward()
            opt.step()
            return loss

        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):  # the optimizer's state and the allocator's pools, made once
            for _ in range(3):
                opt.zero_grad(set_to_none=True)
                train_once()
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        opt.zero_grad(set_to_none=True)
        with torch.cuda.graph(graph):
            train_once()

        def step(i):
            x, y = data[i % len(data)]
            static_x.copy_(x)
            static_y.copy_(y)
            graph.replay()

        cc.run("c4_torch_python_lion", args, step, batch, extra={"param_tensors": n_tensors})
        return

    def step(i):
        x, y = data[i % len(data)]
        with torch.autocast(dev.type, dtype=torch.bfloat16):
            loss = F.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    cc.run("c4_torch_python_lion", args, step, batch, extra={"param_tensors": n_tensors})


if __name__ == "__main__":
    main()
