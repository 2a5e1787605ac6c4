"""C14 checkpoint with its device-to-host copies: a GPT-2 language model (HF transformers,
built from a config: 4 layers, d=512, vocab 32000, about 29M parameters; bf16 autocast, fused
AdamW) saved every 20 steps the way a Trainer-less script does it: model.save_pretrained
(safetensors: each tensor copied to the host, then written), torch.save of the optimizer
state (its GPU tensors pickled through host copies) and os.sync() so the checkpoint is on
disk before training goes on. About 350 MB a checkpoint, under GW_CORPUS_CACHE; the stall
depends on the disk.

--fix: a checkpoint every 1000 steps (outside the measured window) and no os.sync(),
gpuwhy's C14 advice for checkpoint writes (less often; no forced writeback in the loop).
"""
import os

import torch
from transformers import AutoModelForCausalLM, GPT2Config

import cc


def save_checkpoint(model, opt, step, root, sync=True):
    d = os.path.join(root, "checkpoint-last")
    model.save_pretrained(d)
    torch.save({"optimizer": opt.state_dict(), "step": step}, os.path.join(d, "trainer_state.pt"))
    if sync:
        os.sync()  # make sure it is on disk


def main():
    args = cc.parser(__doc__).parse_args()
    dev = cc.torch_device(args)
    if args.smoke:
        cfg, batch, seq = GPT2Config(n_layer=2, n_embd=64, n_head=4, n_positions=64, vocab_size=1000), 2, 64
    else:
        cfg, batch, seq = GPT2Config(n_layer=4, n_embd=512, n_head=8, n_positions=512, vocab_size=32000), 16, 512
    model = AutoModelForCausalLM.from_config(cfg).to(dev)
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.1, fused=dev.type == "cuda")
    g = torch.Generator(device=dev).manual_seed(0)
    data = [torch.randint(0, cfg.vocab_size, (batch, seq), device=dev, generator=g) for _ in range(8)]
    root = os.path.join(cc.CACHE, "ckpt", "c14_hf_ckpt_os_sync")
    os.makedirs(root, exist_ok=True)
    save_every = 1000 if args.fix else (2 if args.smoke else 20)

    def step(i):
        ids = data[i % 8]
        with torch.autocast(dev.type, dtype=torch.bfloat16):
            loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        if (i + 1) % save_every == 0:
            save_checkpoint(model, opt, i, root, sync=not args.fix)  # gpuwhy: plants C14 (save_pretrained + optimizer + os.sync every 20 steps)

    cc.run("c14_hf_ckpt_os_sync", args, step, batch)


if __name__ == "__main__":
    main()
