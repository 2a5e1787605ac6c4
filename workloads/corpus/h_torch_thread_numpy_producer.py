"""Healthy control (a threaded numpy producer that keeps ahead of the GPU): a ViT-S/16
(torchvision's VisionTransformer: 12 layers, d=384, 6 heads, MLP 1536, 1000 classes) trained
at 224 px, batch 384, bf16 autocast, fused AdamW, label smoothing; the loss accumulated on
the GPU and read every 100 steps. The images are a decoded data set held in RAM (2048 uint8
images of 3 x 224 x 224, 308 MB). A threading.Thread producer makes each batch with
whole-batch numpy calls that release the GIL: random indices, then np.take(images, idx,
axis=0, out=slot, mode="clip") straight into one of six pinned host buffers (torch uint8
tensors in pinned memory, viewed with .numpy()), and puts the slot's number into a
queue.Queue(maxsize=3). The training thread gets a slot, copies it to the GPU with
non_blocking=True on a side stream one batch ahead (the prefetcher pattern of NVIDIA's
examples: the step waits on the copy stream, the buffer goes back to the producer with an
event), flips half the batch and normalizes it on the GPU. The producer needs a few ms a
batch, far less than the ~40 ms step, so the queue stays full and the GPU never waits.

--fix: nothing (control).
--alt: the fix for the memory-bound finding (C11) gpuwhy ranks first: the model under
torch.compile (default mode); producer, loss, optimizer and loop unchanged.
"""
import queue
import threading

import numpy as np
import torch
import torch.nn.functional as F
import torchvision

import cc

SLOTS = 6


def main():
    args = cc.parser(__doc__).parse_args()
    dev = cc.torch_device(args)
    n_img, res, batch, depth = (32, 32, 8, 2) if args.smoke else (2048, 224, 384, 12)
    gpu = dev.type == "cuda"
    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, (n_img, 3, res, res), dtype=np.uint8)
    labels = rng.integers(0, 1000, n_img).astype(np.int64)
    model = torchvision.models.VisionTransformer(image_size=res, patch_size=16 if not args.smoke else 8,
                                                 num_layers=depth, num_heads=6, hidden_dim=384, mlp_dim=1536,
                                                 num_classes=1000).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.05, fused=gpu)
    mean = torch.tensor([0.485, 0.456, 0.406], device=dev).view(1, 3, 1, 1) * 255
    std = torch.tensor([0.229, 0.224, 0.225], device=dev).view(1, 3, 1, 1) * 255

    slots = [torch.empty((batch, 3, res, res), dtype=torch.uint8, pin_memory=gpu) for _ in range(SLOTS)]
    slot_y = [torch.empty(batch, dtype=torch.int64, pin_memory=gpu) for _ in range(SLOTS)]
    ready = queue.Queue(maxsize=3)
    free = queue.Queue()
    for k in range(SLOTS):
        free.put((k, None))
    stop = threading.Event()
    made = {"batches": 0}

    def producer():
        r = np.random.default_rng(1)
        while not stop.is_set():
            k, done = free.get()
            if k is None:
                return
            if done is not None:
                done.synchronize()  # the copy out of this buffer has finished (long ago)
            idx = r.integers(0, n_img, batch)
            np.take(images, idx, axis=0, out=slots[k].numpy(), mode="clip")
            np.take(labels, idx, out=slot_y[k].numpy(), mode="clip")
            made["batches"] += 1
            ready.put(k)

    threading.Thread(target=producer, daemon=True).start()
    copy_stream = torch.cuda.Stream() if gpu else None

    def fetch():
        """The next batch on the GPU (copied on the side stream when there is one)."""
        k = ready.get()
        if not gpu:
            out = slots[k].clone(), slot_y[k].clone()
            free.put((k, None))
            return out
        with torch.cuda.stream(copy_stream):
            x = slots[k].to(dev, non_blocking=True)
            y = slot_y[k].to(dev, non_blocking=True)
            done = torch.cuda.Event()
            done.record(copy_stream)
        free.put((k, done))
        return x, y

    nxt = [fetch()]
    acc = torch.zeros((), device=dev)
    log = {"loss": None, "reads": 0}

    fwd = torch.compile(model, mode=cc.alt_setup(args, "default", 5)) if args.alt else model

    def step(i):
        if gpu:
            torch.cuda.current_stream().wait_stream(copy_stream)
        x, y = nxt[0]
        if gpu:
            x.record_stream(torch.cuda.current_stream())
            y.record_stream(torch.cuda.current_stream())
        nxt[0] = fetch()  # the next batch's copy overlaps this step
        flip = torch.rand(x.shape[0], device=dev) < 0.5
        x = torch.where(flip.view(-1, 1, 1, 1), x.flip(3), x)
        x = (x.float() - mean) / std
        with torch.autocast(dev.type, dtype=torch.bfloat16):
            loss = F.cross_entropy(fwd(x), y, label_smoothing=0.1)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        acc.add_(loss.detach())
        if i % 100 == 99:
            log["loss"] = acc.item() / 100
            log["reads"] += 1
            acc.zero_()

    cc.run("h_torch_thread_numpy_producer", args, step, batch,
           extra=lambda: {"producer": "thread", "batches_made": made["batches"], "loss_reads": log["reads"]})
    stop.set()
    free.put((None, None))


if __name__ == "__main__":
    main()
