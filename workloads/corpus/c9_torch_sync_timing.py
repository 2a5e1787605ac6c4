"""C9 sync stall (timing every step): a small transformer encoder (6 layers, d=512, batch
64 x 256 tokens, bf16 autocast, fused AdamW) whose loop times each step the way many
scripts do, torch.cuda.synchronize() and time.perf_counter() around it, and logs the
step time and loss.item() into a running average: two host waits a step, so the host can
never issue the next step's kernels while the GPU runs this one.

--fix: gpuwhy's C9 advice: no synchronize or .item() in the loop; the loss is kept on the
GPU and read, with the time, every 100 steps.
"""
import time

import torch

import cc


def main():
    args = cc.parser(__doc__).parse_args()
    dev = cc.torch_device(args)
    batch, seq, d, layers = (4, 16, 64, 2) if args.smoke else (64, 256, 512, 6)
    layer = torch.nn.TransformerEncoderLayer(d, 8, 4 * d, dropout=0.1, batch_first=True, norm_first=True)
    model = torch.nn.Sequential(torch.nn.Embedding(8000, d), torch.nn.TransformerEncoder(layer, layers),
                                torch.nn.Linear(d, 8000)).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, fused=dev.type == "cuda")
    g = torch.Generator().manual_seed(0)
    data = [torch.randint(0, 8000, (batch, seq), generator=g).to(dev) for _ in range(4)]
    stats = {"t": 0.0, "loss": 0.0, "n": 0}
    acc = torch.zeros((), device=dev)

    def train(x):
        with torch.autocast(dev.type, dtype=torch.bfloat16):
            logits = model(x)
            loss = torch.nn.functional.cross_entropy(logits[:, :-1].reshape(-1, 8000), x[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss

    def step(i):
        nonlocal acc
        x = data[i % 4]
        if args.fix:
            acc += train(x).detach()
            if i % 100 == 99:
                stats["loss"] = acc.item() / 100
                acc.zero_()
            return
        if dev.type == "cuda":
            torch.cuda.synchronize()  # gpuwhy: plants C9 (a sync and a .item() every step, to time it)
        t0 = time.perf_counter()
        loss = train(x)
        if dev.type == "cuda":
            torch.cuda.synchronize()
        stats["t"] += time.perf_counter() - t0
        stats["loss"] += loss.item()
        stats["n"] += 1

    cc.run("c9_torch_sync_timing", args, step, batch)


if __name__ == "__main__":
    main()
