"""C9 a hand-written fp16 loss scaler checks every gradient for overflow with a host read
(reaction prediction with the Molecular Transformer, pure fp16 with fp32 master weights): forward
reaction prediction on USPTO-style reactions (reactant and reagent SMILES in, product SMILES
out, atom-level tokens, a shared vocabulary of 288 tokens) with the Molecular Transformer's
OpenNMT-py configuration (Schwaller et al. 2019) in plain PyTorch: a pre-LN encoder-decoder
Transformer of 4 + 4 layers, d_model 256, 8 heads, feed-forward 2,048, sinusoidal positions,
embeddings shared between source, target and generator, dropout 0.1 (12.0 M parameters in 174
tensors, random weights), batch 256 reactions bucketed to 96 source and 80 target tokens, Adam
(0.9, 0.998) with the Noam schedule, cross-entropy ignoring the padding; the loss stays on the
GPU and is read every 50 steps.

The script trains the model in half precision the way the mixed-precision code copied into many
repositories does it (apex's fp16_utils, DeepSpeed's unfused fp16 optimizer): the model cast to
fp16, a flat fp32 master copy of its weights (apex's flat_master) updated by a fused Adam and
copied back, and a DynamicLossScaler (initial scale 2^16, halved on overflow, doubled after
1,000 clean steps) whose `has_overflow_serial` walks the 174 fp16 gradients and reads
`float(p.grad.float().sum())` for each one: 174 casts, 174 reductions and 174 blocking
device-to-host reads a step, each leaving the GPU idle while the host gets the value and issues
the next check, between the backward pass and the optimizer step.

--fix: gpuwhy's C9 advice (keep values on the GPU, no host read each step): the loss scaler
replaced by torch.amp.GradScaler over the same flat master (its fused non-finite check and unscale
on the GPU, the fused Adam skipping the step on the device's found_inf, the scale updated on the
GPU); model, fp16 weights, master copy, data, batch and optimizer unchanged.

Written blind for the uniform batch.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch._utils import _flatten_dense_tensors, _unflatten_dense_tensors

import cc

VOCAB, PAD, BOS, EOS = 288, 1, 2, 3


class MHA(nn.Module):
    def __init__(self, d, heads, dropout):
        super().__init__()
        self.h, self.dk, self.p = heads, d // heads, dropout
        self.q, self.k, self.v, self.o = (nn.Linear(d, d) for _ in range(4))

    def forward(self, x, mem, mask, causal=False):
        b, t, d = x.shape
        q = self.q(x).view(b, t, self.h, self.dk).transpose(1, 2)
        k = self.k(mem).view(b, -1, self.h, self.dk).transpose(1, 2)
        v = self.v(mem).view(b, -1, self.h, self.dk).transpose(1, 2)
        if causal:
            mask = mask & torch.ones(t, t, dtype=torch.bool, device=x.device).tril()
        a = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=self.p if self.training else 0.0)
        return self.o(a.transpose(1, 2).reshape(b, t, d))


class FFN(nn.Module):
    def __init__(self, d, ff, dropout):
        super().__init__()
        self.norm = nn.LayerNorm(d, eps=1e-6)
        self.w1, self.w2 = nn.Linear(d, ff), nn.Linear(ff, d)
        self.drop = nn.Dropout(dropout)

    def forward(self, x):
        return x + self.drop(self.w2(self.drop(F.relu(self.w1(self.norm(x))))))


class EncoderLayer(nn.Module):
    def __init__(self, d, heads, ff, dropout):
        super().__init__()
        self.norm = nn.LayerNorm(d, eps=1e-6)
        self.attn = MHA(d, heads, dropout)
        self.ffn = FFN(d, ff, dropout)
        self.drop = nn.Dropout(dropout)

    def forward(self, x, mask):
        h = self.norm(x)
        return self.ffn(x + self.drop(self.attn(h, h, mask)))


class DecoderLayer(nn.Module):
    def __init__(self, d, heads, ff, dropout):
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(d, eps=1e-6), nn.LayerNorm(d, eps=1e-6)
        self.self_attn, self.ctx_attn = MHA(d, heads, dropout), MHA(d, heads, dropout)
        self.ffn = FFN(d, ff, dropout)
        self.drop = nn.Dropout(dropout)

    def forward(self, y, mem, src_mask, tgt_mask):
        h = self.norm1(y)
        y = y + self.drop(self.self_attn(h, h, tgt_mask, causal=True))
        y = y + self.drop(self.ctx_attn(self.norm2(y), mem, src_mask))
        return self.ffn(y)


class MolecularTransformer(nn.Module):
    def __init__(self, vocab, d=256, heads=8, ff=2048, layers=4, dropout=0.1, max_len=512):
        super().__init__()
        self.d = d
        self.emb = nn.Embedding(vocab, d, padding_idx=PAD)           # shared: source, target, generator
        pe = torch.zeros(max_len, d)
        pos = torch.arange(max_len).float()[:, None]
        div = torch.exp(torch.arange(0, d, 2).float() * -(math.log(10000.0) / d))
        pe[:, 0::2], pe[:, 1::2] = torch.sin(pos * div), torch.cos(pos * div)
        self.register_buffer("pe", pe)
        self.drop = nn.Dropout(dropout)
        self.enc = nn.ModuleList(EncoderLayer(d, heads, ff, dropout) for _ in range(layers))
        self.dec = nn.ModuleList(DecoderLayer(d, heads, ff, dropout) for _ in range(layers))
        self.enc_norm, self.dec_norm = nn.LayerNorm(d, eps=1e-6), nn.LayerNorm(d, eps=1e-6)
        self.gen_bias = nn.Parameter(torch.zeros(vocab))
        for p in self.parameters():
            if p.dim() > 1:
                nn.init.xavier_uniform_(p)

    def embed(self, tok):
        return self.drop(self.emb(tok) * math.sqrt(self.d) + self.pe[:tok.shape[1]].to(self.emb.weight.dtype))

    def forward(self, src, tgt_in):
        src_mask = (src != PAD)[:, None, None, :]
        tgt_mask = (tgt_in != PAD)[:, None, None, :]
        x = self.embed(src)
        for layer in self.enc:
            x = layer(x, src_mask)
        mem = self.enc_norm(x)
        y = self.embed(tgt_in)
        for layer in self.dec:
            y = layer(y, mem, src_mask, tgt_mask)
        return F.linear(self.dec_norm(y), self.emb.weight, self.gen_bias)


class DynamicLossScaler:
    """apex fp16_utils / DeepSpeed CheckOverflow's serial overflow check, as copied."""

    def __init__(self, init_scale=2.0 ** 16, scale_factor=2.0, scale_window=1000):
        self.cur_scale, self.scale_factor, self.scale_window = init_scale, scale_factor, scale_window
        self.cur_iter, self.last_overflow_iter = 0, -1
        self.host_reads = 0

    def has_overflow_serial(self, params):
        for p in params:
            if p.grad is not None and self._has_inf_or_nan(p.grad.data):
                return True
        return False

    def _has_inf_or_nan(self, x):
        self.host_reads += 1
        cpu_sum = float(x.float().sum())  # gpuwhy: plants C9 (one blocking read per gradient tensor, 174 a step, the GPU idle between them)
        return cpu_sum in (float("inf"), -float("inf")) or cpu_sum != cpu_sum

    def update_scale(self, overflow):
        if overflow:
            self.cur_scale = max(self.cur_scale / self.scale_factor, 1.0)
            self.last_overflow_iter = self.cur_iter
        elif (self.cur_iter - self.last_overflow_iter) % self.scale_window == 0:
            self.cur_scale *= self.scale_factor
        self.cur_iter += 1


def make_reactions(n, src_len, tgt_len, dev, seed=0):
    """USPTO-like token sequences on the GPU: reactant/reagent SMILES of 40-96 tokens and product
    SMILES of 20-80 tokens (BOS ... EOS), a skewed token distribution (C, c, (, ), =, O, 1, N ...)
    and the product sharing most of its tokens with the reactants, padded to the bucket."""
    g = torch.Generator(device=dev).manual_seed(seed)
    freq = 1.0 / torch.arange(1, VOCAB - 3, device=dev).float() ** 1.1
    src = torch.multinomial(freq, n * src_len, replacement=True, generator=g).view(n, src_len) + 4
    ls = torch.randint(40, src_len + 1, (n, 1), device=dev, generator=g)
    lt = torch.randint(20, tgt_len - 1, (n, 1), device=dev, generator=g)
    off = torch.randint(0, 20, (n, 1), device=dev, generator=g)
    pos = torch.arange(tgt_len, device=dev)[None]
    copied = src.gather(1, (pos + off).clamp(max=src_len - 1))
    fresh = torch.multinomial(freq, n * tgt_len, replacement=True, generator=g).view(n, tgt_len) + 4
    tgt = torch.where(torch.rand(n, tgt_len, device=dev, generator=g) < 0.8, copied, fresh)
    tgt[:, 0] = BOS
    tgt = torch.where(pos == lt, EOS, tgt)
    tgt = torch.where(pos > lt, PAD, tgt)
    src = torch.where(torch.arange(src_len, device=dev)[None] >= ls, PAD, src)
    return src, tgt


def main():
    args = cc.parser(__doc__, warmup=10).parse_args()
    dev = cc.torch_device(args)
    gpu = dev.type == "cuda"
    if args.smoke:
        n_rx, batch, src_len, tgt_len, d, ff, layers = 1024, 8, 48, 40, 64, 128, 2
    else:
        n_rx, batch, src_len, tgt_len, d, ff, layers = 65_536, 256, 96, 80, 256, 2048, 4
    src_all, tgt_all = make_reactions(n_rx, src_len, tgt_len, dev)
    g = torch.Generator(device=dev).manual_seed(1)

    torch.manual_seed(0)
    half = torch.float16 if gpu else torch.float32          # the CPU smoke test keeps float32
    model = MolecularTransformer(VOCAB, d, 8, ff, layers).to(dev).train()
    model_params = [p for p in model.parameters() if p.requires_grad]
    master = nn.Parameter(_flatten_dense_tensors([p.detach().float() for p in model_params]).clone())  # flat fp32 master
    model.to(half)
    n_params = master.numel()
    opt = torch.optim.Adam([master], lr=1.0, betas=(0.9, 0.998), eps=1e-9, fused=gpu)
    warm, factor = 8000, 2.0
    scaler = torch.amp.GradScaler(dev.type, init_scale=2.0 ** 16) if args.fix else DynamicLossScaler(2.0 ** 16)
    st = {"acc": torch.zeros((), device=dev), "loss": None, "reads": 0, "skipped": 0, "n": 0}

    def master_grads():
        master.grad = _flatten_dense_tensors([p.grad for p in model_params]).float()

    def master_to_model():
        with torch.no_grad():
            torch._foreach_copy_(model_params, list(_unflatten_dense_tensors(master.detach(), model_params)))

    def step(i):
        st["n"] += 1
        k = st["n"]
        opt.param_groups[0]["lr"] = factor * d ** -0.5 * min(k ** -0.5, k * warm ** -1.5)
        idx = torch.randint(0, n_rx, (batch,), device=dev, generator=g)
        src, tgt = src_all[idx], tgt_all[idx]
        logits = model(src, tgt[:, :-1])
        loss = F.cross_entropy(logits.float().reshape(-1, VOCAB), tgt[:, 1:].reshape(-1), ignore_index=PAD)
        for p in model_params:
            p.grad = None
        if args.fix:
            scaler.scale(loss).backward()
            master_grads()
            scaler.step(opt)             # unscale + non-finite check on the GPU; fused Adam skips on found_inf
            scaler.update()
            master_to_model()
        else:
            scale = scaler.cur_scale
            (loss * scale).backward()
            overflow = scaler.has_overflow_serial(model_params)
            scaler.update_scale(overflow)
            if overflow:
                st["skipped"] += 1
            else:
                master_grads()
                master.grad.mul_(1.0 / scale)
                opt.step()
                master_to_model()
        st["acc"] += loss.detach()
        if i % 50 == 49:
            st["loss"] = st["acc"].item() / 50
            st["acc"].zero_()
            st["reads"] += 1

    cc.run("c9_torch_molecular_transformer_fp16_overflow_serial", args, step, batch,
           extra=lambda: {"params_m": round(n_params / 1e6, 2), "param_tensors": len(model_params),
                          "model_dtype": str(half).replace("torch.", ""),
                          "loss_scaler": "torch.amp.GradScaler" if args.fix else "DynamicLossScaler",
                          "overflow_host_reads": 0 if args.fix else scaler.host_reads,
                          "skipped_steps": st["skipped"], "loss": st["loss"], "loss_reads": st["reads"]})


if __name__ == "__main__":
    main()
