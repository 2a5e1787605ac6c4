"""healthy: large batch, bf16 autocast, pinned memory, loader workers, no syncs.

--fix changes nothing: this is the control. gpuwhy must raise no finding above info.
"""
import torch
from torch.utils.data import DataLoader, Dataset

import common


class Batches(Dataset):
    """Whole batches made in the worker: cheap to produce, 4 MB each."""
    def __init__(self, n, batch, dim):
        self.n, self.batch, self.dim = n, batch, dim

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        return torch.randn(self.batch, self.dim, generator=g), torch.randint(0, 10, (self.batch,), generator=g)


def main():
    args = common.parser(__doc__).parse_args()
    dev = "cuda"
    dim, hidden, batch = 1024, 16384, 1024
    model = torch.nn.Sequential(torch.nn.Linear(dim, hidden), torch.nn.ReLU(),
                                *[m for _ in range(3) for m in (torch.nn.Linear(hidden, hidden), torch.nn.ReLU())],
                                torch.nn.Linear(hidden, 10)).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    loader = DataLoader(Batches(100000, batch, dim), batch_size=None, num_workers=4,
                        pin_memory=True, prefetch_factor=4, persistent_workers=True)
    it = iter(loader)

    def step(i):
        x, y = next(it)
        x, y = x.to(dev, non_blocking=True), y.to(dev, non_blocking=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    common.run("healthy", args, step, batch)


if __name__ == "__main__":
    main()
