"""C12 many small pinned copies (a paged KV cache swapped to host memory block by block): the
decode loop of a small LLM serving engine written in plain PyTorch the way vLLM's v0 engine
lays out its cache. The model is Llama-3.2-1B-shaped (16 layers of width 2,048, 32 query heads
and 8 key/value heads of 64, SwiGLU MLP of 8,192, RMSNorm, rotary positions, a tied
128,256-token embedding; 1.24 B parameters in bf16, random weights made on the GPU). The KV
cache is one paged tensor [layers, K/V, blocks, kv_heads, 16 tokens, 64]: a block of one layer
and one of K or V is 16 KB. 320 chat sessions share a cache that holds 256 of them (32 blocks,
512 positions each); each engine step decodes one token for the 256 resident sessions (their
K/V gathered from the paged cache by block table, attention as two batched matrix products with
a length mask, greedy next token, everything on the GPU), then the scheduler's time slice
preempts by swapping: the session resident longest is swapped out to a pinned host pool and the
one waiting longest is swapped back into its blocks (vLLM's preemption_mode="swap").

The swap is the engine's `swap_blocks`, written as vLLM's CUDA helper is, one cudaMemcpyAsync a
block, but from Python: `for layer, for K and V, for each used block: host[...].copy_(cache[...],
non_blocking=True)`, and the same the other way: about 1,500 pinned copies of 16 KB a step
(a session of 256 to 511 tokens uses 17 to 32 blocks in each of 32 layer-K/V planes), each a few
microseconds of host time for a transfer of well under a microsecond, far under the link's rate.

--fix: gpuwhy's C12 advice (one large copy instead of many small ones, in the layout it is
copied in): the session's blocks gathered on the GPU with one index_select into a contiguous
[layers, K/V, n, ...] tensor and copied to its pinned slot with one non_blocking copy; swap-in
one non_blocking copy of the slot and one index_copy_ into the blocks; model, cache, sessions,
scheduling and the data moved unchanged.

Written blind for the india batch.
"""
import collections
import math

import torch
import torch.nn.functional as F

import cc


class Cfg:
    def __init__(self, smoke):
        if smoke:
            self.layers, self.d, self.heads, self.kv_heads, self.hd, self.ffn, self.vocab = 2, 64, 4, 2, 16, 128, 512
            self.rows, self.sessions, self.max_blocks = 8, 10, 4
        else:
            self.layers, self.d, self.heads, self.kv_heads, self.hd, self.ffn, self.vocab = 16, 2048, 32, 8, 64, 8192, 128_256
            self.rows, self.sessions, self.max_blocks = 256, 320, 32
        self.block = 16
        self.max_len = self.max_blocks * self.block   # 512 positions a session
        self.wrap_to = self.max_len // 2              # a turn ends: the context is cut back to its second half


class Llama(torch.nn.Module):
    """Decode-only forward over a paged cache (what the engine's model runner calls)."""

    def __init__(self, c, dev, dtype):
        super().__init__()
        self.c = c
        std = 0.02
        p = lambda *s: torch.nn.Parameter(torch.randn(*s, device=dev, dtype=dtype) * std, requires_grad=False)  # noqa: E731
        self.embed = p(c.vocab, c.d)
        qkv = (c.heads + 2 * c.kv_heads) * c.hd
        self.wqkv = torch.nn.ParameterList(p(qkv, c.d) for _ in range(c.layers))
        self.wo = torch.nn.ParameterList(p(c.d, c.heads * c.hd) for _ in range(c.layers))
        self.wgu = torch.nn.ParameterList(p(2 * c.ffn, c.d) for _ in range(c.layers))
        self.wdown = torch.nn.ParameterList(p(c.d, c.ffn) for _ in range(c.layers))
        ones = lambda: torch.nn.Parameter(torch.ones(c.d, device=dev, dtype=dtype), requires_grad=False)  # noqa: E731
        self.n1 = torch.nn.ParameterList(ones() for _ in range(c.layers))
        self.n2 = torch.nn.ParameterList(ones() for _ in range(c.layers))
        self.nf = ones()
        inv = 1.0 / (500_000.0 ** (torch.arange(0, c.hd, 2, device=dev, dtype=torch.float32) / c.hd))
        ang = torch.arange(c.max_len, device=dev, dtype=torch.float32)[:, None] * inv[None]
        self.cos, self.sin = ang.cos().to(dtype), ang.sin().to(dtype)

    @staticmethod
    def rope(x, cos, sin):
        x1, x2 = x.chunk(2, -1)
        return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], -1)

    def forward(self, tokens, pos, table, cache):
        c = self.c
        r = tokens.shape[0]
        g = c.heads // c.kv_heads
        cos, sin = self.cos[pos][:, None], self.sin[pos][:, None]
        slot = table.gather(1, (pos // c.block)[:, None])[:, 0]     # the block the new token goes to
        off = pos % c.block
        t = c.max_blocks * c.block
        mask = torch.arange(t, device=tokens.device)[None] <= pos[:, None]
        x = self.embed[tokens]
        for li in range(c.layers):
            h = F.rms_norm(x, (c.d,), self.n1[li], 1e-5)
            q, k, v = F.linear(h, self.wqkv[li]).split([c.heads * c.hd, c.kv_heads * c.hd, c.kv_heads * c.hd], -1)
            q = self.rope(q.view(r, c.heads, c.hd), cos, sin) * (1.0 / math.sqrt(c.hd))
            k = self.rope(k.view(r, c.kv_heads, c.hd), cos, sin)
            cache[li, 0, slot, :, off] = k                             # write the new token's K and V
            cache[li, 1, slot, :, off] = v.view(r, c.kv_heads, c.hd)
            kk = cache[li, 0][table].permute(0, 2, 1, 3, 4).reshape(r, c.kv_heads, t, c.hd)  # gather by block table
            vv = cache[li, 1][table].permute(0, 2, 1, 3, 4).reshape(r, c.kv_heads, t, c.hd)
            s = torch.matmul(q.view(r, c.kv_heads, g, c.hd), kk.transpose(-1, -2))
            s = s.masked_fill(~mask[:, None, None], float("-inf")).softmax(-1, dtype=torch.float32).to(q.dtype)
            o = torch.matmul(s, vv).reshape(r, c.heads * c.hd)
            x = x + F.linear(o, self.wo[li])
            h = F.rms_norm(x, (c.d,), self.n2[li], 1e-5)
            gt, up = F.linear(h, self.wgu[li]).chunk(2, -1)
            x = x + F.linear(F.silu(gt) * up, self.wdown[li])
        return F.linear(F.rms_norm(x, (c.d,), self.nf, 1e-5), self.embed)


def main():
    args = cc.parser(__doc__).parse_args()
    dev = cc.torch_device(args)
    gpu = dev.type == "cuda"
    c = Cfg(args.smoke)
    dtype = torch.bfloat16 if gpu else torch.float32
    torch.manual_seed(0)
    model = Llama(c, dev, dtype)
    blocks = c.rows * c.max_blocks
    # the paged cache, prefilled (the prompts' K/V): [layers, K/V, blocks, kv_heads, block, head_dim]
    cache = torch.randn(c.layers, 2, blocks, c.kv_heads, c.block, c.hd, device=dev, dtype=dtype) * 0.5
    # each row's 32 blocks, scattered over the pool as after a while of allocation and freeing
    table_host = torch.randperm(blocks, generator=torch.Generator().manual_seed(1)).view(c.rows, c.max_blocks)
    table = table_host.to(dev)
    plane = c.kv_heads * c.block * c.hd            # elements of one block of one layer's K or V
    slot_elems = c.layers * 2 * c.max_blocks * plane
    waiting = c.sessions - c.rows
    slots = [torch.empty(slot_elems, dtype=dtype, pin_memory=gpu) for _ in range(waiting + 1)]
    for s in slots:                               # the swapped-out sessions' K/V (prefilled, then swapped)
        s.copy_(torch.randn(slot_elems, device=dev, dtype=dtype) * 0.5)

    g = torch.Generator().manual_seed(2)
    length = [int(x) for x in torch.randint(c.max_len // 2, c.max_len - 1, (c.sessions,), generator=g)]
    row_session = list(range(c.rows))              # resident sessions by row
    resident_since = collections.deque(range(c.rows))     # rows, the longest resident first
    queue = collections.deque((s, i) for i, s in enumerate(range(c.rows, c.sessions)))  # (session, slot)
    free_slot = [waiting]
    session_len = torch.tensor(length, device=dev)
    rows_gpu = torch.arange(c.rows, device=dev)
    row_sess_gpu = torch.tensor(row_session, device=dev)
    session_tok = torch.randint(0, c.vocab, (c.sessions,), device=dev)
    stat = {"copies": 0, "bytes": 0, "swaps": 0, "checksum": None}

    def nblocks(s):
        return length[s] // c.block + 1

    def slot_view(slot, n):
        return slots[slot][:c.layers * 2 * n * plane].view(c.layers, 2, n, c.kv_heads, c.block, c.hd)

    def swap_out_blocks(r, slot, n):
        view = slot_view(slot, n)
        ids = table_host[r, :n].tolist()
        for li in range(c.layers):
            for kv in range(2):
                for j, b in enumerate(ids):
                    view[li, kv, j].copy_(cache[li, kv, b], non_blocking=True)  # gpuwhy: plants C12 (one 16 KB pinned copy a block, layer and K/V)
        stat["copies"] += c.layers * 2 * n

    def swap_in_blocks(r, slot, n):
        view = slot_view(slot, n)
        ids = table_host[r, :n].tolist()
        for li in range(c.layers):
            for kv in range(2):
                for j, b in enumerate(ids):
                    cache[li, kv, b].copy_(view[li, kv, j], non_blocking=True)  # gpuwhy: plants C12 (the same, host to device)
        stat["copies"] += c.layers * 2 * n

    def swap_out_packed(r, slot, n):
        packed = cache.index_select(2, table[r, :n])      # [layers, K/V, n, ...] contiguous, on the GPU
        slot_view(slot, n).copy_(packed, non_blocking=True)
        stat["copies"] += 1

    def swap_in_packed(r, slot, n):
        cache.index_copy_(2, table[r, :n], slot_view(slot, n).to(dev, non_blocking=True))
        stat["copies"] += 1

    swap_out, swap_in = (swap_out_packed, swap_in_packed) if args.fix else (swap_out_blocks, swap_in_blocks)

    def step(i):
        with torch.inference_mode():
            pos = session_len[row_sess_gpu]
            logits = model(session_tok[row_sess_gpu], pos, table, cache)
            session_tok[row_sess_gpu] = logits.argmax(-1)
            nxt = pos + 1
            session_len[row_sess_gpu] = torch.where(nxt >= c.max_len, torch.full_like(nxt, c.wrap_to), nxt)
            for s in row_session:
                length[s] = c.wrap_to if length[s] + 1 >= c.max_len else length[s] + 1
            # the time slice: the longest-resident session out, the longest-waiting one in
            r = resident_since.popleft()
            out_s, (in_s, in_slot) = row_session[r], queue.popleft()
            slot = free_slot.pop()
            n_out, n_in = nblocks(out_s), nblocks(in_s)
            swap_out(r, slot, n_out)
            swap_in(r, in_slot, n_in)
            free_slot.append(in_slot)
            queue.append((out_s, slot))
            row_session[r] = in_s
            row_sess_gpu[r:r + 1].fill_(in_s)
            resident_since.append(r)
            stat["swaps"] += 1
            stat["bytes"] += (n_out + n_in) * c.layers * 2 * plane * cache.element_size()
            if i % 50 == 49:
                stat["checksum"] = int(session_tok.sum())

    res = cc.run("c12_torch_paged_kv_swap_block_copies", args, step, c.rows,
                 extra=lambda: {"swap": "packed, one copy each way" if args.fix else "per block, layer and K/V",
                                "swap_copies_per_step": round(stat["copies"] / max(stat["swaps"], 1), 1),
                                "swap_mb_per_step": round(stat["bytes"] / max(stat["swaps"], 1) / 2 ** 20, 2),
                                "block_kb": plane * cache.element_size() / 1024,
                                "resident_sessions": c.rows, "sessions": c.sessions, "checksum": stat["checksum"]})
    return res


if __name__ == "__main__":
    main()
