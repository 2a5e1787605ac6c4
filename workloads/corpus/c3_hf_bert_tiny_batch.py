"""C3 small batch: BERT (HF transformers, 6 layers, hidden 768, random weights from a
BertConfig) fine-tuned for sequence classification with batch 4 x 64 tokens: every GEMM
covers a few of the H200's 132 SMs and most kernels are shorter than their launch.

--fix: batch 256 (learning rate scaled), the usual response to a GPU at low utilization.
"""
import torch
from transformers import AutoModelForSequenceClassification, BertConfig

import cc


def main():
    args = cc.parser(__doc__).parse_args()
    dev = cc.torch_device(args)
    seq = 64
    batch = cc.fix_batch(256) if args.fix else 4  # gpuwhy: plants C3 (batch of 4)
    cfg = BertConfig(hidden_size=768, num_hidden_layers=6, num_attention_heads=12, intermediate_size=3072,
                     vocab_size=30522, num_labels=3)
    if args.smoke:
        cfg = BertConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128,
                         vocab_size=2000, num_labels=3)
        batch = 16 if args.fix else 2
    model = AutoModelForSequenceClassification.from_config(cfg).to(dev)
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=2e-5 * batch / 32, fused=dev.type == "cuda")
    gen = torch.Generator(device=dev).manual_seed(0)

    def step(i):
        ids = torch.randint(1000, cfg.vocab_size, (batch, seq), device=dev, generator=gen)
        mask = torch.ones_like(ids)
        labels = torch.randint(0, 3, (batch,), device=dev, generator=gen)
        with torch.autocast(dev.type, dtype=torch.bfloat16):
            out = model(input_ids=ids, attention_mask=mask, labels=labels)
        out.loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    cc.run("c3_hf_bert_tiny_batch", args, step, batch)


if __name__ == "__main__":
    main()
