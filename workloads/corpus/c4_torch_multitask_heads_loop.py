"""C4 launch overhead (a Python loop over task heads): a multi-task attribute model in plain
PyTorch, the layout of pedestrian-attribute and multi-objective recommendation code: a shared
encoder (4 pre-LN nn.TransformerEncoder layers, d=512, 8 heads, over 64 tokens of 128
input features a sample, mean pooling; bf16 autocast) and 96 task heads kept in an
nn.ModuleList, each nn.Sequential(Linear(512, 64), ReLU, Linear(64, k)) with 2 to 9
classes, each with its own F.cross_entropy, the losses summed in a Python loop; batch 256
made once on the GPU and cycled; AdamW (foreach); loss read every 50 steps. The heads'
loop launches about 14 small kernels a head forward and backward (addmm, relu,
log_softmax, nll, add and their gradients): some 1,300 launches a step on a few KB of
data each, while the encoder itself needs about 5 ms of GPU time.

--fix: gpuwhy's C4 advice (fuse the small kernels): the 96 heads as two stacked weight
tensors applied with one torch.baddbmm each, logits padded to 9 classes (padding set to
-inf) and one F.cross_entropy over all heads (the same sum of per-head means, weights
per head); encoder, data and optimizer unchanged.

Written blind for the peak batch.
"""
import torch
import torch.nn.functional as F

import cc


class Encoder(torch.nn.Module):
    def __init__(self, feat, d, layers):
        super().__init__()
        self.inp = torch.nn.Linear(feat, d)
        layer = torch.nn.TransformerEncoderLayer(d, 8, 4 * d, dropout=0.1, batch_first=True, norm_first=True,
                                                 activation="gelu")
        self.enc = torch.nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)

    def forward(self, x):
        return self.enc(self.inp(x)).mean(1)


class LoopHeads(torch.nn.Module):
    def __init__(self, d, hidden, classes):
        super().__init__()
        self.heads = torch.nn.ModuleList(
            torch.nn.Sequential(torch.nn.Linear(d, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, k)) for k in classes)

    def loss(self, h, y):
        total = 0.0
        for t, head in enumerate(self.heads):  # gpuwhy: plants C4 (96 heads, ~14 tiny launches each)
            total = total + F.cross_entropy(head(h).float(), y[:, t])  # gpuwhy: plants C4
        return total


class StackedHeads(torch.nn.Module):
    """The fix: the same heads as stacked weights, one batched matmul per layer."""

    def __init__(self, d, hidden, classes):
        super().__init__()
        n, kmax = len(classes), max(classes)
        self.w1 = torch.nn.Parameter(torch.randn(n, d, hidden) / d ** 0.5)
        self.b1 = torch.nn.Parameter(torch.zeros(n, 1, hidden))
        self.w2 = torch.nn.Parameter(torch.randn(n, hidden, kmax) / hidden ** 0.5)
        self.b2 = torch.nn.Parameter(torch.zeros(n, 1, kmax))
        mask = torch.arange(kmax)[None, :] >= torch.tensor(classes)[:, None]
        self.register_buffer("pad", torch.where(mask, float("-inf"), 0.0)[:, None, :], persistent=False)

    def loss(self, h, y):
        n = self.w1.shape[0]
        z = torch.relu(torch.baddbmm(self.b1, h.unsqueeze(0).expand(n, -1, -1), self.w1))
        logits = torch.baddbmm(self.b2, z, self.w2).float() + self.pad  # (tasks, batch, kmax)
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.t().reshape(-1)) * n


def main():
    args = cc.parser(__doc__, warmup=5).parse_args()
    dev = cc.torch_device(args)
    torch.backends.cuda.matmul.allow_tf32 = True
    batch, seq, feat, d, layers, tasks = (16, 8, 16, 64, 1, 12) if args.smoke else (256, 64, 128, 512, 4, 96)
    classes = [2 + t % 8 for t in range(tasks)]
    torch.manual_seed(0)
    heads_cls = StackedHeads if args.fix else LoopHeads
    with torch.device(dev):
        enc = Encoder(feat, d, layers)
        heads = heads_cls(d, 64, classes)
    params = list(enc.parameters()) + list(heads.parameters())
    opt = torch.optim.AdamW(params, lr=3e-4, weight_decay=0.01)
    g = torch.Generator(device=dev).manual_seed(0)
    cls_t = torch.tensor(classes, device=dev)
    data = [(torch.randn(batch, seq, feat, device=dev, generator=g),
             (torch.rand(batch, tasks, device=dev, generator=g) * cls_t).long()) for _ in range(4)]
    amp = dev.type == "cuda"
    losses = []
    log = {"loss": None}

    def step(i):
        x, y = data[i % len(data)]
        with torch.autocast(dev.type, dtype=torch.bfloat16, enabled=amp):
            loss = heads.loss(enc(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        losses.append(loss.detach())
        if len(losses) == 50:
            log["loss"] = float(torch.stack(losses).mean())
            losses.clear()

    cc.run("c4_torch_multitask_heads_loop", args, step, batch,
           extra={"tasks": tasks, "heads": "stacked (baddbmm)" if args.fix else "ModuleList loop"})


if __name__ == "__main__":
    main()
