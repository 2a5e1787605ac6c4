"""C1 one producer process feeding the GPU through a multiprocessing.Queue: a torchvision
ResNet-50 (128 px, batch 256, 1000 classes, bf16 autocast, channels_last, SGD with momentum)
trained from batches that a producer process makes: a multiprocessing.Process (forked before
CUDA starts) holding 4096 uint8 images of 144x144 in memory draws a batch, takes a random
128 px crop and flip of each image, converts it to float32, normalizes it with the ImageNet
mean and std and transposes it to CHW, one sample at a time in numpy, and puts the
(256, 3, 128, 128) float32 array (50 MB) and its labels on a multiprocessing.Queue
(maxsize 4): pickled by the queue's feeder thread, written down a pipe, read and unpickled
by the training thread's queue.get(), which then copies it to the GPU with
torch.from_numpy(x).to("cuda") (the same as .cuda()). The single producer makes a batch
several times slower than the GPU trains on it: the training thread waits in queue.get()
most of each step.

--fix: three producer processes (the same function, each with its own seed) putting into the
same queue: the remedy a user reaches for, more workers for the input (nothing else changes:
the same pickling through the queue, the same copy).

--alt: still one producer process (the same augmentation, the same batch and model), but each
batch goes through shared memory instead of being pickled down the pipe: the queue and the
process come from torch.multiprocessing (context "fork", started before CUDA as in the plain
run) and the producer puts torch.from_numpy(out): torch's reduction moves the tensor's storage
into shared memory and pickles only a handle (a file descriptor passed over a socket), so the
training thread's queue.get() maps the batch instead of reading and unpickling 50 MB; the step
copies it to the GPU as before. alt_mode "shm".

Written blind for the harbor batch.
"""
import multiprocessing as mp

import numpy as np
import torch
import torch.multiprocessing
import torch.nn.functional as F
import torchvision

import cc

MEAN = np.array([0.485, 0.456, 0.406], np.float32)
STD = np.array([0.229, 0.224, 0.225], np.float32)


def producer(q, seed, images, labels, res, batch, shm=False):
    """Makes augmented float32 batches forever and puts them on the queue (with shm, as
    tensors: a torch.multiprocessing queue passes their storage through shared memory)."""
    rng = np.random.default_rng(seed)
    n, size = images.shape[0], images.shape[1]
    while True:
        idx = rng.integers(0, n, batch)
        out = np.empty((batch, 3, res, res), np.float32)
        for k, i in enumerate(idx):
            y0, x0 = rng.integers(0, size - res + 1, 2)
            img = images[i, y0:y0 + res, x0:x0 + res]
            if rng.random() < 0.5:
                img = img[:, ::-1]
            img = (img.astype(np.float32) / 255.0 - MEAN) / STD
            out[k] = img.transpose(2, 0, 1)
        q.put((torch.from_numpy(out) if shm else out, labels[idx]))


def main():
    args = cc.parser(__doc__).parse_args()
    n, size, res, batch, classes = (64, 40, 32, 8, 10) if args.smoke else (4096, 144, 128, 256, 1000)
    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, (n, size, size, 3), dtype=np.uint8)  # the decoded training images
    labels = rng.integers(0, classes, n)
    if args.alt:  # the batches through shared memory: only a handle goes down the pipe
        cc.alt_setup(args, "shm", 0)
        ctx = torch.multiprocessing.get_context("fork")
    else:
        ctx = mp.get_context("fork")
    q = ctx.Queue(maxsize=4)
    producers = [ctx.Process(target=producer, args=(q, 1000 + k, images, labels, res, batch, args.alt), daemon=True)
                 for k in range(3 if args.fix else 1)]  # gpuwhy: plants C1 (one producer process makes every batch)
    for p in producers:
        p.start()  # forked before CUDA starts
    dev = cc.torch_device(args)
    model = torchvision.models.resnet50(num_classes=classes).to(dev, memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-5, foreach=True)

    def step(i):
        xb, yb = q.get()
        x = (xb if args.alt else torch.from_numpy(xb)).to(dev).contiguous(memory_format=torch.channels_last)
        y = torch.from_numpy(yb).to(dev)
        with torch.autocast(dev.type, dtype=torch.bfloat16):
            loss = F.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    cc.run("c1_torch_mp_queue_pickle", args, step, batch,
           extra={"producers": len(producers), "batch_mb": round(batch * 3 * res * res * 4 / 2**20, 1)})
    for p in producers:
        p.terminate()


if __name__ == "__main__":
    main()
