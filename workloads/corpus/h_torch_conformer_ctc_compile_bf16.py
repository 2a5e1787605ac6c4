"""Healthy control (PyTorch under torch.compile, speech recognition): CTC training of a
Conformer-M (Gulati et al., Interspeech 2020; laid out as torchaudio.models.Conformer and NeMo's
Conformer-CTC lay it out) in plain PyTorch: 80-band log-mel features of 10 s utterances (1,000
frames), a Conv2d subsampling front end (two 3 x 3 stride-2 convolutions of 256 channels: 4x,
250 frames), 16 Conformer blocks of width 256 (half-step feed-forward modules of 1,024 with
SiLU, 4-head self-attention by scaled_dot_product_attention with the padded frames masked, a
convolution module of pointwise 512 + GLU, depthwise kernel 31, BatchNorm, SiLU, pointwise,
then LayerNorm), a CTC head over 128 SentencePiece-style tokens (27.4 M parameters, random
weights); bf16 autocast, fused AdamW with a Noam warm-up, F.ctc_loss in float32 (targets of
40-80 tokens, lengths from 70% to 100% of the utterance given as CPU tensors, as made by the
collate), SpecAugment (2 frequency masks of up to 27 bands, 10 time masks of up to 5%) done
on the GPU, batch 64 utterances drawn from 512 synthetic feature sequences held there; the
loss stays on the device and is read every 50 steps.

The blocks run under torch.compile in its default mode, compiled the way PyTorch's regional
compilation recipe does for a stack of identical blocks (block.compile(): one forward and
backward compiled in the first warm-up iteration, reused by all 16 blocks); the utterance
lengths are fixed per batch slot, so no shape changes after the warm-up.
Estimated (not measured): ~3.6 TFLOP a step (forward ~1.2: the blocks 0.82, the subsampling's
second convolution 0.38), ~12-16 ms of GPU work at 250-300 TFLOP/s with the fused elementwise
work, against ~5-8 ms of host time (~1,300 kernels of the compiled blocks and the eager front
end, loss and optimizer): GPU-bound, nothing to fix. ~10-14 GB of GPU memory. Its warm-up is
Inductor's compilation (~15-25 s the first time on a machine, its caches serve later runs).

--fix: nothing (control).

Written blind for the yankee batch.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

import cc


class FeedForward(nn.Module):
    def __init__(self, d, ff):
        super().__init__()
        self.net = nn.Sequential(nn.LayerNorm(d), nn.Linear(d, ff), nn.SiLU(), nn.Dropout(0.1), nn.Linear(ff, d), nn.Dropout(0.1))

    def forward(self, x):
        return self.net(x)


class ConvModule(nn.Module):
    def __init__(self, d, kernel):
        super().__init__()
        self.ln = nn.LayerNorm(d)
        self.pw1 = nn.Conv1d(d, 2 * d, 1)
        self.dw = nn.Conv1d(d, d, kernel, padding=kernel // 2, groups=d)
        self.bn = nn.BatchNorm1d(d)
        self.pw2 = nn.Conv1d(d, d, 1)
        self.drop = nn.Dropout(0.1)

    def forward(self, x, pad):
        y = self.ln(x).masked_fill(pad.unsqueeze(-1), 0.0).transpose(1, 2)
        y = F.glu(self.pw1(y), dim=1)
        y = self.pw2(F.silu(self.bn(self.dw(y))))
        return self.drop(y.transpose(1, 2))


class ConformerBlock(nn.Module):
    def __init__(self, d, heads, ff, kernel):
        super().__init__()
        self.heads = heads
        self.ff1, self.ff2 = FeedForward(d, ff), FeedForward(d, ff)
        self.ln_att = nn.LayerNorm(d)
        self.qkv, self.out = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.conv = ConvModule(d, kernel)
        self.ln_out = nn.LayerNorm(d)
        self.drop = nn.Dropout(0.1)

    def forward(self, x, pad):
        b, t, d = x.shape
        x = x + 0.5 * self.ff1(x)
        q, k, v = self.qkv(self.ln_att(x)).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v, attn_mask=~pad.view(b, 1, 1, t), dropout_p=0.1 if self.training else 0.0)
        x = x + self.drop(self.out(a.transpose(1, 2).reshape(b, t, d)))
        x = x + self.conv(x, pad)
        x = x + 0.5 * self.ff2(x)
        return self.ln_out(x)


class ConformerCTC(nn.Module):
    def __init__(self, n_mels, d, layers, heads, ff, kernel, vocab):
        super().__init__()
        self.sub = nn.Sequential(nn.Conv2d(1, d, 3, 2, 1), nn.ReLU(), nn.Conv2d(d, d, 3, 2, 1), nn.ReLU())
        self.sub_out = nn.Linear(d * ((n_mels + 3) // 4), d)
        self.pos = nn.Parameter(torch.randn(1, 4096, d) * 0.02)
        self.blocks = nn.ModuleList(ConformerBlock(d, heads, ff, kernel) for _ in range(layers))
        self.ctc = nn.Linear(d, vocab + 1)          # + blank (index 0)

    def forward(self, feats, pad):
        x = self.sub(feats.unsqueeze(1))            # (B, d, T/4, F/4)
        b, c, t, f = x.shape
        x = self.sub_out(x.permute(0, 2, 1, 3).reshape(b, t, c * f)) + self.pos[:, :t]
        for blk in self.blocks:
            x = blk(x, pad)
        return self.ctc(x).float().log_softmax(-1)


def main():
    args = cc.parser(__doc__, warmup=5).parse_args()
    dev = cc.torch_device(args)
    gpu = dev.type == "cuda"
    if args.smoke:
        n_mels, frames, d, layers, heads, ff, kernel, vocab, batch, n_utt = 32, 96, 32, 2, 2, 64, 7, 16, 4, 16
        tgt_len = (4, 8)
    else:
        n_mels, frames, d, layers, heads, ff, kernel, vocab, batch, n_utt = 80, 1000, 256, 16, 4, 1024, 31, 128, 64, 512
        tgt_len = (40, 80)
    g = torch.Generator(device=dev).manual_seed(0)
    # synthetic log-mel features (a smooth spectral envelope moving over time plus noise)
    env = F.interpolate(torch.randn(n_utt, 1, n_mels // 8, frames // 25, device=dev, generator=g),
                        size=(n_mels, frames), mode="bilinear", align_corners=False)[:, 0]
    feats_all = (env * 2 + torch.randn(n_utt, n_mels, frames, device=dev, generator=g) * 0.5).transpose(1, 2).contiguous()
    # per batch slot: fixed utterance and target lengths (CPU tensors, as a collate makes them)
    cg = torch.Generator().manual_seed(1)
    t_out = (frames + 3) // 4
    in_frames = (torch.linspace(0.7, 1.0, batch) * frames).long()
    out_len = ((in_frames + 3) // 4).clamp(max=t_out)
    tgt_lens = torch.randint(tgt_len[0], tgt_len[1] + 1, (batch,), generator=cg)
    targets_all = torch.randint(1, vocab + 1, (n_utt, tgt_len[1]), device=dev, generator=g)
    pad_in = (torch.arange(frames)[None] >= in_frames[:, None]).to(dev)            # (B, T) features
    pad = (torch.arange(t_out)[None] >= out_len[:, None]).to(dev)                  # (B, T/4) after subsampling
    torch.manual_seed(0)
    model = ConformerCTC(n_mels, d, layers, heads, ff, kernel, vocab).to(dev).train()
    params = sum(p.numel() for p in model.parameters())
    for blk in model.blocks:
        blk.compile()                        # torch.compile, default mode, one block at a time
    opt = torch.optim.AdamW(model.parameters(), lr=1.0, betas=(0.9, 0.98), weight_decay=1e-3, fused=gpu)
    warm = 10_000
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 5.0 / math.sqrt(d) * min((s + 1) ** -0.5, (s + 1) * warm ** -1.5))
    amp = torch.autocast(dev.type, dtype=torch.bfloat16, enabled=gpu)
    st = {"acc": torch.zeros((), device=dev), "loss": None, "reads": 0}
    fr = torch.arange(n_mels, device=dev).view(1, 1, n_mels)
    tt = torch.arange(frames, device=dev).view(1, frames, 1)

    def spec_augment(x):
        for _ in range(2):                                   # frequency masks
            w = torch.randint(0, 28, (batch, 1, 1), device=dev, generator=g)
            f0 = (torch.rand(batch, 1, 1, device=dev, generator=g) * (n_mels - w)).long()
            x = x.masked_fill((fr >= f0) & (fr < f0 + w), 0.0)
        w = (torch.rand(batch, 10, device=dev, generator=g) * 0.05 * frames).long().view(batch, 1, 1, 10)
        t0 = (torch.rand(batch, 10, device=dev, generator=g) * frames).long().view(batch, 1, 1, 10)
        tm = ((tt.unsqueeze(-1) >= t0) & (tt.unsqueeze(-1) < t0 + w)).any(-1)       # (B, T, 1)
        return x.masked_fill(tm, 0.0)

    def step(i):
        idx = torch.randint(0, n_utt, (batch,), device=dev, generator=g)
        x = spec_augment(feats_all[idx]).masked_fill(pad_in.unsqueeze(-1), 0.0)
        with amp:
            logp = model(x, pad)
        loss = F.ctc_loss(logp.transpose(0, 1), targets_all[idx], out_len, tgt_lens, blank=0, zero_infinity=True)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        st["acc"] += loss.detach()
        if i % 50 == 49:
            st["loss"] = st["acc"].item() / 50
            st["acc"].zero_()
            st["reads"] += 1

    cc.run("h_torch_conformer_ctc_compile_bf16", args, step, batch,
           extra=lambda: {"params_m": round(params / 1e6, 1), "frames": frames, "encoder_frames": t_out,
                          "loss": st["loss"], "loss_reads": st["reads"]})


if __name__ == "__main__":
    main()
