"""C1 host work on the training thread (a hybrid CPU-GPU recommendation model): a click-through
rate model in plain PyTorch, AutoInt / FT-Transformer style: 26 categorical fields hashed
into one shared nn.Embedding(sparse=True) of 4.0 M rows x 64 with per-field offsets (1.0 GB,
Criteo-like cardinalities, power-law ids), 13 dense features through an MLP into a 27th
token, a linear projection to 384, 4 pre-LN nn.TransformerEncoder layers (8 heads, GELU MLP
1536) over the 27 field tokens, the first token into a 256-1 head, BCE with
logits, bf16 autocast; batch 4,096 impressions (8 made once in pinned memory and cycled);
the dense part trained by fused AdamW on the GPU, the table by torch.optim.SparseAdam; the
loss read every 50 steps. The table and its optimizer are kept on the CPU, as in
hybrid-placement reference code written "so that the tables never limit the GPU" (they
would fit: 3 GB with both Adam moments): each step the training thread looks up the
106,496 rows on the CPU, sends the (4096, 26, 64) float32 activations to the GPU
(.to(device), 27 MB), gets their gradient back in the backward pass (a blocking
device-to-host copy), builds the sparse gradient on the CPU and runs SparseAdam there
(coalescing the indices, reading and writing the touched rows of the table and both
moments): tens of ms of CPU work a step, with the GPU idle.

--fix: the table and its SparseAdam on the GPU (nn.Embedding(..., device="cuda"), the ids
sent with the batch): the same model, sparse gradients, optimizers and data; the lookup,
the sparse backward and SparseAdam's update run as GPU kernels (its coalesce still reads
the number of unique rows back once a step).

Written blind for the canyon batch.
"""
import torch
import torch.nn.functional as F

import cc

FIELDS = (1_000_000, 800_000, 500_000, 400_000, 300_000, 250_000, 200_000, 150_000, 100_000, 80_000, 60_000,
          50_000, 40_000, 30_000, 20_000, 10_000, 5_000, 3_000, 2_000, 1_000, 500, 300, 100, 50, 20, 10)


class CTRTransformer(torch.nn.Module):
    def __init__(self, dense_in, dim, d, layers, heads, rows, table_device, dev):
        super().__init__()
        self.table = torch.nn.Embedding(rows, dim, sparse=True, device=table_device)
        torch.nn.init.normal_(self.table.weight, std=0.01)
        with torch.device(dev):
            self.bottom = torch.nn.Sequential(torch.nn.Linear(dense_in, 256), torch.nn.ReLU(),
                                              torch.nn.Linear(256, dim))
            self.proj = torch.nn.Linear(dim, d)
            self.field_pos = torch.nn.Parameter(torch.randn(1 + len(FIELDS), d) * 0.02)
            layer = torch.nn.TransformerEncoderLayer(d, heads, 4 * d, dropout=0.1, activation="gelu", batch_first=True,
                                                     norm_first=True)
            self.enc = torch.nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
            self.norm = torch.nn.LayerNorm(d)
            self.head = torch.nn.Sequential(torch.nn.Linear(d, 256), torch.nn.ReLU(), torch.nn.Linear(256, 1))
        self.dev = dev

    def forward(self, ids, dense):
        e = self.table(ids).to(self.dev)  # CPU lookup -> GPU in plain; already on the GPU with --fix
        tokens = torch.cat([self.bottom(dense).unsqueeze(1), e], 1)
        h = self.norm(self.enc(self.proj(tokens) + self.field_pos))
        return self.head(h[:, 0]).squeeze(-1)


def make_batches(n, batch, rows_scale, smoke, gen):
    sizes = [max(2, s // rows_scale) for s in FIELDS]
    offsets = torch.tensor([0] + sizes[:-1]).cumsum(0)
    out = []
    for _ in range(n):
        u = torch.rand(batch, len(sizes), generator=gen)
        local = (u ** 4 * torch.tensor(sizes, dtype=torch.float32)).long()  # power law: popular ids first
        ids = local + offsets
        dense = torch.randn(batch, 13, generator=gen).abs().log1p()
        logit = dense[:, :4].sum(1) - 2 + 0.5 * (local[:, 0] % 7 == 0).float()
        y = (torch.rand(batch, generator=gen) < torch.sigmoid(logit)).float()
        out.append(tuple(t if smoke else t.pin_memory() for t in (ids, dense, y)))
    return out, sum(sizes)


def main():
    args = cc.parser(__doc__, warmup=5).parse_args()
    dev = cc.torch_device(args)
    torch.backends.cuda.matmul.allow_tf32 = True
    if args.smoke:
        batch, dim, d, layers, heads, rows_scale = 64, 16, 32, 1, 4, 1000
    else:
        batch, dim, d, layers, heads, rows_scale = 4096, 64, 384, 4, 8, 1
    gen = torch.Generator().manual_seed(0)
    batches, rows = make_batches(8, batch, rows_scale, args.smoke, gen)
    table_device = dev if args.fix else torch.device("cpu")  # gpuwhy: plants C1 (lookup, sparse backward and SparseAdam on the CPU, on the training thread)
    torch.manual_seed(0)
    model = CTRTransformer(13, dim, d, layers, heads, rows, table_device, dev)
    dense_params = [p for n, p in model.named_parameters() if not n.startswith("table.")]
    opt_dense = torch.optim.AdamW(dense_params, lr=1e-3, weight_decay=0.01, fused=dev.type == "cuda")
    opt_sparse = torch.optim.SparseAdam([model.table.weight], lr=1e-3)
    amp = dev.type == "cuda"
    losses = []
    log = {"loss": None, "reads": 0}

    def step(i):
        ids, dense, y = batches[i % len(batches)]
        ids = ids.to(table_device, non_blocking=True)
        dense, y = dense.to(dev, non_blocking=True), y.to(dev, non_blocking=True)
        with torch.autocast(dev.type, dtype=torch.bfloat16, enabled=amp):
            logits = model(ids, dense)
        loss = F.binary_cross_entropy_with_logits(logits.float(), y)
        opt_dense.zero_grad(set_to_none=True)
        opt_sparse.zero_grad(set_to_none=True)
        loss.backward()
        opt_dense.step()
        opt_sparse.step()
        losses.append(loss.detach())
        if len(losses) == 50:
            log["loss"] = float(torch.stack(losses).mean())
            log["reads"] += 1
            losses.clear()

    cc.run("c1_torch_cpu_embedding_sparseadam", args, step, batch,
           extra=lambda: {"table_rows": rows, "table_device": str(table_device), "rows_looked_up": batch * len(FIELDS),
                          "torch_threads": torch.get_num_threads(), "loss_reads": log["reads"]})


if __name__ == "__main__":
    main()
