"""C9 host metrics every step (named-entity recognition): fine-tuning a token classifier, HF
BertForTokenClassification from a BertConfig the size of bert-base-cased (12 layers of width
768, 12 heads, vocabulary 28,996; 108 M parameters, random weights standing in for the
checkpoint, SDPA attention), on CoNLL-2003-style data: 9 IOB2 tags (O, B-/I- PER, ORG, LOC,
MISC), word-piece windows of up to 128 pieces padded to 128 as run_ner does with
pad_to_max_length, the label on each word's first piece and -100 on the other pieces and the
padding; batch 32, bf16 autocast, fused AdamW with a linear warm-up and decay; 512 windows
made once at start (words of 1-3 pieces, tags from a Markov chain over entity spans) and held
on the GPU.

The training loop logs entity-level and token-level scores of every batch, as the
token-classification tutorials' compute_metrics does, but per step: the argmax predictions and
the labels are copied to the host (.cpu().numpy()), the -100 positions dropped, the ids turned
back into tag strings, the entity spans of each sentence extracted the way seqeval's
get_entities does (a Python loop over the tags), entity precision, recall and F1 counted, and
scikit-learn's precision_recall_fscore_support (token level, macro over the 8 entity tags) and
accuracy_score computed on the flattened tags. The host waits for each step's GPU work at the
copy and then runs the scoring before it launches the next step, so the GPU is idle for the
scoring and for the start of each step.

--fix: gpuwhy's C9 advice (read GPU values every N steps): the same metrics on every 100th
step's outputs only (log_every 100); model, data, loss and optimizer unchanged.

scikit-learn is imported guarded: where it is missing, a NumPy version of the token metrics
stands in (the JSON line's metrics_lib says which ran).

Written blind for the oscar batch.
"""
import numpy as np
import torch
from transformers import AutoModelForTokenClassification, BertConfig

import cc

TAGS = ["O", "B-PER", "I-PER", "B-ORG", "I-ORG", "B-LOC", "I-LOC", "B-MISC", "I-MISC"]
ENTITY_TAGS = TAGS[1:]

try:
    from sklearn.metrics import accuracy_score, precision_recall_fscore_support
    LIB = "sklearn"
except ImportError:  # NumPy stand-ins (same host round trip, roughly the same work)
    LIB = "numpy"

    def accuracy_score(y, p):
        return float(np.mean(np.asarray(y) == np.asarray(p)))

    def precision_recall_fscore_support(y, p, labels, average="macro", zero_division=0):
        y, p = np.asarray(y), np.asarray(p)
        ps, rs, fs = [], [], []
        for c in labels:
            tp = np.sum((p == c) & (y == c))
            pp, ap = np.sum(p == c), np.sum(y == c)
            pr = tp / pp if pp else zero_division
            rc = tp / ap if ap else zero_division
            ps.append(pr), rs.append(rc), fs.append(2 * pr * rc / (pr + rc) if pr + rc else zero_division)
        return float(np.mean(ps)), float(np.mean(rs)), float(np.mean(fs)), None


def get_entities(seq):
    """seqeval's get_entities for IOB2: [(type, start, end)] of one sentence's tags."""
    out = []
    prev_tag, prev_type, begin = "O", "", 0
    for i, chunk in enumerate(seq + ["O"]):
        tag, typ = (chunk[0], chunk[2:]) if chunk != "O" else ("O", "")
        end_prev = (prev_tag in ("B", "I") and (tag in ("B", "O") or (tag == "I" and typ != prev_type)))
        if end_prev:
            out.append((prev_type, begin, i - 1))
        start_now = tag == "B" or (tag == "I" and (prev_tag == "O" or typ != prev_type))
        if start_now:
            begin = i
        prev_tag, prev_type = tag, typ
    return out


def compute_metrics(pred_ids, label_ids):
    """The tutorial's compute_metrics: entity-level P/R/F1 (seqeval's way) and token-level scores."""
    true_tags, pred_tags = [], []
    for p, l in zip(pred_ids, label_ids):
        keep = l != -100
        true_tags.append([TAGS[t] for t in l[keep]])
        pred_tags.append([TAGS[t] for t in p[keep]])
    true_ents, pred_ents = set(), set()
    for k, (t, p) in enumerate(zip(true_tags, pred_tags)):
        true_ents.update((k,) + e for e in get_entities(t))
        pred_ents.update((k,) + e for e in get_entities(p))
    tp = len(true_ents & pred_ents)
    precision = tp / len(pred_ents) if pred_ents else 0.0
    recall = tp / len(true_ents) if true_ents else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    flat_t = [t for s in true_tags for t in s]
    flat_p = [t for s in pred_tags for t in s]
    tok_p, tok_r, tok_f, _ = precision_recall_fscore_support(flat_t, flat_p, labels=ENTITY_TAGS, average="macro",
                                                             zero_division=0)
    return {"precision": precision, "recall": recall, "f1": f1, "token_f1": float(tok_f),
            "accuracy": float(accuracy_score(flat_t, flat_p))}


def make_windows(n, seq, vocab, rng):
    """Word-piece windows with IOB2 labels on first pieces (-100 elsewhere), padded to seq."""
    ids = np.zeros((n, seq), np.int64)
    mask = np.zeros((n, seq), np.int64)
    labels = np.full((n, seq), -100, np.int64)
    for k in range(n):
        length = int(rng.integers(seq // 2, seq + 1))
        pos, ent = 1, None
        ids[k, 0] = 101
        while pos < length - 1:
            if ent is None and rng.random() < 0.15:
                ent, first = int(rng.integers(0, 4)), True
            elif ent is not None and rng.random() < 0.4:
                ent = None
            tag = 0 if ent is None else 1 + 2 * ent + (0 if first else 1)
            first = False
            pieces = min(int(rng.integers(1, 4)), length - 1 - pos)
            ids[k, pos:pos + pieces] = rng.integers(1000, vocab, pieces)
            labels[k, pos] = tag
            pos += pieces
        ids[k, length - 1] = 102
        mask[k, :length] = 1
    return ids, mask, labels


def main():
    args = cc.parser(__doc__, warmup=5).parse_args()
    dev = cc.torch_device(args)
    gpu = dev.type == "cuda"
    if args.smoke:
        cfg = BertConfig(vocab_size=2000, hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
                         intermediate_size=128, max_position_embeddings=128, num_labels=len(TAGS))
        n_win, seq, batch = 32, 32, 8
    else:
        cfg = BertConfig(vocab_size=28_996, hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                         intermediate_size=3072, max_position_embeddings=512, num_labels=len(TAGS))
        n_win, seq, batch = 512, 128, 32
    cfg.id2label = dict(enumerate(TAGS))
    cfg.label2id = {t: i for i, t in enumerate(TAGS)}
    log_every = 100 if args.fix else 1
    torch.manual_seed(0)
    model = AutoModelForTokenClassification.from_config(cfg, attn_implementation="sdpa").to(dev).train()
    opt = torch.optim.AdamW(model.parameters(), lr=5e-5, weight_decay=0.01, fused=gpu)
    total, warm = 10_000, 500
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min((s + 1) / warm, max(0.0, (total - s) / (total - warm))))
    ids, mask, labels = (torch.from_numpy(a).to(dev) for a in make_windows(n_win, seq, cfg.vocab_size,
                                                                             np.random.default_rng(0)))
    g = torch.Generator(device=dev).manual_seed(1)
    amp = torch.autocast(dev.type, dtype=torch.bfloat16, enabled=gpu)
    st = {"last": None, "scored": 0}

    def step(i):
        idx = torch.randint(0, n_win, (batch,), device=dev, generator=g)
        with amp:
            out = model(input_ids=ids[idx], attention_mask=mask[idx], labels=labels[idx])
        opt.zero_grad(set_to_none=True)
        out.loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0, foreach=True)
        opt.step()
        sched.step()
        if i % log_every == 0:
            preds = out.logits.detach().argmax(-1).cpu().numpy()
            st["last"] = compute_metrics(preds, labels[idx].cpu().numpy())  # gpuwhy: plants C9 (predictions and labels to the host and seqeval-style plus scikit-learn scoring after every step)
            st["last"]["loss"] = float(out.loss.detach())
            st["scored"] += 1

    cc.run("c9_hf_ner_seqeval_sklearn_every_step", args, step, batch,
           extra=lambda: {"metrics_lib": LIB, "log_every": log_every, "batches_scored": st["scored"],
                          "metrics": st["last"], "attn_implementation": model.config._attn_implementation})


if __name__ == "__main__":
    main()
