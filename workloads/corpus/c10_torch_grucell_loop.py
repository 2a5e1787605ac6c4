"""C10 serial structure: a seq2seq model whose decoder is an nn.GRUCell stepped in a Python
loop over 64 target positions (teacher forcing; float32 with TF32), with the output projection inside the
loop: thousands of small dependent kernels per step, one stream.

--fix: the teacher-forced decoder as one nn.GRU call over the whole target sequence
(cuDNN) and the projection applied once to all positions.
"""
import torch

import cc


class Seq2Seq(torch.nn.Module):
    def __init__(self, vocab, d, fused):
        super().__init__()
        self.fused = fused
        self.emb = torch.nn.Embedding(vocab, d)
        self.enc = torch.nn.GRU(d, d, batch_first=True)
        if fused:
            self.dec = torch.nn.GRU(d, d, batch_first=True)
        else:
            self.cell = torch.nn.GRUCell(d, d)
        self.out = torch.nn.Linear(d, vocab)

    def forward(self, src, tgt):
        _, h = self.enc(self.emb(src))
        x = self.emb(tgt)
        if self.fused:
            y, _ = self.dec(x, h)
            return self.out(y)
        h = h[0]
        logits = []
        for t in range(x.shape[1]):  # gpuwhy: plants C10 (a Python loop over time)
            h = self.cell(x[:, t], h)
            logits.append(self.out(h))
        return torch.stack(logits, 1)


def main():
    args = cc.parser(__doc__).parse_args()
    dev = cc.torch_device(args)
    vocab, d, batch, src_len, tgt_len = (500, 32, 4, 16, 8) if args.smoke else (8000, 512, 64, 64, 64)
    torch.backends.cuda.matmul.allow_tf32 = True  # float32 model, TF32 tensor cores
    torch.backends.cudnn.allow_tf32 = True
    model = Seq2Seq(vocab, d, args.fix).to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, fused=dev.type == "cuda")
    src = torch.randint(0, vocab, (batch, src_len), device=dev)
    tgt = torch.randint(0, vocab, (batch, tgt_len + 1), device=dev)

    def step(i):
        logits = model(src, tgt[:, :-1])
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, vocab), tgt[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    cc.run("c10_torch_grucell_loop", args, step, batch)


if __name__ == "__main__":
    main()
