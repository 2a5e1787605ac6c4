"""C7 CPU thread oversubscription: 8 DataLoader workers each whiten their batch with a numpy
matmul (OpenBLAS: one thread per core in every worker), while the training process runs its
own CPU-side feature step with torch.set_num_threads(16): about 150 busy threads on 16 cores.

--fix: BLAS limited to one thread per worker (OPENBLAS_NUM_THREADS/OMP_NUM_THREADS=1 set
before numpy is imported, as a user puts it at the top of the script) and torch's intra-op
pool to 4 threads.
"""
import os
import sys

if "--fix" in sys.argv:
    for v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[v] = "1"

import numpy as np  # noqa: E402
import torch  # noqa: E402
from torch.utils.data import DataLoader, Dataset  # noqa: E402

import cc  # noqa: E402


class Whitened(Dataset):
    """Batches of patches, ZCA-whitened with a fixed 1024x1024 matrix (numpy, BLAS)."""
    def __init__(self, rows, dim):
        self.rows, self.dim = rows, dim
        rng = np.random.default_rng(0)
        self.zca = (rng.standard_normal((dim, dim)) / dim ** 0.5).astype(np.float32)

    def __len__(self):
        return 1_000_000

    def __getitem__(self, i):
        rng = np.random.default_rng(i)
        x = rng.standard_normal((self.rows, self.dim), dtype=np.float32)
        x = (x - x.mean(0)) @ self.zca  # gpuwhy: plants C7 (a BLAS pool per worker)
        return torch.from_numpy(x), torch.from_numpy(rng.integers(0, 100, self.rows))


def main():
    args = cc.parser(__doc__).parse_args()
    dev = cc.torch_device(args)
    torch.set_num_threads(4 if args.fix else 16)  # gpuwhy: plants C7 (16 intra-op threads beside the workers)
    rows, dim, hidden, workers = (64, 128, 64, 2) if args.smoke else (1024, 1024, 2048, 8)
    model = torch.nn.Sequential(torch.nn.Linear(dim, hidden), torch.nn.GELU(), torch.nn.Linear(hidden, hidden),
                                torch.nn.GELU(), torch.nn.Linear(hidden, 100)).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=dev.type == "cuda")
    loader = DataLoader(Whitened(rows, dim), batch_size=None, num_workers=workers, pin_memory=True,
                        prefetch_factor=4, persistent_workers=True)
    it = iter(loader)
    class_freq = torch.rand(100, 100)

    def step(i):
        x, y = next(it)
        # CPU-side bookkeeping on the training thread: per-class weights from co-occurrence
        w = torch.softmax(class_freq @ class_freq.T, dim=1).diagonal().contiguous()
        x, y, w = x.to(dev, non_blocking=True), y.to(dev, non_blocking=True), w.to(dev, non_blocking=True)
        with torch.autocast(dev.type, dtype=torch.bfloat16):
            loss = torch.nn.functional.cross_entropy(model(x), y, weight=w)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    cc.run("c7_blas_workers", args, step, rows)


if __name__ == "__main__":
    main()
