"""Healthy control (masked-autoencoder pre-training, HF transformers): ViTMAE-Base built from
a ViTMAEConfig (random weights: encoder 12 layers, d=768, 12 heads; decoder 8 layers, d=512,
16 heads; patch 16 at 224 px, mask ratio 0.75, normalized-pixel loss, SDPA attention) in
plain PyTorch, bf16 autocast, fused AdamW with the MAE recipe's betas (0.9, 0.95) and weight
decay 0.05, a per-step warm-up schedule; batches of 256 images, already normalized on the
GPU (8 made once and cycled: the data pipeline is not what is measured); the loss read
every 50 steps. Each step is about 14 TFLOP of large bf16 GEMMs (the encoder over the 49
kept patches of each image, the decoder over all 197 tokens) and fused attention: the GPU
should be busy the whole step.

--fix: nothing (control).

Written blind for the peak batch.
"""
import torch
from transformers import ViTMAEConfig, ViTMAEForPreTraining

import cc


def main():
    args = cc.parser(__doc__, warmup=5).parse_args()
    dev = cc.torch_device(args)
    torch.backends.cuda.matmul.allow_tf32 = True
    if args.smoke:
        cfg = ViTMAEConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128,
                           decoder_hidden_size=32, decoder_num_hidden_layers=1, decoder_num_attention_heads=4,
                           decoder_intermediate_size=64, image_size=64, patch_size=16, norm_pix_loss=True)
        batch = 4
    else:
        cfg = ViTMAEConfig(image_size=224, patch_size=16, mask_ratio=0.75, norm_pix_loss=True)
        batch = 256
    cfg._attn_implementation = "sdpa"
    torch.manual_seed(0)
    model = ViTMAEForPreTraining(cfg).to(dev).train()
    decay = [p for n, p in model.named_parameters() if p.ndim > 1]
    no_decay = [p for n, p in model.named_parameters() if p.ndim <= 1]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.05}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=1.5e-4, betas=(0.9, 0.95), fused=dev.type == "cuda")
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 2000))
    g = torch.Generator(device=dev).manual_seed(0)
    px = cfg.image_size
    data = [torch.randn(batch, 3, px, px, device=dev, generator=g) for _ in range(8)]
    amp = dev.type == "cuda"
    losses = []
    log = {"loss": None}

    def step(i):
        with torch.autocast(dev.type, dtype=torch.bfloat16, enabled=amp):
            loss = model(pixel_values=data[i % len(data)]).loss
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        losses.append(loss.detach())
        if len(losses) == 50:
            log["loss"] = float(torch.stack(losses).mean())
            losses.clear()

    cc.run("h_hf_vitmae_pretrain_bf16", args, step, batch, extra={"mask_ratio": cfg.mask_ratio})


if __name__ == "__main__":
    main()
