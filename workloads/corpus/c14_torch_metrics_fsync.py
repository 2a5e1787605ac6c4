"""C14 periodic stall: a small GPT-style language model (nn.TransformerEncoder with a causal
mask, 4 layers, d=512, vocab 32000 tied, bf16 autocast, AdamW) that every 25 steps appends
its loss to a metrics file and writes the model + optimizer state (about 350 MB) with
torch.save to a file under the corpus cache directory, then calls os.fsync on both files,
on the training thread: copy to host, pickle, write, wait for the disk; training stops
meanwhile.

--fix: the same save every 1000 steps (never in the timed part).
"""
import json
import os

import torch

import cc


class LM(torch.nn.Module):
    def __init__(self, vocab, d, layers, seq):
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, d)
        self.pos = torch.nn.Parameter(torch.zeros(seq, d))
        layer = torch.nn.TransformerEncoderLayer(d, nhead=max(d // 64, 1), dim_feedforward=4 * d,
                                                 batch_first=True, norm_first=True, activation="gelu")
        self.body = torch.nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = torch.nn.Linear(d, vocab, bias=False)
        self.head.weight = self.embed.weight  # tied, as GPT-2 does
        self.register_buffer("mask", torch.nn.Transformer.generate_square_subsequent_mask(seq), persistent=False)

    def forward(self, ids):
        t = ids.shape[1]
        h = self.embed(ids) + self.pos[:t]
        return self.head(self.body(h, mask=self.mask[:t, :t]))


def main():
    args = cc.parser(__doc__).parse_args()
    dev = cc.torch_device(args)
    vocab, d, layers, seq, batch = (500, 64, 2, 32, 4) if args.smoke else (32000, 512, 4, 512, 32)
    every = 1000 if args.fix else 25
    model = LM(vocab, d, layers, seq).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.1, fused=dev.type == "cuda")
    ids = [torch.randint(0, vocab, (batch, seq + 1), device=dev) for _ in range(4)]
    out = os.path.join(cc.CACHE, "ckpt")
    os.makedirs(out, exist_ok=True)
    ckpt, metrics = os.path.join(out, "c14_torch_metrics_fsync.pt"), os.path.join(out, "c14_torch_metrics_fsync.jsonl")

    def save(i, loss):
        with open(metrics, "a") as f:
            f.write(json.dumps({"step": i, "loss": loss.item()}) + "\n")
            f.flush()
            os.fsync(f.fileno())
        with open(ckpt, "wb") as f:
            torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": i}, f)
            f.flush()
            os.fsync(f.fileno())  # gpuwhy: plants C14 (checkpoint + fsync every 25 steps)

    def step(i):
        x = ids[i % 4]
        with torch.autocast(dev.type, dtype=torch.bfloat16):
            logits = model(x[:, :-1])
            loss = torch.nn.functional.cross_entropy(logits.float().flatten(0, 1), x[:, 1:].flatten())
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if i % every == every - 1:
            save(i, loss)

    cc.run("c14_torch_metrics_fsync", args, step, batch)


if __name__ == "__main__":
    main()
