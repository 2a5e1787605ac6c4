"""Healthy control: pre-training a Pythia-160M-sized GPT-NeoX decoder in HF transformers
(GPTNeoXForCausalLM from a GPTNeoXConfig as Pythia's: 12 layers of width 768, 12 heads,
rotary on a quarter of each head, parallel attention and MLP residuals, untied 50,304-token
embeddings; 162 M parameters, random init, SDPA attention) configured the way the Pythia
recipe and HF's run_clm do it on one GPU: bf16 autocast with float32 master weights, fused
AdamW (betas 0.9/0.95, weight decay 0.01) with warm-up and cosine decay, clip_grad_norm_ 1.0,
packed sequences of 2,048 tokens, batch 4 (8,192 tokens a step) from a token stream made
once on the GPU (random windows), labels = inputs (the model shifts them), the loss read every
50 steps. About 7.9 TFLOP a step (FlopCounterMode on the meta device, attention included),
large GEMMs and flash attention, the logits and their float32 cross-entropy over 50,304
classes: GPU-bound, nothing to fix.

Written blind for the lima batch.
"""
import math

import torch
from transformers import AutoModelForCausalLM, GPTNeoXConfig

import cc


def main():
    args = cc.parser(__doc__, warmup=5).parse_args()
    dev = cc.torch_device(args)
    gpu = dev.type == "cuda"
    if args.smoke:
        cfg = GPTNeoXConfig(vocab_size=512, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                            intermediate_size=256, max_position_embeddings=128, rotary_pct=0.25)
        batch, seq, stream = 2, 64, 50_000
    else:
        cfg = GPTNeoXConfig(vocab_size=50_304, hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                            intermediate_size=3072, max_position_embeddings=2048, rotary_pct=0.25,
                            use_parallel_residual=True, tie_word_embeddings=False)
        batch, seq, stream = 4, 2048, 64_000_000
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(cfg, attn_implementation="sdpa").to(dev).train()
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=6e-4, betas=(0.9, 0.95), eps=1e-8, fused=gpu)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / 1430) * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(s, 143_000) / 143_000))))
    gen = torch.Generator(device=dev).manual_seed(1)
    tokens = torch.randint(0, cfg.vocab_size, (stream,), device=dev, generator=gen)   # the packed token stream
    offs = torch.arange(seq, device=dev)
    amp = torch.autocast(dev.type, dtype=torch.bfloat16, enabled=gpu)
    st = {"acc": torch.zeros((), device=dev), "loss": None, "reads": 0}

    def step(i):
        start = torch.randint(0, stream - seq, (batch, 1), device=dev, generator=gen)
        ids = tokens[start + offs]
        with amp:
            loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0, foreach=True)
        opt.step()
        sched.step()
        opt.zero_grad(set_to_none=True)
        st["acc"] += loss.detach()
        if i % 50 == 49:
            st["loss"] = st["acc"].item() / 50
            st["acc"].zero_()
            st["reads"] += 1

    cc.run("h_hf_gptneox_pythia_pretrain_bf16", args, step, batch,
           extra=lambda: {"tokens_per_step": batch * seq, "loss": st["loss"], "loss_reads": st["reads"],
                          "params_m": round(sum(p.numel() for p in model.parameters()) / 1e6, 1)})


if __name__ == "__main__":
    main()
