"""C5 CUDA_LAUNCH_BLOCKING=1 left on (set by a library's reproducibility function, not by the
script): ablation runs of a review-sentiment classifier that must be reproducible bit for bit,
an HF DistilBERT-base-sized DistilBertForSequenceClassification built from a DistilBertConfig
(6 layers of width 768, 12 heads, FFN 3,072, random weights, SDPA attention, 2 labels),
trained in plain PyTorch with bf16 autocast, AdamW (fused) with transformers'
get_linear_schedule_with_warmup, gradient clipping at 1.0, batch 32 reviews of 256 tokens
(packed and truncated to length, so no padding and no attention mask; 16 batches made once on
the GPU and cycled); the loss is read every 50 steps.

For the ablations the script starts, as the HF Trainer does with `full_determinism=True`, by
calling transformers' `enable_full_determinism(seed)` (with warn_only=True, since SDPA's
backward has no deterministic kernel): the seeds, torch.use_deterministic_algorithms,
cudnn.deterministic, CUBLAS_WORKSPACE_CONFIG=:16:8, and, in the same function,
os.environ["CUDA_LAUNCH_BLOCKING"] = "1", which the script never names. It runs before the
model is moved to the GPU, so the variable is in the environment when CUDA starts: every
kernel launch waits for its kernel (about 500 launches a step), and the host's work and the
GPU's kernels take turns instead of overlapping.

--fix: gpuwhy's C5 advice (unset CUDA_LAUNCH_BLOCKING): the variable removed from the
environment right after the call, before CUDA starts; every determinism setting the call
makes, the model, data and optimizer unchanged.

Written blind for the golf batch.
"""
import os
import warnings

import torch
import torch.nn.functional as F
import transformers
from transformers import (DistilBertConfig, DistilBertForSequenceClassification, enable_full_determinism,
                          get_linear_schedule_with_warmup)

import cc

SEED = 1234


def main():
    args = cc.parser(__doc__).parse_args()
    warnings.filterwarnings("ignore", message=".*deterministic.*")
    # reproducible ablations: before anything touches CUDA
    enable_full_determinism(SEED, warn_only=True)  # gpuwhy: plants C5 (transformers' helper sets CUDA_LAUNCH_BLOCKING=1 before CUDA starts)
    if args.fix:
        os.environ.pop("CUDA_LAUNCH_BLOCKING", None)  # the advice: unset it; the determinism settings stay
    blocking = os.environ.get("CUDA_LAUNCH_BLOCKING", "")
    dev = cc.torch_device(args)
    vocab, layers, dim, heads, seq, batch = (1000, 2, 64, 2, 32, 4) if args.smoke else (30_522, 6, 768, 12, 256, 32)

    cfg = DistilBertConfig(vocab_size=vocab, n_layers=layers, dim=dim, n_heads=heads, hidden_dim=4 * dim,
                           max_position_embeddings=512, num_labels=2, problem_type="single_label_classification",
                           attn_implementation="sdpa")
    model = DistilBertForSequenceClassification(cfg).to(dev)
    model.train()
    decay = [p for n, p in model.named_parameters() if p.ndim > 1]
    no_decay = [p for n, p in model.named_parameters() if p.ndim <= 1]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=5e-5, fused=dev.type == "cuda")
    sched = get_linear_schedule_with_warmup(opt, num_warmup_steps=500, num_training_steps=100_000)
    g = torch.Generator(device=dev).manual_seed(SEED)
    data = [(torch.randint(1000 if not args.smoke else 1, vocab, (batch, seq), device=dev, generator=g),
             torch.randint(0, 2, (batch,), device=dev, generator=g)) for _ in range(16)]
    acc = torch.zeros((), device=dev)
    log = {"loss": None, "reads": 0}

    def step(i):
        ids, labels = data[i % 16]
        with torch.autocast(dev.type, dtype=torch.bfloat16):
            logits = model(input_ids=ids).logits
        loss = F.cross_entropy(logits.float(), labels)
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

    cc.run("c5_hf_full_determinism_launch_blocking", args, step, batch,
           extra=lambda: {"cuda_launch_blocking": blocking,
                          "deterministic_algorithms": torch.are_deterministic_algorithms_enabled(),
                          "cublas_workspace_config": os.environ.get("CUBLAS_WORKSPACE_CONFIG", ""),
                          "transformers": transformers.__version__, "loss_reads": log["reads"]})


if __name__ == "__main__":
    main()
