"""C8 no mixed precision (LoRA fine-tuning of a float32 base model, HF transformers): instruction
tuning of a small Llama-architecture model with low-rank adapters written by hand the way the
LoRA paper and PEFT's defaults describe them (rank 16, alpha 32, dropout 0.05, on q_proj and
v_proj of every layer; A Kaiming-uniform, B zero; the base frozen). The base is an HF
LlamaForCausalLM built from a LlamaConfig (TinyLlama's widths cut to 8 layers: hidden 2048, 16
heads with 4 key/value heads, SwiGLU 5632, vocabulary 32,000, SDPA; 0.49 B parameters, random
weights) in float32, as
from_pretrained gives it when no dtype is asked for, and the training loop has no autocast: with
PyTorch's default precision flags (TF32 off for matmuls) every projection of the frozen base,
forward and backward (the input gradients the adapters need), is a float32 GEMM on the CUDA
cores. Batches of 4 packed sequences of 512 tokens (made once on the GPU and cycled; labels =
inputs, HF's shifted loss), AdamW on the 0.8 M adapter parameters, gradient clipping at 1.0, a
linear warm-up; the loss is read every 50 steps. About 3.6 TFLOP a step, nearly all in the base
model's GEMMs.

--fix: gpuwhy's C8 advice: the forward pass under torch.autocast(bfloat16), TF32 allowed for
what stays in float32; the base weights, adapters, data and optimizer unchanged.

Written blind for the delta batch.
"""
import math

import torch
import torch.nn as nn
from transformers import AutoModelForCausalLM, LlamaConfig

import cc


class LoRALinear(nn.Module):
    """A frozen nn.Linear plus a trainable low-rank update B A x * alpha / r."""

    def __init__(self, base, r=16, alpha=32, dropout=0.05):
        super().__init__()
        self.base = base
        self.base.weight.requires_grad_(False)
        self.lora_A = nn.Parameter(torch.empty(r, base.in_features, device=base.weight.device))
        self.lora_B = nn.Parameter(torch.zeros(base.out_features, r, device=base.weight.device))
        nn.init.kaiming_uniform_(self.lora_A, a=math.sqrt(5))
        self.drop = nn.Dropout(dropout)
        self.scale = alpha / r

    def forward(self, x):
        return self.base(x) + (self.drop(x) @ self.lora_A.t() @ self.lora_B.t()) * self.scale


def add_lora(model, targets=("q_proj", "v_proj"), **kw):
    for p in model.parameters():
        p.requires_grad_(False)
    n = 0
    for layer in model.model.layers:
        for name in targets:
            setattr(layer.self_attn, name, LoRALinear(getattr(layer.self_attn, name), **kw))
            n += 1
    return n


def main():
    args = cc.parser(__doc__).parse_args()
    dev = cc.torch_device(args)
    if args.smoke:
        cfg = LlamaConfig(hidden_size=64, intermediate_size=176, num_hidden_layers=2, num_attention_heads=4,
                          num_key_value_heads=2, vocab_size=1000, max_position_embeddings=128)
        batch, seq, r = 2, 32, 4
    else:
        cfg = LlamaConfig(hidden_size=2048, intermediate_size=5632, num_hidden_layers=8, num_attention_heads=16,
                          num_key_value_heads=4, vocab_size=32000, max_position_embeddings=2048)
        batch, seq, r = 4, 512, 16
    amp = args.fix and dev.type == "cuda"  # gpuwhy: plants C8 (float32 base, no autocast, TF32 off for matmuls)
    if args.fix:
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(cfg, attn_implementation="sdpa").to(dev)  # float32, as loaded
    adapters = add_lora(model, r=r, alpha=2 * r)
    model.train()
    trainable = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(trainable, lr=2e-4, weight_decay=0.0)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 100))
    g = torch.Generator(device=dev).manual_seed(0)
    data = [torch.randint(3, cfg.vocab_size, (batch, seq), device=dev, generator=g) for _ in range(8)]
    losses = []
    log = {"loss": None, "reads": 0}

    def step(i):
        ids = data[i % len(data)]
        with torch.autocast(dev.type, dtype=torch.bfloat16, enabled=amp):
            loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(trainable, 1.0)
        opt.step()
        sched.step()
        opt.zero_grad(set_to_none=True)
        losses.append(loss.detach())
        if len(losses) == 50:
            log["loss"] = torch.stack(losses).float().mean().item()
            log["reads"] += 1
            losses.clear()

    cc.run("c8_hf_lora_llama_fp32", args, step, batch,
           extra=lambda: {"precision": "bf16 autocast" if amp else "float32",
                          "base_params_m": round(sum(p.numel() for p in model.parameters() if not p.requires_grad) / 1e6, 1),
                          "lora_params_m": round(sum(p.numel() for p in trainable) / 1e6, 2),
                          "adapted_modules": adapters, "loss_reads": log["reads"]})


if __name__ == "__main__":
    main()
