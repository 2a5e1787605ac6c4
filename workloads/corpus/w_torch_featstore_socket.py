"""wait (the feeding thread waits on a socket): a DLRM-style click-through model (8 embedding
bags of 200k x 64, bottom and top MLPs, pairwise dot interactions; batch 8192, bf16 autocast)
whose 13 dense features per example come from a feature store: for each batch the training
thread sends the batch's user ids over a Unix socket to a feature-store process (a
ThreadingUnixStreamServer that answers after an 8 ms round trip: the store runs on another
host) and blocks in recv until the 426 KB of features arrive, then launches the step.

--fix: 4 connections with the next 3 batches' requests already sent (pipelined requests:
the features of batch i+3 are requested before step i runs), so the round trips overlap
the GPU's work (fetch ahead of the loop: the advice for a feeding thread that waits on its
input).
"""
import collections
import multiprocessing as mp
import os
import shutil
import socket
import socketserver
import tempfile
import time

import numpy as np
import torch
import torch.nn.functional as F

import cc

RTT_S = 0.008
DENSE = 13


def recv_exact(sock, buf):
    view, got = memoryview(buf), 0
    while got < len(buf):
        n = sock.recv_into(view[got:])
        if not n:
            raise ConnectionError("feature store closed the connection")
        got += n
    return buf


def feature_store(path, users, batch):
    """Answers each request (batch user ids, int64) with their dense features (float32)."""
    table = np.random.default_rng(1).standard_normal((users, DENSE), dtype=np.float32)

    class Handler(socketserver.BaseRequestHandler):
        def handle(self):
            ids = bytearray(8 * batch)
            while True:
                try:
                    recv_exact(self.request, ids)
                except ConnectionError:
                    return
                rows = table[np.frombuffer(ids, np.int64)]
                time.sleep(RTT_S)
                self.request.sendall(rows.tobytes())

    socketserver.ThreadingUnixStreamServer.daemon_threads = True
    with socketserver.ThreadingUnixStreamServer(path, Handler) as srv:
        srv.serve_forever()


class DLRM(torch.nn.Module):
    def __init__(self, tables, rows, dim):
        super().__init__()
        self.emb = torch.nn.ModuleList(torch.nn.EmbeddingBag(rows, dim, mode="sum") for _ in range(tables))
        mlp = lambda *s: torch.nn.Sequential(*[m for a, b in zip(s, s[1:]) for m in (torch.nn.Linear(a, b), torch.nn.ReLU())][:-1])
        self.bottom = mlp(DENSE, 512, 256, dim)
        n = tables + 1
        self.top = mlp(dim + n * (n - 1) // 2, 1024, 1024, 512, 1)
        self.tri = torch.triu_indices(n, n, 1)

    def forward(self, dense, sparse):
        z = [self.bottom(dense)] + [e(s) for e, s in zip(self.emb, sparse.unbind(1))]
        z = torch.stack(z, 1)
        inter = torch.bmm(z, z.transpose(1, 2))[:, self.tri[0], self.tri[1]]
        return self.top(torch.cat([z[:, 0], inter], 1)).squeeze(1)


def main():
    args = cc.parser(__doc__).parse_args()
    tables, rows, dim, batch, users, hot = (2, 1000, 16, 64, 10_000, 2) if args.smoke else (8, 200_000, 64, 8192, 1_000_000, 4)
    path = os.path.join(tempfile.mkdtemp(prefix="gw_featstore_"), "store.sock")
    store = mp.get_context("fork").Process(target=feature_store, args=(path, users, batch), daemon=True)
    store.start()  # forked before CUDA starts
    conns = []
    for _ in range(4 if args.fix else 1):
        s = socket.socket(socket.AF_UNIX)
        for _ in range(200):
            try:
                s.connect(path)
                break
            except (FileNotFoundError, ConnectionRefusedError):
                time.sleep(0.02)
        conns.append(s)
    dev = cc.torch_device(args)
    model = DLRM(tables, rows, dim).to(dev)
    model.tri = model.tri.to(dev)
    opt = torch.optim.Adagrad(model.parameters(), lr=0.01, foreach=True)
    rng = np.random.default_rng(0)
    user_ids = [rng.integers(0, users, batch) for _ in range(16)]
    g = torch.Generator(device=dev).manual_seed(0)
    sparse = [torch.randint(0, rows, (batch, tables, hot), device=dev, generator=g) for _ in range(16)]
    labels = [torch.randint(0, 2, (batch,), device=dev, generator=g).float() for _ in range(16)]
    pin = dev.type == "cuda"
    bufs = [bytearray(4 * batch * DENSE) for _ in range(len(conns))]
    ahead = collections.deque()

    def request(k):
        c = k % len(conns)
        conns[c].sendall(user_ids[k % 16].tobytes())
        ahead.append(c)

    if args.fix:
        for k in range(3):
            request(k)

    def step(i):
        if args.fix:
            request(i + 3)
            c = ahead.popleft()
            recv_exact(conns[c], bufs[c])
        else:
            request(i)
            c = ahead.popleft()
            recv_exact(conns[c], bufs[c])  # gpuwhy: plants C16 (blocks on the feature store's reply)
        dense = torch.frombuffer(bufs[c], dtype=torch.float32).view(batch, DENSE)
        # pinned copies from the caching host allocator: safe to refill bufs[c] at once
        dense = (dense.pin_memory() if pin else dense.clone()).to(dev, non_blocking=True)
        with torch.autocast(dev.type, dtype=torch.bfloat16):
            logit = model(torch.log1p(dense.abs()), sparse[i % 16])
        loss = F.binary_cross_entropy_with_logits(logit.float(), labels[i % 16])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    cc.run("w_torch_featstore_socket", args, step, batch)
    for s in conns:
        s.close()
    store.terminate()
    shutil.rmtree(os.path.dirname(path), ignore_errors=True)


if __name__ == "__main__":
    main()
