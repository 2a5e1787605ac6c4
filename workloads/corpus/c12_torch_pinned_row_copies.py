"""C12's copy evidence (many small copies from pinned memory, far under the link's bandwidth):
SASRec-style next-item recommendation in plain PyTorch. Each user's last 50 interactions and
the next item after each (the training targets) are one row of 100 int32 values (400 bytes) in
a table of 200,000 users held in pinned host memory, "pinned for fast transfers", as the
script's comment says; the item embedding table (500,000 x 128) and the model live on the GPU.
The model: item and position embeddings, 2 causal pre-LN Transformer blocks of width 128 (2
heads, SDPA, FFN 512, dropout 0.2), and a sampled softmax over each position's target and 512
shared random negatives (log-Q corrected, accidental hits masked), bf16 autocast, fused Adam,
batch 4,096 users (204,800 positions); the loss is read every 50 steps.

The batch is built the way the script's first version built it for 16 users: a Python loop over
the sampled users with `rows[j].copy_(table[u], non_blocking=True)`, one 400-byte cudaMemcpyAsync
from pinned memory per user, 4,096 copies a step. Each copy is pinned and asynchronous, but the
copy engine moves 400 bytes at a small fraction of the link's rate (each copy's fixed cost
dominates), and the host spends several microseconds issuing each one, so the step's copies
take longer than the model's kernels.

--fix: gpuwhy's C12 copy advice (replace many small copies with one large cudaMemcpyAsync in the
layout it is copied in): the batch's rows gathered on the host with torch.index_select into a
pinned staging buffer (two, used in turn, guarded by an event), then one 1.6 MB copy; users,
model, sampling and loss unchanged.

Written blind for the foxtrot batch.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

import cc


class Block(nn.Module):
    def __init__(self, d, heads, ffn, p):
        super().__init__()
        self.heads, self.p = heads, p
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.ff1, self.ff2 = nn.Linear(d, ffn), nn.Linear(ffn, d)
        self.drop = nn.Dropout(p)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = (z.view(b, t, self.heads, -1).transpose(1, 2) for z in self.qkv(self.ln1(x)).split(d, 2))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True, dropout_p=self.p if self.training else 0.0)
        x = x + self.drop(self.proj(a.transpose(1, 2).reshape(b, t, d)))
        return x + self.drop(self.ff2(self.drop(F.gelu(self.ff1(self.ln2(x))))))


class SASRec(nn.Module):
    def __init__(self, items, seq, d, layers, heads, p):
        super().__init__()
        self.item = nn.Embedding(items, d, padding_idx=0)
        self.pos = nn.Embedding(seq, d)
        self.blocks = nn.ModuleList(Block(d, heads, 4 * d, p) for _ in range(layers))
        self.norm = nn.LayerNorm(d)
        self.drop = nn.Dropout(p)

    def forward(self, hist):
        x = self.item(hist) * self.item.embedding_dim ** 0.5 + self.pos.weight[None, :hist.shape[1]]
        x = self.drop(x)
        for blk in self.blocks:
            x = blk(x)
        return self.norm(x)


def main():
    args = cc.parser(__doc__).parse_args()
    dev = cc.torch_device(args)
    users, items, seq, d, batch, negs = \
        (512, 1000, 16, 32, 32, 64) if args.smoke else (200_000, 500_000, 50, 128, 4096, 512)
    pin = dev.type == "cuda"
    g = torch.Generator().manual_seed(0)
    # each user's row: 50 history items then the 50 next items (targets); 0 pads the start
    hist = torch.randint(1, items, (users, seq + 1), generator=g, dtype=torch.int32)
    start = torch.randint(0, seq // 2, (users, 1), generator=g)
    hist[torch.arange(seq + 1)[None, :] < start] = 0
    table = torch.empty((users, 2 * seq), dtype=torch.int32, pin_memory=pin)  # "pinned for fast transfers"
    table[:, :seq], table[:, seq:] = hist[:, :seq], hist[:, 1:]
    del hist

    torch.manual_seed(0)
    model = SASRec(items, seq, d, 2, 2, 0.2).to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, betas=(0.9, 0.98), fused=dev.type == "cuda")
    log_q = torch.full((negs,), -torch.log(torch.tensor(float(items))).item(), device=dev)  # uniform sampler
    rows = [torch.empty((batch, 2 * seq), dtype=torch.int32, device=dev) for _ in range(2)]
    stage = [torch.empty((batch, 2 * seq), dtype=torch.int32, pin_memory=pin) for _ in range(2)]
    used = [None, None]
    acc = torch.zeros((), device=dev)
    log = {"loss": None, "reads": 0}

    def load_batch(i):
        who = torch.randint(0, users, (batch,), generator=g)
        out = rows[i % 2]
        if args.fix:
            k = i % 2
            if used[k] is not None:
                used[k].synchronize()  # the copy that last read this staging buffer is done
            torch.index_select(table, 0, who, out=stage[k])
            out.copy_(stage[k], non_blocking=True)
            if pin:
                used[k] = torch.cuda.Event()
                used[k].record()
        else:
            for j, u in enumerate(who.tolist()):
                out[j].copy_(table[u], non_blocking=True)  # gpuwhy: plants C12 (4,096 copies of 400 bytes from pinned memory a step)
        return out

    def step(i):
        r = load_batch(i)
        h, tgt = r[:, :seq].long(), r[:, seq:].long()
        neg = torch.randint(1, items, (negs,), device=dev)
        with torch.autocast(dev.type, dtype=torch.bfloat16):
            z = model(h)                                            # (B, T, d)
            pos_logit = (z * model.item(tgt)).sum(-1, keepdim=True)  # (B, T, 1)
            neg_logit = z @ model.item(neg).T                          # (B, T, negs)
        logits = torch.cat([pos_logit.float(), neg_logit.float() - log_q], -1)
        logits = logits.masked_fill(torch.cat([torch.zeros_like(pos_logit, dtype=torch.bool),
                                               (neg[None, None, :] == tgt[..., None])], -1), float("-inf"))
        mask = tgt > 0
        nll = F.cross_entropy(logits.view(-1, negs + 1), torch.zeros(logits.shape[0] * seq, dtype=torch.long,
                                                                     device=dev), reduction="none")
        loss = (nll * mask.view(-1)).sum() / mask.sum().clamp(min=1)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        acc.add_(loss.detach())
        if i % 50 == 49:
            log["loss"] = acc.item() / 50
            log["reads"] += 1
            acc.zero_()

    cc.run("c12_torch_pinned_row_copies", args, step, batch,
           extra=lambda: {"batch_copy": "index_select into pinned staging, one copy" if args.fix
                          else "one pinned copy per user", "copies_per_step": 1 if args.fix else batch,
                          "bytes_per_copy": batch * 2 * seq * 4 if args.fix else 2 * seq * 4,
                          "loss_reads": log["reads"]})


if __name__ == "__main__":
    main()
