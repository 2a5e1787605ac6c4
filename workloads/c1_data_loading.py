"""C1 data loading: num_workers=0 with heavy CPU augmentation on the training thread.

--fix: 8 loader workers with prefetching.
"""
import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

import common


class Augmented(Dataset):
    def __len__(self):
        return 1 << 20

    def __getitem__(self, i):
        rng = np.random.default_rng(i)
        img = rng.random((3, 96, 96), dtype=np.float32)
        for _ in range(6):  # stand-in for decode + augmentation, ~1 ms per sample
            img = np.flip(np.sqrt(img * img + 0.5), axis=2).copy()  # gpuwhy: plants C1
        return torch.from_numpy(img), int(i % 10)


def main():
    args = common.parser(__doc__).parse_args()
    batch = 64
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 128, 3, padding=1), torch.nn.ReLU(),
        torch.nn.Conv2d(128, 128, 3, padding=1), torch.nn.ReLU(),
        torch.nn.Conv2d(128, 128, 3, padding=1), torch.nn.ReLU(),
        torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(128, 10)).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    workers = 8 if args.fix else 0
    loader = DataLoader(Augmented(), batch_size=batch, shuffle=False, num_workers=workers,
                        pin_memory=True, prefetch_factor=4 if workers else None,
                        persistent_workers=bool(workers))
    it = iter(loader)

    def step(i):
        x, y = next(it)
        x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    common.run("c1_data_loading", args, step, batch)


if __name__ == "__main__":
    main()
