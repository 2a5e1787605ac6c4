"""C7 CPU oversubscription (OpenMP threads left spinning by a "performance profile"): ImageNet-style
training of a timm ResNet-50-D (random weights, 1,000 classes) on JPEG files decoded by 12
DataLoader workers. The job is started through the team's launcher, which applies the site's
performance profile before anything is imported: OMP_WAIT_POLICY=ACTIVE, taken from a CPU
inference tuning guide ("keep OpenMP threads spinning between parallel regions to cut the
wake-up latency") for the CPU serving fleet and applied to every job. The script computes its
normalization statistics on the CPU at start (mean and std of 256 decoded images with torch
ops), an OpenMP parallel region that starts torch's intra-op pool of one thread per core; under
the ACTIVE policy libgomp's 15 pool threads then spin at 100% of a core each between regions
(GOMP_SPINCOUNT becomes about 3e10 iterations), for the rest of the job, doing nothing. The 12
loader workers (each decoding a 448 x 448 JPEG, RandomResizedCrop 224, flip, as uint8), the
pin-memory thread and the training thread share the 16 cores with those 15 spinning threads:
each gets about half a core, the loader falls behind the GPU and the training thread's launches
slow down.

Model and loop: bf16 autocast, channels_last, SGD Nesterov (foreach), label smoothing 0.1,
cosine LambdaLR, batch 128, normalization on the GPU with the computed statistics, loss read
every 50 steps; pin_memory, persistent workers, prefetch_factor 4, an endless shuffled sampler.

--fix: gpuwhy's C7 advice (threads that compete with the job's work for the cores): the
profile's OMP_WAIT_POLICY=ACTIVE not applied, so libgomp's default (a short spin, then sleep)
lets the idle pool threads sleep; the statistics, workers, model, data and optimizer unchanged.

Written blind for the india batch.
"""
import math
import os
import time

import cc

# the site's performance profile, applied by the launcher to every job (written for CPU inference)
PERF_PROFILE = {"OMP_WAIT_POLICY": "ACTIVE"}


def main():
    args = cc.parser(__doc__, warmup=5).parse_args()
    if not args.fix:
        os.environ.update(PERF_PROFILE)  # gpuwhy: plants C7 (libgomp's pool threads spin between regions on every core)
    import numpy as np
    import timm
    import torch
    import torch.nn.functional as F
    import torchvision.transforms as T
    from PIL import Image
    from torch.utils.data import DataLoader, Dataset, RandomSampler
    from torchvision.transforms.functional import pil_to_tensor

    dev = cc.torch_device(args)
    gpu = dev.type == "cuda"
    n_files, size, crop, batch, workers, arch = \
        (32, 96, 64, 8, 2, "resnet18d") if args.smoke else (512, 448, 224, 128, 12, "resnet50d")
    _, files = cc.jpeg_dir(n=n_files, size=size, tag="jpeg")
    labels = np.random.default_rng(0).integers(0, 1000, len(files))

    class JpegFolder(Dataset):
        def __init__(self):
            self.tf = T.Compose([T.RandomResizedCrop(crop, antialias=True), T.RandomHorizontalFlip(), T.PILToTensor()])

        def __len__(self):
            return 1_281_167      # an ImageNet-sized epoch over the files: no epoch ends in a run

        def __getitem__(self, i):
            j = i % len(files)
            with Image.open(files[j]) as im:
                return self.tf(im.convert("RGB")), int(labels[j])

    # normalization statistics of this data set, computed on the CPU at start (an OpenMP region)
    fit = T.Resize((crop, crop), antialias=True)
    sample = torch.stack([pil_to_tensor(fit(Image.open(f).convert("RGB"))) for f in files[:256]])
    x = sample.float().div_(255)
    mean, std = x.mean((0, 2, 3)), x.std((0, 2, 3))

    loader = DataLoader(JpegFolder(), batch_size=batch, sampler=RandomSampler(range(1_281_167), generator=torch.Generator().manual_seed(0)),
                        num_workers=workers, pin_memory=gpu, persistent_workers=True, prefetch_factor=4, drop_last=True)
    it = iter(loader)
    torch.manual_seed(0)
    model = timm.create_model(arch, pretrained=False, num_classes=1000).to(dev).to(memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=0.2, momentum=0.9, nesterov=True, weight_decay=5e-5, foreach=True)
    total = 100_000
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 500) * 0.5 * (1 + math.cos(math.pi * min(s, total) / total)))
    m = (mean * 255).to(dev).view(1, 3, 1, 1)
    s = (std * 255).to(dev).view(1, 3, 1, 1)
    amp = torch.autocast(dev.type, dtype=torch.bfloat16)
    st = {"loss": None, "reads": 0, "cpu0": None}

    def step(i):
        if i == args.warmup:
            st["cpu0"] = (os.times(), time.perf_counter())
        xb, yb = next(it)
        xb = xb.to(dev, non_blocking=True)
        yb = yb.to(dev, non_blocking=True)
        xb = ((xb.float() - m) / s).contiguous(memory_format=torch.channels_last)
        with amp:
            loss = F.cross_entropy(model(xb), yb, label_smoothing=0.1)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        if i % 50 == 49:
            st["loss"] = loss.item()
            st["reads"] += 1

    def extra():
        t1, w1 = os.times(), time.perf_counter()
        t0, w0 = st["cpu0"] if st["cpu0"] else (t1, w1)
        cores = (t1.user + t1.system - t0.user - t0.system) / max(w1 - w0, 1e-9)
        return {"omp_wait_policy": os.environ.get("OMP_WAIT_POLICY", "(default)"), "intraop_threads": torch.get_num_threads(),
                "loader_workers": workers, "training_process_cpu_cores": round(cores, 2),
                "jpeg_px": size, "loss": st["loss"], "loss_reads": st["reads"]}

    cc.run("c7_timm_omp_wait_policy_active", args, step, batch, extra=extra)


if __name__ == "__main__":
    main()
