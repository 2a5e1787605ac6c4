"""C10 serial structure: an LSTM cell stepped through 64 time steps in Python.

--fix: the fused cuDNN nn.LSTM over the whole sequence.
"""
import torch

import common


def main():
    args = common.parser(__doc__).parse_args()
    T, B, H = 64, 32, 256
    x = torch.randn(T, B, H, device="cuda")
    if args.fix:
        rnn = torch.nn.LSTM(H, H).cuda()
    else:
        cell = torch.nn.LSTMCell(H, H).cuda()
    head = torch.nn.Linear(H, 1).cuda()
    params = list(head.parameters()) + list((rnn if args.fix else cell).parameters())
    opt = torch.optim.SGD(params, lr=0.01)

    def step(i):
        if args.fix:
            out, _ = rnn(x)
            last = out[-1]
        else:
            h = torch.zeros(B, H, device="cuda")
            c = torch.zeros(B, H, device="cuda")
            for t in range(T):
                h, c = cell(x[t], (h, c))
            last = h
        loss = head(last).pow(2).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    common.run("c10_rnn_loop", args, step, B)


if __name__ == "__main__":
    main()
