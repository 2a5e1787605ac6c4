"""healthy (inference): BERT-base encoder (HF transformers, random weights from a BertConfig)
embedding batches of 256 x 128 tokens in bf16 under torch.inference_mode; the pooled
embeddings are written into a preallocated GPU buffer, nothing is read back per batch.

--fix changes nothing: this is a control.
"""
import torch
from transformers import AutoModel, BertConfig

import cc


def main():
    args = cc.parser(__doc__).parse_args()
    dev = cc.torch_device(args)
    if args.smoke:
        cfg, batch, seq = BertConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                                     intermediate_size=128, vocab_size=2000), 4, 32
    else:
        cfg, batch, seq = BertConfig(), 256, 128  # bert-base: 12 x 768
    model = AutoModel.from_config(cfg, attn_implementation="sdpa").to(dev, torch.bfloat16).eval()
    batches = [torch.randint(1000, cfg.vocab_size, (batch, seq), device=dev) for _ in range(4)]
    masks = [torch.ones_like(b) for b in batches]
    out = torch.empty(1024, batch, cfg.hidden_size, device=dev, dtype=torch.bfloat16)

    @torch.inference_mode()
    def step(i):
        h = model(input_ids=batches[i % 4], attention_mask=masks[i % 4]).last_hidden_state
        out[i % 1024] = h.mean(dim=1)

    cc.run("h_hf_bert_inference", args, step, batch)


if __name__ == "__main__":
    main()
