"""C9 sync points (boolean-mask indexing): a token-classification Transformer (NER-style)
that computes its per-step token accuracy with boolean masks, logits.argmax(-1)[valid]:
the mask's nonzero count must come back to the host before the result's size is known,
so every step ends waiting for the GPU, and the next batch's collation (variable-length
sequences padded on the training thread) no longer overlaps the GPU's work.

--fix: the same metric without data-dependent shapes, ((pred == y) & valid).sum() /
valid.sum(), kept on the GPU (and the loss uses ignore_index instead of a masked select).

--alt: the launch-bound (C4) fix gpuwhy ranks first, not the planted C9: the model's forward
(embedding, encoder, head) compiled with torch.compile(mode="reduce-overhead", dynamic=False)
(Inductor + CUDA graphs over forward and backward); the loss and the metric, with their
data-dependent shapes, stay eager. CUDA graphs need fixed shapes, so batches are padded to
max_len (256) instead of the longest sequence rounded up to 8: with 64 sequences of 64..256
tokens that width is already 256 in 93% of batches (248 in 6%), so the padding adds about
0.2% tokens. Grads are set to None before the forward replays. At least 10 warm-up iterations
unless --warmup is given (compilation, CUDA graph warm-up and recording).
"""
import numpy as np
import torch

import cc


def collate(rng, batch, max_len, vocab, fixed=False):
    lens = rng.integers(max_len // 4, max_len + 1, batch)
    width = max_len if fixed else -(-int(lens.max()) // 8) * 8
    ids = np.zeros((batch, width), np.int64)
    tags = np.full((batch, width), -100, np.int64)
    for k, n in enumerate(lens):
        ids[k, :n] = rng.integers(1, vocab, n)
        tags[k, :n] = ids[k, :n] % 9  # 9 BIO tags
    return torch.from_numpy(ids), torch.from_numpy(tags)


def main():
    args = cc.parser(__doc__).parse_args()
    dev = cc.torch_device(args)
    d, layers, batch, max_len, vocab = (64, 1, 4, 32, 1000) if args.smoke else (512, 4, 64, 256, 30000)
    emb = torch.nn.Embedding(vocab, d)
    layer = torch.nn.TransformerEncoderLayer(d, nhead=8, dim_feedforward=4 * d, batch_first=True, norm_first=True)
    model = torch.nn.ModuleDict({"emb": emb, "enc": torch.nn.TransformerEncoder(layer, layers),
                                 "head": torch.nn.Linear(d, 9)}).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=dev.type == "cuda")

    def forward(ids, pad):
        return model["head"](model["enc"](model["emb"](ids), src_key_padding_mask=pad))

    if args.alt:  # C4 fix: only the model's forward (fixed shapes), not the loss or the metric
        forward = torch.compile(forward, mode=cc.alt_setup(args, "reduce-overhead", 10), dynamic=False)
    rng = np.random.default_rng(0)
    correct = torch.zeros((), device=dev)
    total = torch.zeros((), device=dev)

    def step(i):
        nonlocal correct, total
        ids, tags = collate(rng, batch, max_len, vocab, fixed=args.alt)
        ids, tags = ids.to(dev, non_blocking=True), tags.to(dev, non_blocking=True)
        valid = tags != -100
        if args.alt:
            # grads set to None before the graphs replay: the previous step's grads (backward
            # graph outputs that autograd took over) are not alive when their memory is reused
            opt.zero_grad(set_to_none=True)
            torch.compiler.cudagraph_mark_step_begin()
        with torch.autocast(dev.type, dtype=torch.bfloat16):
            logits = forward(ids, ~valid).float()
        if args.fix:
            loss = torch.nn.functional.cross_entropy(logits.view(-1, 9), tags.view(-1), ignore_index=-100)
        else:
            loss = torch.nn.functional.cross_entropy(logits[valid], tags[valid])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        pred = logits.detach().argmax(-1)
        if args.fix:
            correct += ((pred == tags) & valid).sum()
            total += valid.sum()
        else:
            hits = pred[valid] == tags[valid]  # gpuwhy: plants C9 (boolean-mask indexing syncs)
            correct += hits.sum()
            total += hits.numel()

    cc.run("c9_torch_mask_index", args, step, batch)


if __name__ == "__main__":
    main()
