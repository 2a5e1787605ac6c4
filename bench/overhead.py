"""Steady-state step time of two loops, for bench/run.sh:
  launch:    1-element add_ in a loop (launch-bound, ~7 us per op uninstrumented)
  bf16:      4x Linear(4096) + fused AdamW in bf16 autocast on 4096 rows: the
             realistic step of issue 2 (about 3.4 ms on an H200, GPU-bound)
  bf16-host: the same on 512 rows (about 1.7 ms, bound by the host's launches)
Also reports the main thread's CPU time per unit (cpu_...): a cost in the launch
path raises it, waiting (on the GPU or a lock) does not.
--profiler runs it under torch.profiler (CPU+CUDA); its start-up and export stay
outside the timed window; --stack adds with_stack=True (Python stacks of every
op). Prints one JSON line."""
import argparse
import json
import time

import torch


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--loop", choices=["launch", "bf16", "bf16-host"], required=True)
    p.add_argument("--profiler", action="store_true")
    p.add_argument("--stack", action="store_true", help="with --profiler: with_stack=True")
    p.add_argument("--seconds", type=float, default=2.5)
    a = p.parse_args()
    if a.loop == "launch":
        x = torch.zeros(1, device="cuda")
        per = 1000

        def step():
            for _ in range(per):
                x.add_(1)
    else:
        per = 1
        model = torch.nn.Sequential(*[torch.nn.Linear(4096, 4096) for _ in range(4)]).cuda()
        opt = torch.optim.AdamW(model.parameters(), fused=True)
        inp = torch.randn(4096 if a.loop == "bf16" else 512, 4096, device="cuda")

        def step():
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = model(inp).float().pow(2).mean()
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
    prof = None
    if a.profiler:
        prof = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU,
                                                  torch.profiler.ProfilerActivity.CUDA],
                                      with_stack=a.stack)
        prof.__enter__()
    for _ in range(3 if a.loop == "launch" else 20):
        step()
    torch.cuda.synchronize()
    n, t0, c0 = 0, time.perf_counter(), time.thread_time()
    while time.perf_counter() - t0 < a.seconds:
        step()
        n += 1
    torch.cuda.synchronize()
    dt = time.perf_counter() - t0
    cpu = time.thread_time() - c0  # the main thread's own CPU: launch-path cost vs waiting
    if prof is not None:
        prof.__exit__(None, None, None)
    unit = "us_per_op" if a.loop == "launch" else "ms_per_step"
    val = dt / (n * per) * (1e6 if a.loop == "launch" else 1e3)
    cpu_val = cpu / (n * per) * (1e6 if a.loop == "launch" else 1e3)
    print(json.dumps({"loop": a.loop, "profiler": a.profiler, unit: round(val, 4),
                      "cpu_" + unit: round(cpu_val, 4), "steps": n}), flush=True)


if __name__ == "__main__":
    main()
