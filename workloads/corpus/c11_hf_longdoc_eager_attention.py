"""C11 memory-bound kernels (HF transformers, batch inference with eager attention): scoring a
corpus of long contracts with a clause-type classifier, a BERT-base-shaped encoder extended
to 4,096 positions (HF BertForSequenceClassification from a BertConfig: 12 layers, hidden
768, 12 heads, intermediate 3072, max_position_embeddings 4096, 8 labels for multi-label
clause types; random weights, bf16, inference_mode), batches of 4 documents of 2,800 to
4,096 tokens padded to 4,096 (attention_mask), sigmoid scores into a ring on the GPU,
nothing read back. The model is loaded with attn_implementation="eager", left from when the
script returned attention maps for a highlighting view (output_attentions is no longer
asked for): every layer materializes the 4 x 12 x 4096 x 4096 score tensor (805 M
elements, 1.6 GB in bf16) and passes over it in separate kernels, the scaling, the padding
mask's addition and the softmax, before the second product reads it again: about 3 GB of
DRAM traffic a document and layer against 0.1 TFLOP of tensor-core work.

--fix: gpuwhy's C11 advice (fused kernels instead of memory-bound chains): the same model
loaded with attn_implementation="sdpa" (torch's scaled_dot_product_attention, a fused
attention kernel that never writes the scores); weights, documents, masks and outputs
unchanged.

Written blind for the mesa batch.
"""
import torch
from transformers import AutoModelForSequenceClassification, BertConfig

import cc


def main():
    args = cc.parser(__doc__).parse_args()
    dev = cc.torch_device(args)
    gpu = dev.type == "cuda"
    if args.smoke:
        cfg = BertConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128,
                         vocab_size=2000, max_position_embeddings=256, num_labels=8)
        batch, seq, min_len = 2, 256, 160
    else:
        cfg = BertConfig(max_position_embeddings=4096, num_labels=8)  # bert-base shapes, 4k positions
        batch, seq, min_len = 4, 4096, 2800
    cfg.problem_type = "multi_label_classification"
    attn = "sdpa" if args.fix else "eager"  # gpuwhy: plants C11 (eager attention: the 4096 x 4096 scores through DRAM)
    torch.manual_seed(0)
    model = AutoModelForSequenceClassification.from_config(cfg, attn_implementation=attn)
    model = model.to(dev, torch.bfloat16 if gpu else torch.float32).eval()
    g = torch.Generator(device=dev).manual_seed(0)
    docs = []
    for _ in range(4):
        ids = torch.randint(1000, cfg.vocab_size, (batch, seq), device=dev, generator=g)
        lens = torch.randint(min_len, seq + 1, (batch,), device=dev, generator=g)
        mask = (torch.arange(seq, device=dev)[None, :] < lens[:, None]).long()
        docs.append((ids * mask, mask))
    ring = 256
    scores = torch.empty(ring, batch, cfg.num_labels, device=dev)

    @torch.inference_mode()
    def step(i):
        ids, mask = docs[i % len(docs)]
        logits = model(input_ids=ids, attention_mask=mask).logits
        scores[i % ring] = torch.sigmoid(logits.float())

    cc.run("c11_hf_longdoc_eager_attention", args, step, batch,
           extra={"attn_implementation": model.config._attn_implementation, "seq": seq})


if __name__ == "__main__":
    main()
