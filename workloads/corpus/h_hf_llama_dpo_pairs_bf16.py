"""Healthy control (HF transformers, preference optimization): Direct Preference Optimization
of a small LLaMA-architecture chat model, written the way TRL's DPOTrainer computes it: a
policy LlamaForCausalLM from a LlamaConfig (16 layers of width 1,024, 16 heads, SwiGLU MLP
of 2,816, RoPE, RMSNorm, vocabulary 32,000, untied head; 271 M parameters, random weights
standing in for the SFT checkpoint, SDPA attention) trained with float32 master weights under
bf16 autocast, and a frozen copy of it as the reference model (bf16, eval, inference_mode);
batch 8 preference pairs, each prompt (96-256 tokens) with its chosen and its rejected
response (64-256 tokens) as two right-padded sequences of 512 (16 sequences, 8,192 tokens);
the summed log-probabilities of the response tokens (prompt and padding masked) from both
models, the DPO loss -log sigmoid(beta (policy margin - reference margin)) at beta 0.1, fused
AdamW (lr 5e-7, warm-up) with gradient clipping at 1.0; the loss, reward accuracy and
margins summed on the GPU and read every 50 steps. 32 batches of synthetic pairs made once on
the GPU and cycled.

About 16.7 TFLOP a step (FlopCounterMode: the policy's forward and backward 12.5, the
reference's forward 4.2) in large GEMMs, plus the float32 log-softmax over 8,192 x 32,000
logits for each model: ~40-55 ms of GPU work against ~10-15 ms of host issue. The only host
reads are the library's: transformers' SDPA mask helper checks the padding mask
(padding_mask.all()) at the start of each forward, where the host is ahead by a whole
forward; the loop itself reads nothing: GPU-bound, nothing to fix.

--fix: nothing (control).

Written blind for the oscar batch.
"""
import copy

import torch
import torch.nn.functional as F
from transformers import AutoModelForCausalLM, LlamaConfig

import cc


def make_pairs(n_batches, pairs, seq, vocab, g, dev, smoke):
    """Right-padded chosen/rejected sequences with a response mask (1 on the response tokens)."""
    out = []
    lo_p, hi_p, lo_r, hi_r = (8, 16, 4, 12) if smoke else (96, 256, 64, 256)
    for _ in range(n_batches):
        ids = torch.randint(3, vocab, (2 * pairs, seq), device=dev, generator=g)
        attn = torch.zeros(2 * pairs, seq, dtype=torch.long, device=dev)
        resp = torch.zeros(2 * pairs, seq, dtype=torch.bool, device=dev)
        plen = torch.randint(lo_p, hi_p + 1, (pairs,), generator=torch.Generator().manual_seed(len(out)))
        for k in range(pairs):
            p = int(plen[k])
            ids[pairs + k, :p] = ids[k, :p]                     # the rejected response shares the prompt
            for row in (k, pairs + k):
                r = int(torch.randint(lo_r, min(hi_r, seq - p) + 1, (1,), generator=torch.Generator().manual_seed(row + 97 * len(out))))
                attn[row, :p + r] = 1
                resp[row, p:p + r] = True
        out.append((ids * attn, attn, resp))
    return out


def main():
    args = cc.parser(__doc__, warmup=6).parse_args()
    dev = cc.torch_device(args)
    gpu = dev.type == "cuda"
    if args.smoke:
        cfg = LlamaConfig(vocab_size=1000, hidden_size=64, intermediate_size=176, num_hidden_layers=2,
                          num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=128)
        pairs, seq, n_batches = 2, 48, 4
    else:
        cfg = LlamaConfig(vocab_size=32_000, hidden_size=1024, intermediate_size=2816, num_hidden_layers=16,
                          num_attention_heads=16, num_key_value_heads=16, max_position_embeddings=2048,
                          tie_word_embeddings=False)
        pairs, seq, n_batches = 8, 512, 32
    beta = 0.1
    torch.manual_seed(0)
    policy = AutoModelForCausalLM.from_config(cfg, attn_implementation="sdpa").to(dev).train()
    reference = copy.deepcopy(policy).to(dtype=torch.bfloat16 if gpu else torch.float32).eval()
    for p in reference.parameters():
        p.requires_grad_(False)
    opt = torch.optim.AdamW(policy.parameters(), lr=5e-7, weight_decay=0.0, fused=gpu)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 150))
    g = torch.Generator(device=dev).manual_seed(1)
    batches = make_pairs(n_batches, pairs, seq, cfg.vocab_size, g, dev, args.smoke)
    amp = torch.autocast(dev.type, dtype=torch.bfloat16, enabled=gpu)
    pol_fwd, ref_fwd = policy, reference
    if args.alt:  # C11's fix: both models under torch.compile (default mode: Inductor fuses the elementwise chains)
        mode = cc.alt_setup(args, "default", 6)
        pol_fwd, ref_fwd = torch.compile(policy, mode=mode), torch.compile(reference, mode=mode)

    def response_logps(model, ids, attn, resp):
        logits = model(input_ids=ids, attention_mask=attn).logits[:, :-1].float()
        lp = torch.gather(logits.log_softmax(-1), 2, ids[:, 1:, None]).squeeze(2)
        return (lp * resp[:, 1:]).sum(-1)

    st = {"loss": torch.zeros((), device=dev), "acc": torch.zeros((), device=dev),
          "margin": torch.zeros((), device=dev), "last": None, "reward_acc": None, "reward_margin": None, "reads": 0}

    def step(i):
        ids, attn, resp = batches[i % n_batches]
        with torch.inference_mode():
            ref = response_logps(ref_fwd, ids, attn, resp)
        with amp:
            pol = response_logps(pol_fwd, ids, attn, resp)
        ref = ref.clone()
        pi_margin = pol[:pairs] - pol[pairs:]
        ref_margin = ref[:pairs] - ref[pairs:]
        logits = beta * (pi_margin - ref_margin)
        loss = -F.logsigmoid(logits).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(policy.parameters(), 1.0, foreach=True)
        opt.step()
        sched.step()
        st["loss"] += loss.detach()
        st["acc"] += (logits.detach() > 0).float().mean()
        st["margin"] += logits.detach().mean() / beta
        if i % 50 == 49:
            st["last"], st["reward_acc"], st["reward_margin"] = (st[k].item() / 50 for k in ("loss", "acc", "margin"))
            for k in ("loss", "acc", "margin"):
                st[k].zero_()
            st["reads"] += 1

    cc.run("h_hf_llama_dpo_pairs_bf16", args, step, pairs,
           extra=lambda: {"pairs": pairs, "seq": seq, "beta": beta, "loss": st["last"], "reward_acc": st["reward_acc"],
                          "reward_margin": st["reward_margin"], "loss_reads": st["reads"],
                          "params_m": round(sum(p.numel() for p in policy.parameters()) / 1e6, 1),
                          "attn_implementation": policy.config._attn_implementation})


if __name__ == "__main__":
    main()
