"""C4 launch overhead (Triton, a kernel launched once per item): embedding a product catalogue
for a search index. Product titles (4 to 32 tokens, about 18 on average) are packed by the
indexer into rows of 512 tokens (64 rows, 32,768 tokens and about 1,800 titles a batch),
positions restarting at each title and a block-diagonal attention mask keeping titles
apart; the encoder is a MiniLM-sized transformer in plain PyTorch (6 pre-LN layers, d=384,
6 heads, GELU MLP 1536, vocabulary 30522, random weights, bf16, inference_mode, SDPA with
the boolean mask). Each title's embedding is the mean of its token states, L2-normalized,
computed by a hand-written Triton kernel that pools one title (one program: a loop over the
title's tokens in blocks of 16, float32 sums, the norm, one 384-float store), launched from
a Python loop over the titles with the title's start and length as scalar arguments,
about 1,800 launches a batch, each a microsecond or two of work on the GPU. Four packed
batches are made once on the GPU and cycled; the embeddings go into a ring on the GPU,
nothing is read back.

--fix: gpuwhy's C4 advice (fewer, larger launches): the same pooling body launched once a
batch with one program per title (grid = number of titles), the titles' starts and lengths
read from two int32 tensors that the packer made with the batch; encoder, data and outputs
unchanged.

Written blind for the mesa batch.
"""
import os
import sys

if "--device" in sys.argv and "cpu" in sys.argv:
    os.environ["TRITON_INTERPRET"] = "1"  # smoke test on the CPU: Triton's interpreter

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import triton
import triton.language as tl

import cc


@triton.jit
def _pool_title(h_ptr, out_ptr, start, n, doc, D, stride_h, stride_o,
                BLOCK_T: tl.constexpr, BLOCK_D: tl.constexpr):
    cols = tl.arange(0, BLOCK_D)
    cmask = cols < D
    acc = tl.zeros([BLOCK_D], dtype=tl.float32)
    for t0 in range(0, n, BLOCK_T):
        rows = t0 + tl.arange(0, BLOCK_T)
        m = (rows < n)[:, None] & cmask[None, :]
        x = tl.load(h_ptr + (start + rows)[:, None] * stride_h + cols[None, :], mask=m, other=0.0)
        acc += tl.sum(x.to(tl.float32), axis=0)
    mean = acc / n
    norm = tl.sqrt(tl.sum(mean * mean, axis=0))
    tl.store(out_ptr + doc * stride_o + cols, mean / tl.maximum(norm, 1e-6), mask=cmask)


@triton.jit
def pool_one_kernel(h_ptr, out_ptr, start, n, doc, D, stride_h, stride_o,
                    BLOCK_T: tl.constexpr, BLOCK_D: tl.constexpr):
    """Mean-pool and L2-normalize the token states of one title (rows start .. start+n)."""
    _pool_title(h_ptr, out_ptr, start, n, doc, D, stride_h, stride_o, BLOCK_T, BLOCK_D)


@triton.jit
def pool_all_kernel(h_ptr, out_ptr, starts_ptr, lens_ptr, D, stride_h, stride_o,
                    BLOCK_T: tl.constexpr, BLOCK_D: tl.constexpr):
    """The same for every title of the batch: one program a title."""
    doc = tl.program_id(0)
    start = tl.load(starts_ptr + doc)
    n = tl.load(lens_ptr + doc)
    _pool_title(h_ptr, out_ptr, start, n, doc, D, stride_h, stride_o, BLOCK_T, BLOCK_D)


class Block(nn.Module):
    def __init__(self, d, heads, ff):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.o = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.ff1, self.ff2 = nn.Linear(d, ff), nn.Linear(ff, d)

    def forward(self, x, mask):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        x = x + self.o(a.transpose(1, 2).reshape(b, t, d))
        return x + self.ff2(F.gelu(self.ff1(self.ln2(x))))


class Encoder(nn.Module):
    def __init__(self, vocab, d, heads, ff, layers, max_len):
        super().__init__()
        self.tok, self.pos = nn.Embedding(vocab, d), nn.Embedding(max_len, d)
        self.blocks = nn.ModuleList(Block(d, heads, ff) for _ in range(layers))
        self.ln = nn.LayerNorm(d)

    def forward(self, ids, pos, mask):
        x = self.tok(ids) + self.pos(pos)
        for blk in self.blocks:
            x = blk(x, mask)
        return self.ln(x)


def pack(rng, rows, row_len, vocab, min_len, max_len):
    """Titles packed greedily into rows: ids, positions, title ids (for the mask) and the
    titles' (flat start, length) as the indexer's Python lists and as arrays."""
    ids = np.zeros((rows, row_len), np.int64)
    pos = np.zeros((rows, row_len), np.int64)
    seg = np.full((rows, row_len), -1, np.int64)
    starts, lens = [], []
    for r in range(rows):
        t = 0
        while True:
            n = int(rng.integers(min_len, max_len + 1))
            if t + n > row_len:
                break
            ids[r, t:t + n] = rng.integers(1000, vocab, n)
            pos[r, t:t + n] = np.arange(n)
            seg[r, t:t + n] = len(starts)
            starts.append(r * row_len + t)
            lens.append(n)
            t += n
    return ids, pos, seg, starts, lens


def main():
    args = cc.parser(__doc__, warmup=4).parse_args()
    dev = cc.torch_device(args)
    gpu = dev.type == "cuda"
    if args.smoke:
        rows, row_len, vocab, d, heads, ff, layers, tmin, tmax = 2, 64, 2000, 32, 2, 64, 1, 8, 24
    else:
        rows, row_len, vocab, d, heads, ff, layers, tmin, tmax = 64, 512, 30522, 384, 6, 1536, 6, 4, 32
    torch.manual_seed(0)
    dtype = torch.bfloat16 if gpu else torch.float32
    model = Encoder(vocab, d, heads, ff, layers, row_len).to(dev, dtype).eval()
    rng = np.random.default_rng(0)
    batches = []
    for _ in range(4):
        ids, pos, seg, starts, lens = pack(rng, rows, row_len, vocab, tmin, tmax)
        s = torch.from_numpy(seg).to(dev)
        mask = ((s[:, :, None] == s[:, None, :]) & (s[:, :, None] >= 0)) | torch.eye(row_len, dtype=torch.bool,
                                                                                     device=dev)
        batches.append({"ids": torch.from_numpy(ids).to(dev), "pos": torch.from_numpy(pos).to(dev),
                        "mask": mask[:, None], "starts": starts, "lens": lens,
                        "starts_t": torch.tensor(starts, dtype=torch.int32, device=dev),
                        "lens_t": torch.tensor(lens, dtype=torch.int32, device=dev)})
    most = max(len(b["lens"]) for b in batches)
    ring = 16
    index = torch.zeros(ring, most, d, device=dev, dtype=torch.float32)
    block_t, block_d = 16, triton.next_power_of_2(d)

    @torch.inference_mode()
    def step(i):
        b = batches[i % len(batches)]
        h = model(b["ids"], b["pos"], b["mask"]).reshape(rows * row_len, d)
        out = index[i % ring]
        if args.fix:
            pool_all_kernel[(len(b["lens"]),)](h, out, b["starts_t"], b["lens_t"], d, h.stride(0), out.stride(0),
                                               BLOCK_T=block_t, BLOCK_D=block_d)
        else:
            for doc, (start, n) in enumerate(zip(b["starts"], b["lens"])):
                pool_one_kernel[(1,)](h, out, start, n, doc, d, h.stride(0), out.stride(0),  # gpuwhy: plants C4 (one launch a title, ~1,800 a batch)
                                      BLOCK_T=block_t, BLOCK_D=block_d)

    # both kernels against torch once, before the warm-up
    b = batches[0]
    with torch.inference_mode():
        h = model(b["ids"], b["pos"], b["mask"]).reshape(rows * row_len, d)
        pool_all_kernel[(len(b["lens"]),)](h, index[0], b["starts_t"], b["lens_t"], d, h.stride(0),
                                           index.stride(1), BLOCK_T=block_t, BLOCK_D=block_d)
        for doc in (0, 1, len(b["lens"]) - 1):
            pool_one_kernel[(1,)](h, index[1], b["starts"][doc], b["lens"][doc], doc, d, h.stride(0),
                                  index.stride(1), BLOCK_T=block_t, BLOCK_D=block_d)
            ref = F.normalize(h[b["starts"][doc]:b["starts"][doc] + b["lens"][doc]].float().mean(0), dim=0)
            assert torch.allclose(index[0, doc], ref, atol=1e-3), "pooling kernel does not match torch"
            assert torch.allclose(index[1, doc], ref, atol=1e-3), "pooling kernel does not match torch"

    cc.run("c4_triton_pool_per_title", args, step, sum(len(b["lens"]) for b in batches) / len(batches),
           extra={"titles_per_batch": round(sum(len(b["lens"]) for b in batches) / len(batches)),
                  "launches_per_batch": 1 if args.fix else round(sum(len(b["lens"]) for b in batches) / len(batches))})


if __name__ == "__main__":
    main()
