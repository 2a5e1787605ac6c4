"""C14 periodic stalls (text samples generated inside the training loop): a byte-level GPT (the
nanoGPT model: 12 pre-LN blocks of width 768, 12 heads, causal SDPA, tanh-GELU MLP, learned
positions, 256-byte vocabulary, context 1,024; 85 M parameters, random weights) trained as a
LightningModule under Trainer(precision="bf16-mixed") with fused AdamW and a cosine schedule, on
random 1,024-byte windows of a text corpus held in memory (4 pinned loader workers), batch 16.

To watch the model learn, the project's Callback writes text samples every 10 training steps
(on_train_batch_end): four prompts continued by 128 bytes with nanoGPT's generate() (no KV cache:
each new byte is a full forward pass over the growing context, then temperature, top-k 40,
softmax and torch.multinomial, all on the GPU), decoded to UTF-8 and appended to a samples file.
Each of those 128 forward passes is a few hundred small kernels over at most 4 x 152 tokens,
launched one after another by the Python loop: for about 0.2 s every 10 steps (about 0.25 s of
training) the GPU runs small kernels with gaps between them and no training work.

--fix: gpuwhy's C14 advice (periodic work less often): samples every 2,000 steps, outside the
timed part; the callback, prompts, sampler, model, data and optimizer unchanged.

Written blind for the india batch.
"""
import math
import os

import lightning as L
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

import cc


class Block(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.ln_1, self.ln_2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.c_attn, self.c_proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(approximate="tanh"), nn.Linear(4 * d, d))

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in self.c_attn(self.ln_1(x)).split(d, 2))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.c_proj(y.transpose(1, 2).reshape(b, t, d))
        return x + self.mlp(self.ln_2(x))


class ByteGPT(L.LightningModule):
    def __init__(self, layers, d, heads, block_size, lr=6e-4, total=100_000):
        super().__init__()
        self.save_hyperparameters()
        self.wte, self.wpe = nn.Embedding(256, d), nn.Embedding(block_size, d)
        self.h = nn.ModuleList(Block(d, heads) for _ in range(layers))
        self.ln_f = nn.LayerNorm(d)
        self.lm_head = nn.Linear(d, 256, bias=False)

    def forward(self, idx):
        x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1], device=idx.device))
        for blk in self.h:
            x = blk(x)
        return self.lm_head(self.ln_f(x))

    def training_step(self, batch, batch_idx):
        x, y = batch
        return F.cross_entropy(self(x).flatten(0, 1), y.flatten())

    @torch.no_grad()
    def generate(self, idx, max_new_tokens, temperature=0.8, top_k=40):
        """nanoGPT's sampler: the whole (cropped) context through the model for every new byte."""
        for _ in range(max_new_tokens):
            idx_cond = idx if idx.size(1) <= self.hparams.block_size else idx[:, -self.hparams.block_size:]
            logits = self(idx_cond)[:, -1, :] / temperature
            v, _ = torch.topk(logits, min(top_k, logits.size(-1)))
            logits = logits.masked_fill(logits < v[:, [-1]], float("-inf"))
            idx_next = torch.multinomial(F.softmax(logits, dim=-1), num_samples=1)
            idx = torch.cat((idx, idx_next), dim=1)
        return idx

    def configure_optimizers(self):
        opt = torch.optim.AdamW(self.parameters(), lr=self.hparams.lr, betas=(0.9, 0.95), weight_decay=0.1,
                                fused=self.device.type == "cuda")
        total = self.hparams.total
        sched = torch.optim.lr_scheduler.LambdaLR(
            opt, lambda s: min(1.0, (s + 1) / 200) * (0.1 + 0.45 * (1 + math.cos(math.pi * min(s, total) / total))))
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step"}}


class SampleText(L.Callback):
    """Every n training steps: continue a few prompts and append the text to the samples file."""

    PROMPTS = ("def train(model, loader", "The gradient of the loss", "import numpy as np\n", "for epoch in range(")

    def __init__(self, every_n_steps, new_tokens, path):
        self.every, self.new_tokens, self.path = every_n_steps, new_tokens, path
        self.samples = 0

    def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx):
        if (batch_idx + 1) % self.every:
            return
        width = max(len(p) for p in self.PROMPTS)
        prompt = torch.tensor([list(p.rjust(width).encode()) for p in self.PROMPTS], device=module.device)
        module.eval()
        with torch.autocast(module.device.type, dtype=torch.bfloat16, enabled=module.device.type == "cuda"):
            out = module.generate(prompt, self.new_tokens)
        module.train()
        with open(self.path, "a") as f:
            for row in out.tolist():
                f.write(f"--- step {trainer.global_step}\n{bytes(row).decode('utf-8', 'replace')}\n")
        self.samples += 1


class Windows(Dataset):
    def __init__(self, data, block):
        self.data, self.block = data, block

    def __len__(self):
        return 10_000_000

    def __getitem__(self, i):
        j = np.random.default_rng(i).integers(0, len(self.data) - self.block - 1)
        w = torch.from_numpy(self.data[j:j + self.block + 1].astype(np.int64))
        return w[:-1], w[1:]


def main():
    args = cc.parser(__doc__, warmup=5).parse_args()
    gpu = args.device == "cuda"
    if args.smoke:
        layers, d, heads, block, batch, lines, every, new_tokens, workers = 2, 64, 4, 64, 4, 200, 4, 8, 1
    else:
        layers, d, heads, block, batch, lines, every, new_tokens, workers = 12, 768, 12, 1024, 16, 20_000, 10, 128, 4
    if args.fix:
        every = 2000                       # the advice: periodic work less often (never in the timed part)
    text = "\n".join(cc.text_lines(lines, seed=3)).encode()
    data = np.frombuffer(text, dtype=np.uint8)
    loader = DataLoader(Windows(data, block), batch_size=batch, shuffle=True, num_workers=workers,
                        pin_memory=gpu, persistent_workers=True, drop_last=True)
    torch.manual_seed(0)
    model = ByteGPT(layers, d, heads, block)
    os.makedirs(cc.CACHE, exist_ok=True)
    path = os.path.join(cc.CACHE, f"gpt_samples_{os.getpid()}.txt")
    sampler = SampleText(every, new_tokens, path)  # gpuwhy: plants C14 (128 bytes generated for 4 prompts every 10 steps)
    timer = cc.lightning_timer("c14_lightning_gpt_sample_text_every_n", args, batch,
                               extra=lambda: {"sample_every_n_steps": every, "new_bytes": new_tokens,
                                              "prompts": len(SampleText.PROMPTS), "sample_rounds": sampler.samples})
    trainer = cc.lightning_trainer(args, [timer, sampler], precision="bf16-mixed" if gpu else "32-true")
    try:
        trainer.fit(model, train_dataloaders=loader)
    finally:
        if os.path.exists(path):
            os.remove(path)


if __name__ == "__main__":
    main()
