"""C6 pageable copies of offloaded weights: corpus scoring (perplexity) with an HF
LlamaForCausalLM built from a LlamaConfig (Llama-2-7B's layer sizes: hidden 4096, 32 heads,
SwiGLU 11008, vocabulary 32000, SDPA, random weights, bf16, no_grad), cut to 16 layers,
over batches of 4 x 1024 tokens. The script's device map was made under
max_memory={0: "6GiB"}, the budget it had when the GPU was shared with a serving process:
the first 12 decoder layers on the GPU, the last 4 offloaded to CPU memory, and a hook
moves an offloaded layer's weights to the GPU just before the layer runs and drops them
after it, as accelerate's cpu_offload / device_map="auto" with max_memory does
(set_module_tensor_to_device: a blocking .to(device) of each weight from ordinary pageable
CPU tensors). Each batch therefore copies 1.6 GB of weights (404 MB a layer, 9 tensors)
through the driver's pageable staging path, the host waiting on every copy and the GPU
waiting on the host, four times a batch. The loss is kept on the GPU and its mean read
(as a perplexity) every 50 batches.

--fix: gpuwhy's C6 advice (pinned host memory, non_blocking copies on a side stream that
overlap compute): the offloaded weights pinned once at start (tensor.pin_memory()), copied
with copy_(non_blocking=True) on a copy stream into two GPU slots, each layer's copy issued
while earlier layers compute (the first two at the batch's start, the next as a slot is
released) and waited on by an event; the same 4 layers offloaded, the same bytes copied
every batch, the model and data unchanged.

Written blind for the summit batch.
"""
import torch
from transformers import AutoModelForCausalLM, LlamaConfig

import cc


class PageableOffload:
    """accelerate-style offload: weights live in CPU memory and are moved to the GPU (a
    blocking .to(device)) when the layer runs, dropped after it."""

    def __init__(self, layers, dev):
        self.dev = dev
        self.cpu = {}
        for layer in layers:
            for name, p in layer.named_parameters():
                self.cpu[(id(layer), name)] = p.data.to("cpu")  # ordinary pageable memory
                p.data = torch.empty(0, dtype=p.dtype, device=dev)
            layer.register_forward_pre_hook(self.load)
            layer.register_forward_hook(self.drop)

    def load(self, layer, args):
        for name, p in layer.named_parameters():
            p.data = self.cpu[(id(layer), name)].to(self.dev)  # gpuwhy: plants C6 (pageable source, blocking copy)

    def drop(self, layer, args, out):
        for p in layer.parameters():
            p.data = torch.empty(0, dtype=p.dtype, device=self.dev)

    def start(self):
        pass


class PinnedPrefetchOffload:
    """The fix: pinned CPU weights, copied on a side stream into two GPU slots, one or two
    layers ahead of the compute."""

    def __init__(self, layers, dev):
        self.layers = layers
        self.order = {id(layer): j for j, layer in enumerate(layers)}
        self.names = [name for name, _ in layers[0].named_parameters()]
        self.cpu = []
        for layer in layers:
            self.cpu.append([p.data.to("cpu").pin_memory() for p in layer.parameters()])
            for p in layer.parameters():
                p.data = torch.empty(0, dtype=p.dtype, device=dev)
            layer.register_forward_pre_hook(self.load)
            layer.register_forward_hook(self.drop)
        self.slots = [[torch.empty_like(t, device=dev) for t in self.cpu[0]] for _ in range(2)]
        self.copier = torch.cuda.Stream(dev)
        self.ready = [torch.cuda.Event() for _ in range(2)]
        self.free = [None, None]  # event: the slot's last layer has run

    def fetch(self, j):
        s = j % 2
        with torch.cuda.stream(self.copier):
            if self.free[s] is not None:
                self.copier.wait_event(self.free[s])
            for dst, src in zip(self.slots[s], self.cpu[j]):
                dst.copy_(src, non_blocking=True)
            self.ready[s].record(self.copier)

    def start(self):  # at the batch's start: the first two offloaded layers
        for j in range(min(2, len(self.layers))):
            self.fetch(j)

    def load(self, layer, args):
        j = self.order[id(layer)]
        torch.cuda.current_stream().wait_event(self.ready[j % 2])
        for p, t in zip(layer.parameters(), self.slots[j % 2]):
            p.data = t

    def drop(self, layer, args, out):
        j = self.order[id(layer)]
        ev = torch.cuda.Event()
        ev.record(torch.cuda.current_stream())
        self.free[j % 2] = ev
        for p in layer.parameters():
            p.data = torch.empty(0, dtype=p.dtype, device=p.device)
        if j + 2 < len(self.layers):
            self.fetch(j + 2)


def main():
    args = cc.parser(__doc__).parse_args()
    dev = cc.torch_device(args)
    if args.smoke:
        cfg = LlamaConfig(hidden_size=64, intermediate_size=176, num_hidden_layers=4, num_attention_heads=4,
                          num_key_value_heads=4, vocab_size=1000, max_position_embeddings=128)
        batch, seq, offloaded = 2, 32, 2
    else:
        cfg = LlamaConfig(hidden_size=4096, intermediate_size=11008, num_hidden_layers=16, num_attention_heads=32,
                          num_key_value_heads=32, vocab_size=32000, max_position_embeddings=4096)
        batch, seq, offloaded = 4, 1024, 4
    torch.manual_seed(0)
    torch.set_default_dtype(torch.bfloat16)
    with torch.device(dev):  # random bf16 weights made on the device (seconds on the CPU otherwise)
        model = AutoModelForCausalLM.from_config(cfg, attn_implementation="sdpa")
    torch.set_default_dtype(torch.float32)
    model.eval()
    layers = list(model.model.layers)[-offloaded:]  # the device map's tail: on the CPU
    pinned = args.fix and dev.type == "cuda"
    offload = (PinnedPrefetchOffload if pinned else PageableOffload)(layers, dev)
    if dev.type == "cuda":
        torch.cuda.empty_cache()
    g = torch.Generator(device=dev).manual_seed(0)
    data = [torch.randint(0, cfg.vocab_size, (batch, seq), device=dev, generator=g) for _ in range(4)]
    losses = []
    log = {"ppl": None}

    @torch.no_grad()
    def step(i):
        offload.start()
        ids = data[i % len(data)]
        losses.append(model(input_ids=ids, labels=ids).loss)
        if len(losses) == 50:
            log["ppl"] = torch.stack(losses).float().mean().exp().item()
            losses.clear()

    per_layer = sum(t.numel() * t.element_size() for t in
                    (offload.cpu[0] if pinned else [v for k, v in offload.cpu.items() if k[0] == id(layers[0])]))
    cc.run("c6_hf_offload_pageable_weights", args, step, batch,
           extra={"offloaded_layers": offloaded, "copied_mb_per_batch": round(per_layer * offloaded / 1e6, 1),
                  "host_weights": "pinned, side-stream prefetch" if pinned else "pageable, blocking .to()"})


if __name__ == "__main__":
    main()
