"""C7 CPU thread oversubscription (torch's own intra-op threads in each augmentation process): a
torchvision ResNet-101 (bf16 autocast, channels_last, SGD with Nesterov momentum, label
smoothing, loss read every 50 steps) fine-tuned at 224 px, batch 8, on ImageNet-sized uint8
images (3 x 375 x 500, 96 of them held in memory) augmented the torchvision way
(transforms.v2 on tensors: RandomResizedCrop with antialias, horizontal flip, ToDtype with
scaling, Normalize). Instead of a DataLoader, whole batches are built by a
concurrent.futures.ProcessPoolExecutor of 6 processes (forked before CUDA starts) that
keeps 6 batches in flight; a batch comes back as a bf16 tensor in shared memory. A
DataLoader sets torch.set_num_threads(1) in its workers; these processes keep torch's
default, one OpenMP thread per core: every resize and normalize wakes a team of 16
threads in each of the 6 processes, about 100 threads that spin at their barriers on 16
cores; each process's barriers wait for threads the others displace, and the training
thread that launches the GPU's work gets a slice of a core among them.

--fix: gpuwhy's C7 advice (bound the thread pools): the executor's initializer calls
torch.set_num_threads(1) in each process; the processes, the transforms, the batches and
the model unchanged.

Written blind for the ridge batch; resized after its first GPU run passed the 100 s limit
(batch 8 instead of 128, ColorJitter left out, 6 batches in flight instead of 12: a plain
sample costs a wait for the slowest of 16 threads at every parallel region, not a share of
its work, so a smaller step), and its processes now die with the job: the initializer asks
the kernel to kill each one when the job ends (PR_SET_PDEATHSIG), a batch in the making is
dropped at its next sample once the job's loop is over, and the executor is shut down
without waiting for the batches in flight.
"""
import concurrent.futures as cf
import ctypes
import multiprocessing as mp
import os
import signal

import numpy as np
import torch
import torchvision
import torchvision.transforms.v2 as T

import cc

IMAGES = None  # (N, 3, 375, 500) uint8, made before the processes fork (shared copy-on-write)
PIPE = None
STOP = None  # a fork-context Event, set as the job ends
BATCH, RES = 8, 224


def die_with_parent(parent):
    """The kernel kills this process when the job that forked it ends, however it ends."""
    PR_SET_PDEATHSIG = 1
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:  # the job ended before the call
        os._exit(1)


def init_worker(threads, parent):
    global PIPE
    die_with_parent(parent)
    if threads:
        torch.set_num_threads(threads)
    PIPE = T.Compose([T.RandomResizedCrop(RES, antialias=True), T.RandomHorizontalFlip(),
                      T.ToDtype(torch.float32, scale=True),
                      T.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])])


def make_batch(k):
    """Batch k: BATCH augmented samples (bf16, NCHW) and their labels."""
    torch.manual_seed(k)
    idx = np.random.default_rng(k).integers(0, len(IMAGES), BATCH)
    out = torch.empty(BATCH, 3, RES, RES, dtype=torch.bfloat16)
    for j, i in enumerate(idx):
        if STOP.is_set():  # the job's loop is over: drop the batch
            return None
        out[j] = PIPE(torch.from_numpy(IMAGES[i]))  # gpuwhy: plants C7 (torch's default intra-op threads, one per core, in each of 6 processes)
    return out, torch.from_numpy((idx % 1000).astype(np.int64))


def main():
    global IMAGES, BATCH, RES, STOP
    args = cc.parser(__doc__).parse_args()
    procs, n_img, h, w = (2, 8, 75, 100) if args.smoke else (6, 96, 375, 500)
    if args.smoke:
        BATCH, RES = 4, 64
    IMAGES = np.random.default_rng(0).integers(0, 256, (n_img, 3, h, w), dtype=np.uint8)
    # started before the model and CUDA: the processes are forked from a process with no
    # CUDA context and no OpenMP team yet
    ctx = mp.get_context("fork")
    STOP = ctx.Event()
    pool = cf.ProcessPoolExecutor(procs, mp_context=ctx, initializer=init_worker,
                                  initargs=(1 if args.fix else 0, os.getpid()))
    pending = [pool.submit(make_batch, k) for k in range(procs)]
    dev = cc.torch_device(args)
    model = (torchvision.models.resnet18(num_classes=1000) if args.smoke else
             torchvision.models.resnet101(num_classes=1000)).to(dev, memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, nesterov=True, weight_decay=5e-5,
                          foreach=True)
    crit = torch.nn.CrossEntropyLoss(label_smoothing=0.1)
    losses = []
    log = {"loss": None, "next": procs}

    def step(i):
        x, y = pending.pop(0).result()
        pending.append(pool.submit(make_batch, log["next"]))
        log["next"] += 1
        x = x.to(dev, non_blocking=True).contiguous(memory_format=torch.channels_last)
        y = y.to(dev, non_blocking=True)
        with torch.autocast(dev.type, dtype=torch.bfloat16):
            loss = crit(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        losses.append(loss.detach())
        if len(losses) == 50:
            log["loss"] = torch.stack(losses).mean().item()
            losses.clear()

    try:
        cc.run("c7_torch_pool_intraop_threads", args, step, BATCH,
               extra={"processes": procs, "threads_per_process": 1 if args.fix else "default (one per core)"})
    finally:
        # the job's end does not wait for the batches in flight: unstarted ones are
        # cancelled, a process drops the one in hand at its next sample
        STOP.set()
        pool.shutdown(wait=False, cancel_futures=True)


if __name__ == "__main__":
    main()
