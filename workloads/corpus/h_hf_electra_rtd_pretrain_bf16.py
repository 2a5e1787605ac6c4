"""Healthy control (HF transformers, replaced-token-detection pre-training): ELECTRA-base as the
paper and its PyTorch re-implementations train it: a discriminator ElectraForPreTraining from an
ElectraConfig the size of google/electra-base-discriminator (12 layers of width 768, 12 heads,
3,072, vocabulary 30,522; SDPA) and a generator ElectraForMaskedLM a third of its width (12
layers of width 256, 4 heads, 1,024, embeddings of 768 projected), the token and position
embeddings shared and the generator's output layer tied to them; random weights, float32 master
weights under bf16 autocast; batch 32 packed sequences of 512 tokens (no padding, so no
attention mask), 64 batches of synthetic token ids made once on the GPU and cycled.

Each step masks 76 positions a sequence (15%, chosen on the GPU by the top-k of random scores,
so the count is fixed as ELECTRA's max_predictions_per_seq makes it), runs the generator,
takes its hidden states at the masked positions only for the MLM head and the loss, samples
replacements there with the Gumbel-max trick on the GPU, scatters them into the sequence,
runs the discriminator over all 16,384 tokens with the binary replaced/original loss, and
minimizes the generator's MLM loss plus 50 times the discriminator's (fused AdamW, lr 2e-4
with warm-up, weight decay 0.01, gradient clipping at 1.0, foreach). The losses and the
discriminator's accuracy are summed on the GPU and read every 50 steps; nothing else leaves
the device.

About 10.9 TFLOP a step (FlopCounterMode: discriminator 9.3, generator 1.6; 119 M parameters
with the shared embeddings counted once), ~30-40 ms of GPU work against ~12-16 ms of host issue
for the two models: GPU-bound, nothing to fix. (Two
models and a sampling step between them: a naive reading could call the generator's
smaller kernels launch-bound.)

--fix: nothing (control).

Written blind for the papa batch.
"""
import torch
import torch.nn.functional as F
from transformers import ElectraConfig, ElectraForMaskedLM, ElectraForPreTraining

import cc


def main():
    args = cc.parser(__doc__, warmup=5).parse_args()
    dev = cc.torch_device(args)
    gpu = dev.type == "cuda"
    if args.smoke:
        vocab, d, d_gen, layers, heads, heads_gen, ff, ff_gen, batch, seq, n_mask = 1000, 64, 32, 2, 4, 2, 128, 64, 4, 64, 10
    else:
        vocab, d, d_gen, layers, heads, heads_gen, ff, ff_gen, batch, seq, n_mask = \
            30_522, 768, 256, 12, 12, 4, 3072, 1024, 32, 512, 76
    mask_id, disc_weight = 103, 50.0
    common = dict(vocab_size=vocab, embedding_size=d, num_hidden_layers=layers, max_position_embeddings=512)
    disc_cfg = ElectraConfig(hidden_size=d, num_attention_heads=heads, intermediate_size=ff, **common)
    gen_cfg = ElectraConfig(hidden_size=d_gen, num_attention_heads=heads_gen, intermediate_size=ff_gen, **common)
    torch.manual_seed(0)
    disc = ElectraForPreTraining._from_config(disc_cfg, attn_implementation="sdpa")
    gen = ElectraForMaskedLM._from_config(gen_cfg, attn_implementation="sdpa")
    gen.electra.embeddings = disc.electra.embeddings              # shared token and position embeddings
    gen.generator_lm_head.weight = disc.electra.embeddings.word_embeddings.weight
    disc.to(dev).train()
    gen.to(dev).train()
    params = list({id(p): p for p in list(disc.parameters()) + list(gen.parameters())}.values())
    decay = [p for p in params if p.ndim >= 2]
    no_decay = [p for p in params if p.ndim < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=2e-4, betas=(0.9, 0.999), eps=1e-6, fused=gpu)
    warm, total = 10_000, 766_000
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min((s + 1) / warm, max(0.0, (total - s) / (total - warm))))
    g = torch.Generator(device=dev).manual_seed(1)
    batches = [torch.randint(1000 if not args.smoke else 200, vocab, (batch, seq), device=dev, generator=g) for _ in range(64)]
    amp = torch.autocast(dev.type, dtype=torch.bfloat16, enabled=gpu)
    rows = torch.arange(batch, device=dev)[:, None]
    st = {"acc": torch.zeros(3, device=dev), "stats": None, "reads": 0}

    def step(i):
        ids = batches[i % len(batches)]
        pos = torch.rand(batch, seq, device=dev, generator=g).topk(n_mask, dim=1).indices   # (B, 76) masked positions
        original = ids[rows, pos]
        masked = ids.scatter(1, pos, mask_id)
        with amp:
            h = gen.electra(input_ids=masked).last_hidden_state[rows, pos]                 # (B, 76, 256)
            gen_logits = gen.generator_lm_head(gen.generator_predictions(h)).float()
            gen_loss = F.cross_entropy(gen_logits.view(-1, vocab), original.view(-1))
            with torch.no_grad():
                u = torch.rand(gen_logits.shape, device=dev, generator=g).clamp_(1e-9, 1.0)
                sampled = (gen_logits - torch.log(-torch.log(u))).argmax(-1)                   # Gumbel-max sample
            corrupted = ids.scatter(1, pos, sampled)
            labels = (corrupted != ids).float()
            disc_logits = disc(input_ids=corrupted).logits.float()
            disc_loss = F.binary_cross_entropy_with_logits(disc_logits, labels)
            loss = gen_loss + disc_weight * disc_loss
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0, foreach=True)
        opt.step()
        sched.step()
        with torch.no_grad():
            acc = ((disc_logits > 0).float() == labels).float().mean()
            st["acc"] += torch.stack([gen_loss.detach(), disc_loss.detach(), acc])
        if i % 50 == 49:
            s = (st["acc"] / 50).tolist()
            st["stats"] = {"gen_loss": round(s[0], 4), "disc_loss": round(s[1], 4), "disc_acc": round(s[2], 4)}
            st["acc"].zero_()
            st["reads"] += 1

    cc.run("h_hf_electra_rtd_pretrain_bf16", args, step, batch,
           extra=lambda: {"tokens_per_step": batch * seq, "masked_per_seq": n_mask, "stats": st["stats"],
                          "loss_reads": st["reads"], "params_m": round(sum(p.numel() for p in params) / 1e6, 1),
                          "attn_implementation": disc.config._attn_implementation})


if __name__ == "__main__":
    main()
