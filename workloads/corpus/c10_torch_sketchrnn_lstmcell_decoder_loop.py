"""C10 a Python loop over time steps (the decoder's LSTMCell stepped stroke by stroke with teacher
forcing): training Sketch-RNN (Ha & Eck 2017), the sequence VAE of vector drawings, in plain
PyTorch on QuickDraw-style sketches in its stroke-5 format (dx, dy and the pen states
down / up / end), Nmax 250 points, batch 100 as in the paper's hyperparameters: a
bidirectional nn.LSTM encoder of 256 units a direction over the whole sketch to a 128-d latent
(mean and log-variance, KL weight annealed from 0.01 towards 0.5 with a KL floor of 0.2), the
latent into the decoder's initial state (tanh) and concatenated to every decoder input, a
decoder LSTM of 1,024 units, and an output layer to a 20-component bivariate Gaussian mixture
over (dx, dy) and the 3 pen-state logits; the mixture's negative log-likelihood over the
drawn points and the pen states' cross-entropy over all 250, Adam (lr 1e-3, fused) with
gradient clipping at 1.0 (foreach), float32 with TF32 allowed for matmuls and cuDNN;
70,000 synthetic sketches (a QuickDraw category's training split) of 1-6 strokes (lines, arcs
and loops with jitter, 40-250 points) made at start and held on the GPU in stroke-5; the loss
stays there and is read every 50 steps.

The decoder is written once for training and for sampling, as the PyTorch ports write it: an
nn.LSTMCell stepped in a Python loop over the 250 time steps (the input at step t is the
previous point and the latent, all known under teacher forcing), each hidden state appended
to a list, the mixture layer applied once to the stacked outputs: ~5 small kernels forward
and ~8 backward a step of the loop, ~3,500 dependent launches a training step on one stream,
each a GEMM of 100 x 1,024 x 4,096 or an elementwise kernel of a few microseconds.

--fix: gpuwhy's C10 advice (a fused layer over the whole sequence instead of the cell's
loop): the decoder as one nn.LSTM call (cuDNN) over all 250 steps with the cell's weights
(outputs checked equal to the loop's on one batch at start); encoder, latent, mixture layer,
data, loss and optimizer unchanged.

Written blind for the sierra batch.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

import cc

N_MIX, N_Z = 20, 128


class SketchRNN(nn.Module):
    def __init__(self, enc=256, dec=1024, fused=False):
        super().__init__()
        self.fused = fused
        self.encoder = nn.LSTM(5, enc, batch_first=True, bidirectional=True)
        self.mu, self.sigma = nn.Linear(2 * enc, N_Z), nn.Linear(2 * enc, N_Z)
        self.init_state = nn.Linear(N_Z, 2 * dec)
        if fused:
            self.decoder = nn.LSTM(5 + N_Z, dec, batch_first=True)
        else:
            self.cell = nn.LSTMCell(5 + N_Z, dec)
        self.out = nn.Linear(dec, 6 * N_MIX + 3)

    def decode(self, inp, h, c):
        if self.fused:
            y, _ = self.decoder(inp, (h[None], c[None]))
            return y
        outs = []
        for t in range(inp.shape[1]):  # gpuwhy: plants C10 (the decoder's LSTMCell stepped over the 250 time steps from Python: ~3,500 small dependent kernels forward and backward)
            h, c = self.cell(inp[:, t], (h, c))
            outs.append(h)
        return torch.stack(outs, 1)

    def forward(self, strokes):
        b, n, _ = strokes.shape
        _, (hn, _) = self.encoder(strokes[:, 1:])
        hcat = torch.cat([hn[0], hn[1]], -1)
        mu, presig = self.mu(hcat), self.sigma(hcat)
        z = mu + torch.exp(presig / 2) * torch.randn_like(mu)
        h0, c0 = torch.tanh(self.init_state(z)).chunk(2, -1)
        inp = torch.cat([strokes[:, :-1], z[:, None].expand(-1, n - 1, -1)], -1)
        y = self.decode(inp, h0.contiguous(), c0.contiguous())
        return self.out(y), mu, presig


def mixture_loss(params, target):
    """Sketch-RNN's reconstruction loss: the bivariate mixture's NLL over the drawn points
    (masked at the end of each sketch) and the pen states' cross-entropy over all steps."""
    pi, mx, my, sx, sy, rho = params[..., :6 * N_MIX].split(N_MIX, -1)
    pen = params[..., 6 * N_MIX:]
    sx, sy, rho = sx.exp(), sy.exp(), torch.tanh(rho)
    dx, dy = target[..., 0:1], target[..., 1:2]
    zx, zy = (dx - mx) / sx, (dy - my) / sy
    one_r2 = (1 - rho ** 2).clamp(min=1e-6)
    log_n = -(zx ** 2 + zy ** 2 - 2 * rho * zx * zy) / (2 * one_r2) - torch.log(2 * math.pi * sx * sy * one_r2.sqrt())
    log_p = torch.logsumexp(F.log_softmax(pi, -1) + log_n, -1)
    mask = 1.0 - target[..., 4]
    l_s = -(log_p * mask).sum() / (mask.numel())
    l_p = F.cross_entropy(pen.reshape(-1, 3), target[..., 2:].argmax(-1).reshape(-1))
    return l_s + l_p


def make_sketches(n, nmax, dev, seed=0):
    """n stroke-5 sketches (n, nmax + 1, 5) with a start token: 1-6 strokes of lines, arcs
    and loops with jitter, 40-nmax points, normalized offsets; padded with end-of-sketch."""
    g = torch.Generator(device=dev).manual_seed(seed)
    r = lambda *s: torch.rand(*s, device=dev, generator=g)         # noqa: E731
    t = torch.arange(nmax, device=dev, dtype=torch.float32)
    length = (40 + r(n, 1) * (nmax - 40)).floor()
    n_strokes = (1 + r(n, 1) * 6).floor()
    seg = (t[None] * n_strokes / length).floor()                  # which stroke each point is in
    curv = (r(n, 6) - 0.5) * 0.6
    head0 = r(n, 6) * 2 * math.pi
    idx = seg.clamp(max=5).long()
    heading = torch.gather(head0, 1, idx) + torch.gather(curv, 1, idx) * t[None]
    step = 0.8 + 0.4 * r(n, nmax)
    dx = torch.cos(heading) * step + (r(n, nmax) - 0.5) * 0.3
    dy = torch.sin(heading) * step + (r(n, nmax) - 0.5) * 0.3
    pen_up = (((t[None] + 1) * n_strokes / length).floor() != seg) & (t[None] < length - 1)
    end = t[None] >= length - 1
    dx, dy = dx * ~end, dy * ~end
    s5 = torch.stack([dx, dy, (~pen_up & ~end).float(), pen_up.float(), end.float()], -1)
    scale = s5[..., :2].std()
    s5[..., :2] /= scale
    start = torch.tensor([0, 0, 1, 0, 0], device=dev, dtype=torch.float32).expand(n, 1, 5)
    return torch.cat([start, s5], 1)


def main():
    args = cc.parser(__doc__, warmup=5).parse_args()
    dev = cc.torch_device(args)
    gpu = dev.type == "cuda"
    if args.smoke:
        n_sketch, nmax, batch, enc, dec = 256, 40, 8, 32, 64
    else:
        n_sketch, nmax, batch, enc, dec = 70_000, 250, 100, 256, 1024
    torch.backends.cuda.matmul.allow_tf32 = True        # float32 model, TF32 tensor cores
    torch.backends.cudnn.allow_tf32 = True
    data = make_sketches(n_sketch, nmax, dev)

    torch.manual_seed(0)
    model = SketchRNN(enc, dec, fused=args.fix).to(dev).train()
    checked = None
    if args.fix:   # the fused decoder against the cell loop, the same weights, on one batch
        torch.manual_seed(0)
        ref = SketchRNN(enc, dec, fused=False).to(dev)
        ref.load_state_dict({k: v for k, v in model.state_dict().items() if not k.startswith("decoder.")}, strict=False)
        with torch.no_grad():
            ref.cell.weight_ih.copy_(model.decoder.weight_ih_l0)
            ref.cell.weight_hh.copy_(model.decoder.weight_hh_l0)
            ref.cell.bias_ih.copy_(model.decoder.bias_ih_l0)
            ref.cell.bias_hh.copy_(model.decoder.bias_hh_l0)
            x = data[:min(batch, 16)]
            torch.manual_seed(5)
            a = model(x)[0]
            torch.manual_seed(5)
            b = ref(x)[0]
            checked = float((a - b).abs().max())
            assert checked < 5e-2, checked
        del ref
    params = sum(p.numel() for p in model.parameters())
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, fused=gpu)
    g = torch.Generator(device=dev).manual_seed(1)
    st = {"acc": torch.zeros((), device=dev), "loss": None, "reads": 0}

    def step(i):
        idx = torch.randint(0, n_sketch, (batch,), device=dev, generator=g)
        x = data[idx]
        params_out, mu, presig = model(x)
        l_r = mixture_loss(params_out, x[:, 1:])
        l_kl = -0.5 * (1 + presig - mu ** 2 - presig.exp()).mean()
        w_kl = 0.5 - 0.49 * 0.99995 ** i                               # the KL weight's annealing
        loss = l_r + w_kl * torch.clamp(l_kl, min=0.2)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0, foreach=True)
        opt.step()
        st["acc"] += loss.detach()
        if i % 50 == 49:
            st["loss"] = st["acc"].item() / 50
            st["acc"].zero_()
            st["reads"] += 1

    cc.run("c10_torch_sketchrnn_lstmcell_decoder_loop", args, step, batch,
           extra=lambda: {"fused_decoder": bool(args.fix), "nmax": nmax, "params_m": round(params / 1e6, 2),
                          "fused_vs_loop_max_abs_diff": checked, "loss": st["loss"], "loss_reads": st["reads"]})


if __name__ == "__main__":
    main()
