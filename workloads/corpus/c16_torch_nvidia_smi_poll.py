"""C16 the training thread waits on a monitoring subprocess: a torchvision ResNet-50 (224 px,
batch 32, 1000 classes, bf16 autocast, channels_last, SGD with momentum, label smoothing;
uint8 images already on the GPU, flipped and normalized there) whose loop writes a metrics
line every 5 steps with the loss and the GPU's state as nvidia-smi reports it: the training
thread runs `nvidia-smi --query-gpu=utilization.gpu,memory.used,memory.total,temperature.gpu,
power.draw,clocks.sm --format=csv,noheader,nounits` with subprocess.run and waits for it
(where `shutil.which("nvidia-smi")` finds none, a `python3 -c` one-liner that prints the
host's memory and load from /proc does the same job). The loss is read first (`loss.item()`,
so the queue is empty), then the thread sits in the child's wait: tens of milliseconds every
five steps (about 70 ms of GPU work), with nothing queued on the GPU.

--fix: the same monitor in a background thread: every 5 steps the training thread only asks
for a sample (a threading.Event) and writes the line with the newest stats the monitor
thread has; the monitor runs the same command, as often, off the training thread. The loss
is still read every 5 steps.

--alt: the launch-bound (C4) remedy with the planted poll left in place: the model compiled
with torch.compile(mode="reduce-overhead", dynamic=False) (Inductor + CUDA graphs over
forward and backward; one input shape, channels_last); the GPU-side flip and normalization,
the loss, the SGD step and the nvidia-smi wait every 5 steps stay as in the plain run. At
least 10 warm-up iterations unless --warmup is given (compilation, CUDA graph warm-up and
recording).

Written blind for the harbor batch.
"""
import os
import shutil
import subprocess
import sys
import threading

import torch
import torch.nn.functional as F
import torchvision

import cc

LOG_EVERY = 5
NVSMI = shutil.which("nvidia-smi")
QUERY = "utilization.gpu,memory.used,memory.total,temperature.gpu,power.draw,clocks.sm"
PROC_STATS = ("import os; m = dict(l.split(':', 1) for l in open('/proc/meminfo'));"
              "print(', '.join([m['MemTotal'].split()[0], m['MemAvailable'].split()[0]] +"
              " [str(round(x, 2)) for x in os.getloadavg()]))")


def monitor_cmd():
    if NVSMI:
        return [NVSMI, f"--query-gpu={QUERY}", "--format=csv,noheader,nounits"]
    return [shutil.which("python3") or sys.executable, "-c", PROC_STATS]


def query_stats(cmd):
    """One sample of the machine's state, as the monitoring command prints it."""
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=60)
    return out.stdout.strip().splitlines()[0]


def main():
    args = cc.parser(__doc__).parse_args()
    dev = cc.torch_device(args)
    batch, res, classes = (4, 64, 10) if args.smoke else (32, 224, 1000)
    cmd = monitor_cmd()
    model = torchvision.models.resnet50(num_classes=classes).to(dev, memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-5, foreach=True)
    fwd = model
    if args.alt:  # C4 remedy: CUDA graphs (BN's running stats are buffers: static addresses)
        fwd = torch.compile(model, mode=cc.alt_setup(args, "reduce-overhead", 10), dynamic=False)
    g = torch.Generator(device=dev).manual_seed(0)
    images = [torch.randint(0, 256, (batch, 3, res, res), dtype=torch.uint8, device=dev, generator=g) for _ in range(4)]
    labels = [torch.randint(0, classes, (batch,), device=dev, generator=g) for _ in range(4)]
    mean = torch.tensor([0.485, 0.456, 0.406], device=dev).view(1, 3, 1, 1) * 255
    std = torch.tensor([0.229, 0.224, 0.225], device=dev).view(1, 3, 1, 1) * 255
    os.makedirs(cc.CACHE, exist_ok=True)
    log = open(os.path.join(cc.CACHE, "c16_torch_nvidia_smi_poll.log"), "w", buffering=1)
    log.write(f"# step, loss, {QUERY if NVSMI else 'mem_total_kb, mem_avail_kb, load1, load5, load15'}\n")
    counts = {"samples": 0}

    latest = {"stats": ""}
    if args.fix:
        want = threading.Event()

        def monitor():
            while True:
                want.wait()
                want.clear()
                latest["stats"] = query_stats(cmd)
                counts["samples"] += 1

        threading.Thread(target=monitor, daemon=True, name="gpu-monitor").start()

    def step(i):
        k = i % len(images)
        x = images[k]
        flip = torch.rand(x.shape[0], 1, 1, 1, device=dev, generator=g) < 0.5
        x = torch.where(flip, x.flip(3), x).float().sub_(mean).div_(std).contiguous(memory_format=torch.channels_last)
        if args.alt:
            # grads set to None before the graphs replay: the previous step's grads (backward
            # graph outputs that autograd took over) are not alive when their memory is reused
            opt.zero_grad(set_to_none=True)
            torch.compiler.cudagraph_mark_step_begin()
        with torch.autocast(dev.type, dtype=torch.bfloat16):
            loss = F.cross_entropy(fwd(x), labels[k], label_smoothing=0.1)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if i % LOG_EVERY == 0:
            loss_val = loss.item()
            if args.fix:
                want.set()
                stats = latest["stats"]
            else:
                stats = query_stats(cmd)  # gpuwhy: plants C16 (the training thread waits on nvidia-smi every 5 steps)
                counts["samples"] += 1
            log.write(f"{i}, {loss_val:.4f}, {stats}\n")

    cc.run("c16_torch_nvidia_smi_poll", args, step, batch,
           extra=lambda: {"monitor": "nvidia-smi" if NVSMI else "python3 -c", "log_every": LOG_EVERY,
                          "monitor_samples": counts["samples"], "monitor_thread": bool(args.fix)})
    log.close()


if __name__ == "__main__":
    main()
