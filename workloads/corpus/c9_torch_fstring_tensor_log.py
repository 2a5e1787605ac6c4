"""C9 sync stall (formatting GPU tensors in a log line): a 6-layer transformer encoder LM
(d=512, 8 heads, vocab 8000, batch 32 x 256 tokens, bf16 autocast, fused AdamW, gradient
clipping, a warm-up/cosine LR schedule, batches made once on the GPU and cycled) that
logs every step through the `logging` module to a file under /tmp:
`log.info(f"step {i} loss {loss:.4f} grad_norm {gn:.3f} lr {lr}")`, where `loss` and `gn`
(what torch.nn.utils.clip_grad_norm_ returns) are CUDA tensors. Formatting a 0-d tensor
calls .item(): two host waits a step, and the next step is launched from an empty queue.

--fix: gpuwhy's C9 advice (call .item() or print every N steps): loss and grad norm
accumulated as GPU tensors, formatted and logged every 50 steps.
"""
import logging
import math
import os

import torch
import torch.nn as nn
import torch.nn.functional as F

import cc


def main():
    args = cc.parser(__doc__).parse_args()
    dev = cc.torch_device(args)
    batch, seq, d, heads, layers, vocab = (4, 16, 64, 4, 2, 500) if args.smoke else (32, 256, 512, 8, 6, 8000)
    log = logging.getLogger("train")
    log.setLevel(logging.INFO)
    log.propagate = False
    handler = logging.FileHandler(os.path.join("/tmp", f"gw_train_{os.getpid()}.log"), mode="w")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    log.addHandler(handler)

    layer = nn.TransformerEncoderLayer(d, heads, 4 * d, dropout=0.1, activation="gelu", batch_first=True, norm_first=True)
    model = nn.Sequential(nn.Embedding(vocab, d), nn.TransformerEncoder(layer, layers, enable_nested_tensor=False),
                          nn.LayerNorm(d), nn.Linear(d, vocab)).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.1, fused=dev.type == "cuda")
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / 200) * 0.5 * (1 + math.cos(math.pi * min(s, 50_000) / 50_000)))
    g = torch.Generator().manual_seed(0)
    data = [torch.randint(0, vocab, (batch, seq), generator=g).to(dev) for _ in range(4)]
    loss_acc = torch.zeros((), device=dev)
    gn_acc = torch.zeros((), device=dev)
    every = 50

    def step(i):
        x = data[i % len(data)]
        with torch.autocast(dev.type, dtype=torch.bfloat16):
            logits = model(x)
        loss = F.cross_entropy(logits[:, :-1].float().reshape(-1, vocab), x[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        gn = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        lr = sched.get_last_lr()[0]
        if args.fix:
            loss_acc.add_(loss.detach())
            gn_acc.add_(gn)
            if i % every == every - 1:
                log.info(f"step {i} loss {loss_acc / every:.4f} grad_norm {gn_acc / every:.3f} lr {lr}")
                loss_acc.zero_()
                gn_acc.zero_()
            return
        log.info(f"step {i} loss {loss:.4f} grad_norm {gn:.3f} lr {lr}")  # gpuwhy: plants C9 (two CUDA tensors formatted every step)

    try:
        cc.run("c9_torch_fstring_tensor_log", args, step, batch)
    finally:
        handler.close()
        os.unlink(handler.baseFilename)


if __name__ == "__main__":
    main()
