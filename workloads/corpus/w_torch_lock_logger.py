"""wait (the feeding thread waits on a lock): a torchvision ResNet-34 (128 px, bf16 autocast,
channels_last, batches on the GPU) logs its loss every step (loss.item(), for the progress
line) into a metrics client. The client's shipper thread sends the buffered records to a
metrics collector (a helper process on a local socket that answers after 40 ms, the round
trip to a remote service) every 40 ms while it holds the client's threading.Lock, so each
log() call of the training thread waits up to the whole round trip for that lock.

--fix: the shipper swaps the buffer under the lock and sends outside it (the lock is held
for microseconds): the wait on the lock goes; the per-step loss.item() stays.
"""
import json
import multiprocessing as mp
import socket
import threading
import time

import torch
import torch.nn.functional as F
import torchvision

import cc

RTT_S = 0.04


def collector(sock):
    """The metrics service: acknowledges each payload after the network round trip."""
    with sock:
        f = sock.makefile("rb")
        for line in f:
            time.sleep(RTT_S)
            sock.sendall(b"ok %d\n" % len(line))


class MetricsClient:
    def __init__(self, sock, send_outside_lock):
        self.sock, self.reply = sock, sock.makefile("rb")
        self.lock = threading.Lock()
        self.buf = []
        self.outside = send_outside_lock
        self.stop = threading.Event()
        threading.Thread(target=self.ship, daemon=True).start()

    def log(self, step, **values):
        with self.lock:  # gpuwhy: plants C16 (the shipper holds this lock during its round trip)
            self.buf.append({"step": step, "t": time.time(), **values})

    def send(self, records):
        self.sock.sendall(json.dumps(records).encode() + b"\n")
        self.reply.readline()

    def ship(self):
        while not self.stop.wait(RTT_S):
            if self.outside:
                with self.lock:
                    records, self.buf = self.buf, []
                self.send(records)
            else:
                with self.lock:
                    self.send(self.buf)
                    self.buf.clear()


def main():
    args = cc.parser(__doc__).parse_args()
    ours, theirs = socket.socketpair()  # the collector forked before CUDA starts
    helper = mp.get_context("fork").Process(target=collector, args=(theirs,), daemon=True)
    helper.start()
    theirs.close()
    dev = cc.torch_device(args)
    batch, res, classes = (8, 32, 10) if args.smoke else (128, 128, 1000)
    torch.backends.cudnn.benchmark = True
    metrics = MetricsClient(ours, send_outside_lock=args.fix)
    model = torchvision.models.resnet34(num_classes=classes).to(dev).to(memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, foreach=True)
    g = torch.Generator(device=dev).manual_seed(0)
    xs = [torch.randn(batch, 3, res, res, device=dev, generator=g).contiguous(memory_format=torch.channels_last)
          for _ in range(4)]
    ys = [torch.randint(0, classes, (batch,), device=dev, generator=g) for _ in range(4)]

    def step(i):
        with torch.autocast(dev.type, dtype=torch.bfloat16):
            loss = F.cross_entropy(model(xs[i % 4]), ys[i % 4])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        metrics.log(i, loss=loss.item(), lr=0.1)

    cc.run("w_torch_lock_logger", args, step, batch)
    metrics.stop.set()
    helper.terminate()


if __name__ == "__main__":
    main()
