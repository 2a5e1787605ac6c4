"""The article's case study: slow synchronous decode on the training thread (C1), many
small 3D convolutions on a small batch (C3), and validation every 10 iterations (C14).

--fix: 8 loader workers, batch 16 instead of 2, validation every 1000 iterations.
"""
import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

import common


class Volumes(Dataset):
    def __len__(self):
        return 1 << 20

    def __getitem__(self, i):
        rng = np.random.default_rng(i)
        v = rng.random((1, 32, 48, 48), dtype=np.float32)
        for _ in range(10):  # stand-in for the article's JPEG decode: ~2 ms per sample
            v = np.sqrt(v * v + 0.5)  # gpuwhy: plants C1
        return torch.from_numpy(v), int(i % 4)


def main():
    args = common.parser(__doc__).parse_args()
    batch = 16 if args.fix else 2
    model = torch.nn.Sequential(
        torch.nn.Conv3d(1, 16, 3, padding=1), torch.nn.ReLU(),
        torch.nn.Conv3d(16, 16, 3, padding=1), torch.nn.ReLU(),
        torch.nn.Conv3d(16, 16, 3, padding=1), torch.nn.ReLU(),
        torch.nn.AdaptiveAvgPool3d(1), torch.nn.Flatten(), torch.nn.Linear(16, 4)).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    workers = 8 if args.fix else 0
    loader = DataLoader(Volumes(), batch_size=batch, num_workers=workers, pin_memory=True,
                        prefetch_factor=4 if workers else None, persistent_workers=bool(workers))
    it = iter(loader)
    val = torch.randn(batch, 1, 32, 48, 48, device="cuda")
    every = 1000 if args.fix else 10

    def step(i):
        x, y = next(it)
        x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if i % every == every - 1:
            with torch.no_grad():
                for _ in range(30):
                    model(val).sum().item()  # gpuwhy: plants C14

    common.run("case_study", args, step, batch)


if __name__ == "__main__":
    main()
