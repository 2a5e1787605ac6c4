"""C9 a host read of the halting state in each block of a compiled adaptive ViT: ImageNet-style
training of A-ViT (Yin et al., CVPR 2022, NVlabs/A-ViT: adaptive tokens, each token halts on
its own after an ACT-style cumulative halting score, Graves 2016) on a DeiT-Small backbone in
plain PyTorch: 224 x 224 images, 16 x 16 patches (196 tokens and a class token), 12 blocks of
width 384 (6 heads, MLP 1,536, scaled_dot_product_attention with the halted tokens masked out
of the keys), 1,000 classes (22 M parameters, random weights); the halting score of a token is
sigmoid(10 * x[..., 0] - 30) from its first channel (A-ViT's gate_scale / gate_center), halted
tokens are zeroed, the class token's halting-weighted output feeds the head, and A-ViT's ponder
loss (5e-4 x the mean ponder time) is added to the cross-entropy (label smoothing 0.1); bf16
autocast, fused AdamW with a cosine schedule, batch 64 images drawn and normalized on the GPU
from 512 synthetic uint8 images held there; the loss stays on the device and is read every 50
steps. The model runs under torch.compile (default mode).

Planted: the block loop is written as the popular Universal Transformer ACT implementations
write it (andreamad8/Universal-Transformer-Pytorch's ACT_basic: `while ((halting_probability <
threshold) & (n_updates < max_hop)).byte().any():`): `while i < depth and bool((c < 1 -
eps).any()):` before every block. Each test is a Python branch on a GPU value: a blocking read
(the host waits for everything queued) and a graph break (Dynamo cannot keep the loop in one
graph: each block runs as its own compiled piece with the halting update between them), 12
reads a forward. With the random gate no token halts before the last block, so all 12 blocks
run in both modes (the JSON line's blocks_run). Estimated (not measured): ~0.88 TFLOP a step
(4.6 GFLOP forward an image x 3 x 64), ~3.5-4.5 ms of GPU work; plain, each block's forward
waits for the read (~30 us), then for the host to check guards and launch the next piece and
the halting ops (~150-250 us) while the GPU has ~0.1-0.15 ms of work a block: a forward of
~2.5-3.5 ms with the GPU busy ~1.3 ms of it, and a backward through 12 pieces and the eager
halting ops close to host-bound: plain ~6-8 ms a step, the GPU idle ~35-55% of it, the reads
and the breaks they cause being most of that idle.

--fix: gpuwhy's C9 advice (no Python control flow on GPU values in the step): the loop runs all
12 blocks with the halting masks, as A-ViT's own training loop does (halted tokens are masked,
never skipped), no read in the forward; the model compiles to one graph (forward and backward).
Nothing else changes: same masks, losses, outputs. Expected ~4-4.5 ms a step, about 1.5-2x.
Compilation happens in the warm-up (default 5 iterations); the --fix run compiles the whole
12-block forward and backward at once (~25-40 s the first time on a machine, the FX graph
cache serves the later runs).

Written blind for the yankee batch.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

import cc

HALT_EPS = 0.01


class Block(nn.Module):
    """DeiT block whose attention ignores halted tokens (A-ViT masks them out of the keys)."""

    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.norm1, self.norm2 = nn.LayerNorm(d, eps=1e-6), nn.LayerNorm(d, eps=1e-6)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x, keep):
        b, n, d = x.shape
        q, k, v = self.qkv(self.norm1(x)).view(b, n, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        attn_mask = (keep > 0).view(b, 1, 1, n)
        a = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask)
        x = x + self.proj(a.transpose(1, 2).reshape(b, n, d))
        return x + self.mlp(self.norm2(x))


class AViT(nn.Module):
    def __init__(self, classes, d, depth, heads, size, patch=16, gate_scale=10.0, gate_center=30.0, fix=False):
        super().__init__()
        self.depth, self.fix = depth, fix
        self.gate_scale, self.gate_center = gate_scale, gate_center
        self.patch_embed = nn.Conv2d(3, d, patch, patch)
        n = (size // patch) ** 2
        self.cls = nn.Parameter(torch.zeros(1, 1, d))
        self.pos = nn.Parameter(torch.randn(1, n + 1, d) * 0.02)
        self.blocks = nn.ModuleList(Block(d, heads) for _ in range(depth))
        self.norm = nn.LayerNorm(d, eps=1e-6)
        self.head = nn.Linear(d, classes)
        self.blocks_run = 0

    def forward(self, img):
        x = self.patch_embed(img).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], 1) + self.pos
        b, n, _ = x.shape
        c = x.new_zeros(b, n, dtype=torch.float32)         # cumulative halting score
        rem = x.new_ones(b, n, dtype=torch.float32)        # remainder R
        keep = x.new_ones(b, n, dtype=torch.float32)       # 1 while the token still runs
        rho = x.new_zeros(b, n, dtype=torch.float32)       # ponder time N + R
        out = torch.zeros_like(x, dtype=torch.float32)
        i = 0
        while i < self.depth and (self.fix or bool((c < 1 - HALT_EPS).any())):  # gpuwhy: plants C9 (a read and a graph break before each block)
            x = self.blocks[i](x * keep.unsqueeze(-1).to(x.dtype), keep)
            if i < self.depth - 1:
                h = torch.sigmoid(self.gate_scale * x[..., 0].float() - self.gate_center)
            else:
                h = torch.ones_like(c)                    # every token halts at the last block
            c_new = c + h * keep
            reached = (c_new >= 1 - HALT_EPS).float() * keep
            running = keep - reached
            w = reached * rem + running * h               # weight of this block's output
            out = out + w.unsqueeze(-1) * x.float()
            rho = rho + keep + reached * rem
            rem = rem - running * h
            keep, c = running, c_new
            i += 1
        self.blocks_run = i
        cls = self.norm(out[:, 0].to(x.dtype))
        return self.head(cls), rho.mean()


def make_images(n, size, dev):
    """Smooth random uint8 images (blobs on gradients), made on the device."""
    g = torch.Generator(device=dev).manual_seed(0)
    low = torch.randint(0, 256, (n, 3, size // 16, size // 16), device=dev, generator=g).float()
    img = F.interpolate(low, size=(size, size), mode="bilinear", align_corners=False)
    img = img + torch.randn(n, 3, size, size, device=dev, generator=g) * 12
    return img.clamp(0, 255).to(torch.uint8)


def main():
    args = cc.parser(__doc__, warmup=5).parse_args()
    dev = cc.torch_device(args)
    gpu = dev.type == "cuda"
    if args.smoke:
        d, depth, heads, size, batch, n_img, classes = 64, 3, 4, 64, 4, 16, 10
    else:
        d, depth, heads, size, batch, n_img, classes = 384, 12, 6, 224, 64, 512, 1000
    images = make_images(n_img, size, dev)
    labels = torch.randint(0, classes, (n_img,), device=dev, generator=torch.Generator(device=dev).manual_seed(1))
    mean = torch.tensor([0.485, 0.456, 0.406], device=dev).view(1, 3, 1, 1) * 255
    std = torch.tensor([0.229, 0.224, 0.225], device=dev).view(1, 3, 1, 1) * 255
    torch.manual_seed(0)
    model = AViT(classes, d, depth, heads, size, fix=args.fix).to(dev).train()
    params = sum(p.numel() for p in model.parameters())
    # the CPU smoke test needs no C++ toolchain: Dynamo's graphs (and breaks) without Inductor
    cmodel = torch.compile(model) if gpu else torch.compile(model, backend="aot_eager")
    opt = torch.optim.AdamW(model.parameters(), lr=5e-4, weight_decay=0.05, fused=gpu)
    total = 100_000
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 0.5 * (1 + math.cos(math.pi * min(s, total) / total)))
    amp = torch.autocast(dev.type, dtype=torch.bfloat16, enabled=gpu)
    g = torch.Generator(device=dev).manual_seed(2)
    st = {"acc": torch.zeros((), device=dev), "loss": None, "reads": 0, "blocks": 0, "steps": 0}

    def step(i):
        idx = torch.randint(0, n_img, (batch,), device=dev, generator=g)
        x = (images[idx].float() - mean) / std
        with amp:
            logits, ponder = cmodel(x)
        loss = F.cross_entropy(logits.float(), labels[idx], label_smoothing=0.1) + 5e-4 * ponder
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        st["acc"] += loss.detach()
        st["blocks"] += model.blocks_run
        st["steps"] += 1
        if i % 50 == 49:
            st["loss"] = st["acc"].item() / 50
            st["acc"].zero_()
            st["reads"] += 1

    def extra():
        from torch._dynamo.utils import counters
        return {"params_m": round(params / 1e6, 1), "depth": depth,
                "blocks_run": round(st["blocks"] / max(st["steps"], 1), 2),
                "halting_reads_per_step": 0 if args.fix else depth,
                "graph_breaks": sum(counters["graph_break"].values()),
                "loss": st["loss"], "loss_reads": st["reads"]}

    cc.run("c9_compile_avit_act_halting_any", args, step, batch, extra=extra)


if __name__ == "__main__":
    main()
