"""Several ranks of one data-parallel job, for gpuwhy's job report: DDP under
torchrun, where one rank does extra CPU work every step (a straggler: X1)
and rank 0 alone writes a checkpoint every N steps while the others wait in
the next all-reduce (work on one rank only: X3).

--plant picks what is planted: slow (the straggler only), ckpt (rank 0's
checkpoint only) or both (the default).
--fix: no extra CPU work, and the checkpoint left out of the loop.
--backend auto (default): NCCL when every rank can have a GPU of its own,
else gloo with CUDA tensors, every rank on GPU 0 (gloo's collectives run on
the CPU, staged through host memory: no NCCL kernels, and the job report
finds them by their copies).
Run by tests/gpu/ranks.sh (torchrun --nproc-per-node N).
"""
import argparse
import json
import os
import tempfile
import time

import torch
import torch.distributed as dist


def parse():
    p = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    p.add_argument("--fix", action="store_true", help="remove the planted causes")
    p.add_argument("--seconds", type=float, default=float(os.environ.get("GW_SECONDS", 6)))
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--backend", default="auto", choices=["auto", "nccl", "gloo"])
    p.add_argument("--plant", default="both", choices=["slow", "ckpt", "both"], help="what is planted")
    p.add_argument("--slow-rank", type=int, default=1, help="the rank that does extra CPU work")
    p.add_argument("--slow-ms", type=float, default=4.0, help="its extra CPU work per step")
    p.add_argument("--ckpt-every", type=int, default=10, help="rank 0 checkpoints every N steps")
    return p.parse_args()


def busy_cpu(ms):
    # Python work on the training thread, as a slow per-rank data transform would be
    end = time.perf_counter() + ms / 1e3
    x = 0
    while time.perf_counter() < end:
        x += sum(range(200))
    return x


def main():
    args = parse()
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    local = int(os.environ.get("LOCAL_RANK", rank))
    backend = args.backend
    if backend == "auto":
        backend = "nccl" if torch.cuda.device_count() >= int(os.environ.get("LOCAL_WORLD_SIZE", world)) else "gloo"
    # never NVLink multicast: on a shared GPU host it can take the GPUs out of service
    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
    dev = local if backend == "nccl" else 0
    torch.cuda.set_device(dev)
    dist.init_process_group(backend)
    torch.manual_seed(0)
    model = torch.nn.Sequential(*[m for _ in range(4) for m in (torch.nn.Linear(2048, 2048), torch.nn.ReLU())]).cuda()
    ddp = torch.nn.parallel.DistributedDataParallel(model, device_ids=[dev])
    opt = torch.optim.AdamW(ddp.parameters(), lr=1e-4)
    x = torch.randn(1024, 2048, device="cuda")
    ckpt = os.path.join(tempfile.gettempdir(), "gw_ranks_ckpt_%d.pt" % os.getpid())

    def step(i):
        if not args.fix and args.plant != "ckpt" and rank == args.slow_rank % world:
            busy_cpu(args.slow_ms)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = ddp(x).float().pow(2).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if not args.fix and args.plant != "slow" and rank == 0 and i % args.ckpt_every == args.ckpt_every - 1:
            torch.save(model.state_dict(), ckpt)

    for i in range(args.warmup):
        step(i)
    torch.cuda.synchronize()
    # every rank runs the same number of steps: rank 0 sizes the run and broadcasts it
    t0 = time.perf_counter()
    for i in range(5):
        step(i)
    torch.cuda.synchronize()
    n = torch.tensor([max(20, int(args.seconds / ((time.perf_counter() - t0) / 5)))], device="cuda")
    dist.broadcast(n, 0)
    steps = int(n.item())
    dist.barrier()
    t0 = time.perf_counter()
    for i in range(steps):
        step(i)
    torch.cuda.synchronize()
    dt = time.perf_counter() - t0
    if rank == 0:
        print(json.dumps({"scenario": "ddp_ranks", "plant": args.plant, "fix": bool(args.fix), "backend": backend, "world": world,
                          "steps": steps, "seconds": round(dt, 4), "step_ms": round(dt / steps * 1e3, 4)}),
              flush=True)
    if os.path.exists(ckpt):
        os.unlink(ckpt)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
