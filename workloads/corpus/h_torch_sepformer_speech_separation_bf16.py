"""Healthy control (plain PyTorch, speech separation): training a SepFormer (Subakan et al. 2021,
SpeechBrain's WSJ0-2mix recipe shape) to separate two overlapping speakers at 8 kHz: a learned
encoder (Conv1d 1 -> 256, kernel 16, stride 8, ReLU), the dual-path masking network (channel
LayerNorm, 1 x 1 convolution, chunks of 250 frames with 50% overlap and sinusoidal positional
encodings, 2 dual-path blocks of an 8-layer intra-chunk and an 8-layer inter-chunk pre-LN
transformer, d = 256, 8 heads, FFN 1,024, scaled_dot_product_attention; PReLU, a 1 x 1 Conv2d
to two speakers' masks, overlap-add, the gated output and ReLU), and the decoder
(ConvTranspose1d 256 -> 1); 25.7 M parameters, random weights; the scale-invariant SNR with
utterance-level permutation-invariant training over the two speakers (both permutations
computed, the better one taken per mixture), bf16 autocast, fused AdamW (lr 1.5e-4) with
gradient clipping at 5 (foreach); batch 4 mixtures of 3 s drawn on the GPU from 1,024
synthetic utterances held there (voiced syllables of a few harmonics with drifting pitch and
formant-like envelopes, unvoiced bursts, pauses), each mixture two random utterances at a
random relative level of 0-5 dB; the loss stays on the GPU and is read every 50 steps.

About 4.4 TFLOP a step (FlopCounterMode) over 32 transformer layers of 25,000 tokens (the
intra-chunk layers attend within chunks of 250 frames, the inter-chunk layers across ~25
chunks), with their LayerNorms, residuals and the chunk transposes, ~25-35 ms of GPU work
against ~12-18 ms of host issue (~2,000-2,500 kernels): GPU-bound, nothing to fix.

--fix: nothing (control).

Written blind for the sierra batch.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

import cc

SR = 8000


class TransformerLayer(nn.Module):
    def __init__(self, d, heads, ff):
        super().__init__()
        self.heads = heads
        self.n1, self.qkv, self.proj = nn.LayerNorm(d), nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.n2, self.ff = nn.LayerNorm(d), nn.Sequential(nn.Linear(d, ff), nn.ReLU(), nn.Linear(ff, d))

    def forward(self, x):
        b, n, d = x.shape
        q, k, v = self.qkv(self.n1(x)).view(b, n, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        x = x + self.proj(F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(b, n, d))
        return x + self.ff(self.n2(x))


def sinusoid(n, d, dev):
    pos = torch.arange(n, device=dev, dtype=torch.float32)[:, None]
    div = torch.exp(torch.arange(0, d, 2, device=dev, dtype=torch.float32) * (-math.log(10000.0) / d))
    pe = torch.zeros(n, d, device=dev)
    pe[:, 0::2], pe[:, 1::2] = torch.sin(pos * div), torch.cos(pos * div)
    return pe


class Transformer(nn.Module):
    """SpeechBrain's SBTransformerBlock: positional encoding, layers, final LayerNorm."""

    def __init__(self, layers, d, heads, ff):
        super().__init__()
        self.layers = nn.ModuleList([TransformerLayer(d, heads, ff) for _ in range(layers)])
        self.norm = nn.LayerNorm(d)

    def forward(self, x):
        x = x + sinusoid(x.shape[1], x.shape[2], x.device).to(x.dtype)
        for layer in self.layers:
            x = layer(x)
        return self.norm(x)


class SepFormer(nn.Module):
    def __init__(self, n=256, kernel=16, chunk=250, blocks=2, layers=8, heads=8, ff=1024, spk=2):
        super().__init__()
        self.kernel, self.chunk, self.spk = kernel, chunk, spk
        self.encoder = nn.Conv1d(1, n, kernel, stride=kernel // 2, bias=False)
        self.norm = nn.GroupNorm(1, n, eps=1e-8)
        self.conv1d = nn.Conv1d(n, n, 1, bias=False)
        self.intra = nn.ModuleList([Transformer(layers, n, heads, ff) for _ in range(blocks)])
        self.inter = nn.ModuleList([Transformer(layers, n, heads, ff) for _ in range(blocks)])
        self.intra_norm = nn.ModuleList([nn.GroupNorm(1, n, eps=1e-8) for _ in range(blocks)])
        self.inter_norm = nn.ModuleList([nn.GroupNorm(1, n, eps=1e-8) for _ in range(blocks)])
        self.prelu = nn.PReLU()
        self.conv2d = nn.Conv2d(n, n * spk, 1)
        self.out = nn.Sequential(nn.Conv1d(n, n, 1), nn.Tanh())
        self.gate = nn.Sequential(nn.Conv1d(n, n, 1), nn.Sigmoid())
        self.end = nn.Conv1d(n, n, 1, bias=False)
        self.decoder = nn.ConvTranspose1d(n, 1, kernel, stride=kernel // 2, bias=False)

    def forward(self, mix):
        b = mix.shape[0]
        w = F.relu(self.encoder(mix[:, None]))                               # (B, N, L)
        x = self.conv1d(self.norm(w))
        n, length = x.shape[1], x.shape[2]
        hop = self.chunk // 2
        gap = self.chunk - (hop + length % self.chunk) % self.chunk           # SpeechBrain's _padding
        xp = F.pad(x, (hop, gap + hop))
        chunks = xp.unfold(2, self.chunk, hop)                                # (B, N, S, K)
        s = chunks.shape[2]
        for k in range(len(self.intra)):
            h = chunks.permute(0, 2, 3, 1).reshape(b * s, self.chunk, n)      # within each chunk
            h = self.intra[k](h).reshape(b, s, self.chunk, n).permute(0, 3, 1, 2)
            chunks = chunks + self.intra_norm[k](h)
            h = chunks.permute(0, 3, 2, 1).reshape(b * self.chunk, s, n)      # across chunks
            h = self.inter[k](h).reshape(b, self.chunk, s, n).permute(0, 3, 2, 1)
            chunks = chunks + self.inter_norm[k](h)
        m = self.conv2d(self.prelu(chunks)).reshape(b * self.spk, n, s, self.chunk)
        # overlap-add back to frames
        m = F.fold(m.permute(0, 1, 3, 2).reshape(b * self.spk, n * self.chunk, s), (1, xp.shape[2]),
                   (1, self.chunk), stride=(1, hop)).reshape(b * self.spk, n, -1)[..., hop:hop + length]
        m = F.relu(self.end(self.out(m) * self.gate(m))).reshape(b, self.spk, n, length)
        est = self.decoder((w[:, None] * m).reshape(b * self.spk, n, length)).reshape(b, self.spk, -1)
        return est[..., :mix.shape[1]]


def si_snr(est, ref, eps=1e-8):
    est = est - est.mean(-1, keepdim=True)
    ref = ref - ref.mean(-1, keepdim=True)
    proj = (est * ref).sum(-1, keepdim=True) * ref / (ref.pow(2).sum(-1, keepdim=True) + eps)
    noise = est - proj
    return 10 * torch.log10(proj.pow(2).sum(-1) / (noise.pow(2).sum(-1) + eps) + eps)


def pit_si_snr_loss(est, src):
    """Utterance-level PIT for two speakers: both assignments, the better one per mixture."""
    a = si_snr(est, src).mean(1)
    b = si_snr(est, src.flip(1)).mean(1)
    return -torch.maximum(a, b).mean()


def make_utterances(n, samples, dev, seed=0):
    """n speech-like signals: voiced syllables (a few harmonics of a drifting pitch under
    formant-like envelopes), unvoiced bursts and pauses; float32 on the device."""
    g = torch.Generator(device=dev).manual_seed(seed)
    r = lambda *s: torch.rand(*s, device=dev, generator=g)             # noqa: E731
    t = torch.arange(samples, device=dev, dtype=torch.float32) / SR
    out = torch.empty(n, samples, device=dev)
    for s in range(0, n, 128):
        m = min(128, n - s)
        f0 = 90 + 150 * r(m, 1)
        pitch = f0 * (1 + 0.15 * torch.sin(2 * math.pi * (0.3 + r(m, 1)) * t + 6.3 * r(m, 1)))
        phase = 2 * math.pi * torch.cumsum(pitch, 1) / SR
        formant = 500 + 2000 * r(m, 1, 4)
        voiced = sum(torch.sin(k * phase) * torch.exp(-((k * f0[..., None] - formant) ** 2).amin(-1) / 4e5) / k for k in range(1, 9))
        syl = 3 + 3 * r(m, 1)
        env = torch.relu(torch.sin(2 * math.pi * syl * t + 6.3 * r(m, 1))) ** 2
        pause = (torch.sin(2 * math.pi * 0.4 * t + 6.3 * r(m, 1)) > -0.6).float()
        burst = torch.randn(m, samples, device=dev, generator=g) * (torch.sin(2 * math.pi * syl * t * 0.5) > 0.95).float() * 0.2
        x = (voiced * env + burst) * pause
        out[s:s + m] = x / x.std(1, keepdim=True).clamp(min=1e-3)
    return out


def main():
    args = cc.parser(__doc__, warmup=5).parse_args()
    dev = cc.torch_device(args)
    gpu = dev.type == "cuda"
    if args.smoke:
        n_utt, seconds, batch, n, layers, ff, chunk = 32, 0.5, 2, 32, 1, 64, 50
    else:
        n_utt, seconds, batch, n, layers, ff, chunk = 1024, 3.0, 4, 256, 8, 1024, 250
    samples = int(seconds * SR)
    utt = make_utterances(n_utt, samples, dev)

    torch.manual_seed(0)
    model = SepFormer(n=n, chunk=chunk, layers=layers, ff=ff).to(dev).train()
    params = sum(p.numel() for p in model.parameters())
    opt = torch.optim.AdamW(model.parameters(), lr=1.5e-4, weight_decay=0.0, fused=gpu)
    amp = torch.autocast(dev.type, dtype=torch.bfloat16, enabled=gpu)
    g = torch.Generator(device=dev).manual_seed(1)
    st = {"acc": torch.zeros((), device=dev), "loss": None, "reads": 0}

    def step(i):
        idx = torch.randint(0, n_utt, (batch, 2), device=dev, generator=g)
        src = utt[idx]                                                    # (B, 2, T)
        gain = 10 ** (-5 * torch.rand(batch, 1, 1, device=dev, generator=g) / 20)
        src = torch.cat([src[:, :1], src[:, 1:] * gain[:, :1]], 1)
        mix = src.sum(1)
        with amp:
            est = model(mix)
        loss = pit_si_snr_loss(est.float(), src)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0, foreach=True)
        opt.step()
        st["acc"] += loss.detach()
        if i % 50 == 49:
            st["loss"] = st["acc"].item() / 50
            st["acc"].zero_()
            st["reads"] += 1

    cc.run("h_torch_sepformer_speech_separation_bf16", args, step, batch,
           extra=lambda: {"params_m": round(params / 1e6, 1), "segment_s": seconds, "loss": st["loss"],
                          "loss_reads": st["reads"]})


if __name__ == "__main__":
    main()
