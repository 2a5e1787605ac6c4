"""C9 syncs inside a compiled model: a pre-norm Transformer language model (8 blocks, d=768,
seq 512, batch 8, bf16 autocast, fused AdamW) under torch.compile (default mode), whose
block checks its activations, `if not torch.isfinite(h).all(): raise FloatingPointError`:
in each block a Python branch on a GPU value, so a sync and a graph break (Dynamo ends the
graph there and resumes in a new one), 8 times per forward. The compiled pieces are short,
so the GPU waits at every block for the host to read the flag and launch the next piece.

--fix: no check in the blocks; the loss is checked once every 100 steps outside the model
(gpuwhy's C9 advice: no Python control flow on GPU values in the step; read them every N
steps), so the model compiles to one graph.

Compilation (Inductor) happens in the warm-up (default 5 iterations).
"""
import torch
import torch.nn.functional as F

import cc

CHECK = True


class Block(torch.nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = torch.nn.LayerNorm(d), torch.nn.LayerNorm(d)
        self.qkv, self.proj = torch.nn.Linear(d, 3 * d), torch.nn.Linear(d, d)
        self.up, self.down = torch.nn.Linear(d, 4 * d), torch.nn.Linear(4 * d, d)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        h = x + self.proj(a.transpose(1, 2).reshape(b, t, d))
        h = h + self.down(F.gelu(self.up(self.ln2(h)), approximate="tanh"))
        if CHECK and not torch.isfinite(h).all():  # gpuwhy: plants C9 (a sync and a graph break in every block)
            raise FloatingPointError("non-finite activations")
        return h


class LM(torch.nn.Module):
    def __init__(self, vocab, d, layers, heads, seq):
        super().__init__()
        self.tok, self.pos = torch.nn.Embedding(vocab, d), torch.nn.Parameter(torch.zeros(seq, d))
        self.blocks = torch.nn.ModuleList(Block(d, heads) for _ in range(layers))
        self.ln = torch.nn.LayerNorm(d)

    def forward(self, ids):
        h = self.tok(ids) + self.pos[: ids.shape[1]]
        for blk in self.blocks:
            h = blk(h)
        return self.ln(h) @ self.tok.weight.T


def main():
    global CHECK
    args = cc.parser(__doc__, warmup=5).parse_args()
    dev = cc.torch_device(args)
    CHECK = not args.fix
    vocab, d, layers, heads, seq, batch = (512, 64, 2, 4, 32, 2) if args.smoke else (32000, 768, 8, 12, 512, 8)
    model = LM(vocab, d, layers, heads, seq).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, fused=dev.type == "cuda")
    # the CPU smoke test needs no C++ toolchain: Dynamo's graphs (and breaks) without Inductor
    cmodel = torch.compile(model) if dev.type == "cuda" else torch.compile(model, backend="aot_eager")
    g = torch.Generator(device=dev).manual_seed(0)
    data = [torch.randint(0, vocab, (batch, seq + 1), device=dev, generator=g) for _ in range(8)]

    def step(i):
        ids = data[i % 8]
        with torch.autocast(dev.type, dtype=torch.bfloat16):
            logits = cmodel(ids[:, :-1])
        loss = F.cross_entropy(logits.float().view(-1, vocab), ids[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if args.fix and i % 100 == 0 and not torch.isfinite(loss):
            raise FloatingPointError("non-finite loss")

    cc.run("c9_compile_isfinite_guard", args, step, batch)


if __name__ == "__main__":
    main()
