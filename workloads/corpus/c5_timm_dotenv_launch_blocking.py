"""C5 CUDA_LAUNCH_BLOCKING=1 left on, through the project's .env file: a timm EfficientNet-B0
fine-tuning script (random weights, 102 classes as Oxford Flowers, 224 px, batch 64, bf16
autocast, channels_last, timm's AdamW from create_optimizer_v2 (weight decay
off for norms and biases), cosine schedule with warm-up, label smoothing, loss read every
50 steps) that starts, as many projects do, with python-dotenv's load_dotenv(): the .env
file beside the script holds the W&B and cache settings, and also a
CUDA_LAUNCH_BLOCKING=1 added weeks ago while chasing a device-side assert in the label
remapping and never taken out. Nothing in the script mentions it: the variable reaches
the process's environment before CUDA starts, so every kernel launch waits for its kernel
and Python and the GPU take turns. The images are a small fine-tuning set held on the GPU
as uint8 (2048 images of 256 x 256); each batch is a random 224 crop (one offset a batch),
a per-sample horizontal flip and the ImageNet normalization, on the GPU.

The .env is written at start under GW_CORPUS_CACHE (it stands for the one in the project's
checkout); python-dotenv is used where it is installed, else the same KEY=VALUE parsing
(comments, quotes, no override of variables already set) in a few lines; the JSON line's
dotenv says which.

--fix: the CUDA_LAUNCH_BLOCKING line deleted from the .env (gpuwhy's C5 advice: unset it);
the script, the model and the data unchanged.

Written blind for the summit batch.
"""
import os
import sys

import cc

DOTENV = [
    "# experiment settings (read by train.py through load_dotenv)",
    "WANDB_PROJECT=flowers102-effnet",
    "WANDB_MODE=offline",
    "HF_HUB_OFFLINE=1",
    "TORCH_HOME=${HOME}/.cache/torch",
    "TIMM_FUSED_ATTN=1",
]
BLOCKING = [
    "# debugging the device-side assert in the label remap (issue 41)",
    "CUDA_LAUNCH_BLOCKING=1",  # gpuwhy: plants C5 (reaches the environment through load_dotenv, before CUDA starts)
]


def write_dotenv(fix):
    d = os.path.join(cc.CACHE, "c5_timm_dotenv_launch_blocking")
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, ".env")
    with open(path, "w") as f:
        f.write("\n".join(DOTENV + ([] if fix else BLOCKING)) + "\n")
    return path


def load_dotenv_file(path):
    """python-dotenv's load_dotenv(path) where it is installed, else the same in a few lines
    (KEY=VALUE, comments, optional quotes, ${VAR} expansion, existing variables kept)."""
    try:
        from dotenv import load_dotenv
    except ImportError:
        with open(path) as f:
            for line in f:
                line = line.split(" #", 1)[0].strip()
                if not line or line.startswith("#") or "=" not in line:
                    continue
                key, value = (s.strip() for s in line.removeprefix("export ").split("=", 1))
                value = os.path.expandvars(value.strip("'\""))
                os.environ.setdefault(key, value)
        return "builtin"
    load_dotenv(path, override=False)
    return "python-dotenv"


# as train.py does, before torch is imported
_env_loader = load_dotenv_file(write_dotenv("--fix" in sys.argv))

import timm  # noqa: E402
import torch  # noqa: E402
from timm.optim import create_optimizer_v2  # noqa: E402
from timm.scheduler import CosineLRScheduler  # noqa: E402

MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)


def main():
    args = cc.parser(__doc__).parse_args()
    dev = cc.torch_device(args)
    if args.smoke:
        model = timm.create_model("efficientnet_b0", pretrained=False, num_classes=10)
        n_img, size, crop, batch, classes = 16, 72, 64, 4, 10
    else:
        model = timm.create_model("efficientnet_b0", pretrained=False, num_classes=102, drop_rate=0.2)
        n_img, size, crop, batch, classes = 2048, 256, 224, 64, 102
    model = model.to(dev, memory_format=torch.channels_last)
    opt = create_optimizer_v2(model, opt="adamw", lr=1e-3, weight_decay=0.05)
    sched = CosineLRScheduler(opt, t_initial=10_000, warmup_t=100, warmup_lr_init=1e-5, t_in_epochs=False)
    crit = torch.nn.CrossEntropyLoss(label_smoothing=0.1)
    g = torch.Generator(device=dev).manual_seed(0)
    images = torch.randint(0, 256, (n_img, 3, size, size), dtype=torch.uint8, device=dev, generator=g)
    labels = torch.randint(0, classes, (n_img,), device=dev, generator=g)
    mean = torch.tensor(MEAN, device=dev).view(1, 3, 1, 1) * 255
    std = torch.tensor(STD, device=dev).view(1, 3, 1, 1) * 255
    cpu_rng = torch.Generator().manual_seed(0)
    losses = []
    log = {"loss": None}

    def step(i):
        idx = torch.randint(0, n_img, (batch,), device=dev, generator=g)
        y0, x0 = torch.randint(0, size - crop + 1, (2,), generator=cpu_rng).tolist()  # host RNG: no GPU read
        x = images[idx, :, y0:y0 + crop, x0:x0 + crop]
        flip = torch.rand(batch, 1, 1, 1, device=dev, generator=g) < 0.5
        x = torch.where(flip, x.flip(3), x)
        x = ((x.float() - mean) / std).contiguous(memory_format=torch.channels_last)
        with torch.autocast(dev.type, dtype=torch.bfloat16):
            loss = crit(model(x), labels[idx])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step_update(i + 1)
        losses.append(loss.detach())
        if len(losses) == 50:
            log["loss"] = torch.stack(losses).mean().item()
            losses.clear()

    cc.run("c5_timm_dotenv_launch_blocking", args, step, batch,
           extra=lambda: {"dotenv": _env_loader,
                          "cuda_launch_blocking": os.environ.get("CUDA_LAUNCH_BLOCKING", "unset")})


if __name__ == "__main__":
    main()
