"""Healthy control (HF transformers, speech recognition fine-tuning): a wav2vec 2.0 base model
(HF Wav2Vec2ForCTC from a Wav2Vec2Config: the 7-layer convolutional feature encoder with
GroupNorm, 12 transformer layers of width 768 with 12 heads and a convolutional positional
embedding, SDPA attention; 94 M parameters, random weights standing in for the pretrained
checkpoint) fine-tuned with the CTC loss on a 32-character vocabulary, the way the HF speech
recognition examples do it: the feature encoder frozen (model.freeze_feature_encoder()),
SpecAugment-style time masking at the config's default rate, layerdrop 0.1, bf16 autocast,
fused AdamW with warm-up, gradient clipping at 1.0, batch 32 utterances of 10 s at 16 kHz
(160,000 samples, 499 frames each; synthetic speech-like signals normalized as the feature
extractor does, character labels of 120-160 tokens padded with -100; 8 batches made once on
the GPU and cycled); model(input_values, labels=labels) computes the loss. The loss is read
every 50 steps.

About 11 TFLOP a step (the frozen feature encoder's 1.6 TFLOP forward, the transformer's ~9
TFLOP forward and backward), ~40 ms of large kernels. The model's own loss code copies small
tensors between host and device (the time mask from NumPy, the label selection and lengths for
CTC), a few host waits a step at points where the host is ahead of the GPU by the whole
forward, and the backward is then issued by autograd's C++ engine: the GPU should stay busy.

--fix: nothing (control).

Written blind for the juliet batch.
"""
import math

import torch

import cc


def make_batches(n, b, samples, max_label, vocab, dev, g):
    out = []
    t = torch.arange(samples, device=dev, dtype=torch.float32) / 16_000
    for _ in range(n):
        f0 = 100 + 120 * torch.rand(b, 1, device=dev, generator=g)
        env = 0.5 + 0.5 * torch.sin(2 * math.pi * (3 + 4 * torch.rand(b, 1, device=dev, generator=g)) * t)
        x = sum(torch.sin(2 * math.pi * k * f0 * t + k) / k for k in range(1, 6)) * env
        x = x + 0.1 * torch.randn(b, samples, device=dev, generator=g)
        x = (x - x.mean(1, keepdim=True)) / (x.std(1, keepdim=True) + 1e-7)      # the feature extractor's normalization
        lengths = torch.randint(max_label * 3 // 4, max_label + 1, (b,), device=dev, generator=g)
        labels = torch.randint(1, vocab, (b, max_label), device=dev, generator=g)
        labels = labels.masked_fill(torch.arange(max_label, device=dev)[None] >= lengths[:, None], -100)
        out.append((x, labels))
    return out


def main():
    args = cc.parser(__doc__, warmup=5).parse_args()
    from transformers import Wav2Vec2Config, Wav2Vec2ForCTC

    dev = cc.torch_device(args)
    gpu = dev.type == "cuda"
    if args.smoke:
        cfg = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
                   conv_dim=(16,) * 7, num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=2)
        batch, seconds, max_label = 2, 1.0, 12
    else:
        cfg = {}
        batch, seconds, max_label = 32, 10.0, 160
    config = Wav2Vec2Config(**cfg, vocab_size=32, pad_token_id=0, ctc_loss_reduction="mean", ctc_zero_infinity=True,
                            layerdrop=0.1, mask_time_prob=0.05, attn_implementation="sdpa")
    torch.manual_seed(0)
    with torch.device(dev):
        model = Wav2Vec2ForCTC(config)
    model.freeze_feature_encoder()
    model.train()
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=1e-4, weight_decay=0.005, fused=gpu)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 500))
    g = torch.Generator(device=dev).manual_seed(0)
    batches = make_batches(2 if args.smoke else 8, batch, int(16_000 * seconds), max_label, 32, dev, g)
    st = {"acc": torch.zeros((), device=dev), "loss": None, "reads": 0}

    def step(i):
        x, labels = batches[i % len(batches)]
        with torch.autocast(dev.type, dtype=torch.bfloat16, enabled=gpu):
            out = model(input_values=x, labels=labels)
        opt.zero_grad(set_to_none=True)
        out.loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        sched.step()
        st["acc"] += out.loss.detach()
        if i % 50 == 49:
            st["loss"] = st["acc"].item() / 50
            st["acc"].zero_()
            st["reads"] += 1

    cc.run("h_hf_wav2vec2_ctc_finetune_bf16", args, step, batch,
           extra=lambda: {"audio_seconds_per_step": batch * seconds, "loss": st["loss"], "loss_reads": st["reads"],
                          "trainable_params_m": round(sum(p.numel() for p in params) / 1e6, 1),
                          "params_m": round(sum(p.numel() for p in model.parameters()) / 1e6, 1)})


if __name__ == "__main__":
    main()
