"""C2 storage: a data set of .npy shards (uint8 image batches, 25 MB each) streamed from
disk by 4 DataLoader workers with a cold page cache, as when the data set is larger than
RAM: the workers block in read() (state D) and the small CNN waits.

--fix: the data set fits in RAM, so it is read once before training and served from memory
(the same loader and workers).
"""
import os

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

import cc


def make_shards(n, shape):
    d = os.path.join(cc.CACHE, f"npy_{n}_{'x'.join(map(str, shape))}")
    os.makedirs(d, exist_ok=True)
    rng = np.random.default_rng(0)
    files = []
    for i in range(n):
        p = os.path.join(d, f"shard{i:04d}.npy")
        if not os.path.exists(p):
            np.save(p + ".tmp.npy", rng.integers(0, 256, shape, dtype=np.uint8))
            os.rename(p + ".tmp.npy", p)
        files.append(p)
    return files


class Shards(Dataset):
    def __init__(self, files, cache=None):
        self.files, self.cache = files, cache

    def __len__(self):
        return 1_000_000

    def __getitem__(self, i):
        k = i % len(self.files)
        if self.cache is not None:
            return torch.from_numpy(self.cache[k])
        if k == 0:
            cc.drop_caches("c2_npy_cold_cache")  # each pass cold: a data set larger than RAM
        return torch.from_numpy(np.load(self.files[k]))  # gpuwhy: plants C2 (cold reads)


def main():
    args = cc.parser(__doc__).parse_args()
    dev = cc.torch_device(args)
    shape = (8, 3, 64, 64) if args.smoke else (128, 3, 256, 256)
    files = make_shards(8 if args.smoke else 48, shape)
    cc.drop_caches("c2_npy_cold_cache")
    cache = [np.load(f) for f in files] if args.fix else None
    model = torch.nn.Sequential(
        torch.nn.AvgPool2d(4), torch.nn.Conv2d(3, 64, 3, padding=1), torch.nn.ReLU(),
        torch.nn.Conv2d(64, 64, 3, stride=2, padding=1), torch.nn.ReLU(),
        torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(64, 10)).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    loader = DataLoader(Shards(files, cache), batch_size=None, shuffle=False, num_workers=4,
                        pin_memory=True, prefetch_factor=2, persistent_workers=True)
    it = iter(loader)

    def step(i):
        x = next(it).to(dev, non_blocking=True)
        y = torch.zeros(x.shape[0], dtype=torch.long, device=dev)
        with torch.autocast(dev.type, dtype=torch.bfloat16):
            loss = torch.nn.functional.cross_entropy(model(x.float() / 255), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    cc.run("c2_npy_cold_cache", args, step, shape[0])


if __name__ == "__main__":
    main()
