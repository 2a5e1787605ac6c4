"""C14 periodic stall (checkpoints uploaded to an object store on the training thread): a
GPT-style LM (6 layers, d=512, 8 heads, context 1024, vocab 8000, tied embeddings,
F.scaled_dot_product_attention with is_causal, bf16 autocast, fused AdamW; batch 96 x 1024
tokens made once on the GPU and cycled; 23.5 M parameters, 283 MB of model and optimizer
state) that every 25 steps saves a checkpoint straight to object storage, as jobs on
clusters without a shared filesystem do: torch.save({"model", "optimizer", "step"}) into
an io.BytesIO (each CUDA tensor copied to the host on the way), then an HTTP PUT of the
bytes with http.client. The store is a ThreadingHTTPServer in a helper process forked
before CUDA starts (127.0.0.1 only) that reads each body in 1 MB pieces and keeps the last
object in memory. Serialization and upload (about 0.6 s on a CPU-only test machine) run on
the training thread while the GPU waits.

--fix: gpuwhy's C14 advice (write checkpoints from a background thread: copy the state to
host, write while training continues): at each checkpoint the state's tensors are copied
into pinned host buffers (made once, after the first step) with non_blocking copies queued
in stream order (the next step's updates come after them), and a background thread waits
for the copies' event, then serializes the host copy with torch.save and PUTs it while
training goes on (a checkpoint waits for the previous upload if it has not finished).
"""
import http.client
import http.server
import io
import multiprocessing as mp
import threading

import torch
import torch.nn as nn
import torch.nn.functional as F

import cc


def object_store(port_out):
    """PUT /bucket/KEY: reads the body in 1 MB pieces, keeps the last object; 200 OK."""
    objects = {}

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_PUT(self):
            left = int(self.headers["Content-Length"])
            parts = []
            while left:
                piece = self.rfile.read(min(left, 1 << 20))
                if not piece:
                    break
                parts.append(piece)
                left -= len(piece)
            objects.clear()
            objects[self.path] = b"".join(parts)
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.send_header("ETag", f'"{len(objects[self.path])}"')
            self.end_headers()

        def log_message(self, *a):
            pass

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    port_out.send(srv.server_address[1])
    srv.serve_forever()


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
        return x + self.out(F.gelu(self.fc(self.ln2(x))))


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


def put(port, key, body):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    try:
        conn.request("PUT", f"/checkpoints/{key}", body=body,
                     headers={"Content-Type": "application/octet-stream", "Content-Length": str(len(body))})
        r = conn.getresponse()
        r.read()
        if r.status != 200:
            raise RuntimeError(f"upload of {key} failed: HTTP {r.status}")
    finally:
        conn.close()


def main():
    args = cc.parser(__doc__).parse_args()
    batch, ctx, d, heads, layers, vocab = (4, 32, 64, 4, 2, 500) if args.smoke else (96, 1024, 512, 8, 6, 8000)
    every = 3 if args.smoke else 25
    recv, send = mp.get_context("fork").Pipe(duplex=False)
    store = mp.get_context("fork").Process(target=object_store, args=(send,), daemon=True)
    store.start()  # forked before CUDA starts
    port = recv.recv()
    dev = cc.torch_device(args)
    model = GPT(vocab, ctx, d, heads, layers).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, betas=(0.9, 0.95), weight_decay=0.1,
                            fused=dev.type == "cuda")
    g = torch.Generator().manual_seed(0)
    data = [torch.randint(0, vocab, (batch, ctx + 1), generator=g).to(dev) for _ in range(4)]
    stats = {"uploads": 0, "bytes": 0}
    gpu = dev.type == "cuda"
    host = {}  # pinned host copies of the state, made once (--fix)
    uploader = None

    def upload(key, state, done_event):
        if done_event is not None:
            done_event.synchronize()  # the queued copies have landed in the host buffers
        buf = io.BytesIO()
        torch.save(state, buf)
        put(port, key, buf.getbuffer())
        stats["uploads"] += 1
        stats["bytes"] = buf.getbuffer().nbytes

    def to_host(obj, path="", copy=True):
        """The state with each tensor replaced by its pinned host copy (non_blocking copies queued);
        copy=False only allocates the buffers."""
        if isinstance(obj, torch.Tensor):
            if path not in host:
                host[path] = torch.empty(obj.shape, dtype=obj.dtype, device="cpu", pin_memory=gpu)
            if copy:
                host[path].copy_(obj.detach(), non_blocking=gpu)
            return host[path]
        if isinstance(obj, dict):
            return {k: to_host(v, f"{path}/{k}", copy) for k, v in obj.items()}
        if isinstance(obj, (list, tuple)):
            return type(obj)(to_host(v, f"{path}/{k}", copy) for k, v in enumerate(obj))
        return obj

    def checkpoint(i):
        nonlocal uploader
        key = f"step_{i + 1:07d}.pt"
        if not args.fix:
            buf = io.BytesIO()
            torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "step": i + 1}, buf)
            put(port, key, buf.getbuffer())  # gpuwhy: plants C14 (checkpoint serialized and uploaded on the training thread every 25 steps)
            stats["uploads"] += 1
            stats["bytes"] = buf.getbuffer().nbytes
            return
        if uploader is not None:
            uploader.join()  # the previous upload still reads the host buffers
        # copies queued in stream order (the next step's updates come after them), no host wait
        state = to_host({"model": model.state_dict(), "optimizer": opt.state_dict(), "step": i + 1})
        done = None
        if gpu:
            done = torch.cuda.Event()
            done.record()
        uploader = threading.Thread(target=upload, args=(key, state, done), daemon=True)
        uploader.start()

    def step(i):
        x = data[i % len(data)]
        with torch.autocast(dev.type, dtype=torch.bfloat16):
            logits = model(x[:, :-1])
        loss = F.cross_entropy(logits.float().reshape(-1, vocab), x[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if args.fix and not host:  # the snapshot's pinned buffers, made once the optimizer state exists
            to_host({"model": model.state_dict(), "optimizer": opt.state_dict()}, copy=False)
        if (i + 1) % every == 0:
            checkpoint(i)

    cc.run("c14_torch_http_ckpt_upload", args, step, batch,
           extra=lambda: {"checkpoint_every": every, "uploads": stats["uploads"], "checkpoint_bytes": stats["bytes"]})
    if uploader is not None:
        uploader.join()
    store.terminate()


if __name__ == "__main__":
    main()
