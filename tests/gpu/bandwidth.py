"""Independent host<->device bandwidth, for comparison with `gpuwhy check`:
256 MiB PyTorch copies timed with CUDA events, best of 5. Prints one JSON line (GB/s)."""
import json

import torch

n = 256 << 20
dev = torch.empty(n, dtype=torch.uint8, device="cuda")
res = {}
for kind in ("pinned", "pageable"):
    host = torch.ones(n, dtype=torch.uint8)
    if kind == "pinned":
        host = host.pin_memory()
    for name, fn in (("htod", lambda: dev.copy_(host)), ("dtoh", lambda: host.copy_(dev))):
        best = 0.0
        for _ in range(6):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            fn()
            b.record()
            torch.cuda.synchronize()
            best = max(best, n / (a.elapsed_time(b) / 1e3) / 1e9)
        res[f"{name}_{kind}"] = round(best, 2)
print(json.dumps(res))
