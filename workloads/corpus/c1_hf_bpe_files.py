"""C1 tokenization on the training thread: a GPT-2-style language model (HF transformers, built
from a config: 6 layers, d=1536, vocab 8192; bf16 autocast, fused AdamW) trained on JSON-lines
text files (32 files, made once under GW_CORPUS_CACHE) read by an IterableDataset that
tokenizes each line with a byte-pair-encoding tokenizer written in Python (merge ranks
learned once and cached; no word cache) and packs the ids into 513-token blocks. The
DataLoader has num_workers=0, so the training thread tokenizes every batch itself.

--fix: DataLoader(num_workers=the free cores (cc.fix_workers()), pin_memory=True, prefetch_factor=4, persistent_workers=True),
the files sharded over the workers with get_worker_info(): gpuwhy's C1 advice for PyTorch.
"""
import json
import os
import re

import torch
from torch.utils.data import DataLoader, IterableDataset, get_worker_info
from transformers import AutoModelForCausalLM, GPT2Config

import cc

SEQ = 512
WORD = re.compile(r"\s?\w+|\s?[^\w\s]+")


def corpus_files(n_files, lines):
    d = os.path.join(cc.CACHE, f"jsonl_{n_files}_{lines}")
    done = os.path.join(d, ".done")
    if not os.path.exists(done):
        os.makedirs(d, exist_ok=True)
        for k in range(n_files):
            with open(os.path.join(d, f"part-{k:03d}.jsonl"), "w") as f:
                for line in cc.text_lines(lines, seed=k, min_words=40, max_words=160):
                    f.write(json.dumps({"id": k, "text": line.capitalize() + "."}) + "\n")
        open(done, "w").close()
    return sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith(".jsonl"))


def learn_merges(files, n_merges):
    """BPE merge ranks from the first file's words, learned once and cached beside the data."""
    path = os.path.join(os.path.dirname(files[0]), f"merges_{n_merges}.json")
    if os.path.exists(path):
        return [tuple(m) for m in json.load(open(path))]
    counts = {}
    for line in open(files[0]):
        for w in WORD.findall(json.loads(line)["text"]):
            counts[tuple(w)] = counts.get(tuple(w), 0) + 1
    merges = []
    for _ in range(n_merges):
        pairs = {}
        for w, c in counts.items():
            for pair in zip(w, w[1:]):
                pairs[pair] = pairs.get(pair, 0) + c
        if not pairs:
            break
        best = max(pairs, key=pairs.get)
        merges.append(best)
        new = {}
        for w, c in counts.items():
            out, k = [], 0
            while k < len(w):
                if k + 1 < len(w) and (w[k], w[k + 1]) == best:
                    out.append(w[k] + w[k + 1])
                    k += 2
                else:
                    out.append(w[k])
                    k += 1
            new[tuple(out)] = c
        counts = new
    json.dump(merges, open(path + ".tmp", "w"))
    os.replace(path + ".tmp", path)
    return merges


class BPE:
    def __init__(self, merges):
        self.ranks = {tuple(m): k for k, m in enumerate(merges)}
        pieces = sorted({c for m in merges for c in "".join(m)}) + ["".join(m) for m in merges]
        self.ids = {p: k + 2 for k, p in enumerate(dict.fromkeys(pieces))}  # 0: end of text, 1: unknown

    def bpe(self, word):
        parts = list(word)
        while len(parts) > 1:
            pairs = [(self.ranks.get(p, 1 << 30), k) for k, p in enumerate(zip(parts, parts[1:]))]
            rank, k = min(pairs)
            if rank == 1 << 30:
                break
            parts[k:k + 2] = [parts[k] + parts[k + 1]]
        return parts

    def encode(self, text):
        return [self.ids.get(p, 1) for w in WORD.findall(text) for p in self.bpe(w)]


class PackedText(IterableDataset):
    def __init__(self, files, tok):
        self.files, self.tok = files, tok

    def __iter__(self):
        info = get_worker_info()
        files = self.files if info is None else self.files[info.id::info.num_workers]
        buf = []
        while True:
            for path in files:
                with open(path) as f:
                    for line in f:
                        buf += self.tok.encode(json.loads(line)["text"]) + [0]
                        while len(buf) > SEQ:
                            yield torch.tensor(buf[:SEQ + 1])
                            buf = buf[SEQ + 1:]


def main():
    args = cc.parser(__doc__).parse_args()
    dev = cc.torch_device(args)
    if args.smoke:
        cfg, batch, n_files, lines = GPT2Config(n_layer=1, n_embd=64, n_head=4, n_positions=SEQ, vocab_size=1024), 2, 4, 50
    else:
        cfg, batch, n_files, lines = GPT2Config(n_layer=6, n_embd=1536, n_head=12, n_positions=SEQ, vocab_size=8192), 8, 32, 500
    files = corpus_files(n_files, lines)
    tok = BPE(learn_merges(files, 300 if args.smoke else 2000))
    assert len(tok.ids) + 2 <= cfg.vocab_size
    ds = PackedText(files, tok)
    if args.fix:
        loader = DataLoader(ds, batch_size=batch, num_workers=2 if args.smoke else cc.fix_workers(), pin_memory=dev.type == "cuda", prefetch_factor=4,
                            persistent_workers=True)
    else:
        loader = DataLoader(ds, batch_size=batch, num_workers=0)
    model = AutoModelForCausalLM.from_config(cfg).to(dev)
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.1, fused=dev.type == "cuda")
    it = iter(loader)

    def step(i):
        ids = next(it).to(dev, non_blocking=True)  # gpuwhy: plants C1 (the BPE tokenizer runs on this thread: num_workers=0)
        with torch.autocast(dev.type, dtype=torch.bfloat16):
            loss = model(input_ids=ids[:, :-1], labels=ids[:, :-1]).loss
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    cc.run("c1_hf_bpe_files", args, step, batch)


if __name__ == "__main__":
    main()
