"""C15 communication: two-GPU DDP where rank 1 does 40% more compute per step, so
rank 0 waits inside every all-reduce (a straggler). Needs 2 GPUs.

--fix: both ranks do the same work.
Recorded on the two-GPU machine by tests/gpu/c15_and_overhead.sh (tests/gpu/RESULTS.md).
"""
import json
import os
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

import common


def worker(rank, args, port):
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ["MASTER_PORT"] = str(port)
    # never NVLink multicast: on a shared GPU host it can take the GPUs out of service
    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
    dist.init_process_group("nccl", rank=rank, world_size=2)
    torch.cuda.set_device(rank)
    model = torch.nn.Sequential(*[m for _ in range(4) for m in (torch.nn.Linear(4096, 4096), torch.nn.ReLU())]).cuda()
    ddp = torch.nn.parallel.DistributedDataParallel(model, device_ids=[rank])
    opt = torch.optim.AdamW(ddp.parameters(), lr=1e-4, fused=True)
    batch = 4096 if (args.fix or rank == 0) else int(4096 * 1.4)
    x = torch.randn(batch, 4096, device="cuda")

    def step():
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = ddp(x).float().pow(2).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    for _ in range(args.warmup):
        step()
    # both ranks must run the same number of steps: rank 0 sizes the run from
    # a short calibration and broadcasts it
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(5):
        step()
    torch.cuda.synchronize()
    n = torch.tensor([max(10, int(args.seconds / ((time.perf_counter() - t0) / 5)))], device="cuda")
    dist.broadcast(n, 0)
    steps = int(n.item())
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    torch.cuda.synchronize()
    dt = time.perf_counter() - t0
    if rank == 0:
        print(json.dumps({"scenario": "c15_ddp_straggler", "fix": bool(args.fix), "steps": steps,
                          "seconds": round(dt, 4), "step_ms": round(dt / steps * 1e3, 4),
                          "samples_per_s": round(steps * 2 * 4096 / dt, 2)}), flush=True)
    dist.destroy_process_group()


def main():
    args = common.parser(__doc__).parse_args()
    if torch.cuda.device_count() < 2:
        raise SystemExit("c15_ddp_straggler needs two GPUs")
    mp.spawn(worker, args=(args, 29500 + os.getpid() % 1000), nprocs=2, join=True)


if __name__ == "__main__":
    main()
