"""C11 memory-bound: a Transformer block written from a paper's formulas, with hand-written
tanh-GELU, LayerNorm and softmax attention (scores materialized, masked, exponentiated and
normalized op by op) on long sequences: chains of elementwise kernels over large tensors.

--fix: the library's fused equivalents: F.gelu(approximate="tanh"), F.layer_norm and
F.scaled_dot_product_attention (flash attention).
"""
import math

import torch
import torch.nn.functional as F

import cc


def gelu(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x.pow(3))))


def layer_norm(x, w, b, eps=1e-5):
    mu = x.mean(-1, keepdim=True)
    var = (x - mu).pow(2).mean(-1, keepdim=True)
    return (x - mu) / torch.sqrt(var + eps) * w + b


def attention(q, k, v, causal):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    scores = scores.masked_fill(causal, float("-inf"))
    scores = torch.exp(scores - scores.amax(-1, keepdim=True))
    return (scores / scores.sum(-1, keepdim=True)) @ v


class Block(torch.nn.Module):
    def __init__(self, d, heads, fused):
        super().__init__()
        self.h, self.fused = heads, fused
        self.ln1, self.ln2 = torch.nn.LayerNorm(d), torch.nn.LayerNorm(d)
        self.qkv, self.proj = torch.nn.Linear(d, 3 * d), torch.nn.Linear(d, d)
        self.fc1, self.fc2 = torch.nn.Linear(d, 4 * d), torch.nn.Linear(4 * d, d)

    def forward(self, x, causal):
        b, t, d = x.shape
        ln = (lambda m, z: F.layer_norm(z, (d,), m.weight, m.bias)) if self.fused else \
             (lambda m, z: layer_norm(z, m.weight, m.bias))
        q, k, v = self.qkv(ln(self.ln1, x)).view(b, t, 3, self.h, d // self.h).permute(2, 0, 3, 1, 4)
        if self.fused:
            a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            a = attention(q, k, v, causal)  # gpuwhy: plants C11 (op-by-op softmax, GELU, LayerNorm)
        x = x + self.proj(a.transpose(1, 2).reshape(b, t, d))
        h = self.fc1(ln(self.ln2, x))
        h = F.gelu(h, approximate="tanh") if self.fused else gelu(h)
        return x + self.fc2(h)


def main():
    args = cc.parser(__doc__).parse_args()
    dev = cc.torch_device(args)
    d, heads, layers, batch, seq = (64, 4, 1, 2, 32) if args.smoke else (1024, 16, 4, 4, 2048)
    model = torch.nn.ModuleList([Block(d, heads, args.fix) for _ in range(layers)]).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=dev.type == "cuda")
    x0 = torch.randn(batch, seq, d, device=dev)
    causal = torch.ones(seq, seq, dtype=torch.bool, device=dev).triu(1)

    def step(i):
        with torch.autocast(dev.type, dtype=torch.bfloat16):
            x = x0
            for blk in model:
                x = blk(x, causal)
            loss = x.float().pow(2).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    cc.run("c11_torch_handwritten_ops", args, step, batch)


if __name__ == "__main__":
    main()
