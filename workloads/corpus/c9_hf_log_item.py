"""C9 sync points: a GPT-2 fine-tuning loop (HF transformers, random weights) whose
logging branch runs every step (log_every=1 from a config default): loss.item() and the
clipped gradient norm's .item() make the host wait for the GPU, so the collator's tokenizing
and padding of the next variable-length batch (on the training thread) can no longer overlap
the GPU's step.

--fix: losses and norms accumulate on the GPU; the log line is written every 50 steps.
"""
import logging

import numpy as np
import torch
from transformers import AutoModelForCausalLM, GPT2Config

import cc

log = logging.getLogger("train")


def collate(lines, vocab, max_len):
    """Word-level tokenization of raw lines, padded to the batch's longest (a multiple of 8):
    variable sequence lengths, made on the training thread."""
    seqs = [[vocab.get(w, 1) for w in line.split()][:max_len] for line in lines]
    width = -(-max(len(s) for s in seqs) // 8) * 8
    ids = np.zeros((len(seqs), width), np.int64)
    mask = np.zeros((len(seqs), width), np.int64)
    for k, s in enumerate(seqs):
        ids[k, : len(s)] = s
        mask[k, : len(s)] = 1
    labels = np.where(mask == 1, ids, -100)
    return torch.from_numpy(ids), torch.from_numpy(mask), torch.from_numpy(labels)


def main():
    args = cc.parser(__doc__).parse_args()
    dev = cc.torch_device(args)
    logging.basicConfig(filename="/dev/null", level=logging.INFO)
    if args.smoke:
        cfg, batch, max_len = GPT2Config(n_layer=2, n_embd=64, n_head=4, n_positions=128, vocab_size=1000,
                                         bos_token_id=0, eos_token_id=0), 2, 96
    else:
        cfg, batch, max_len = GPT2Config(n_layer=6, n_embd=768, n_head=12, n_positions=512, vocab_size=32000), 16, 384
    model = AutoModelForCausalLM.from_config(cfg).to(dev)
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, fused=dev.type == "cuda")
    lines = cc.text_lines(2048, min_words=64, max_words=max_len)
    vocab = {w: k + 2 for k, w in enumerate(sorted({w for line in lines for w in line.split()}))}
    log_every = 50 if args.fix else 1
    running = torch.zeros(2, device=dev)

    def step(i):
        ids, mask, labels = collate(lines[i * batch % 2048:][:batch], vocab, max_len)
        ids, mask, labels = (t.pin_memory().to(dev, non_blocking=True) if dev.type == "cuda" else t
                             for t in (ids, mask, labels))
        with torch.autocast(dev.type, dtype=torch.bfloat16):
            loss = model(input_ids=ids, attention_mask=mask, labels=labels).loss
        loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        if args.fix:
            running.add_(torch.stack([loss.detach(), norm]))
        if i % log_every == 0:
            if args.fix:
                l, n = (running / log_every).tolist()
                running.zero_()
            else:
                l, n = loss.item(), norm.item()  # gpuwhy: plants C9 (two host reads every step)
            log.info("step %d loss %.4f grad_norm %.3f", i, l, n)

    cc.run("c9_hf_log_item", args, step, batch)


if __name__ == "__main__":
    main()
