"""healthy, with threads that sleep and wait beside the training thread: a torchvision ViT-B/16
(160 px, 100 classes, bf16 autocast, fused AdamW) fed by a DataLoader (6 workers, pin_memory,
prefetch 4) that keeps ahead of the GPU, in a job that also runs a heartbeat thread
(time.sleep(0.05) between writes of a heartbeat file), a metrics thread blocked in
queue.get() until the loop hands it the losses every 50 steps (still on the GPU; it reads
them), and a watchdog thread waiting on an Event. None of them feeds the GPU: only the
training thread does, and it never waits for them.

--fix changes nothing: this is a control.

--alt: the launch-bound (C4) fix gpuwhy ranks first on this control: the model under
torch.compile(mode="reduce-overhead", dynamic=False) (Inductor + CUDA graphs over forward and
backward), the rest eager, at least 10 warm-up iterations; measures the C4 gain.
"""
import os
import queue
import threading
import time

import numpy as np
import torch
import torch.nn.functional as F
import torchvision
from torch.utils.data import DataLoader, Dataset

import cc


class Images(Dataset):
    def __init__(self, n, res, classes):
        rng = np.random.default_rng(0)
        self.x = rng.integers(0, 256, (512, res, res, 3), dtype=np.uint8)
        self.y = rng.integers(0, classes, n)
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        img = self.x[i % len(self.x)]
        if i % 2:
            img = img[:, ::-1]
        return torch.from_numpy(np.ascontiguousarray(img.transpose(2, 0, 1))), int(self.y[i])


def main():
    args = cc.parser(__doc__).parse_args()
    dev = cc.torch_device(args)
    torch.manual_seed(0)
    if args.smoke:
        model = torchvision.models.VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=2,
                                                     hidden_dim=32, mlp_dim=64, num_classes=10)
        batch, res, classes, workers = 4, 32, 10, 2
    else:
        model = torchvision.models.vit_b_16(image_size=160, num_classes=100)
        batch, res, classes, workers = 128, 160, 100, 6
    model = model.to(dev)
    fwd = torch.compile(model, mode=cc.alt_setup(args, "reduce-overhead", 10), dynamic=False) if args.alt else model
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.05, fused=dev.type == "cuda")
    loader = DataLoader(Images(1_000_000, res, classes), batch_size=batch, num_workers=workers,
                        pin_memory=dev.type == "cuda", persistent_workers=True, prefetch_factor=4, drop_last=True)
    mean = torch.tensor([0.485, 0.456, 0.406], device=dev).view(1, 3, 1, 1) * 255
    std = torch.tensor([0.229, 0.224, 0.225], device=dev).view(1, 3, 1, 1) * 255
    stop = threading.Event()
    beat = os.path.join(cc.CACHE, "heartbeat")
    os.makedirs(cc.CACHE, exist_ok=True)

    def heartbeat():
        while not stop.is_set():
            with open(beat, "w") as f:
                f.write(f"{time.time()}\n")
            time.sleep(0.05)

    reports = queue.Queue()
    log = open(os.devnull, "w")

    def metrics():
        while True:
            item = reports.get()
            if item is None:
                return
            step, losses = item
            print(step, float(torch.stack(losses).mean()), file=log)

    def watchdog():
        stop.wait()

    threads = [threading.Thread(target=t, daemon=True) for t in (heartbeat, metrics, watchdog)]
    for t in threads:
        t.start()
    it = iter(loader)
    losses = []

    def step(i):
        x, y = next(it)
        x = (x.to(dev, non_blocking=True).float() - mean) / std
        with torch.autocast(dev.type, dtype=torch.bfloat16):
            loss = F.cross_entropy(fwd(x), y.to(dev, non_blocking=True))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        losses.append(loss.detach())
        if len(losses) == 50:
            reports.put((i, losses[:]))
            losses.clear()

    cc.run("h_torch_idle_threads", args, step, batch)
    stop.set()
    reports.put(None)


if __name__ == "__main__":
    main()
