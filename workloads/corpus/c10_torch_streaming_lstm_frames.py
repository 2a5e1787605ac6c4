"""C10 serial model structure (a streaming model evaluated one frame at a time): the offline
evaluation of a streaming speech recognizer's acoustic model, in plain PyTorch (float32,
TF32 allowed, random weights): log-mel features (80 bins, 25 ms windows, 10 ms hop) made on
the GPU from 6-second 16 kHz waveforms with torch.stft and a mel filterbank, a
convolutional front-end subsampling time by 4 (two 3x3 stride-2 convolutions, 256
channels) projected to 768, a 3-layer unidirectional nn.LSTM of 768, and a CTC head over
64 tokens with greedy decoding kept on the GPU. Batches of 128 utterances (149 encoder
frames each). The evaluation script reuses the streaming runtime's API to "test what we
deploy": after the front-end, it calls model.step(frame, state) once per 40 ms frame,
nn.LSTM on a sequence of one and the head on that frame, carrying (h, c) between calls:
149 x 3 layers of dependent cuDNN steps of a few microseconds each, with the head's small
kernels between them, issued one frame at a time from Python, on one stream.

--fix: gpuwhy's C10 advice (fused RNN over the whole sequence): one nn.LSTM call on all 149
frames (cuDNN runs the recurrence internally, the input projections of all frames as one
GEMM a layer) and the head once over all frames; the same weights and the same outputs (a
unidirectional LSTM stepped frame by frame equals one call over the sequence).

Written blind for the summit batch.
"""
import math

import torch

import cc


def mel_filterbank(n_fft, n_mels, sr):
    """Triangular HTK-style mel filters, (n_mels, n_fft // 2 + 1)."""
    mel = lambda f: 2595 * math.log10(1 + f / 700)
    hz = lambda m: 700 * (10 ** (m / 2595) - 1)
    pts = torch.tensor([hz(mel(0) + i * (mel(sr / 2) - mel(0)) / (n_mels + 1)) for i in range(n_mels + 2)])
    freqs = torch.linspace(0, sr / 2, n_fft // 2 + 1)
    lo, mid, hi = pts[:-2, None], pts[1:-1, None], pts[2:, None]
    return torch.clamp(torch.minimum((freqs - lo) / (mid - lo), (hi - freqs) / (hi - mid)), min=0)


class StreamingAM(torch.nn.Module):
    def __init__(self, n_mels, d, layers, vocab, ch=256):
        super().__init__()
        self.sub = torch.nn.Sequential(torch.nn.Conv2d(1, ch, 3, stride=2), torch.nn.ReLU(),
                                       torch.nn.Conv2d(ch, ch, 3, stride=2), torch.nn.ReLU())
        f = ((n_mels - 1) // 2 - 1) // 2
        self.proj = torch.nn.Linear(ch * f, d)
        self.lstm = torch.nn.LSTM(d, d, num_layers=layers, batch_first=True)
        self.head = torch.nn.Linear(d, vocab)

    def frontend(self, feats):  # (B, T, mels) -> (B, T / 4, d)
        x = self.sub(feats.unsqueeze(1))
        b, c, t, f = x.shape
        return self.proj(x.permute(0, 2, 1, 3).reshape(b, t, c * f))

    def forward(self, x):  # the whole utterance
        y, _ = self.lstm(x)
        return self.head(y).log_softmax(-1)

    def step(self, x_t, state):  # one frame, as the streaming runtime calls it
        y, state = self.lstm(x_t, state)
        return self.head(y).log_softmax(-1), state


def main():
    args = cc.parser(__doc__).parse_args()
    dev = cc.torch_device(args)
    sr, n_fft, hop, n_mels = 16000, 400, 160, 80
    d, layers, vocab, batch, seconds = (32, 2, 16, 2, 0.5) if args.smoke else (768, 3, 64, 128, 6.0)
    torch.backends.cuda.matmul.allow_tf32 = True  # float32 model, TF32 tensor cores
    torch.backends.cudnn.allow_tf32 = True
    torch.manual_seed(0)
    model = StreamingAM(n_mels, d, layers, vocab, ch=16 if args.smoke else 256).to(dev).eval()
    fbank = mel_filterbank(n_fft, n_mels, sr).to(dev)
    window = torch.hann_window(n_fft, device=dev)
    g = torch.Generator(device=dev).manual_seed(0)
    n = int(sr * seconds)
    waves = [torch.randn(batch, n, device=dev, generator=g) * 0.1 for _ in range(4)]
    hyps = torch.zeros(16, batch, device=dev, dtype=torch.long)  # a ring of decoded lengths, on the GPU
    log = {"tokens": None, "frames": None}

    def features(w):
        spec = torch.stft(w, n_fft, hop, window=window, return_complex=True).abs().pow(2)  # (B, 201, T)
        feats = torch.log(fbank @ spec + 1e-6).transpose(1, 2)  # (B, T, 80)
        return (feats - feats.mean(1, keepdim=True)) / (feats.std(1, keepdim=True) + 1e-5)

    @torch.no_grad()
    def step(i):
        x = model.frontend(features(waves[i % len(waves)]))
        log["frames"] = x.shape[1]
        if args.fix:
            logp = model(x)
        else:
            state, out = None, []
            for t in range(x.shape[1]):  # gpuwhy: plants C10 (the LSTM stepped one frame at a time from Python)
                lp, state = model.step(x[:, t:t + 1], state)
                out.append(lp)
            logp = torch.cat(out, 1)
        best = logp.argmax(-1)  # greedy CTC: collapse repeats, drop blanks (0), on the GPU
        keep = (best != 0) & torch.cat([torch.ones_like(best[:, :1], dtype=torch.bool), best[:, 1:] != best[:, :-1]], 1)
        hyps[i % len(hyps)] = keep.sum(1)
        if i % 100 == 99:
            log["tokens"] = int(hyps.sum().item())

    cc.run("c10_torch_streaming_lstm_frames", args, step, batch,
           extra=lambda: {"encoder_frames": log["frames"],
                          "lstm": "one call over the sequence" if args.fix else "stepped frame by frame"})


if __name__ == "__main__":
    main()
