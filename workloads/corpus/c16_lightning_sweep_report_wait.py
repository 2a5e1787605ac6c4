"""C16 the feeding thread waits on something other than the GPU (a hyperparameter-sweep
controller's acknowledgement, every step): one trial of a sweep over fine-grained
bird classification (CUB-200-sized, 200 classes), a torchvision ConvNeXt-Tiny (random
weights, stochastic depth 0.1) trained by a Lightning Trainer with precision="bf16-mixed",
channels_last, fused AdamW with warm-up and cosine decay, label smoothing 0.1, batch 64 at
224 px. A LightningDataModule feeds uint8 crops (a random 224 crop and flip of 512 in-memory
256 x 256 images, by numpy slicing) through 6 persistent workers with pin_memory; the batch
is converted and normalized on the GPU.

The sweep's pruner wants the training loss every step: a Callback's on_train_batch_end reads
the step's loss (float(loss)) and reports it to the sweep controller's HTTP API (POST
/api/trials/<id>/report, JSON), and the report returns once the controller has written the
value to its database and asked its pruner whether the trial should stop (as a sweep
agent's synchronous report() does). The controller is a ThreadingHTTPServer in a helper
process forked before CUDA starts (127.0.0.1 only) that answers after 20 ms, the round trip
of a control plane across the cluster; each report opens a new connection (urllib, as
requests.post without a session). The training thread sits in the socket read with nothing
queued on the GPU (the loss was just read): about 20 ms of every step.

--fix: gpuwhy's C16 advice (move the wait off the thread that feeds the GPU): the callback
puts (step, loss) on a queue.Queue and a background reporter thread posts the reports (the
latest one when it has fallen behind) and sets a threading.Event when the controller says to
prune; the callback only checks the Event. The loss is still read every step on the training thread (a small sync kept in both
runs); model, data, controller and its latency unchanged.

Written blind for the echo batch.
"""
import http.server
import json
import math
import multiprocessing as mp
import queue
import threading
import time
import urllib.request

import lightning as L
import numpy as np
import torch
import torch.nn.functional as F
import torchvision
from torch.utils.data import DataLoader, Dataset

import cc

LATENCY_S = 0.020  # the controller's round trip: database write and pruner query
TRIAL = 17
MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)


def controller(port_out):
    """The sweep controller's API: records each report, answers {"prune": ...} after LATENCY_S."""
    seen = {}

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            seen.setdefault(self.path, []).append(body["value"])
            time.sleep(LATENCY_S)  # database write and the pruner's query, across the cluster
            vals = seen[self.path]
            prune = len(vals) > 100_000 and not math.isfinite(vals[-1])  # the median rule never fires here
            out = json.dumps({"trial": TRIAL, "prune": prune, "reports": len(vals)}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)

        def log_message(self, *a):
            pass

    http.server.ThreadingHTTPServer.daemon_threads = True
    with http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler) as srv:
        port_out.send(srv.server_address[1])
        srv.serve_forever()


def report(url, step, value):
    """One report, as a sweep agent's report(): returns the controller's answer."""
    req = urllib.request.Request(url, data=json.dumps({"step": step, "value": value}).encode(),
                                 headers={"Content-Type": "application/json"}, method="POST")
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.loads(r.read())


class SweepReporter(L.Callback):
    """Reports the training loss to the sweep controller every step; stops when pruned."""

    def __init__(self, url, background):
        self.url, self.background = url, background
        self.sent = 0
        self.pruned = threading.Event()
        if background:
            self.q = queue.Queue()
            self.thread = threading.Thread(target=self._post_loop, daemon=True)
            self.thread.start()

    def _post_loop(self):
        while True:
            item = self.q.get()
            while item is not None and not self.q.empty():  # behind: report the latest value only
                item = self.q.get_nowait()
            if item is None:
                return
            if report(self.url, *item)["prune"]:
                self.pruned.set()
            self.sent += 1

    def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx):
        loss = float(outputs["loss"])  # the value the pruner wants (a sync, in both runs)
        if self.background:
            self.q.put((trainer.global_step, loss))
        else:
            answer = report(self.url, trainer.global_step, loss)  # gpuwhy: plants C16 (the training thread waits 20 ms on the controller's reply every step)
            self.sent += 1
            if answer["prune"]:
                self.pruned.set()
        if self.pruned.is_set():
            trainer.should_stop = True

    def close(self):
        if self.background:
            self.q.put(None)
            self.thread.join(timeout=5)


class Crops(Dataset):
    def __init__(self, n, size, crop, classes):
        rng = np.random.default_rng(0)
        self.images = rng.integers(0, 256, (n, 3, size, size), dtype=np.uint8)
        self.labels = rng.integers(0, classes, n)
        self.crop = crop

    def __len__(self):
        return 1_000_000

    def __getitem__(self, i):
        rng = np.random.default_rng(i)
        k = i % len(self.images)
        y0, x0 = rng.integers(0, self.images.shape[2] - self.crop + 1, 2)
        img = self.images[k, :, y0:y0 + self.crop, x0:x0 + self.crop]
        if rng.random() < 0.5:
            img = img[:, :, ::-1]
        return torch.from_numpy(np.ascontiguousarray(img)), int(self.labels[k])


class BirdsData(L.LightningDataModule):
    def __init__(self, n, size, crop, classes, batch, workers):
        super().__init__()
        self.n, self.size, self.crop, self.classes = n, size, crop, classes
        self.batch, self.workers = batch, workers

    def setup(self, stage=None):
        self.train = Crops(self.n, self.size, self.crop, self.classes)

    def train_dataloader(self):
        return DataLoader(self.train, batch_size=self.batch, shuffle=True, drop_last=True, num_workers=self.workers,
                          pin_memory=True, persistent_workers=True, prefetch_factor=4)


class BirdClassifier(L.LightningModule):
    def __init__(self, classes, lr=1e-3, total_steps=30_000):
        super().__init__()
        self.save_hyperparameters()
        self.net = torchvision.models.convnext_tiny(num_classes=classes, stochastic_depth_prob=0.1)
        self.net = self.net.to(memory_format=torch.channels_last)
        self.register_buffer("mean", torch.tensor(MEAN).view(1, 3, 1, 1) * 255, persistent=False)
        self.register_buffer("std", torch.tensor(STD).view(1, 3, 1, 1) * 255, persistent=False)

    def training_step(self, batch, batch_idx):
        x, y = batch
        x = ((x.float() - self.mean) / self.std).contiguous(memory_format=torch.channels_last)
        return F.cross_entropy(self.net(x), y, label_smoothing=0.1)

    def configure_optimizers(self):
        decay = [p for p in self.parameters() if p.ndim > 1]
        no_decay = [p for p in self.parameters() if p.ndim <= 1]
        opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.05}, {"params": no_decay, "weight_decay": 0.0}],
                                lr=self.hparams.lr, fused=self.device.type == "cuda")
        total = self.hparams.total_steps
        sched = torch.optim.lr_scheduler.LambdaLR(
            opt, lambda s: min(1.0, (s + 1) / 500) * 0.5 * (1 + math.cos(math.pi * min(s, total) / total)))
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step"}}


def main():
    args = cc.parser(__doc__).parse_args()
    # the controller runs in its own process, forked before CUDA starts
    recv, send = mp.get_context("fork").Pipe(duplex=False)
    server = mp.get_context("fork").Process(target=controller, args=(send,), daemon=True)
    server.start()
    url = f"http://127.0.0.1:{recv.recv()}/api/trials/{TRIAL}/report"
    torch.set_float32_matmul_precision("high")
    if args.smoke:
        data = BirdsData(32, 40, 32, 200, batch=4, workers=2)
    else:
        data = BirdsData(512, 256, 224, 200, batch=64, workers=6)
    model = BirdClassifier(200)
    reporter = SweepReporter(url, background=args.fix)
    timer = cc.lightning_timer("c16_lightning_sweep_report_wait", args, data.batch,
                               extra=lambda: {"report": "background thread" if args.fix else "on the training thread",
                                              "latency_ms": LATENCY_S * 1e3, "reports": reporter.sent})
    trainer = cc.lightning_trainer(args, [reporter, timer], precision="bf16-mixed")
    try:
        trainer.fit(model, datamodule=data)
    finally:
        reporter.close()
        server.terminate()


if __name__ == "__main__":
    main()
