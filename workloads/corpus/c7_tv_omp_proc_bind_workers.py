"""C7 CPU oversubscription (the loader's processes and threads all bound to one core by an
inherited OpenMP binding): ImageNet-style training of a torchvision ResNet-50 (random
weights, 1,000 classes) at the recipe's low training resolution (176 px, FixRes-style),
bf16 autocast, channels_last, SGD with Nesterov momentum (foreach), label smoothing 0.1, a
cosine LambdaLR per step, batch 128. A map-style Dataset holds 1,024 decoded 232 x 232 RGB
images as PIL images in memory (forked into the workers, shared copy-on-write) and applies
torchvision's classic transforms, RandomResizedCrop(176) with antialias, RandomHorizontalFlip
and PILToTensor (uint8), in 8 persistent DataLoader workers with pin_memory and
prefetch_factor 4; the batch is converted and normalized on the GPU; the loss is read every 50
steps.

The job runs on a node of an HPC partition whose job environment, reproduced by the script's
first lines as its sbatch script exports it, pins OpenMP threads for the site's CPU codes:
OMP_NUM_THREADS=<cores>, OMP_PROC_BIND=close, OMP_PLACES=cores. libgomp reads the binding when
torch loads and binds the process's initial thread, the training thread, to the first place
(core 0); every thread started after that (the pin-memory thread, CUDA's helper threads) and
every process forked from it (the 8 DataLoader workers) inherits that one-core affinity. So
the workers' augmentation, the pin-memory thread and the training thread's own launch work
all take turns on core 0 while 15 cores idle: ten runnable threads on one core, a long run
queue and constant involuntary context switches, and the GPU waits for batches the workers
could make eight times faster.

--fix: gpuwhy's C7 advice (the threads limited to the cores they may use): the partition's two
binding variables (OMP_PROC_BIND, OMP_PLACES) are not exported, so the training thread, the
pin-memory thread and the workers keep the job's 16 cores (OMP_NUM_THREADS, workers, model,
augmentation, data and optimizer unchanged).

Written blind for the golf batch.
"""
import os
import sys

CORES = len(os.sched_getaffinity(0))
# the partition's job environment (the sbatch script's exports), before torch loads libgomp
os.environ["OMP_NUM_THREADS"] = str(CORES)
if "--fix" not in sys.argv:
    os.environ.update(OMP_PROC_BIND="close", OMP_PLACES="cores")  # gpuwhy: plants C7 (libgomp binds the training thread to core 0; its threads and forked loader workers inherit that one core)

import math  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
import torchvision  # noqa: E402
import torchvision.transforms as T  # noqa: E402
from PIL import Image  # noqa: E402
from torch.utils.data import DataLoader, Dataset, Sampler  # noqa: E402

import cc  # noqa: E402

MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)


class InMemoryImages(Dataset):
    """Decoded training images held as PIL images; the classic torchvision transforms."""

    def __init__(self, n, size, crop, classes):
        rng = np.random.default_rng(0)
        self.images = []
        for _ in range(n):  # smooth noise, like photos (upsampled coarse colour fields)
            small = rng.integers(0, 256, (size // 8, size // 8, 3), dtype=np.uint8)
            img = Image.fromarray(small).resize((size, size), Image.BILINEAR)
            self.images.append(img)
        self.labels = rng.integers(0, classes, n).tolist()
        self.tf = T.Compose([T.RandomResizedCrop(crop, antialias=True), T.RandomHorizontalFlip(), T.PILToTensor()])

    def __len__(self):
        return len(self.images)

    def __getitem__(self, i):
        return self.tf(self.images[i]), self.labels[i]


class EpochShuffle(Sampler):
    """A new random order every epoch, for ever (the timer stops the loop)."""

    def __init__(self, n):
        self.n = n
        self.epochs = 0

    def __iter__(self):
        g = torch.Generator().manual_seed(1)
        while True:
            yield from torch.randperm(self.n, generator=g).tolist()
            self.epochs += 1


def main():
    args = cc.parser(__doc__).parse_args()
    dev = cc.torch_device(args)
    n, size, crop, batch, classes, workers = (64, 64, 48, 8, 10, 2) if args.smoke else (1024, 232, 176, 128, 1000, 8)
    data = InMemoryImages(n, size, crop, classes)
    sampler = EpochShuffle(n)
    loader = DataLoader(data, batch_size=batch, sampler=sampler, num_workers=workers, persistent_workers=True,
                        prefetch_factor=4, pin_memory=dev.type == "cuda", drop_last=True)

    torch.manual_seed(0)
    model = torchvision.models.resnet50(num_classes=classes).to(dev, memory_format=torch.channels_last)
    decay = [p for p in model.parameters() if p.ndim > 1]
    no_decay = [p for p in model.parameters() if p.ndim <= 1]
    opt = torch.optim.SGD([{"params": decay, "weight_decay": 5e-5}, {"params": no_decay, "weight_decay": 0.0}],
                          lr=0.5, momentum=0.9, nesterov=True)
    total = 100_000
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 0.5 * (1 + math.cos(math.pi * min(s, total) / total)))
    mean = torch.tensor(MEAN, device=dev).view(1, 3, 1, 1) * 255
    std = torch.tensor(STD, device=dev).view(1, 3, 1, 1) * 255
    acc = torch.zeros((), device=dev)
    log = {"loss": None, "reads": 0}
    state = {"it": iter(loader)}

    def step(i):
        x, y = next(state["it"])
        x = x.to(dev, non_blocking=True)
        y = y.to(dev, non_blocking=True)
        x = ((x.float() - mean) / std).contiguous(memory_format=torch.channels_last)
        with torch.autocast(dev.type, dtype=torch.bfloat16):
            loss = F.cross_entropy(model(x), y, label_smoothing=0.1)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        acc.add_(loss.detach())
        if i % 50 == 49:
            log["loss"] = acc.item() / 50
            log["reads"] += 1
            acc.zero_()

    def extra():
        pids = [w.pid for w in getattr(state["it"], "_workers", [])]
        return {"omp_proc_bind": os.environ.get("OMP_PROC_BIND", ""),
                "training_thread_cores": len(os.sched_getaffinity(0)),
                "worker_cores": [len(os.sched_getaffinity(p)) for p in pids if p],
                "cores_at_start": CORES, "epochs_done": sampler.epochs,
                "loss_reads": log["reads"]}

    cc.run("c7_tv_omp_proc_bind_workers", args, step, batch, extra=extra)


if __name__ == "__main__":
    main()
