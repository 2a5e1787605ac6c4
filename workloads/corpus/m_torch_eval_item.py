"""C14 periodic evaluation + C9 per-step reads: a plain PyTorch training loop for a
transformer encoder document classifier (nn.TransformerEncoder, 6 layers, d=512, 8 heads,
learned positions, mean pooling, 20 classes, vocab 16000, batch 64 x 512 tokens, bf16
autocast, fused AdamW; training and validation batches made once on the GPU). The loop
keeps a running average of the loss with `running += loss.item()` and prints it every step
(a progress line on stderr), and every 30 steps it validates: model.eval(), 20 batches of
128 x 512 under torch.no_grad(), each batch's accuracy counted with
`correct += (pred == y).sum().item()`, then model.train(). A host wait every training
step, and every 30 steps a validation pass (40 batches' worth of forward work) that the GPU
runs in 20 pieces, each ended by a host read.

--fix: both of gpuwhy's advices: the loss accumulated as a GPU tensor and read every 50
steps (C9: read results every N steps), and validation every 1000 steps (never in the
measured window) with its correct-count kept on the GPU and read once per pass (C14:
evaluate less often, metrics on the GPU).
"""
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

import cc


class Classifier(nn.Module):
    def __init__(self, vocab, ctx, d, heads, layers, classes):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(ctx, d)
        layer = nn.TransformerEncoderLayer(d, heads, 4 * d, dropout=0.1, activation="gelu", batch_first=True,
                                           norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, classes)

    def forward(self, ids):
        h = self.emb(ids) + self.pos.weight[:ids.shape[1]]
        return self.head(self.norm(self.encoder(h)).mean(1))


def main():
    args = cc.parser(__doc__).parse_args()
    dev = cc.torch_device(args)
    batch, seq, d, heads, layers, vocab, classes, val_batch, val_batches = \
        (4, 16, 64, 4, 2, 500, 20, 8, 3) if args.smoke else (64, 512, 512, 8, 6, 16000, 20, 128, 20)
    val_every = 1000 if args.fix else (4 if args.smoke else 30)
    model = Classifier(vocab, seq, d, heads, layers, classes).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=2e-4, weight_decay=0.01, fused=dev.type == "cuda")
    g = torch.Generator().manual_seed(0)

    def batches(n, b):
        ids = torch.randint(0, vocab, (n, b, seq), generator=g)
        return list(zip(ids.to(dev).unbind(0), (ids[:, :, 0] % classes).to(dev).unbind(0)))

    train, val = batches(8, batch), batches(val_batches, val_batch)
    state = {"running": 0.0, "seen": 0, "acc": None, "evals": 0}
    loss_acc = torch.zeros((), device=dev)

    def validate():
        model.eval()
        with torch.no_grad():
            if args.fix:
                correct = torch.zeros((), dtype=torch.long, device=dev)
                for x, y in val:
                    with torch.autocast(dev.type, dtype=torch.bfloat16):
                        pred = model(x).argmax(-1)
                    correct += (pred == y).sum()
                correct = correct.item()
            else:
                correct = 0
                for x, y in val:
                    with torch.autocast(dev.type, dtype=torch.bfloat16):
                        pred = model(x).argmax(-1)
                    correct += (pred == y).sum().item()
        model.train()
        state["acc"] = correct / (len(val) * val_batch)
        state["evals"] += 1

    def step(i):
        x, y = train[i % len(train)]
        with torch.autocast(dev.type, dtype=torch.bfloat16):
            logits = model(x)
        loss = F.cross_entropy(logits.float(), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if args.fix:
            loss_acc.add_(loss.detach())
            if i % 50 == 49:
                print(f"step {i + 1} loss {loss_acc.item() / 50:.4f}", file=sys.stderr)
                loss_acc.zero_()
        else:
            state["running"] += loss.item()  # gpuwhy: plants C9 (the loss read on the host every step)
            state["seen"] += 1
            print(f"\rstep {i + 1} loss {state['running'] / state['seen']:.4f}", end="", file=sys.stderr)
        if (i + 1) % val_every == 0:
            validate()  # gpuwhy: plants C14 (20 validation batches every 30 steps, a host read after each)

    cc.run("m_torch_eval_item", args, step, batch,
           extra=lambda: {"val_every": val_every, "evals": state["evals"]})


if __name__ == "__main__":
    main()
