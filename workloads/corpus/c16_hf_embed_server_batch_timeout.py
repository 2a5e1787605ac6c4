"""C16 the feeding thread waits on a condition variable for requests that cannot come: a
semantic-search embedding service (a bge-base-sized BERT encoder from a BertConfig: 12 layers
of width 768, 12 heads, vocabulary 30,522; random weights, bf16, SDPA, eval, inference_mode;
mean pooling over the attention mask, L2-normalized 768-d embeddings) behind a dynamic
batcher written after Ray Serve's `@serve.batch(max_batch_size=64, batch_wait_timeout_s=0.01)`:
request handler threads put tokenized queries (16-128 tokens, padded to 128) on the batcher's
deque and wait on an Event for their embedding; the GPU's thread takes a batch, runs the
encoder, copies the embeddings back (.float().cpu(), 147 KB) and hands each one to its
request. 48 clients (the front end's connection pool) send one query at a time, each the next
as soon as its answer comes (a closed loop).

The batch closes when it holds max_batch_size=64 requests or batch_wait_timeout_s after its
first request, the usual configuration copied from the docs' example; with 48 requests in
flight it never fills, so every batch waits the full 10 ms on the batcher's
threading.Condition (`cv.wait(remaining)`), with the GPU idle and nothing more to come: the
48 queries arrive within about a millisecond of the last answer.

--fix: gpuwhy's C16 advice (do not leave the GPU's thread waiting on something that is not the
GPU): batch_wait_timeout_s lowered to 1 ms, under the encoder's own time a batch, so a batch
closes once the answered clients have sent their next queries; model, queries, clients and
max_batch_size unchanged (the embeddings of one query checked equal alone and inside a batch at
start).

One iteration is one batch the encoder ran (48 queries plain, about as many with --fix);
samples_per_s counts queries answered.

Written blind for the november batch.
"""
import collections
import threading
import time

import torch
import torch.nn.functional as F
from transformers import BertConfig, BertModel

import cc


class Request:
    __slots__ = ("ids", "mask", "t", "done", "out")

    def __init__(self, ids, mask):
        self.ids, self.mask = ids, mask
        self.t = time.monotonic()
        self.done = threading.Event()
        self.out = None


class DynamicBatcher:
    """Ray Serve's @serve.batch semantics: a batch closes when it is full or when
    batch_wait_timeout_s has passed since its first request."""

    def __init__(self, max_batch_size, batch_wait_timeout_s):
        self.max_batch_size = max_batch_size
        self.timeout = batch_wait_timeout_s
        self.q = collections.deque()
        self.cv = threading.Condition()

    def submit(self, req):
        with self.cv:
            self.q.append(req)
            self.cv.notify()

    def next_batch(self):
        with self.cv:
            while not self.q:
                self.cv.wait()
            deadline = self.q[0].t + self.timeout
            while len(self.q) < self.max_batch_size:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                self.cv.wait(remaining)  # gpuwhy: plants C16 (the GPU's thread waits the batch's full 10 ms for requests that cannot come: 48 in flight, max_batch_size 64)
            n = min(len(self.q), self.max_batch_size)
            return [self.q.popleft() for _ in range(n)]


def main():
    args = cc.parser(__doc__, warmup=10).parse_args()
    dev = cc.torch_device(args)
    gpu = dev.type == "cuda"
    if args.smoke:
        cfg = BertConfig(vocab_size=1000, hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
                         intermediate_size=128, max_position_embeddings=128)
        seq, clients, max_bs, pool = 32, 6, 8, 64
    else:
        cfg = BertConfig(vocab_size=30_522, hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                         intermediate_size=3072, max_position_embeddings=512)
        seq, clients, max_bs, pool = 128, 48, 64, 4096
    cfg._attn_implementation = "sdpa"
    wait_s = 0.001 if args.fix else 0.010
    torch.manual_seed(0)
    dtype = torch.bfloat16 if gpu else torch.float32
    model = BertModel(cfg, add_pooling_layer=False).to(dev, dtype=dtype).eval()

    # the queries, tokenized by the front end: [CLS] ... [SEP] then padding to seq
    g = torch.Generator().manual_seed(1)
    lens = torch.randint(16, seq + 1, (pool,), generator=g)
    q_ids = torch.randint(1000 if not args.smoke else 5, cfg.vocab_size, (pool, seq), generator=g)
    q_mask = (torch.arange(seq)[None, :] < lens[:, None]).long()
    q_ids[:, 0] = 101 if not args.smoke else 1
    q_ids = q_ids * q_mask

    @torch.inference_mode()
    def encode(ids, mask):
        ids, mask = ids.to(dev, non_blocking=True), mask.to(dev, non_blocking=True)
        h = model(input_ids=ids, attention_mask=mask).last_hidden_state
        m = mask[..., None].to(h.dtype)
        e = (h * m).sum(1) / m.sum(1).clamp_min(1)
        return F.normalize(e.float(), dim=-1).cpu()

    # equivalence at start: a query's embedding alone and inside a batch of others agree
    alone = encode(q_ids[3:4], q_mask[3:4])
    inside = encode(q_ids[:max_bs], q_mask[:max_bs])[3:4]
    if (alone - inside).abs().max().item() > (3e-2 if gpu else 1e-4):
        raise SystemExit(f"batched embedding disagrees with the single query: {(alone - inside).abs().max().item()}")

    batcher = DynamicBatcher(max_bs, wait_s)
    stop = threading.Event()
    answered = [0] * clients

    def client(c):
        r = torch.Generator().manual_seed(100 + c)
        while not stop.is_set():
            k = int(torch.randint(0, pool, (1,), generator=r))
            req = Request(q_ids[k], q_mask[k])
            batcher.submit(req)
            while not req.done.wait(0.5):
                if stop.is_set():
                    return
            answered[c] += 1

    threads = [threading.Thread(target=client, args=(c,), daemon=True, name=f"handler-{c}") for c in range(clients)]
    for t in threads:
        t.start()
    st = {"sizes": [], "norm": None}

    def step(i):
        batch = batcher.next_batch()
        emb = encode(torch.stack([r.ids for r in batch]), torch.stack([r.mask for r in batch]))
        for r, e in zip(batch, emb):
            r.out = e
            r.done.set()
        st["sizes"].append(len(batch))
        if i % 50 == 49:
            st["norm"] = float(emb.norm(dim=-1).mean())
        return len(batch)

    # cc.run's loop, counting the queries each batch answered (batches vary with --fix)
    for i in range(args.warmup):
        step(i)
    cc.sync()
    t0 = time.perf_counter()
    n = served = 0
    while time.perf_counter() - t0 < args.seconds:
        served += step(args.warmup + n)
        n += 1
    cc.sync()
    dt = time.perf_counter() - t0
    stop.set()
    steady = st["sizes"][args.warmup:]
    cc.report("c16_hf_embed_server_batch_timeout", args, n, args.warmup, dt, served / max(n, 1),
              extra={"clients": clients, "max_batch_size": max_bs, "batch_wait_timeout_ms": wait_s * 1e3,
                     "mean_batch": round(sum(steady) / max(len(steady), 1), 2), "queries_answered": served,
                     "unit": "queries", "embedding_norm": st["norm"],
                     "attn_implementation": getattr(model.config, "_attn_implementation", None)})
    for t in threads:
        t.join(timeout=1.0)


if __name__ == "__main__":
    main()
