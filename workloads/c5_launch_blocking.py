"""C5 CUDA_LAUNCH_BLOCKING=1 left on: every launch waits for the kernel to finish.

--fix: unset. (The variable must be set before CUDA starts, so the script re-execs.)
"""
import os
import sys

if "--fix" not in sys.argv and os.environ.get("CUDA_LAUNCH_BLOCKING") != "1":
    os.environ["CUDA_LAUNCH_BLOCKING"] = "1"
    os.execv(sys.executable, [sys.executable] + sys.argv)
if "--fix" in sys.argv:
    os.environ.pop("CUDA_LAUNCH_BLOCKING", None)

import torch  # noqa: E402

import common  # noqa: E402


def main():
    args = common.parser(__doc__).parse_args()
    batch = 256
    model = torch.nn.Sequential(*[m for _ in range(8) for m in (torch.nn.Linear(1024, 1024), torch.nn.GELU())]).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, foreach=True)
    x = torch.randn(batch, 1024, device="cuda")

    def step(i):
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(x).float().pow(2).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    common.run("c5_launch_blocking", args, step, batch)


if __name__ == "__main__":
    main()
