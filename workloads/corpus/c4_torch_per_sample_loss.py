"""C4 launch-bound: a small sequence tagger (embedding + 2-layer MLP over 128-token
sequences, 32 tags, batch 64, float32 + TF32) whose loss is computed in a Python for loop
over the batch: each sample is sliced to its own length, then log_softmax, gather, a focal
term (exp, 1 - p, pow, mul) and a mean, and the 64 losses are torch.stack(...).mean()'d. The
step is hundreds of tiny kernels forward and backward; the GPU waits on their launches.

--fix: the same focal loss vectorized over the padded batch with a length mask.
"""
import torch
import torch.nn.functional as F

import cc


def main():
    args = cc.parser(__doc__).parse_args()
    dev = cc.torch_device(args)
    vocab, d, tags, seq, batch = (200, 32, 8, 16, 8) if args.smoke else (8000, 256, 32, 128, 64)
    torch.backends.cuda.matmul.allow_tf32 = True
    model = torch.nn.Sequential(torch.nn.Embedding(vocab, d), torch.nn.Linear(d, 4 * d), torch.nn.GELU(),
                                torch.nn.Linear(4 * d, d), torch.nn.GELU(), torch.nn.Linear(d, tags)).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, fused=dev.type == "cuda")
    g = torch.Generator().manual_seed(0)
    data = []
    for _ in range(4):  # batches made once: padded ids, tags and the lengths (known on the host)
        lens = torch.randint(seq // 4, seq + 1, (batch,), generator=g)
        data.append((torch.randint(0, vocab, (batch, seq), generator=g).to(dev),
                     torch.randint(0, tags, (batch, seq), generator=g).to(dev), lens.tolist(), lens.to(dev)))
    gamma = 2.0

    def per_sample_loss(logits, y, lens):
        losses = []
        for b in range(len(lens)):  # gpuwhy: plants C4 (a handful of tiny kernels per sample)
            lp = F.log_softmax(logits[b, :lens[b]], dim=-1)
            logp = lp.gather(1, y[b, :lens[b], None]).squeeze(1)
            p = logp.exp()
            losses.append(-((1 - p) ** gamma * logp).mean())
        return torch.stack(losses).mean()

    def vectorized_loss(logits, y, lens_dev):
        logp = F.log_softmax(logits, dim=-1).gather(2, y[..., None]).squeeze(2)
        mask = torch.arange(y.shape[1], device=y.device)[None, :] < lens_dev[:, None]
        focal = -((1 - logp.exp()) ** gamma * logp) * mask
        return (focal.sum(1) / lens_dev).mean()

    def step(i):
        x, y, lens, lens_dev = data[i % 4]
        logits = model(x)
        loss = vectorized_loss(logits, y, lens_dev) if args.fix else per_sample_loss(logits, y, lens)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    cc.run("c4_torch_per_sample_loss", args, step, batch)


if __name__ == "__main__":
    main()
