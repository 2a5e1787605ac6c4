"""C10 serial structure (Lightning): a character-level language model whose two stacked
LSTM layers are nn.LSTMCell modules stepped in a Python loop over 128 characters, trained by
a Lightning Trainer (float32 with TF32 matmuls, as Lightning suggests): long chains of small dependent kernels on one stream.

--fix: nn.LSTM(num_layers=2) over the whole sequence (cuDNN's fused RNN).
"""
import lightning as L
import torch
from torch.utils.data import DataLoader, Dataset

import cc


class Chars(Dataset):
    def __init__(self, text, seq, batch):
        self.data = torch.tensor(list(text.encode()), dtype=torch.long) % 128
        self.seq, self.batch = seq, batch

    def __len__(self):
        return 1_000_000

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        starts = torch.randint(0, len(self.data) - self.seq - 1, (self.batch,), generator=g)
        return torch.stack([self.data[s:s + self.seq + 1] for s in starts.tolist()])


class CharLM(L.LightningModule):
    def __init__(self, d, fused):
        super().__init__()
        self.fused = fused
        self.emb = torch.nn.Embedding(128, d)
        if fused:
            self.rnn = torch.nn.LSTM(d, d, num_layers=2, batch_first=True)
        else:
            self.cells = torch.nn.ModuleList([torch.nn.LSTMCell(d, d) for _ in range(2)])
        self.head = torch.nn.Linear(d, 128)

    def forward(self, x):
        x = self.emb(x)
        if self.fused:
            return self.head(self.rnn(x)[0])
        b = x.shape[0]
        state = [(x.new_zeros(b, c.hidden_size), x.new_zeros(b, c.hidden_size)) for c in self.cells]
        outs = []
        for t in range(x.shape[1]):  # gpuwhy: plants C10 (a Python loop over time)
            h = x[:, t]
            for k, cell in enumerate(self.cells):
                state[k] = cell(h, state[k])
                h = state[k][0]
            outs.append(h)
        return self.head(torch.stack(outs, 1))

    def training_step(self, batch, batch_idx):
        logits = self(batch[:, :-1])
        return torch.nn.functional.cross_entropy(logits.float().reshape(-1, 128), batch[:, 1:].reshape(-1))

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=2e-3)


def main():
    args = cc.parser(__doc__).parse_args()
    d, seq, batch = (32, 16, 4) if args.smoke else (512, 128, 64)
    text = " ".join(cc.text_lines(2000))
    loader = DataLoader(Chars(text, seq, batch), batch_size=None, num_workers=2, pin_memory=True,
                        persistent_workers=True)
    timer = cc.lightning_timer("c10_lightning_lstmcell", args, batch)
    torch.set_float32_matmul_precision("high")  # TF32 tensor cores for the GEMMs
    trainer = cc.lightning_trainer(args, [timer], precision="32-true")
    trainer.fit(CharLM(d, args.fix), loader)


if __name__ == "__main__":
    main()
