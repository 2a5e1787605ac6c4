"""C4 launch-bound (Triton): a hand-written Triton optimizer (global-norm clipping + AdamW)
launched once per parameter tensor, twice per tensor per step (130 tensors): the GPU
finishes each tiny kernel long before Python has launched the next one.

--fix: parameters, gradients and optimizer state live in flat buffers (the parameters are
views into them), so the same two kernels run once per step over everything
(the multi-tensor/flat-buffer trick of apex and fused optimizers).
"""
import os
import sys

if "--device" in sys.argv and "cpu" in sys.argv:
    os.environ["TRITON_INTERPRET"] = "1"  # smoke test on the CPU: Triton's interpreter

import torch
import triton
import triton.language as tl

import cc

BLOCK = 1024


@triton.jit
def sumsq_kernel(g_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    g = tl.load(g_ptr + offs, mask=offs < n, other=0.0)
    tl.atomic_add(out_ptr, tl.sum(g * g, axis=0))


@triton.jit
def adamw_kernel(p_ptr, g_ptr, m_ptr, v_ptr, norm_ptr, n, lr, b1, b2, eps, wd, bc1, bc2, max_norm,
                 BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    total = tl.sqrt(tl.load(norm_ptr))
    coef = tl.minimum(max_norm / (total + 1e-6), 1.0)
    g = tl.load(g_ptr + offs, mask=mask) * coef
    p = tl.load(p_ptr + offs, mask=mask)
    m = b1 * tl.load(m_ptr + offs, mask=mask) + (1 - b1) * g
    v = b2 * tl.load(v_ptr + offs, mask=mask) + (1 - b2) * g * g
    p = p - lr * ((m / bc1) / (tl.sqrt(v / bc2) + eps) + wd * p)
    tl.store(p_ptr + offs, p, mask=mask)
    tl.store(m_ptr + offs, m, mask=mask)
    tl.store(v_ptr + offs, v, mask=mask)


class TritonAdamW:
    def __init__(self, params, lr=1e-3, b1=0.9, b2=0.999, eps=1e-8, wd=0.01, max_norm=1.0, flat=False):
        self.params = [p for p in params if p.requires_grad]
        self.hp = (lr, b1, b2, eps, wd)
        self.max_norm, self.t, self.flat = max_norm, 0, flat
        dev = self.params[0].device
        self.norm = torch.zeros(1, device=dev)
        if flat:
            total = sum(p.numel() for p in self.params)
            self.p_flat = torch.empty(total, device=dev)
            self.g_flat = torch.zeros(total, device=dev)
            off = 0
            for p in self.params:
                k = p.numel()
                self.p_flat[off:off + k].copy_(p.data.view(-1))
                p.data = self.p_flat[off:off + k].view_as(p)
                p.grad = self.g_flat[off:off + k].view_as(p)  # autograd accumulates in place
                off += k
            self.groups = [(self.p_flat, self.g_flat, torch.zeros_like(self.p_flat), torch.zeros_like(self.p_flat))]
        else:
            self.groups = None
            self.state = [(torch.zeros_like(p), torch.zeros_like(p)) for p in self.params]

    def zero_grad(self):
        if self.flat:
            self.g_flat.zero_()
        else:
            for p in self.params:
                p.grad = None

    def step(self):
        self.t += 1
        lr, b1, b2, eps, wd = self.hp
        bc1, bc2 = 1 - b1 ** self.t, 1 - b2 ** self.t
        groups = self.groups or [(p, p.grad, m, v) for p, (m, v) in zip(self.params, self.state)]
        self.norm.zero_()
        for p, g, m, v in groups:  # gpuwhy: plants C4 (one launch per tensor when not flat)
            n = p.numel()
            sumsq_kernel[(triton.cdiv(n, BLOCK),)](g, self.norm, n, BLOCK=BLOCK)
        for p, g, m, v in groups:
            n = p.numel()
            adamw_kernel[(triton.cdiv(n, BLOCK),)](p, g, m, v, self.norm, n, lr, b1, b2, eps, wd, bc1, bc2,
                                                  self.max_norm, BLOCK=BLOCK)


class Block(torch.nn.Module):
    def __init__(self, d):
        super().__init__()
        self.ln = torch.nn.LayerNorm(d)
        self.fc = torch.nn.Linear(d, d)

    def forward(self, x):
        return x + torch.nn.functional.gelu(self.fc(self.ln(x)))


def main():
    args = cc.parser(__doc__).parse_args()
    dev = cc.torch_device(args)
    d, depth, batch = (32, 4, 16) if args.smoke else (768, 32, 8192)
    model = torch.nn.Sequential(*[Block(d) for _ in range(depth)], torch.nn.Linear(d, 10)).to(dev)
    opt = TritonAdamW(model.parameters(), flat=args.fix)
    x = torch.randn(batch, d, device=dev)
    y = torch.randint(0, 10, (batch,), device=dev)

    def step(i):
        opt.zero_grad()
        with torch.autocast(dev.type, dtype=torch.bfloat16):
            loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()

    cc.run("c4_triton_per_param", args, step, batch,
           extra={"tensors": len(opt.params), "launches_per_step": 2 * (1 if args.fix else len(opt.params))})


if __name__ == "__main__":
    main()
