"""C8 + C11 (a Lightning Trainer at its default precision, and minGPT's hand-written attention
and GELU): a byte-level GPT trained with Lightning the way minGPT-style projects write it: a
LightningModule around minGPT's model (8 blocks of width 768, 12 heads, context 1,024,
256-byte vocabulary, learned positions, pre-LN, dropout 0.1 on embeddings, attention and
residuals; 57 M parameters) and minGPT's optimizer setup (AdamW (0.9, 0.95), weight decay on
the Linear weights only, lr 3e-4), gradient clipping at 1.0 in the Trainer, batch 8 x 1,024
bytes from a DataLoader (two workers, pinned, random windows of a byte corpus held in RAM); the
loss is read every 50 steps.

Two things in it, each from the code it was copied from:
- the Trainer is built without a precision argument, so it runs at Lightning's default
  "32-true": no autocast, and PyTorch's default flags leave TF32 off for matrix products, so
  every Linear layer, its gradients and the attention's two batched products are FP32 GEMMs on
  the CUDA cores (C8; Lightning's hint to set float32_matmul_precision goes to the log);
- minGPT's CausalSelfAttention materializes the attention matrix: q @ k^T, a scale, masked_fill
  with the causal mask buffer, softmax, dropout and att @ v, each a kernel over a
  [8, 12, 1,024, 1,024] float32 tensor (403 MB) forward and again backward, and its NewGELU is
  0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3))) in seven elementwise kernels over
  the [8,192, 3,072] MLP activations: ~7.5 GB of DRAM traffic a block for attention alone
  (C11).

--fix: both causes' advice at once (gpuwhy's combined prediction): Trainer(precision=
"bf16-mixed"), and the attention and the GELU as fused kernels: F.scaled_dot_product_attention
(is_causal=True, the same dropout) and F.gelu(approximate="tanh") (the same function as
NewGELU); model shapes, data, optimizer and clipping unchanged.

Written blind for the kilo batch.
"""
import math

import lightning as L
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

import cc


class Bytes(Dataset):
    """minGPT's CharDataset over bytes: item i is a random window of block + 1 bytes."""

    def __init__(self, data, block, n=10_000_000):
        self.data, self.block, self.n = data, block, n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        s = (i * 7_919_993) % (len(self.data) - self.block - 1)
        chunk = torch.from_numpy(self.data[s:s + self.block + 1].astype(np.int64))
        return chunk[:-1], chunk[1:]


class NewGELU(nn.Module):
    """minGPT's GELU (identical to the one in Google BERT and OpenAI GPT)."""

    def forward(self, x):
        return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


class CausalSelfAttention(nn.Module):
    def __init__(self, d, heads, block, pdrop, fused):
        super().__init__()
        self.c_attn = nn.Linear(d, 3 * d)
        self.c_proj = nn.Linear(d, d)
        self.attn_dropout = nn.Dropout(pdrop)
        self.resid_dropout = nn.Dropout(pdrop)
        self.register_buffer("bias", torch.tril(torch.ones(block, block)).view(1, 1, block, block))
        self.heads, self.pdrop, self.fused = heads, pdrop, fused

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(C, dim=2)
        q = q.view(B, T, self.heads, C // self.heads).transpose(1, 2)
        k = k.view(B, T, self.heads, C // self.heads).transpose(1, 2)
        v = v.view(B, T, self.heads, C // self.heads).transpose(1, 2)
        if self.fused:
            y = F.scaled_dot_product_attention(q, k, v, dropout_p=self.pdrop if self.training else 0.0, is_causal=True)
        else:
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))  # gpuwhy: plants C11 (minGPT's attention: a 403 MB float32 [B, H, T, T] tensor through scale, mask, softmax and dropout kernels)
            att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
            att = F.softmax(att, dim=-1)
            att = self.attn_dropout(att)
            y = att @ v
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.resid_dropout(self.c_proj(y))


class Block(nn.Module):
    def __init__(self, d, heads, block, pdrop, fused):
        super().__init__()
        self.ln_1 = nn.LayerNorm(d)
        self.attn = CausalSelfAttention(d, heads, block, pdrop, fused)
        self.ln_2 = nn.LayerNorm(d)
        self.c_fc = nn.Linear(d, 4 * d)
        self.act = nn.GELU(approximate="tanh") if fused else NewGELU()
        self.c_proj = nn.Linear(4 * d, d)
        self.dropout = nn.Dropout(pdrop)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.dropout(self.c_proj(self.act(self.c_fc(self.ln_2(x)))))


class GPT(L.LightningModule):
    def __init__(self, layers, d, heads, block, fused, vocab=256, pdrop=0.1, lr=3e-4):
        super().__init__()
        self.save_hyperparameters()
        self.wte = nn.Embedding(vocab, d)
        self.wpe = nn.Embedding(block, d)
        self.drop = nn.Dropout(pdrop)
        self.h = nn.ModuleList(Block(d, heads, block, pdrop, fused) for _ in range(layers))
        self.ln_f = nn.LayerNorm(d)
        self.lm_head = nn.Linear(d, vocab, bias=False)
        self.apply(self._init_weights)
        for n, p in self.named_parameters():
            if n.endswith("c_proj.weight"):
                nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * layers))
        self.acc = None
        self.loss_value, self.reads = None, 0

    @staticmethod
    def _init_weights(m):
        if isinstance(m, nn.Linear):
            nn.init.normal_(m.weight, mean=0.0, std=0.02)
            if m.bias is not None:
                nn.init.zeros_(m.bias)
        elif isinstance(m, nn.Embedding):
            nn.init.normal_(m.weight, mean=0.0, std=0.02)

    def forward(self, idx):
        T = idx.size(1)
        x = self.drop(self.wte(idx) + self.wpe(torch.arange(T, device=idx.device))[None])
        for blk in self.h:
            x = blk(x)
        return self.lm_head(self.ln_f(x))

    def training_step(self, batch, batch_idx):
        x, y = batch
        logits = self(x)
        loss = F.cross_entropy(logits.view(-1, logits.size(-1)), y.view(-1))
        self.acc = loss.detach() if self.acc is None else self.acc + loss.detach()
        if (batch_idx + 1) % 50 == 0:
            self.loss_value = self.acc.item() / 50
            self.acc = None
            self.reads += 1
        return loss

    def configure_optimizers(self):
        """minGPT's split: weight decay on Linear weights, none on biases, LayerNorms, embeddings."""
        decay, no_decay = [], []
        for mn, m in self.named_modules():
            for pn, p in m.named_parameters(recurse=False):
                (decay if pn == "weight" and isinstance(m, nn.Linear) else no_decay).append(p)
        groups = [{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}]
        return torch.optim.AdamW(groups, lr=self.hparams.lr, betas=(0.9, 0.95))


def main():
    args = cc.parser(__doc__, warmup=5).parse_args()
    gpu = args.device == "cuda"
    layers, d, heads, block, batch = (2, 64, 4, 64, 2) if args.smoke else (8, 768, 12, 1024, 8)
    text = "\n".join(cc.text_lines(2_000 if args.smoke else 20_000, seed=0)).encode()   # ~7.7 MB of bytes
    data = np.frombuffer(text, dtype=np.uint8)
    # the dataset's index already picks a pseudo-random window: no sampler permutation of 10 M indices
    loader = DataLoader(Bytes(data, block), batch_size=batch, shuffle=False, num_workers=2, pin_memory=gpu,
                        persistent_workers=True, prefetch_factor=4, drop_last=True)
    torch.manual_seed(0)
    model = GPT(layers, d, heads, block, fused=args.fix)
    timer = cc.lightning_timer("m_lightning_mingpt_fp32_manual_attention", args, batch,
                               extra=lambda: {"precision": trainer.precision, "fused_attention": bool(args.fix),
                                              "tokens_per_step": batch * block, "loss": model.loss_value,
                                              "loss_reads": model.reads,
                                              "params_m": round(sum(p.numel() for p in model.parameters()) / 1e6, 1)})
    fix_kw = {"precision": "bf16-mixed"} if args.fix else {}
    trainer = cc.lightning_trainer(args, [timer], gradient_clip_val=1.0, **fix_kw)  # gpuwhy: plants C8 (no precision given: Lightning's default 32-true, FP32 GEMMs with TF32 off)
    trainer.fit(model, loader)


if __name__ == "__main__":
    main()
