"""C5 CUDA_LAUNCH_BLOCKING=1 left on (through a composed YAML experiment config): speech
recognition training under a Lightning `Trainer` at `bf16-mixed`, configured the Hydra way
without Hydra: the experiment file `asr_ctc_small.yaml` lists `defaults: [base, debug]`, and a
small loader merges base.yaml, then debug.yaml, then the experiment's own keys. debug.yaml was
added while hunting a device-side assert in the CTC targets ("blank index out of range") and is
still in the defaults list; its `env:` section holds CUDA_LAUNCH_BLOCKING: "1" and
TORCH_SHOW_CPP_STACKTRACES: "1". The script exports the merged `env:` section into os.environ
at the top of main, before CUDA starts, as such launchers do (the launching shell never names
the variable). The config files are written under GW_CORPUS_CACHE at every start, as a
checkout would have them.

The model is a small CTC acoustic model as a LightningModule: 80-bin log-mel features, a
two-layer Conv2d subsampling (4x in time), 12 pre-LN Transformer encoder layers of width 256
(4 heads, SDPA, FFN 1024, dropout 0.1), a linear CTC head over 128 sentencepiece-sized units;
F.ctc_loss on float32 log-probabilities, AdamW (foreach) with a warm-up/inverse-sqrt LambdaLR per
step, gradient clipping 1.0 by norm, batch 32 utterances of 1,600 frames (16 s at 10 ms) with
padded lengths and target lengths (kept on the host for ctc_loss, a copy on the GPU for the
attention mask). The utterances (float16 features, 256 of them) and their
transcripts are made once in memory; four persistent loader workers with pin_memory serve
them. With the variable set, every one of the step's ~1,000 launches waits for its kernel, and
the host's launch work and the GPU's kernels take turns instead of overlapping.

--fix: gpuwhy's C5 advice (unset it): the CUDA_LAUNCH_BLOCKING line deleted from debug.yaml
(the debug overlay, its stack-trace variable and everything else unchanged).

Written blind for the foxtrot batch.
"""
import math
import os
import sys

import numpy as np
import yaml

import cc

BASE_YAML = """\
seed: 1234
data:
  utterances: 256
  frames: 1600
  n_mels: 80
  max_target: 160
  batch_size: 32
  num_workers: 4
model:
  d_model: 256
  heads: 4
  layers: 12
  ffn: 1024
  dropout: 0.1
  vocab: 128
optim:
  lr: 1.0e-3
  warmup: 2500
  clip: 1.0
trainer:
  precision: bf16-mixed
env:
  TOKENIZERS_PARALLELISM: "false"
"""

DEBUG_YAML = """\
# debugging the device-side assert in the CTC targets (blank index out of range)
env:
  CUDA_LAUNCH_BLOCKING: "1"
  TORCH_SHOW_CPP_STACKTRACES: "1"
"""

EXPERIMENT_YAML = """\
defaults: [base, debug]
name: asr_ctc_small
optim:
  lr: 2.0e-3
"""


def write_configs(root, fix):
    os.makedirs(root, exist_ok=True)
    debug = DEBUG_YAML
    if fix:  # the fix: the line deleted from the overlay
        debug = "".join(l for l in debug.splitlines(True) if "CUDA_LAUNCH_BLOCKING" not in l)
    for name, text in (("base", BASE_YAML), ("debug", debug), ("asr_ctc_small", EXPERIMENT_YAML)):
        with open(os.path.join(root, name + ".yaml"), "w") as f:
            f.write(text)


def merge(a, b):
    out = dict(a)
    for k, v in (b or {}).items():
        out[k] = merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def load_config(root, name):
    """The experiment's defaults merged in order, then its own keys (Hydra's composition)."""
    with open(os.path.join(root, name + ".yaml")) as f:
        exp = yaml.safe_load(f)
    cfg = {}
    for d in exp.pop("defaults", []):
        with open(os.path.join(root, d + ".yaml")) as f:
            cfg = merge(cfg, yaml.safe_load(f))
    return merge(cfg, exp)


def main():
    args = cc.parser(__doc__).parse_args()
    root = os.path.join(cc.CACHE, "foxtrot_asr_configs" + ("_fix" if args.fix else ""))
    write_configs(root, args.fix)
    cfg = load_config(root, "asr_ctc_small")
    # gpuwhy: plants C5 (debug.yaml, still in the experiment's defaults, brings CUDA_LAUNCH_BLOCKING=1 into the environment before CUDA starts)
    os.environ.update({k: str(v) for k, v in cfg.get("env", {}).items()})

    import lightning as L
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    from torch.utils.data import DataLoader, Dataset

    if args.smoke:
        cfg["data"].update(utterances=8, frames=64, batch_size=2, num_workers=2, max_target=8)
        cfg["model"].update(d_model=32, heads=2, layers=2, ffn=64)
    dc, mc, oc = cfg["data"], cfg["model"], cfg["optim"]
    L.seed_everything(cfg["seed"], verbose=False)

    class Utterances(Dataset):
        """Log-mel features (float16) with their lengths and transcripts, in memory."""

        def __init__(self, n, frames, mels, max_target, vocab):
            rng = np.random.default_rng(0)
            t = np.arange(frames, dtype=np.float32)[:, None]
            f = np.arange(mels, dtype=np.float32)[None, :]
            self.feats = [(np.sin(t * (0.01 + 0.002 * k) + f * 0.3) + 0.3 * rng.standard_normal((frames, mels)))
                          .astype(np.float16) for k in range(n)]
            self.lens = rng.integers(frames * 3 // 4, frames + 1, n)
            self.tlens = rng.integers(max_target // 2, max_target + 1, n)
            self.targets = rng.integers(1, vocab, (n, max_target))  # 0 is the blank

        def __len__(self):
            return 1_000_000

        def __getitem__(self, i):
            k = i % len(self.feats)
            return (torch.from_numpy(self.feats[k]), int(self.lens[k]), torch.from_numpy(self.targets[k]),
                    int(self.tlens[k]))

    class Speech(L.LightningDataModule):
        def setup(self, stage=None):
            self.train = Utterances(dc["utterances"], dc["frames"], dc["n_mels"], dc["max_target"], mc["vocab"])

        def train_dataloader(self):
            return DataLoader(self.train, batch_size=dc["batch_size"], shuffle=True, drop_last=True,
                              num_workers=dc["num_workers"], pin_memory=True, persistent_workers=True,
                              prefetch_factor=4)

    class Block(nn.Module):
        def __init__(self, d, heads, ffn, p):
            super().__init__()
            self.heads, self.p = heads, p
            self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
            self.ff1, self.ff2 = nn.Linear(d, ffn), nn.Linear(ffn, d)
            self.drop = nn.Dropout(p)

        def forward(self, x, mask):
            b, t, d = x.shape
            q, k, v = (z.view(b, t, self.heads, -1).transpose(1, 2) for z in self.qkv(self.ln1(x)).split(d, 2))
            a = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=self.p if self.training else 0.0)
            x = x + self.drop(self.proj(a.transpose(1, 2).reshape(b, t, d)))
            return x + self.drop(self.ff2(self.drop(F.silu(self.ff1(self.ln2(x))))))

    class CTCModel(L.LightningModule):
        def __init__(self):
            super().__init__()
            d = mc["d_model"]
            self.sub = nn.Sequential(nn.Conv2d(1, d, 3, 2, 1), nn.SiLU(), nn.Conv2d(d, d, 3, 2, 1), nn.SiLU())
            self.sub_proj = nn.Linear(d * ((dc["n_mels"] + 3) // 4), d)
            self.blocks = nn.ModuleList(Block(d, mc["heads"], mc["ffn"], mc["dropout"]) for _ in range(mc["layers"]))
            self.norm = nn.LayerNorm(d)
            self.head = nn.Linear(d, mc["vocab"])

        def transfer_batch_to_device(self, batch, device, dataloader_idx):
            # the lengths stay on the host too: ctc_loss reads them there (no read-back)
            feats, lens, targets, tlens = batch
            return (feats.to(device, non_blocking=True), lens, targets.to(device, non_blocking=True), tlens,
                    lens.to(device, non_blocking=True))

        def training_step(self, batch, batch_idx):
            feats, lens, targets, tlens, lens_dev = batch
            x = self.sub(feats.float().unsqueeze(1))                   # (B, d, T/4, F/4)
            b, c, t, f = x.shape
            x = self.sub_proj(x.permute(0, 2, 1, 3).reshape(b, t, c * f))
            out_lens = (lens + 3) // 4
            valid = torch.arange(t, device=x.device)[None, :] < ((lens_dev + 3) // 4)[:, None]
            mask = valid[:, None, None, :]
            for blk in self.blocks:
                x = blk(x, mask)
            logp = self.head(self.norm(x)).float().log_softmax(-1).transpose(0, 1)  # (T, B, V)
            return F.ctc_loss(logp, targets, out_lens, tlens, blank=0, zero_infinity=True)

        def configure_optimizers(self):
            opt = torch.optim.AdamW(self.parameters(), lr=oc["lr"], betas=(0.9, 0.98), weight_decay=1e-3,
                                    foreach=True)  # not fused: Lightning clips gradients under bf16-mixed
            w = oc["warmup"]
            sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min((s + 1) / w, math.sqrt(w / (s + 1))))
            return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step"}}

    torch.set_float32_matmul_precision("high")
    timer = cc.lightning_timer("c5_lightning_yaml_debug_env", args, dc["batch_size"],
                               extra=lambda: {"cuda_launch_blocking": os.environ.get("CUDA_LAUNCH_BLOCKING", ""),
                                              "config_defaults": "base, debug"})
    precision = cfg["trainer"]["precision"] if args.device == "cuda" else "bf16-mixed"
    trainer = cc.lightning_trainer(args, [timer], precision=precision, gradient_clip_val=oc["clip"])
    trainer.fit(CTCModel(), datamodule=Speech())
    if timer.res is None:
        sys.exit("training ended before the timed part")


if __name__ == "__main__":
    main()
