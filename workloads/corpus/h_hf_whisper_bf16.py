"""Healthy control (speech recognition, sequence to sequence, HF transformers): training a
Whisper-small-sized model built from a WhisperConfig (random weights: 80 mel bins, two
convolutions to 1,500 encoder positions, 12 encoder and 12 decoder layers, d=768, 12
heads, MLP 3072, vocabulary 51865 tied; 242 M parameters; SDPA attention) on 30 s log-mel
inputs (16 x 80 x 3000) and 128-token transcripts, bf16 autocast, fused AdamW (no decay on
biases and norms), linear warm-up, gradient clipping at 1.0 (clip_grad_norm_ with the
norm left on the GPU), use_cache=False; batches made once on the GPU and cycled (4 of
them), the loss read every 50 steps. About 21 TFLOP a step, most of it the encoder's
GEMMs and attention over 24,000 positions, plus the decoder's cross-attention over them:
the GPU should be busy the whole step.

--fix: nothing (control).

Written blind for the canyon batch.
"""
import torch
from transformers import WhisperConfig, WhisperForConditionalGeneration

import cc


def main():
    args = cc.parser(__doc__, warmup=5).parse_args()
    dev = cc.torch_device(args)
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    if args.smoke:
        cfg = WhisperConfig(vocab_size=500, num_mel_bins=16, d_model=64, encoder_layers=1, decoder_layers=1,
                            encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=128,
                            decoder_ffn_dim=128, max_source_positions=50, max_target_positions=32,
                            pad_token_id=1, bos_token_id=0, eos_token_id=2, decoder_start_token_id=0)
        batch, label_len = 2, 16
    else:
        cfg = WhisperConfig(vocab_size=51865, num_mel_bins=80, d_model=768, encoder_layers=12, decoder_layers=12,
                            encoder_attention_heads=12, decoder_attention_heads=12, encoder_ffn_dim=3072,
                            decoder_ffn_dim=3072, max_source_positions=1500, max_target_positions=448,
                            pad_token_id=50257, bos_token_id=50257, eos_token_id=50257,
                            decoder_start_token_id=50258)
        batch, label_len = 16, 128
    cfg._attn_implementation = "sdpa"
    cfg.use_cache = False
    torch.manual_seed(0)
    model = WhisperForConditionalGeneration(cfg).to(dev).train()
    decay = [p for n, p in model.named_parameters() if p.ndim > 1]
    no_decay = [p for n, p in model.named_parameters() if p.ndim <= 1]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=1e-4, betas=(0.9, 0.98), fused=dev.type == "cuda")
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 500))
    fwd = model
    if args.alt:  # C4's fix: CUDA graphs (reduce-overhead) over the model's forward (with the loss) and backward
        fwd = torch.compile(model, mode=cc.alt_setup(args, "reduce-overhead", 10), dynamic=False)
    g = torch.Generator(device=dev).manual_seed(0)
    frames = 2 * cfg.max_source_positions
    data = []
    for _ in range(4):
        mel = torch.randn(batch, cfg.num_mel_bins, frames, device=dev, generator=g) * 0.5
        labels = torch.randint(3, min(cfg.vocab_size, 50257), (batch, label_len), device=dev, generator=g)
        data.append((mel, labels))
    amp = dev.type == "cuda"
    losses = []
    log = {"loss": None, "reads": 0}

    def step(i):
        mel, labels = data[i % len(data)]
        with torch.autocast(dev.type, dtype=torch.bfloat16, enabled=amp):
            loss = fwd(input_features=mel, labels=labels, use_cache=False).loss
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        losses.append(loss.detach().clone() if args.alt else loss.detach())
        if len(losses) == 50:
            log["loss"] = float(torch.stack(losses).mean())
            log["reads"] += 1
            losses.clear()

    n_params = sum(p.numel() for p in model.parameters())
    cc.run("h_hf_whisper_bf16", args, step, batch,
           extra=lambda: {"params_m": round(n_params / 1e6, 1), "encoder_positions": cfg.max_source_positions,
                          "label_len": label_len, "loss_reads": log["reads"]})


if __name__ == "__main__":
    main()
