"""C9 host reads every step (a progress bar's postfix): a GPT-2-small-sized language model
(12 layers, d=768, 12 heads, context 512, vocab 32000 tied, 124 M parameters in 148
tensors, F.scaled_dot_product_attention with is_causal, bf16 autocast, fused AdamW with a
warm-up/cosine LambdaLR; batch 8 x 512 tokens made once on the GPU and cycled) trained in a
hand-written loop with a tqdm progress bar (a small stand-in with the same set_postfix /
update calls where tqdm is not installed). Every step the bar's postfix shows the loss
(`loss.item()`) and the gradient norm, computed by the helper found in many training
scripts: for each parameter `p.grad.detach().norm(2).item() ** 2`, summed on the host, then
the square root (148 small kernels, each followed by a host read), and the learning rate.
The GPU waits for every read: for each of the 148 norms the host launches the kernel, waits
for its result and goes on, and after the loss is read the next forward starts from an empty
queue.

--fix: gpuwhy's C9 advice (accumulate losses/metrics as tensors, read them every N steps):
the gradient norm computed on the GPU (torch._foreach_norm over the gradients, then the norm
of the stacked norms, as clip_grad_norm_ does), loss and norm summed into GPU tensors, and
the bar's postfix set from their averages every 50 steps (one read); the bar still advances
every step.
"""
import math
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

import cc

try:
    from tqdm import tqdm
    BAR = "tqdm"
except ImportError:  # the same calls on a small hand-written bar
    BAR = "fallback"

    class tqdm:  # noqa: N801 (tqdm's name)
        def __init__(self, total=None, desc="", file=None, **kw):
            self.n, self.desc, self.file, self.postfix = 0, desc, file or sys.stderr, ""

        def set_postfix(self, refresh=True, **kw):
            self.postfix = ", ".join(f"{k}={v}" for k, v in kw.items())
            if refresh:
                self.refresh()

        def update(self, n=1):
            self.n += n
            self.refresh()

        def refresh(self):
            self.file.write(f"\r{self.desc}: {self.n}it [{self.postfix}]")
            self.file.flush()

        def close(self):
            self.file.write("\n")


class Block(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc, self.out = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, d))
        return x + self.out(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self, vocab, ctx, d, heads, layers):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(vocab, d), nn.Embedding(ctx, d)
        self.blocks = nn.ModuleList(Block(d, heads) for _ in range(layers))
        self.ln_f = nn.LayerNorm(d)
        self.lm_head = nn.Linear(d, vocab, bias=False)
        self.lm_head.weight = self.wte.weight

    def forward(self, idx):
        x = self.wte(idx) + self.wpe.weight[:idx.shape[1]]
        for blk in self.blocks:
            x = blk(x)
        return self.lm_head(self.ln_f(x))


def grad_norm(parameters):
    """The global L2 norm of the gradients, as a Python float."""
    total = 0.0
    for p in parameters:
        if p.grad is not None:
            total += p.grad.detach().norm(2).item() ** 2  # gpuwhy: plants C9 (a host read per parameter, every step)
    return math.sqrt(total)


def main():
    args = cc.parser(__doc__).parse_args()
    dev = cc.torch_device(args)
    batch, ctx, d, heads, layers, vocab = (2, 32, 64, 4, 2, 500) if args.smoke else (8, 512, 768, 12, 12, 32000)
    log_every = 50 if args.fix else 1
    model = GPT(vocab, ctx, d, heads, layers).to(dev)
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=6e-4, betas=(0.9, 0.95), weight_decay=0.1, fused=dev.type == "cuda")
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / 100) * 0.5 * (1 + math.cos(math.pi * min(s, 50_000) / 50_000)))
    g = torch.Generator().manual_seed(0)
    data = [torch.randint(0, vocab, (batch, ctx + 1), generator=g).to(dev) for _ in range(8)]
    pbar = tqdm(desc="train", unit="it", file=sys.stderr, dynamic_ncols=True)
    loss_sum = torch.zeros((), device=dev)
    norm_sum = torch.zeros((), device=dev)
    shown = {"loss": None, "gnorm": None, "updates": 0}

    def step(i):
        x = data[i % len(data)]
        with torch.autocast(dev.type, dtype=torch.bfloat16):
            logits = model(x[:, :-1])
        loss = F.cross_entropy(logits.float().reshape(-1, vocab), x[:, 1:].reshape(-1))
        loss.backward()
        if args.fix:
            with torch.no_grad():
                norm_sum.add_(torch.linalg.vector_norm(torch.stack(torch._foreach_norm([p.grad for p in params]))))
                loss_sum.add_(loss.detach())
        else:
            gnorm = grad_norm(params)
        opt.step()
        sched.step()
        opt.zero_grad(set_to_none=True)
        lr = sched.get_last_lr()[0]
        if not args.fix:
            shown["loss"], shown["gnorm"] = loss.item(), gnorm
            pbar.set_postfix(loss=f"{shown['loss']:.4f}", gnorm=f"{gnorm:.3f}", lr=f"{lr:.2e}")
            shown["updates"] += 1
        elif i % log_every == log_every - 1:
            avg = (torch.stack([loss_sum, norm_sum]) / log_every).tolist()
            loss_sum.zero_()
            norm_sum.zero_()
            shown["loss"], shown["gnorm"] = avg
            pbar.set_postfix(loss=f"{avg[0]:.4f}", gnorm=f"{avg[1]:.3f}", lr=f"{lr:.2e}")
            shown["updates"] += 1
        pbar.update(1)

    cc.run("c9_torch_tqdm_grad_norm_item", args, step, batch,
           extra=lambda: {"progress_bar": BAR, "postfix_every": log_every, "postfix_updates": shown["updates"],
                          "param_tensors": len(params)})
    pbar.close()


if __name__ == "__main__":
    main()
