"""C7 CPU thread oversubscription (intra-op threads sized for another machine): fine-grained
image classification (iNaturalist-style, 1,000 classes) with torchvision's ResNet-50 (random
weights), bf16 autocast, channels_last, SGD with Nesterov momentum (foreach), label smoothing
0.1, batch 64. The script starts from its "cluster profile", written for the lab's 64-core
training nodes: OMP_NUM_THREADS=64 and MKL_NUM_THREADS=64 exported before torch is imported, and
torch.set_num_threads(64) (the profile's intra_op_threads) at the top of main, so torch's
intra-op pool on this 16-core machine runs every parallel region with 64 OpenMP threads.

The images (512 of 288 x 288, uint8, in memory) are augmented one at a time on the CPU in the
training process with torchvision's v2 functional ops on tensors, as the script's author keeps
the GPU for the model: a random-scale resized_crop to 224 with antialiasing, brightness and
contrast, a random flip, to_dtype and normalize, about 8 ops an image and 500 a batch, each a
parallel region over 0.15-0.25 M values; then the batch is stacked, made channels_last, pinned
and copied with non_blocking. With 64 threads on 16 cores, four to a core, each region waits at
its barrier for threads that are not running, and the training thread spends most of the step
in the augmentation while the GPU, done with the previous step, waits.

--fix: gpuwhy's C7 advice (limit the intra-op threads to the cores available): the profile's
threads (OMP_NUM_THREADS, MKL_NUM_THREADS, torch.set_num_threads) set to the cores the job may
use (len(os.sched_getaffinity(0))); model, augmentation, data and optimizer unchanged. (The CPU
smoke test runs plain with 4 threads a core, the profile's ratio on 16 cores.)

Written blind for the foxtrot batch.
"""
import os
import sys

# the lab's cluster profile, written for its 64-core training nodes
CLUSTER_PROFILE = {"OMP_NUM_THREADS": "64", "MKL_NUM_THREADS": "64", "intra_op_threads": 64}
if "--fix" in sys.argv:
    cores = len(os.sched_getaffinity(0))
    CLUSTER_PROFILE.update(OMP_NUM_THREADS=str(cores), MKL_NUM_THREADS=str(cores), intra_op_threads=cores)
os.environ.update({k: v for k, v in CLUSTER_PROFILE.items() if k.isupper()})

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
import torchvision  # noqa: E402
import torchvision.transforms.v2.functional as TF  # noqa: E402

import cc  # noqa: E402

MEAN = [0.485, 0.456, 0.406]
STD = [0.229, 0.224, 0.225]


def cpu_augment(img, out_size, g):
    """One image's augmentation on the CPU with torchvision's v2 functional ops on tensors
    (each op a parallel region of torch's intra-op pool)."""
    _, h, w = img.shape
    s = int(h * float(torch.empty(1).uniform_(0.6, 1.0, generator=g)))
    y0, x0 = (int(v) for v in torch.randint(0, h - s + 1, (2,), generator=g))
    x = TF.resized_crop(img, y0, x0, s, s, [out_size, out_size], antialias=True)
    x = TF.adjust_brightness(x, float(torch.empty(1).uniform_(0.8, 1.2, generator=g)))
    x = TF.adjust_contrast(x, float(torch.empty(1).uniform_(0.8, 1.2, generator=g)))
    if float(torch.rand(1, generator=g)) < 0.5:
        x = TF.horizontal_flip(x)
    x = TF.to_dtype(x, torch.float32, scale=True)
    return TF.normalize(x, MEAN, STD)


def main():
    args = cc.parser(__doc__).parse_args()
    if args.smoke and not args.fix:  # the CPU smoke test keeps the ratio (64 on 16: 4 a core), not the count
        CLUSTER_PROFILE["intra_op_threads"] = 4 * len(os.sched_getaffinity(0))
    torch.set_num_threads(CLUSTER_PROFILE["intra_op_threads"])  # gpuwhy: plants C7 (64 OpenMP threads a parallel region, set for a 64-core node, on 16 cores)
    dev = cc.torch_device(args)
    n, size, crop, batch, classes = (16, 40, 32, 4, 10) if args.smoke else (512, 288, 224, 64, 1000)
    rng = np.random.default_rng(0)
    small = rng.integers(0, 256, (n, 3, size // 8, size // 8), dtype=np.uint8)
    images = F.interpolate(torch.from_numpy(small).float(), size=(size, size), mode="bilinear").to(torch.uint8)
    images = (images // 2 + torch.from_numpy(rng.integers(0, 128, (n, 3, size, size), dtype=np.uint8)))
    labels = torch.from_numpy(rng.integers(0, classes, n))
    g = torch.Generator().manual_seed(0)

    torch.manual_seed(0)
    model = torchvision.models.resnet50(num_classes=classes).to(dev, memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, nesterov=True, weight_decay=5e-5)
    pin = dev.type == "cuda"
    acc = torch.zeros((), device=dev)
    log = {"loss": None, "reads": 0}

    def step(i):
        idx = torch.randint(0, n, (batch,), generator=g)
        x = torch.stack([cpu_augment(images[k], crop, g) for k in idx.tolist()])
        x = x.contiguous(memory_format=torch.channels_last)
        if pin:
            x = x.pin_memory()
        x = x.to(dev, non_blocking=True)
        y = labels[idx].to(dev, non_blocking=True)
        with torch.autocast(dev.type, dtype=torch.bfloat16):
            loss = F.cross_entropy(model(x).float(), y, label_smoothing=0.1)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        acc.add_(loss.detach())
        if i % 50 == 49:
            log["loss"] = acc.item() / 50
            log["reads"] += 1
            acc.zero_()

    cc.run("c7_tv_omp_threads_cluster_profile", args, step, batch,
           extra=lambda: {"intra_op_threads": torch.get_num_threads(), "cores": len(os.sched_getaffinity(0)),
                          "omp_num_threads": os.environ.get("OMP_NUM_THREADS"), "loss_reads": log["reads"]})


if __name__ == "__main__":
    main()
