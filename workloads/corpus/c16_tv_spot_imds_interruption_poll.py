"""C16 the training thread asks the instance metadata service for a spot interruption notice
after every step (a ViT-B/16 trained on spot capacity): image classification with torchvision's
ViT-B/16 (weights=None, 1,000 classes, 86.6 M parameters) in the DeiT-style recipe's shape, in
plain PyTorch, batch 64 images of 224 x 224 drawn from a pool of synthetic ImageNet-like images
held on the GPU (random flips on the GPU), bf16 autocast, fused AdamW with weight decay 0.05,
label smoothing 0.1, gradient clipping at 1.0; the loss stays on the GPU and is read every 50
steps.

The job runs on spot instances, and its author followed the cloud's "two-minute warning" recipe
literally: after every optimizer step it asks the instance metadata service (IMDSv2) whether an
interruption is scheduled, a PUT to /latest/api/token for a session token and a GET of
/latest/meta-data/spot/instance-action (404 while none is), each a new HTTP connection through
urllib, and saves and exits if a notice came. Here the metadata service is a helper process
(forked before CUDA starts, dies with the job, 127.0.0.1 only) that answers each request after
5 ms, as a metadata endpoint on a busy instance does (~1-10 ms); the two round trips, ~11-13 ms,
leave the training thread asleep in recv() while the GPU finishes the step it was given
(~8-12 ms of work) and then idles.

--fix: gpuwhy's C16 advice (move the blocking wait to a background thread): a watcher thread
polls the same endpoint every 5 s (the interval the cloud's documentation suggests) and sets a
threading.Event; the loop checks the event after each step; the notice, the checkpoint-and-exit
path, model, data and optimizer unchanged.

Written blind for the victor batch.
"""
import http.server
import json
import multiprocessing as mp
import signal
import socket
import threading
import time
import urllib.error
import urllib.request

import cc

DELAY_S = 0.005


def metadata_service(lsock, delay):
    """The instance metadata service (IMDSv2): token PUT, instance-action GET (404: no notice)."""
    try:
        import ctypes
        ctypes.CDLL("libc.so.6").prctl(1, signal.SIGKILL)                  # PR_SET_PDEATHSIG: die with the job
    except OSError:
        pass

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def _send(self, code, body=b""):
            self.send_response(code)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_PUT(self):
            time.sleep(delay)
            if self.path == "/latest/api/token" and self.headers.get("X-aws-ec2-metadata-token-ttl-seconds"):
                self._send(200, b"AQAEAKv-imds-session-token-0123456789abcdef==")
            else:
                self._send(400)

        def do_GET(self):
            time.sleep(delay)
            if not self.headers.get("X-aws-ec2-metadata-token"):
                self._send(401)
            elif self.path == "/latest/meta-data/spot/instance-action":
                self._send(404, b"Not Found")                             # no interruption scheduled
            else:
                self._send(404)

    srv = http.server.ThreadingHTTPServer(lsock.getsockname(), Handler, bind_and_activate=False)
    srv.socket.close()
    srv.socket, srv.server_address = lsock, lsock.getsockname()    # the socket bound before the fork
    srv.serve_forever()


def spot_interruption_notice(base):
    """The recipe's check: a session token, then the instance-action document (None: no notice)."""
    req = urllib.request.Request(base + "/latest/api/token", method="PUT",
                                 headers={"X-aws-ec2-metadata-token-ttl-seconds": "21600"})
    with urllib.request.urlopen(req, timeout=2) as r:
        token = r.read().decode()
    req = urllib.request.Request(base + "/latest/meta-data/spot/instance-action",
                                 headers={"X-aws-ec2-metadata-token": token})
    try:
        with urllib.request.urlopen(req, timeout=2) as r:
            return json.loads(r.read())
    except urllib.error.HTTPError as e:
        if e.code == 404:
            return None
        raise


def main():
    args = cc.parser(__doc__, warmup=5).parse_args()
    # the metadata service before CUDA starts (fork)
    lsock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    lsock.bind(("127.0.0.1", 0))
    lsock.listen(64)
    base = "http://127.0.0.1:%d" % lsock.getsockname()[1]
    proc = mp.get_context("fork").Process(target=metadata_service, args=(lsock, DELAY_S), daemon=True)
    proc.start()
    lsock.close()

    import torch
    import torch.nn.functional as F
    from torchvision.models import VisionTransformer, vit_b_16

    dev = cc.torch_device(args)
    gpu = dev.type == "cuda"
    if args.smoke:
        model = VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=2, hidden_dim=32,
                                  mlp_dim=64, num_classes=10)
        batch, size, classes, pool = 4, 32, 10, 16
    else:
        model = vit_b_16(weights=None)
        batch, size, classes, pool = 64, 224, 1000, 1024
    torch.manual_seed(0)
    model = model.to(dev).train()
    params = sum(p.numel() for p in model.parameters())
    g = torch.Generator(device=dev).manual_seed(0)
    # a pool of synthetic ImageNet-like images held on the GPU (smooth colour fields plus texture)
    images = (torch.nn.functional.interpolate(torch.rand(pool, 3, size // 16, size // 16, device=dev, generator=g),
                                              size=size, mode="bilinear") * 200
              + torch.rand(pool, 3, size, size, device=dev, generator=g) * 55).to(torch.uint8)
    labels = torch.randint(0, classes, (pool,), device=dev, generator=g)
    mean = torch.tensor([0.485, 0.456, 0.406], device=dev).view(1, 3, 1, 1) * 255
    std = torch.tensor([0.229, 0.224, 0.225], device=dev).view(1, 3, 1, 1) * 255
    opt = torch.optim.AdamW(model.parameters(), lr=5e-4 * batch / 512, weight_decay=0.05, fused=gpu)
    amp = torch.autocast(dev.type, dtype=torch.bfloat16, enabled=gpu)
    st = {"acc": torch.zeros((), device=dev), "loss": None, "reads": 0, "checks": 0, "notice": None}

    # the service must be up before training (the recipe checks once at start)
    deadline = time.time() + 20
    while True:
        try:
            spot_interruption_notice(base)
            break
        except (urllib.error.URLError, ConnectionError):
            if time.time() > deadline:
                raise
            time.sleep(0.05)

    def train_step(i):
        idx = torch.randint(0, pool, (batch,), device=dev, generator=g)
        x = images[idx].float()
        flip = torch.rand(batch, 1, 1, 1, device=dev, generator=g) < 0.5
        x = torch.where(flip, x.flip(3), x)
        x = (x - mean) / std
        with amp:
            logits = model(x)
        loss = F.cross_entropy(logits.float(), labels[idx], label_smoothing=0.1)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0, foreach=True)
        opt.step()
        st["acc"] += loss.detach()
        if i % 50 == 49:
            st["loss"] = st["acc"].item() / 50
            st["acc"].zero_()
            st["reads"] += 1

    def save_and_exit(notice):
        st["notice"] = notice
        raise SystemExit("spot interruption notice: %s" % (notice,))

    if args.fix:
        # the advice: the metadata poll in a background thread, every 5 s, behind an Event
        preempted, stop = threading.Event(), threading.Event()

        def watch():
            while not stop.wait(5.0):
                st["checks"] += 1
                n = spot_interruption_notice(base)
                if n is not None:
                    st["notice"] = n
                    preempted.set()

        threading.Thread(target=watch, name="spot-watch", daemon=True).start()

        def step(i):
            train_step(i)
            if preempted.is_set():
                save_and_exit(st["notice"])
    else:
        def step(i):
            train_step(i)
            st["checks"] += 1
            notice = spot_interruption_notice(base)  # gpuwhy: plants C16 (two blocking HTTP round trips to the metadata service, ~11-13 ms asleep in recv(), after every step while the GPU idles)
            if notice is not None:
                save_and_exit(notice)

    try:
        cc.run("c16_tv_spot_imds_interruption_poll", args, step, batch,
               extra=lambda: {"metadata_checks": st["checks"], "poll_thread": bool(args.fix),
                              "metadata_delay_ms": DELAY_S * 1e3, "params_m": round(params / 1e6, 1),
                              "loss": st["loss"], "loss_reads": st["reads"]})
    finally:
        if args.fix:
            stop.set()
        proc.kill()
        proc.join(timeout=3)


if __name__ == "__main__":
    main()
