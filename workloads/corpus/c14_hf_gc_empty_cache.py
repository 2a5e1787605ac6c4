"""C14 periodic stall (memory housekeeping every N steps over a large Python heap): masked-LM
pre-training of an HF RobertaForMaskedLM built from a RobertaConfig (RoBERTa-base sizes: 12
layers, hidden 768, 12 heads, vocabulary 50265, random weights; bf16 autocast, fused AdamW,
linear warm-up, loss read every 50 steps), batch 64 sequences of up to 128 tokens, on a
corpus held the way a script holds a tokenized JSONL file: a Python list of 100,000 dicts
{"id", "input_ids", "attention_mask", "special_tokens_mask"} of Python lists (32 to 128
tokens each; about 400,000 containers and 24 M references for the collector to walk).
Batches are padded on the training thread and masked on the GPU (80/10/10). Every 10 steps
the loop does what many training scripts do "to keep memory in check": gc.collect() and
torch.cuda.empty_cache(). The full collection walks the whole corpus every time (hundreds
of ms with the GPU idle), and empty_cache waits for the GPU, returns the allocator's cached
blocks to the driver, and makes the next step cudaMalloc them again.

--fix: gpuwhy's C14 advice (do the periodic work less often): the same gc.collect() and
empty_cache() every 1000 steps (never in the measured window); corpus, batches and model
unchanged.

Written blind for the ridge batch.
"""
import gc

import numpy as np
import torch
from transformers import AutoModelForMaskedLM, RobertaConfig

import cc

PAD, CLS, SEP, MASK = 1, 0, 2, 4


def load_corpus(n, max_len, vocab, seed=0):
    """n tokenized documents as Python dicts of lists (what json.loads gives for each line)."""
    rng = np.random.default_rng(seed)
    lens = rng.integers(32, max_len + 1, n)
    rows = rng.integers(5, vocab, (n, max_len), dtype=np.int32).tolist()
    gc.disable()  # building the fixture only: no collections while the lists are made
    corpus = []
    for i, (row, l) in enumerate(zip(rows, lens.tolist())):
        ids = [CLS] + row[:l - 2] + [SEP]
        corpus.append({"id": i, "input_ids": ids, "attention_mask": [1] * l,
                       "special_tokens_mask": [1] + [0] * (l - 2) + [1]})
    del rows
    gc.enable()
    return corpus


def collate(examples, max_len):
    """Pads on the host, like DataCollatorForLanguageModeling before masking."""
    ids = [ex["input_ids"] + [PAD] * (max_len - len(ex["input_ids"])) for ex in examples]
    att = [ex["attention_mask"] + [0] * (max_len - len(ex["attention_mask"])) for ex in examples]
    spc = [ex["special_tokens_mask"] + [1] * (max_len - len(ex["special_tokens_mask"])) for ex in examples]
    return torch.tensor(ids), torch.tensor(att), torch.tensor(spc, dtype=torch.bool)


def main():
    args = cc.parser(__doc__).parse_args()
    dev = cc.torch_device(args)
    if args.smoke:
        cfg = RobertaConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128,
                            vocab_size=1000, max_position_embeddings=66)
        docs, batch, max_len = 2000, 4, 64
    else:
        cfg = RobertaConfig(vocab_size=50265, max_position_embeddings=514)
        docs, batch, max_len = 100_000, 64, 128
    corpus = load_corpus(docs, max_len, cfg.vocab_size)
    model = AutoModelForMaskedLM.from_config(cfg, attn_implementation="sdpa").to(dev).train()
    opt = torch.optim.AdamW(model.parameters(), lr=6e-4, betas=(0.9, 0.98), weight_decay=0.01,
                            fused=dev.type == "cuda")
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 1000))
    housekeep_every = 1000 if args.fix else 10
    order = np.random.default_rng(1).permutation(len(corpus))
    g = torch.Generator(device=dev).manual_seed(0)
    losses = []
    log = {"loss": None, "housekeeping": 0}

    def step(i):
        picks = order[(i * batch) % (len(order) - batch):][:batch]
        ids, att, special = (t.to(dev, non_blocking=True) for t in collate([corpus[k] for k in picks], max_len))
        # 15% of the tokens: 80% [MASK], 10% random, 10% kept (on the GPU)
        r = torch.rand(ids.shape, device=dev, generator=g)
        chosen = (r < 0.15) & ~special
        labels = torch.where(chosen, ids, torch.full_like(ids, -100))
        inputs = torch.where(chosen & (r < 0.12), torch.full_like(ids, MASK), ids)
        rand_tok = torch.randint(5, cfg.vocab_size, ids.shape, device=dev, generator=g)
        inputs = torch.where(chosen & (r >= 0.12) & (r < 0.135), rand_tok, inputs)
        with torch.autocast(dev.type, dtype=torch.bfloat16):
            loss = model(input_ids=inputs, attention_mask=att, labels=labels).loss
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        losses.append(loss.detach())
        if len(losses) == 50:
            log["loss"] = torch.stack(losses).mean().item()
            losses.clear()
        if i % housekeep_every == housekeep_every - 1:
            gc.collect()  # gpuwhy: plants C14 (a full collection over the corpus' containers every 10 steps)
            if dev.type == "cuda":
                torch.cuda.empty_cache()  # gpuwhy: plants C14 (waits for the GPU, cached blocks freed and allocated again)
            log["housekeeping"] += 1

    cc.run("c14_hf_gc_empty_cache", args, step, batch,
           extra=lambda: {"housekeeping_every": housekeep_every, "housekeepings": log["housekeeping"],
                          "corpus_docs": len(corpus), "gc_tracked_objects": len(gc.get_objects())})


if __name__ == "__main__":
    main()
