"""A job that runs torch.profiler for a while in the middle (a second CUPTI
user inside a recorded process). The job must run to its end unharmed and
gpuwhy's recording must hold all 2400 iterations (3 kernels each): CUPTI has
one subscriber, and gpuwhy, first, keeps it. Prints the profiler's own count
(0 when gpuwhy holds CUPTI)."""
import torch

x = torch.randn(4096, 4096, device="cuda")
for _ in range(200):
    x = torch.tanh(x @ x * 1e-3)
torch.cuda.synchronize()
with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU,
                                        torch.profiler.ProfilerActivity.CUDA]) as prof:
    for _ in range(200):
        x = torch.tanh(x @ x * 1e-3)
    torch.cuda.synchronize()
events = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
for _ in range(2000):
    x = torch.tanh(x @ x * 1e-3)
torch.cuda.synchronize()
print(f"profiler saw {len(events)} CUDA events; job finished", flush=True)
