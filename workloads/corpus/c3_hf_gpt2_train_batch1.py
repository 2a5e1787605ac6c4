"""C3 small batch (training): a GPT-2 of 6 layers (HF transformers, hidden 768, random
weights from a GPT2Config) trained as a language model on one sequence of 128 tokens a
step (bf16 autocast, fused AdamW): its GEMMs cover a few of the H200's 132 SMs and most
kernels are shorter than their launch.

--fix: gpuwhy's C3 advice, 32 sequences a step (learning rate scaled); GW_FIX_BATCH times
another batch.
"""
import torch
from transformers import GPT2Config, GPT2LMHeadModel

import cc


def main():
    args = cc.parser(__doc__).parse_args()
    dev = cc.torch_device(args)
    seq = 128
    batch = cc.fix_batch(32) if args.fix else 1  # gpuwhy: plants C3 (one sequence a step)
    cfg = GPT2Config(n_layer=6, n_embd=768, n_head=12, n_positions=256, vocab_size=50257)
    if args.smoke:
        cfg = GPT2Config(n_layer=2, n_embd=64, n_head=4, n_positions=256, vocab_size=2000)
        seq = 32
    model = GPT2LMHeadModel(cfg).to(dev)
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4 * (batch / 8) ** 0.5, fused=dev.type == "cuda")
    gen = torch.Generator(device=dev).manual_seed(0)

    def step(i):
        ids = torch.randint(0, cfg.vocab_size, (batch, seq), device=dev, generator=gen)
        with torch.autocast(dev.type, dtype=torch.bfloat16):
            out = model(input_ids=ids, labels=ids)
        out.loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    cc.run("c3_hf_gpt2_train_batch1", args, step, batch)


if __name__ == "__main__":
    main()
