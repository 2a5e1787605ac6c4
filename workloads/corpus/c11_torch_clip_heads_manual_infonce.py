"""C11 memory-bandwidth bound kernels (a contrastive loss written out by hand over a large
similarity matrix): aligning two frozen encoders by training only their projection heads on
cached embeddings, the cheap way to build a CLIP-style retrieval model (LiT-style, towers
frozen): 262,144 image-caption pairs whose image embeddings (1024-d, a ViT-L's pooled output)
and caption embeddings (768-d, a text encoder's) were computed once and are held on the GPU in
float16. Each head is a two-layer MLP (GELU, hidden 2048) to a shared 512-d space, followed by
L2 normalization; the temperature is learned (CLIP's log-scale, clamped at 100); bf16 autocast,
fused AdamW, batch 16,384 pairs (big batches are the point of contrastive learning, and cached
features make them cheap), loss read every 50 steps.

The symmetric InfoNCE loss is written the way many contrastive-learning repositories write it
(the SupCon/SimCLR reference code's "numerically stable" log-softmax), in float32: the 16,384 x
16,384 logits (0.54 GB as the bf16 GEMM writes them, 1.07 GB once cast) are cast, shifted by their
row maximum, exponentiated, summed, logged and subtracted, once per direction (the caption
direction on the transposed view), and the diagonal is averaged. Each of those steps is its own
kernel reading and writing the whole matrix, and autograd's backward adds as many: about 40 GB
of DRAM traffic a step in some 30 elementwise and reduction kernels, against about 1.4 TFLOP of
GEMMs (the similarity products and the heads, forward and backward).

--fix: gpuwhy's C11 advice for PyTorch (fuse the chain): the same loss function under
torch.compile (Inductor turns each direction into a row reduction over the bf16 logits and the
backward into one pass that writes the gradient, with no N x N intermediate kept), compiled in
the warm-up; heads, data, loss value and optimizer unchanged.

Written blind for the delta batch.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

import cc


class Head(nn.Module):
    def __init__(self, d_in, hidden, d_out):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(d_in, hidden), nn.Linear(hidden, d_out)

    def forward(self, x):
        return F.normalize(self.fc2(F.gelu(self.fc1(x))), dim=-1)


def info_nce(logits):
    """Rows are queries, the positive is on the diagonal."""
    logits = logits - logits.max(dim=1, keepdim=True).values.detach()
    log_prob = logits - torch.log(torch.exp(logits).sum(dim=1, keepdim=True))
    return -log_prob.diagonal().mean()


def clip_loss(logits):
    """Symmetric InfoNCE (image -> caption and caption -> image), computed in float32."""
    logits = logits.float()
    return 0.5 * (info_nce(logits) + info_nce(logits.t()))


def main():
    args = cc.parser(__doc__).parse_args()
    dev = cc.torch_device(args)
    pairs, batch, d_img, d_txt, hidden, d = (4096, 256, 64, 48, 128, 32) if args.smoke else \
        (262_144, 16_384, 1024, 768, 2048, 512)
    g = torch.Generator(device=dev).manual_seed(0)
    # cached tower outputs: captions correlated with their images through a fixed random map
    img_feats = torch.randn(pairs, d_img, device=dev, generator=g).to(torch.float16)
    mix = torch.randn(d_img, d_txt, device=dev, generator=g) / math.sqrt(d_img)
    txt_feats = (img_feats.float() @ mix + 0.5 * torch.randn(pairs, d_txt, device=dev, generator=g)).to(torch.float16)
    torch.manual_seed(0)
    img_head, txt_head = Head(d_img, hidden, d).to(dev), Head(d_txt, hidden, d).to(dev)
    logit_scale = nn.Parameter(torch.tensor(math.log(1 / 0.07), device=dev))
    params = list(img_head.parameters()) + list(txt_head.parameters()) + [logit_scale]
    opt = torch.optim.AdamW(params, lr=5e-4, weight_decay=0.1, fused=dev.type == "cuda")
    perm = torch.randperm(pairs, device=dev, generator=g)
    losses = []
    log = {"loss": None, "reads": 0}

    if args.fix:  # Inductor on the GPU; on the CPU smoke test the same graph capture without codegen
        loss_fn = torch.compile(clip_loss, backend="inductor" if dev.type == "cuda" else "aot_eager")
    else:
        loss_fn = clip_loss  # gpuwhy: plants C11 (the log-softmax written out: each op a full pass over the N x N logits, forward and backward)

    def step(i):
        k = (i * batch) % (pairs - batch + 1)
        idx = perm[k:k + batch]
        with torch.autocast(dev.type, dtype=torch.bfloat16):
            zi = img_head(img_feats[idx].float())
            zt = txt_head(txt_feats[idx].float())
            logits = logit_scale.exp().clamp(max=100) * zi @ zt.t()  # (scale * zi) @ zt.T, bf16
        loss = loss_fn(logits)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        losses.append(loss.detach())
        if len(losses) == 50:
            log["loss"] = torch.stack(losses).mean().item()
            log["reads"] += 1
            losses.clear()

    cc.run("c11_torch_clip_heads_manual_infonce", args, step, batch,
           extra=lambda: {"loss_impl": "hand-written, torch.compile" if args.fix else "hand-written, eager",
                          "logits_gb": round(batch * batch * 4 / 1e9, 2), "loss_reads": log["reads"]})


if __name__ == "__main__":
    main()
