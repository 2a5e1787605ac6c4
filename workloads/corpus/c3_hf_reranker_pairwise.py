"""C3 small batch (a cross-encoder reranker scoring one pair at a time, HF transformers): the
second stage of a retrieval pipeline: for each query, the 32 passages the first stage
retrieved are rescored by a cross-encoder, an HF BertForSequenceClassification with one
output built from a BertConfig (BERT-base sizes: 12 layers, hidden 768, 12 heads,
intermediate 3072, vocabulary 30522; random weights, SDPA attention, weights in bf16,
eval, inference_mode). Each pair is [CLS] query [SEP] passage [SEP] in a fixed window of 256
tokens (queries of 32 tokens, passages pre-tokenized and chunked to 221, as the index stores
them; no padding, so no attention mask is passed and transformers 5 checks none on the host),
with token_type_ids; the pairs of 64 queries are made once on the device and cycled. The
reranker is written the way a first version is: a Python loop over the candidates that calls
the model on one pair at a time (batch 1 x 256 tokens: each GEMM is 256 rows, a few dozen of
the 132 SMs, most kernels shorter than their launch); when a query's 32 scores are in, they
are read to the host once (.cpu()), sorted, and the top 10 kept.

--fix: gpuwhy's C3 advice (raise the batch size): the 32 candidate pairs of a query scored
in one forward call (cc.fix_batch(32), the batch size of a cross-encoder's predict()); the
same model, pairs, one read per query and ranking. One iteration is one forward call; the
throughput is per pair.

Written blind for the canyon batch.
"""
import torch
import transformers
from transformers import BertConfig, BertForSequenceClassification

import cc


def make_pairs(queries, k, q_len, p_len, vocab, dev, gen):
    """(queries * k, 2 + q_len + p_len + 1) token ids and segment ids: [CLS] q [SEP] p [SEP]."""
    cls, sep = 101, 102
    q = torch.randint(1000, vocab, (queries, 1, q_len), device=dev, generator=gen).expand(-1, k, -1)
    p = torch.randint(1000, vocab, (queries, k, p_len), device=dev, generator=gen)
    col = lambda v: torch.full((queries, k, 1), v, device=dev)  # noqa: E731
    ids = torch.cat([col(cls), q, col(sep), p, col(sep)], -1).reshape(queries * k, -1)
    seg = torch.zeros_like(ids)
    seg[:, q_len + 2:] = 1
    return ids, seg


def main():
    args = cc.parser(__doc__, warmup=10).parse_args()
    dev = cc.torch_device(args)
    if args.smoke:
        cfg = BertConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128,
                         vocab_size=2000, num_labels=1)
        k, q_len, p_len, queries = 4, 6, 21, 8
    else:
        cfg = BertConfig(hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072,
                         vocab_size=30522, num_labels=1, max_position_embeddings=512)
        k, q_len, p_len, queries = 32, 32, 221, 64
    batch = cc.fix_batch(k) if args.fix else 1  # gpuwhy: plants C3 (one query-passage pair per forward call)
    cfg._attn_implementation = "sdpa"
    torch.manual_seed(0)
    model = BertForSequenceClassification(cfg).to(dev, dtype=torch.bfloat16).eval()
    gen = torch.Generator(device=dev).manual_seed(0)
    ids, seg = make_pairs(queries, k, q_len, p_len, cfg.vocab_size, dev, gen)
    n_pairs = ids.shape[0]
    pending = []  # score tensors of the queries not yet complete
    done = {"queries": 0, "pairs_in_pending": 0, "top": None}

    def read_completed():
        while done["pairs_in_pending"] >= k:
            scores = torch.cat(pending)
            pending.clear()
            if scores.shape[0] > k:
                pending.append(scores[k:])
            top = scores[:k].float().cpu().argsort(descending=True)[:10]  # one read per query
            done["top"] = top.tolist()
            done["queries"] += 1
            done["pairs_in_pending"] -= k

    @torch.inference_mode()
    def step(i):
        start = (i * batch) % n_pairs
        sl = slice(start, start + batch)
        logits = model(input_ids=ids[sl], token_type_ids=seg[sl]).logits  # (batch, 1)
        pending.append(logits[:, 0])
        done["pairs_in_pending"] += logits.shape[0]
        read_completed()

    cc.run("c3_hf_reranker_pairwise", args, step, batch,
           extra=lambda: {"pairs_per_call": batch, "candidates_per_query": k, "seq": ids.shape[1],
                          "queries_ranked": done["queries"], "transformers": transformers.__version__})


if __name__ == "__main__":
    main()
