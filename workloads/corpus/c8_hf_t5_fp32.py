"""C8 FP32 math (HF transformers): a T5-small-sized encoder-decoder (T5ForConditionalGeneration
from a T5Config: 6 + 6 layers, d_model 512, 8 heads, d_ff 2048, relative position buckets,
vocabulary 32128; random weights) trained seq2seq on token ids made on the GPU (batch 64
inputs of 512 tokens, 128-token targets, the targets a fixed function of the inputs so the
loss falls), AdamW (fused), linear warm-up, gradient clipping; the loss kept on the GPU and
read every 50 steps. The model runs in float32 with TF32 off
(torch.set_float32_matmul_precision("highest"), as scripts set it for reproducible
numbers, and PyTorch's default for matmuls): every GEMM of the forward and backward runs
on the CUDA cores in full FP32, not on the tensor cores.

--fix: gpuwhy's C8 advice: the forward pass and the loss under torch.autocast with bfloat16
(T5 is known to overflow in float16), and TF32 allowed for what stays in float32
(set_float32_matmul_precision("high")); parameters and optimizer stay in float32.

Written blind for the quarry batch.
"""
import torch
from transformers import T5Config, T5ForConditionalGeneration

import cc


def main():
    args = cc.parser(__doc__).parse_args()
    dev = cc.torch_device(args)
    if args.smoke:
        cfg = T5Config(vocab_size=1000, d_model=64, d_kv=16, d_ff=128, num_layers=2, num_decoder_layers=2,
                       num_heads=4, dropout_rate=0.1, decoder_start_token_id=0, pad_token_id=0)
        batch, src, tgt = 4, 64, 16
    else:
        cfg = T5Config(vocab_size=32128, d_model=512, d_kv=64, d_ff=2048, num_layers=6, num_decoder_layers=6,
                       num_heads=8, relative_attention_num_buckets=32, dropout_rate=0.1,
                       feed_forward_proj="relu", decoder_start_token_id=0, pad_token_id=0)
        batch, src, tgt = 64, 512, 128
    if args.fix:
        torch.set_float32_matmul_precision("high")  # TF32 for what stays in float32
    else:
        torch.set_float32_matmul_precision("highest")
    model = T5ForConditionalGeneration(cfg).to(dev).train()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.01, fused=dev.type == "cuda")
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 200))
    g = torch.Generator(device=dev).manual_seed(0)
    data = []
    for _ in range(4):
        ids = torch.randint(100, cfg.vocab_size, (batch, src), device=dev, generator=g)
        # target: every fourth input token, reversed, shifted into another id range
        labels = (ids[:, ::4][:, :tgt].flip(1) * 7 + 13) % (cfg.vocab_size - 100) + 100
        data.append((ids, labels.contiguous()))
    losses = []
    log = {"loss": None}

    def step(i):
        ids, labels = data[i % len(data)]
        if args.fix:
            with torch.autocast(dev.type, dtype=torch.bfloat16):
                loss = model(input_ids=ids, labels=labels).loss
        else:
            loss = model(input_ids=ids, labels=labels).loss  # gpuwhy: plants C8 (FP32 forward and backward, TF32 off: GEMMs on the CUDA cores)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        losses.append(loss.detach())
        if len(losses) == 50:
            log["loss"] = torch.stack(losses).mean().item()
            losses.clear()

    n_params = sum(p.numel() for p in model.parameters())
    cc.run("c8_hf_t5_fp32", args, step, batch,
           extra=lambda: {"params_m": round(n_params / 1e6, 1), "autocast": "bfloat16" if args.fix else None,
                          "matmul_precision": torch.get_float32_matmul_precision()})


if __name__ == "__main__":
    main()
