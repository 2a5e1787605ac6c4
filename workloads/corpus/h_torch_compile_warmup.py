"""healthy, with a long compilation warm-up: a 12-block pre-norm Transformer language model
(d=1024, seq 1024, batch 8, bf16 autocast, fused AdamW, token batches on the GPU) whose
blocks are each compiled with block.compile() (torch.compile per block, one graph reused by
all twelve), in a fresh job with nothing cached (Inductor's and Triton's cache directories
are new and empty, as in a new container): the first iteration traces, compiles and
autotunes for seconds while the GPU idles; afterwards each step is a few large kernels.

--fix changes nothing: this is a control.
--alt: the launch-bound (C4) fix gpuwhy ranks first in one of its three recordings: the
twelve blocks compiled as one function with mode="reduce-overhead" (one CUDA graph), with
torch.compiler.cudagraph_mark_step_begin() at each step, instead of block.compile().
GW_COMPILE_CACHE=DIR keeps Inductor's and Triton's caches in DIR instead (a second run with
the same DIR starts warm: tests/gpu/startup_cache.sh measures what that saves).
"""
import atexit
import os
import shutil
import tempfile

# a fresh container: nothing compiled before (set before torch is imported)
_cache = os.environ.get("GW_COMPILE_CACHE") or tempfile.mkdtemp(prefix="gw_inductor_")
os.environ["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(_cache, "inductor")
os.environ["TRITON_CACHE_DIR"] = os.path.join(_cache, "triton")
if not os.environ.get("GW_COMPILE_CACHE"):
    atexit.register(shutil.rmtree, _cache, True)

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import cc  # noqa: E402


class Block(torch.nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = torch.nn.LayerNorm(d), torch.nn.LayerNorm(d)
        self.qkv, self.proj = torch.nn.Linear(d, 3 * d, bias=False), torch.nn.Linear(d, d, bias=False)
        self.up, self.down = torch.nn.Linear(d, 4 * d, bias=False), torch.nn.Linear(4 * d, d, bias=False)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        x = x + self.proj(F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(b, t, d))
        return x + self.down(F.gelu(self.up(self.ln2(x)), approximate="tanh"))


def main():
    args = cc.parser(__doc__).parse_args()
    dev = cc.torch_device(args)
    torch.manual_seed(0)
    vocab, d, layers, heads, seq, batch = (512, 64, 2, 4, 32, 2) if args.smoke else (32000, 1024, 12, 16, 1024, 8)
    tok = torch.nn.Embedding(vocab, d)
    blocks = torch.nn.ModuleList(Block(d, heads) for _ in range(layers))
    ln = torch.nn.LayerNorm(d)
    model = torch.nn.ModuleDict({"tok": tok, "blocks": blocks, "ln": ln}).to(dev)
    for blk in blocks:  # the CPU smoke test needs no C++ toolchain: Dynamo without Inductor
        if dev.type != "cuda":
            blk.compile(backend="aot_eager")
        elif not args.alt:
            blk.compile()

    def run_blocks(h):
        for blk in blocks:
            h = blk(h)
        return h

    if args.alt and dev.type == "cuda":  # one CUDA graph over the twelve blocks
        run_blocks = torch.compile(run_blocks, mode=cc.alt_setup(args, "reduce-overhead", 10), dynamic=False)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, betas=(0.9, 0.95), weight_decay=0.1, fused=dev.type == "cuda")
    g = torch.Generator(device=dev).manual_seed(0)
    data = [torch.randint(0, vocab, (batch, seq + 1), device=dev, generator=g) for _ in range(8)]

    def step(i):
        ids = data[i % 8]
        if args.alt and dev.type == "cuda":
            torch.compiler.cudagraph_mark_step_begin()  # the last step's graph outputs are done with
        with torch.autocast(dev.type, dtype=torch.bfloat16):
            h = run_blocks(tok(ids[:, :-1]))
            logits = ln(h) @ tok.weight.T
        loss = F.cross_entropy(logits.float().view(-1, vocab), ids[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    cc.run("h_torch_compile_warmup", args, step, batch)


if __name__ == "__main__":
    main()
