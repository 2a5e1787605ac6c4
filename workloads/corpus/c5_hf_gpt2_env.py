"""C5 CUDA_LAUNCH_BLOCKING=1 left on: a GPT-2 training script (HF transformers, random
weights) that sets the variable at the top, left over from debugging a device-side assert.
Every kernel launch then waits for the kernel, so Python and the GPU take turns.

--fix: the line is gone (the script does not set it).
"""
import os
import sys

if "--fix" not in sys.argv:
    os.environ["CUDA_LAUNCH_BLOCKING"] = "1"  # gpuwhy: plants C5 (before CUDA starts)

import torch  # noqa: E402
from transformers import AutoModelForCausalLM, GPT2Config  # noqa: E402

import cc  # noqa: E402


def main():
    args = cc.parser(__doc__).parse_args()
    dev = cc.torch_device(args)
    if args.smoke:
        cfg, batch, seq = GPT2Config(n_layer=2, n_embd=64, n_head=4, n_positions=64, vocab_size=1000,
                                     bos_token_id=0, eos_token_id=0), 2, 32
    else:
        cfg, batch, seq = GPT2Config(n_layer=6, n_embd=768, n_head=12, n_positions=256, vocab_size=32000), 16, 256
    model = AutoModelForCausalLM.from_config(cfg).to(dev)
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, foreach=True)
    gen = torch.Generator(device=dev).manual_seed(0)

    def step(i):
        ids = torch.randint(0, cfg.vocab_size, (batch, seq), device=dev, generator=gen)
        with torch.autocast(dev.type, dtype=torch.bfloat16):
            loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)

    cc.run("c5_hf_gpt2_env", args, step, batch)


if __name__ == "__main__":
    main()
