"""wait (the training thread waits on a remote store's latency, one request at a time): a
GPT-style LM (12 layers, d=768, 12 heads, context 1024, vocab 32000, tied embeddings,
F.scaled_dot_product_attention with is_causal, bf16 autocast, fused AdamW, batch 16 x 1024
tokens) trained on tokenized shards kept in a remote object store: a shard server, here a
ThreadingTCPServer in a helper process forked before CUDA starts (127.0.0.1 only), that
answers each request (a sample's index) with the sample's 1025 uint16 tokens after a fixed
4 ms (the store's round trip). The training thread fetches each batch's 16 samples itself,
one request after the other over one connection (send the index, block in recv until the
reply), then stacks and copies them: about 64 ms a batch in which no CPU is busy and the GPU
waits.

--fix: the advice for a feeding thread that waits on latency (keep requests in flight): a
ThreadPoolExecutor of 32 fetchers, each with its own connection, keeps the next 4 batches'
samples (64 requests) requested ahead of the loop, in order; the training thread only
collects finished replies; model, store and latency unchanged.
"""
import collections
import concurrent.futures as cf
import multiprocessing as mp
import socket
import socketserver
import struct
import threading
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

import cc

LATENCY_S = 0.004
AHEAD = 4  # batches requested ahead (--fix)


def recv_exact(sock, buf):
    view, got = memoryview(buf), 0
    while got < len(buf):
        n = sock.recv_into(view[got:])
        if not n:
            raise ConnectionError("shard server closed the connection")
        got += n
    return buf


def shard_server(port_out, tokens, seq):
    """Answers each 8-byte sample index with that sample's seq+1 tokens (uint16), after LATENCY_S."""
    n_samples = (len(tokens) - 1) // seq

    class Handler(socketserver.BaseRequestHandler):
        def handle(self):
            self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            req = bytearray(8)
            while True:
                try:
                    recv_exact(self.request, req)
                except (ConnectionError, OSError):
                    return
                k = struct.unpack("<q", req)[0] % n_samples
                sample = tokens[k * seq:k * seq + seq + 1]
                time.sleep(LATENCY_S)  # the object store's round trip
                self.request.sendall(sample.tobytes())

    socketserver.ThreadingTCPServer.daemon_threads = True
    socketserver.ThreadingTCPServer.allow_reuse_address = True
    with socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler) as srv:
        port_out.send(srv.server_address[1])
        srv.serve_forever()


class Client:
    """One connection to the shard server; get(k) returns sample k as a uint16 array."""

    def __init__(self, port, seq):
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.nbytes = 2 * (seq + 1)

    def get(self, k):
        self.sock.sendall(struct.pack("<q", k))
        return np.frombuffer(recv_exact(self.sock, bytearray(self.nbytes)), dtype=np.uint16)

    def close(self):
        self.sock.close()


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


def main():
    args = cc.parser(__doc__).parse_args()
    batch, seq, d, heads, layers, vocab = (4, 32, 64, 4, 2, 500) if args.smoke else (16, 1024, 768, 12, 12, 32000)
    fetchers = 4 if args.smoke else 32
    tokens = np.random.default_rng(0).integers(0, vocab, 4096 * seq + 1, dtype=np.uint16)  # the store's shards
    recv, send = mp.get_context("fork").Pipe(duplex=False)
    server = mp.get_context("fork").Process(target=shard_server, args=(send, tokens, seq), daemon=True)
    server.start()  # forked before CUDA starts
    port = recv.recv()
    dev = cc.torch_device(args)
    pin = dev.type == "cuda"
    model = GPT(vocab, seq, d, heads, layers).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, betas=(0.9, 0.95), weight_decay=0.1,
                            fused=dev.type == "cuda")
    order = np.random.default_rng(1).permutation(4096)
    clients = []

    if args.fix:
        local = threading.local()
        lock = threading.Lock()

        def fetch(k):
            c = getattr(local, "client", None)
            if c is None:
                c = local.client = Client(port, seq)
                with lock:
                    clients.append(c)
            return c.get(int(order[k % len(order)]))

        pool = cf.ThreadPoolExecutor(fetchers)
        ahead = collections.deque(pool.submit(fetch, k) for k in range(AHEAD * batch))
        nxt = AHEAD * batch

        def next_batch():
            nonlocal nxt
            rows = []
            for _ in range(batch):
                rows.append(ahead.popleft().result())
                ahead.append(pool.submit(fetch, nxt))
                nxt += 1
            return np.stack(rows)
    else:
        clients.append(Client(port, seq))
        nxt = 0

        def next_batch():
            nonlocal nxt
            rows = []
            for _ in range(batch):
                rows.append(clients[0].get(int(order[nxt % len(order)])))  # gpuwhy: plants C16 (one request at a time, waiting on the store's latency)
                nxt += 1
            return np.stack(rows)

    def step(i):
        xb = torch.from_numpy(next_batch().astype(np.int64))
        xb = (xb.pin_memory() if pin else xb).to(dev, non_blocking=True)
        with torch.autocast(dev.type, dtype=torch.bfloat16):
            logits = model(xb[:, :-1])
        loss = F.cross_entropy(logits.float().reshape(-1, vocab), xb[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    cc.run("w_torch_remote_shards_latency", args, step, batch,
           extra=lambda: {"requests_in_flight": fetchers if args.fix else 1, "latency_ms": LATENCY_S * 1e3})
    if args.fix:
        pool.shutdown(wait=True, cancel_futures=True)
    for c in clients:
        c.close()
    server.terminate()


if __name__ == "__main__":
    main()
