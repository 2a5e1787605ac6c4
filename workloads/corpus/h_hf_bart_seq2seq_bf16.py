"""Healthy control (HF transformers encoder-decoder, GEMM-bound): abstractive summarization
pre-training of a BART-base-sized model (BartForConditionalGeneration from a BartConfig,
through AutoModelForSeq2SeqLM.from_config: 6 encoder and 6 decoder layers of width 768, 12
heads, FFN 3,072, vocabulary 50,265, 139 M parameters, random weights,
attn_implementation="sdpa") on news articles packed to 1,024 source tokens with
128-token summaries (CNN/DailyMail's lengths), batch 32 pairs: bf16 autocast, fused AdamW with
linear warm-up and decay, clip_grad_norm_ 1.0 (foreach, its norm left on the GPU), the model's
own label-shifting and cross-entropy. The token windows are pre-tokenized (uint16 arrays in
memory, 16 M source and 2 M summary tokens) and served by a Dataset through 4 persistent
loader workers with pin_memory and prefetch_factor 4, copied with non_blocking; packed windows
need no padding, so no attention mask is passed (the encoder makes no host-side mask check;
BART's decoder builds an all-ones mask and transformers reads back its .all() once a forward,
after the encoder's kernels, while the host is well ahead of the GPU). The loss is summed on
the GPU and read every 50 steps. About 14 TFLOP a step (the encoder over 32 x 1,024 tokens,
the decoder and its cross-attention over 32 x 128, the 50,265-way head); apart from that one
read, nothing on the host waits for the GPU in the loop.

--fix changes nothing: this is a control.

Written blind for the echo batch.
"""
import math

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset
from transformers import AutoModelForSeq2SeqLM, BartConfig

import cc


class PackedPairs(Dataset):
    """(article, summary) token windows cut from pre-tokenized streams held in memory."""

    def __init__(self, vocab, src_len, tgt_len, src_tokens, tgt_tokens):
        rng = np.random.default_rng(0)
        self.src = rng.integers(4, vocab, src_tokens, dtype=np.uint16)
        self.tgt = rng.integers(4, vocab, tgt_tokens, dtype=np.uint16)
        self.src_len, self.tgt_len = src_len, tgt_len

    def __len__(self):
        return len(self.tgt) // self.tgt_len

    def __getitem__(self, i):
        s = (i * self.src_len) % (len(self.src) - self.src_len)
        t = i * self.tgt_len
        return (torch.from_numpy(self.src[s:s + self.src_len].astype(np.int64)),
                torch.from_numpy(self.tgt[t:t + self.tgt_len].astype(np.int64)))


def main():
    args = cc.parser(__doc__).parse_args()
    dev = cc.torch_device(args)
    torch.set_float32_matmul_precision("high")
    if args.smoke:
        cfg = BartConfig(vocab_size=1000, d_model=64, encoder_layers=1, decoder_layers=1, encoder_attention_heads=4,
                         decoder_attention_heads=4, encoder_ffn_dim=128, decoder_ffn_dim=128, max_position_embeddings=128)
        batch, src_len, tgt_len, workers, src_tokens, tgt_tokens = 2, 64, 16, 2, 1 << 14, 1 << 12
    else:
        cfg = BartConfig(vocab_size=50265, d_model=768, encoder_layers=6, decoder_layers=6, encoder_attention_heads=12,
                         decoder_attention_heads=12, encoder_ffn_dim=3072, decoder_ffn_dim=3072,
                         max_position_embeddings=1024, dropout=0.1)
        batch, src_len, tgt_len, workers, src_tokens, tgt_tokens = 32, 1024, 128, 4, 16 << 20, 2 << 20
    torch.manual_seed(0)
    model = AutoModelForSeq2SeqLM.from_config(cfg, attn_implementation="sdpa").to(dev).train()
    data = PackedPairs(cfg.vocab_size, src_len, tgt_len, src_tokens, tgt_tokens)
    loader = DataLoader(data, batch_size=batch, shuffle=True, drop_last=True, num_workers=workers,
                        pin_memory=dev.type == "cuda", persistent_workers=True, prefetch_factor=4)
    decay = [p for n, p in model.named_parameters() if p.ndim > 1]
    no_decay = [p for n, p in model.named_parameters() if p.ndim <= 1]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=3e-4, betas=(0.9, 0.98), fused=dev.type == "cuda")
    total, warm = 50_000, 1_000
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min((s + 1) / warm, max(0.0, (total - s) / (total - warm))))
    acc = torch.zeros((), device=dev)
    log = {"loss": None, "reads": 0}
    it = iter(loader)

    def step(i):
        src, tgt = next(it)
        src, tgt = src.to(dev, non_blocking=True), tgt.to(dev, non_blocking=True)
        with torch.autocast(dev.type, dtype=torch.bfloat16):
            loss = model(input_ids=src, labels=tgt).loss
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        acc.add_(loss.detach())
        if i % 50 == 49:
            log["loss"] = acc.item() / 50
            log["reads"] += 1
            acc.zero_()

    n_params = sum(p.numel() for p in model.parameters())
    cc.run("h_hf_bart_seq2seq_bf16", args, step, batch,
           extra=lambda: {"params_m": round(n_params / 1e6, 1), "attn": model.config._attn_implementation,
                          "loss_reads": log["reads"], "ppl": math.exp(min(log["loss"], 20)) if log["loss"] else None})


if __name__ == "__main__":
    main()
