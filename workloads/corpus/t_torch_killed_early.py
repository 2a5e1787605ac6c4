"""too little to diagnose (killed before the loop): a training job with a run-time watchdog
(max_runtime from its config, meant as minutes but read as seconds: 3.0) builds a
torchvision ResNet-50 on the GPU, copies its 512 MB token-id table to the GPU from pageable
memory, then sorts 40M keys on the CPU for its sampler; the watchdog kills it (SIGKILL, as a
scheduler's time limit does) before the first training step. The right report says there is
too little to diagnose, not a bottleneck.

--fix: max_runtime read as minutes (180 s): the job reaches its loop (ResNet-50, bf16
autocast, 160 px, batch 128 on the GPU) and prints its JSON line; its speed is not compared
with the killed run's.
"""
import os
import signal
import threading

import numpy as np
import torch
import torch.nn.functional as F
import torchvision

import cc

MAX_RUNTIME = 3.0  # minutes, says the config's comment


def main():
    args = cc.parser(__doc__).parse_args()
    limit = MAX_RUNTIME * 60 if args.fix else (0.5 if args.smoke else MAX_RUNTIME)
    watchdog = threading.Timer(limit, os.kill, (os.getpid(), signal.SIGKILL))  # gpuwhy: plants too-little (killed in the set-up)
    watchdog.daemon = True
    watchdog.start()
    dev = cc.torch_device(args)
    batch, res, table, keys = (4, 32, 1 << 16, 1 << 22) if args.smoke else (128, 160, 128 << 20, 40_000_000)
    model = torchvision.models.resnet50(num_classes=1000).to(dev)
    ids = torch.from_numpy(np.random.default_rng(0).integers(0, 32000, table, dtype=np.int32)).to(dev)
    order = np.argsort(np.random.default_rng(1).random(keys, dtype=np.float32))  # the sampler's order
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, foreach=True)
    x = torch.randn(batch, 3, res, res, device=dev)
    y = (ids[:batch] % 1000).long()

    def step(i):
        with torch.autocast(dev.type, dtype=torch.bfloat16):
            loss = F.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    cc.run("t_torch_killed_early", args, step, batch, extra={"sampler_keys": int(order.size)})
    watchdog.cancel()


if __name__ == "__main__":
    main()
