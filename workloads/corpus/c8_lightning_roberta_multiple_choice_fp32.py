"""C8 float32 GEMMs (Lightning's default precision, no TF32): commonsense multiple-choice
fine-tuning (SWAG/HellaSwag-style: a context and four candidate endings, the model scores
each context + ending pair and a softmax over the four picks the answer) as a LightningModule
around HF transformers' RobertaForMultipleChoice built from a RobertaConfig the size of
roberta-base (12 layers of width 768, 12 heads, MLP 3,072, vocabulary 50,265, SDPA attention;
124.4 M parameters, random weights standing in for the checkpoint), AdamW (lr 2e-5, weight
decay 0.01, fused) with linear warm-up and decay, batch 32 questions x 4 endings x 128 tokens
(16,384 tokens a step); 8,000 tokenized questions made at start in host memory (contexts
of 40-90 tokens, endings of 10-30, padded to 128 with the attention mask), a DataLoader with
2 workers and pin_memory.

The Trainer is built without a precision argument, so Lightning runs at its default
"32-true": parameters, activations and every GEMM in float32, and PyTorch's default float32
matmul precision ("highest") keeps them off the tensor cores (Lightning prints its hint to
call torch.set_float32_matmul_precision on a tensor-core GPU; the script ignores it): 8.6 TFLOP
a step of SIMT float32 GEMMs.

--fix: gpuwhy's C8 advice (mixed precision): Trainer(precision="bf16-mixed") (torch.autocast
bf16 under Lightning); model, data, batch and optimizer unchanged.

Written blind for the quebec batch.
"""
import math

import numpy as np
import torch
import torch.nn.functional as F
import lightning as L
from torch.utils.data import DataLoader, TensorDataset
from transformers import RobertaConfig, RobertaForMultipleChoice

import cc


def make_questions(n, choices, seq, vocab, rng):
    """Token ids as RoBERTa's tokenizer lays out a pair: <s> context </s></s> ending </s>, padded."""
    ids = np.full((n, choices, seq), 1, np.int64)                  # <pad> = 1
    mask = np.zeros((n, choices, seq), np.int64)
    ctx_len = rng.integers(40, 91, n)
    end_len = rng.integers(10, 31, (n, choices))
    for q in range(n):
        ctx = rng.integers(4, vocab, ctx_len[q])
        for c in range(choices):
            end = rng.integers(4, vocab, end_len[q, c])
            row = np.concatenate([[0], ctx, [2, 2], end, [2]])[:seq]
            ids[q, c, :row.shape[0]] = row
            mask[q, c, :row.shape[0]] = 1
    labels = rng.integers(0, choices, n)
    return torch.from_numpy(ids), torch.from_numpy(mask), torch.from_numpy(labels)


class MultipleChoice(L.LightningModule):
    def __init__(self, cfg, lr, total):
        super().__init__()
        self.model = RobertaForMultipleChoice(cfg)
        self.lr, self.total = lr, total

    def training_step(self, batch, batch_idx):
        ids, mask, labels = batch
        logits = self.model(input_ids=ids, attention_mask=mask).logits     # (questions, choices)
        return F.cross_entropy(logits.float(), labels)

    def configure_optimizers(self):
        decay = [p for n, p in self.named_parameters() if p.ndim >= 2]
        no_decay = [p for n, p in self.named_parameters() if p.ndim < 2]
        opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01}, {"params": no_decay, "weight_decay": 0.0}],
                                lr=self.lr, fused=self.device.type == "cuda")
        warm = max(1, self.total // 10)
        sched = torch.optim.lr_scheduler.LambdaLR(
            opt, lambda s: min((s + 1) / warm, max(0.0, (self.total - s) / (self.total - warm))))
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step"}}


def main():
    args = cc.parser(__doc__, warmup=5).parse_args()
    gpu = args.device == "cuda"
    if args.smoke:
        layers, d, heads, vocab, seq, batch, n_q, workers = 2, 64, 4, 1000, 128, 2, 64, 1
    else:
        layers, d, heads, vocab, seq, batch, n_q, workers = 12, 768, 12, 50265, 128, 32, 8_000, 2
    choices = 4
    rng = np.random.default_rng(0)
    ids, mask, labels = make_questions(n_q, choices, seq, vocab, rng)
    loader = DataLoader(TensorDataset(ids, mask, labels), batch_size=batch, shuffle=True, drop_last=True,
                        num_workers=workers, pin_memory=gpu, persistent_workers=True)
    torch.manual_seed(0)
    cfg = RobertaConfig(vocab_size=vocab, hidden_size=d, num_hidden_layers=layers, num_attention_heads=heads,
                        intermediate_size=4 * d, max_position_embeddings=seq + 2, type_vocab_size=1,
                        pad_token_id=1, bos_token_id=0, eos_token_id=2, attn_implementation="sdpa")
    model = MultipleChoice(cfg, 2e-5, total=3 * math.ceil(n_q / batch))
    params = sum(p.numel() for p in model.parameters())
    timer = cc.lightning_timer("c8_lightning_roberta_multiple_choice_fp32", args, batch,
                               extra=lambda: {"precision": precision, "params_m": round(params / 1e6, 1),
                                              "tokens_per_step": batch * choices * seq})
    if args.fix:
        precision = "bf16-mixed" if gpu else "32-true"
        trainer = cc.lightning_trainer(args, [timer], precision=precision)
    else:
        precision = "32-true"
        trainer = cc.lightning_trainer(args, [timer])  # gpuwhy: plants C8 (no precision given: Lightning's default "32-true", float32 GEMMs off the tensor cores)
    trainer.fit(model, train_dataloaders=loader)


if __name__ == "__main__":
    main()
