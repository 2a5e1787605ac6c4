"""C6 pageable copies, device to host (caching a teacher's logits for distillation): an HF
LlamaForCausalLM built from a LlamaConfig (TinyLlama-1.1B sizes: 22 layers, hidden 2048, 32
heads with 4 key/value heads, SwiGLU 5632, vocabulary 32000, SDPA, random weights, bf16
weights, no_grad) runs over batches of 8 x 512 tokens, as the first pass of an offline
distillation run that stores the teacher's full logits for the student. Each batch's
logits (8 x 512 x 32000 bf16, 262 MB) are taken off the GPU with `logits.cpu()` into a host
ring of 4 batches that stands for the shard writer: a fresh pageable tensor every batch,
so the copy goes through the driver's staging buffer into memory that is page-faulted in
as it is written, and the next batch is not launched until it is done. Token ids are made
once on the GPU and cycled.

--fix: gpuwhy's C6 advice (pinned host memory, non_blocking copies): the ring's 4 host
tensors allocated once with pin_memory=True (at the first batch, in the warm-up), each
batch's logits copied into the next slot with copy_(non_blocking=True) on a side stream
after the forward pass (an event per slot, waited on only when the slot comes round
again), so the copy overlaps the next batch's forward; the teacher, its inputs and the
ring's size unchanged.

Written blind for the ridge batch.
"""
import torch
from transformers import AutoModelForCausalLM, LlamaConfig

import cc

RING = 4


def main():
    args = cc.parser(__doc__).parse_args()
    dev = cc.torch_device(args)
    gpu = dev.type == "cuda"
    if args.smoke:
        cfg = LlamaConfig(hidden_size=64, intermediate_size=176, num_hidden_layers=2, num_attention_heads=4,
                          num_key_value_heads=2, vocab_size=1000, max_position_embeddings=128)
        batch, seq = 2, 32
    else:
        cfg = LlamaConfig(hidden_size=2048, intermediate_size=5632, num_hidden_layers=22, num_attention_heads=32,
                          num_key_value_heads=4, vocab_size=32000, max_position_embeddings=2048)
        batch, seq = 8, 512
    torch.manual_seed(0)
    with torch.device(dev):  # random weights made on the device (1.1 B parameters: seconds on the CPU)
        teacher = AutoModelForCausalLM.from_config(cfg, attn_implementation="sdpa")
    teacher = teacher.to(torch.bfloat16).eval()
    g = torch.Generator(device=dev).manual_seed(0)
    data = [torch.randint(0, cfg.vocab_size, (batch, seq), device=dev, generator=g) for _ in range(4)]
    cache = [None] * RING  # the last RING batches' logits on the host, for the shard writer

    if args.fix and gpu:
        host = [None] * RING
        done = [None] * RING
        copier = torch.cuda.Stream()

        def to_host(k, logits):
            if host[0] is None:  # the ring, allocated once (first batch, in the warm-up)
                host[:] = [torch.empty(logits.shape, dtype=logits.dtype, pin_memory=True) for _ in range(RING)]
            if done[k] is not None:
                done[k].synchronize()  # the slot's previous copy (RING batches ago) has landed
            copier.wait_stream(torch.cuda.current_stream())  # the logits are written
            with torch.cuda.stream(copier):
                host[k].copy_(logits, non_blocking=True)
                done[k] = torch.cuda.Event()
                done[k].record(copier)
            logits.record_stream(copier)  # made on the compute stream, read on the copier
            return host[k]
    else:
        def to_host(k, logits):
            return logits.cpu()  # gpuwhy: plants C6 (a fresh pageable tensor, synchronous copy)

    @torch.no_grad()
    def step(i):
        logits = teacher(input_ids=data[i % len(data)]).logits
        cache[i % RING] = to_host(i % RING, logits)

    cc.run("c6_hf_distill_logits_cpu", args, step, batch,
           extra=lambda: {"logits_mb_per_batch": round(cache[0].numel() * cache[0].element_size() / 1e6, 1),
                          "host_memory": "pinned ring" if args.fix and gpu else "pageable (.cpu())"})


if __name__ == "__main__":
    main()
