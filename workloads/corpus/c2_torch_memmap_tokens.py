"""C2 storage (random reads from a cold memory-mapped token file): a small GPT-style language
model pre-trained the nanoGPT way (4 pre-LN blocks, d=256, 4 heads, SDPA is_causal, GELU
MLP, learned positions, tied 8192-token head; bf16 autocast, fused AdamW, batch 128 windows
of 256 tokens) on a 1 GiB corpus of uint16 token ids in one file under GW_CORPUS_CACHE
(512 M tokens, written once). The file is opened once with np.memmap, and each step's
get_batch draws 128 random offsets and slices data[i:i+257] for the inputs and targets,
stacked into int64 tensors and copied through pinned memory, as nanoGPT's train.py does.
At start the run drops the file from the page cache with posix_fadvise(POSIX_FADV_DONTNEED)
(no root needed), as when the corpus is larger than the memory left for caching it: every
window is then a page fault that reads a page from the disk (the kernel stops reading
around the faults of a file whose faults keep missing), one after the other on the
training thread.

--fix: gpuwhy's C2 advice (keep the data set in RAM): the token file read into memory once
with np.fromfile before training (one sequential read of 1 GiB, outside the timed part);
the same get_batch over the in-memory array.

Written blind for the quarry batch.
"""
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

import cc

VOCAB = 8192


def token_file(n_tokens):
    """n_tokens random uint16 ids in [0, VOCAB) in one file, written once; returns its path."""
    path = os.path.join(cc.CACHE, f"tokens_u16_{n_tokens}.bin")
    if os.path.exists(path + ".done"):
        return path
    os.makedirs(cc.CACHE, exist_ok=True)
    rng = np.random.default_rng(0)
    chunk = min(n_tokens, 1 << 25)
    base = rng.integers(0, VOCAB, chunk, dtype=np.uint32)
    with open(path, "wb") as f:
        for k in range(n_tokens // chunk):
            ((base + k * 7919) % VOCAB).astype(np.uint16).tofile(f)
        f.flush()
        os.fsync(f.fileno())  # written back, so that the pages can be dropped
    open(path + ".done", "w").close()
    return path


def drop_from_page_cache(path):
    """posix_fadvise(DONTNEED) on the file: its clean pages leave the page cache."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


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
        q, k, v = (z.view(b, t, self.heads, -1).transpose(1, 2) for z in (q, k, v))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(b, t, d))
        return x + self.out(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self, d, heads, layers, block):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(VOCAB, d), nn.Embedding(block, d)
        self.blocks = nn.ModuleList([Block(d, heads) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(d)
        self.head = nn.Linear(d, VOCAB, bias=False)
        self.head.weight = self.wte.weight

    def forward(self, idx):
        x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1], device=idx.device))
        for blk in self.blocks:
            x = blk(x)
        return self.head(self.ln_f(x))


def main():
    args = cc.parser(__doc__, warmup=5).parse_args()
    dev = cc.torch_device(args)
    n_tokens, d, heads, layers, block, batch = \
        (1 << 21, 64, 2, 1, 32, 8) if args.smoke else (1 << 29, 256, 4, 4, 256, 128)
    path = token_file(n_tokens)
    drop_from_page_cache(path)
    if args.fix:
        data = np.fromfile(path, dtype=np.uint16)  # the whole corpus in RAM, read once
    else:
        data = np.memmap(path, dtype=np.uint16, mode="r")
    model = GPT(d, heads, layers, block).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=6e-4, betas=(0.9, 0.95), weight_decay=0.1,
                            fused=dev.type == "cuda")
    pin = dev.type == "cuda"

    def get_batch():
        ix = torch.randint(len(data) - block - 1, (batch,))
        x = torch.stack([torch.from_numpy(data[i:i + block].astype(np.int64)) for i in ix])  # gpuwhy: plants C2 (a page fault that reads the disk per window)
        y = torch.stack([torch.from_numpy(data[i + 1:i + 1 + block].astype(np.int64)) for i in ix])
        if pin:
            return x.pin_memory().to(dev, non_blocking=True), y.pin_memory().to(dev, non_blocking=True)
        return x, y

    losses = []
    log = {"loss": None}

    def step(i):
        x, y = get_batch()
        with torch.autocast(dev.type, dtype=torch.bfloat16):
            logits = model(x)
        loss = F.cross_entropy(logits.float().view(-1, VOCAB), y.view(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        losses.append(loss.detach())
        if len(losses) == 50:
            log["loss"] = torch.stack(losses).mean().item()
            losses.clear()

    cc.run("c2_torch_memmap_tokens", args, step, batch,
           extra=lambda: {"tokens_per_step": batch * block, "corpus_tokens": n_tokens,
                          "in_ram": bool(args.fix)})


if __name__ == "__main__":
    main()
