"""C9 sync points (boolean-mask indexing): a token-classification Transformer (NER-style)
that computes its per-step token accuracy with boolean masks, logits.argmax(-1)[valid]:
the mask's nonzero count must come back to the host before the result's size is known,
so every step ends waiting for the GPU, and the next batch's collation (variable-length
sequences padded on the training thread) no longer overlaps the GPU's work.

--fix: the same metric without data-dependent shapes, ((pred == y) & valid).sum() /
valid.sum(), kept on the GPU (and the loss uses ignore_index instead of a masked select).
"""
import numpy as np
import torch

import cc


def collate(rng, batch, max_len, vocab):
    lens = rng.integers(max_len // 4, max_len + 1, batch)
    width = -(-int(lens.max()) // 8) * 8
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
    rng = np.random.default_rng(0)
    correct = torch.zeros((), device=dev)
    total = torch.zeros((), device=dev)

    def step(i):
        nonlocal correct, total
        ids, tags = collate(rng, batch, max_len, vocab)
        ids, tags = ids.to(dev, non_blocking=True), tags.to(dev, non_blocking=True)
        valid = tags != -100
        with torch.autocast(dev.type, dtype=torch.bfloat16):
            logits = model["head"](model["enc"](model["emb"](ids), src_key_padding_mask=~valid)).float()
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
