"""wait (the feeding thread waits on a queue whose producer waits on a socket): a torchvision
RegNetY-1.6GF (112 px, bf16 autocast, channels_last) trained on image shards streamed over
HTTP from an object store (a local ThreadingHTTPServer in a helper process, 127.0.0.1 only,
answering each GET after 20 ms: the store's first-byte latency). One producer thread GETs
the shards one after the other (urllib) into a queue.Queue(maxsize=4); the training thread
blocks in queue.get() while the producer waits for the store: neither uses the CPU.

--fix: 6 fetcher threads keep 12 requests in flight (a ThreadPoolExecutor, in order), so the
latency overlaps; the queue is then full when the training thread asks (more producers
ahead of the loop: the advice for a feeding thread that waits on its input).
"""
import collections
import concurrent.futures as cf
import http.server
import io
import multiprocessing as mp
import queue
import threading
import time
import urllib.request

import numpy as np
import torch
import torch.nn.functional as F
import torchvision

import cc

LATENCY_S = 0.02


def store(port_out, shards):
    """The object store: GET /shard/K returns shard K % len(shards) as .npy bytes."""
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self):
            k = int(self.path.rsplit("/", 1)[1])
            body = shards[k % len(shards)]
            time.sleep(LATENCY_S)
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *a):
            pass

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    port_out.send(srv.server_address[1])
    srv.serve_forever()


def make_shards(n, batch, res, classes):
    rng = np.random.default_rng(0)
    out = []
    for _ in range(n):
        b = io.BytesIO()
        np.savez(b, x=rng.integers(0, 256, (batch, 3, res, res), dtype=np.uint8), y=rng.integers(0, classes, batch))
        out.append(b.getvalue())
    return out


def main():
    args = cc.parser(__doc__).parse_args()
    batch, res, classes = (4, 32, 10) if args.smoke else (64, 112, 1000)
    # the store is forked before CUDA starts
    recv, send = mp.get_context("fork").Pipe(duplex=False)
    srv = mp.get_context("fork").Process(target=store, args=(send, make_shards(16, batch, res, classes)), daemon=True)
    srv.start()
    base = f"http://127.0.0.1:{recv.recv()}/shard/"
    dev = cc.torch_device(args)
    pin = dev.type == "cuda"

    def fetch(k):
        with urllib.request.urlopen(base + str(k), timeout=30) as r:
            z = np.load(io.BytesIO(r.read()))
            x, y = torch.from_numpy(z["x"]), torch.from_numpy(z["y"])
        return (x.pin_memory(), y.pin_memory()) if pin else (x, y)

    q = queue.Queue(maxsize=4)
    stop = threading.Event()

    def producer():
        k = 0
        if args.fix:
            with cf.ThreadPoolExecutor(6) as pool:
                ahead = collections.deque(pool.submit(fetch, j) for j in range(12))
                while not stop.is_set():
                    q.put(ahead.popleft().result())
                    k += 1
                    ahead.append(pool.submit(fetch, k + 11))
                for f in ahead:
                    f.cancel()
        else:
            while not stop.is_set():
                q.put(fetch(k))
                k += 1
    threading.Thread(target=producer, daemon=True).start()

    torch.backends.cudnn.benchmark = True
    model = torchvision.models.regnet_y_1_6gf(num_classes=classes).to(dev).to(memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, nesterov=True, weight_decay=5e-5, foreach=True)
    mean = torch.tensor([0.485, 0.456, 0.406], device=dev).view(1, 3, 1, 1) * 255
    std = torch.tensor([0.229, 0.224, 0.225], device=dev).view(1, 3, 1, 1) * 255

    def step(i):
        x, y = q.get()  # gpuwhy: plants C16 (the queue's producer waits on the store)
        x = ((x.to(dev, non_blocking=True).float() - mean) / std).contiguous(memory_format=torch.channels_last)
        with torch.autocast(dev.type, dtype=torch.bfloat16):
            loss = F.cross_entropy(model(x), y.to(dev, non_blocking=True), label_smoothing=0.1)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    cc.run("w_torch_http_queue", args, step, batch)
    stop.set()
    srv.terminate()


if __name__ == "__main__":
    main()
