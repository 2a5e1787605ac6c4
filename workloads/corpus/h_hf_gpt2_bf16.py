"""healthy: GPT-2 language model (HF transformers, random weights from a config), big batch,
bf16 autocast, fused AdamW, SDPA attention; tokens made on the GPU, nothing read back.

--fix changes nothing: this is a control. gpuwhy must raise no finding at warning or above.

--alt: torch.compile(model) (default mode: Inductor fuses the elementwise chains gpuwhy ranks
first as C11: gelu_new's pow/mul/add/tanh, the residual adds, autocast's casts); at least 5
warm-up iterations unless --warmup is given, so compilation stays out of the timed part.
"""
import torch
from transformers import AutoModelForCausalLM, GPT2Config

import cc


def main():
    args = cc.parser(__doc__).parse_args()
    dev = cc.torch_device(args)
    if args.smoke:
        cfg, batch, seq = GPT2Config(n_layer=2, n_embd=64, n_head=4, n_positions=64, vocab_size=1000, bos_token_id=0, eos_token_id=0), 2, 32
    else:
        cfg, batch, seq = GPT2Config(n_layer=6, n_embd=1024, n_head=16, n_positions=512, vocab_size=32000), 32, 512
    model = AutoModelForCausalLM.from_config(cfg, attn_implementation="sdpa").to(dev)
    model.train()
    if args.alt:  # C11 fix: fuse the elementwise chains (no CUDA graphs: C11 is not launch-bound)
        model = torch.compile(model, mode=cc.alt_setup(args, "default", 5))
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, fused=dev.type == "cuda")
    gen = torch.Generator(device=dev).manual_seed(0)

    def step(i):
        ids = torch.randint(0, cfg.vocab_size, (batch, seq), device=dev, generator=gen)
        with torch.autocast(dev.type, dtype=torch.bfloat16):
            loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    cc.run("h_hf_gpt2_bf16", args, step, batch)


if __name__ == "__main__":
    main()
