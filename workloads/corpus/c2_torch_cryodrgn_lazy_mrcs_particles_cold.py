"""C2 storage reads (cryo-EM particle images read one at a time from cold .mrcs stacks on the
training thread): heterogeneous single-particle reconstruction with a cryoDRGN-style VAE
(Zhong et al. 2021, ml-struct-bio/cryodrgn `train_vae` with known poses), in plain PyTorch.
The data set is 40,000 particle images of 128 x 128 (float32, 64 KB each; 2.6 GB) in 200 MRC
stacks (.mrcs, a 1,024-byte MRC header then the images), one per micrograph as RELION's
extraction leaves them, written once under GW_CORPUS_CACHE (synthetic: a few projected
Gaussian-blob conformations under heavy noise); poses (rotations) and CTF defoci per particle
are held on the GPU, as cryoDRGN's poses.pkl and ctf.pkl are.

The model is cryoDRGN's HetOnlyVAE at its defaults (encoder 3 x 256 over the 12,849 Hartley
coefficients inside the circular mask, an 8-dimensional latent; FTPositionalDecoder 3 x 256 on
the rotated 3-D lattice coordinates with the geom_lowf positional encoding of D/2 = 64
frequencies, 392 inputs with z, predicting the Hartley value at each lattice point), the image's
centred Hartley transform, the CTF and the Gaussian log-likelihood plus the KL term (beta
1/zdim) computed on the GPU (3.66 M parameters, random weights); bf16 autocast (cryoDRGN's --amp), Adam (lr 1e-4), batch 8
(cryoDRGN's -b default); the loss stays on the GPU and is read every 50 steps.

Plant: the particles are loaded lazily (cryoDRGN's --lazy, chosen because the full stack "does
not fit in memory"): the Dataset holds (file, offset) pairs and each __getitem__ opens the
stack, seeks and np.fromfile()s one 64 KB image, as cryodrgn.mrc.LazyImage.get does, in a
DataLoader with num_workers=0, so each step waits on 8 cold random 64 KB reads one after
another on the training thread. The stacks are dropped from the page cache at every start
(posix_fadvise(POSIX_FADV_DONTNEED) on each file, no root needed), as when the data set sits on
a disk the page cache does not hold; a plain run touches ~10-15% of the particles, so few reads
find their pages cached. Timed on a CPU-only machine (a virtio disk): an open, seek and
np.fromfile of a cold 64 KB image 157 us (median of 400; p90 180 us), of a cached one 29 us;
counted there: 464 aten operations a step with the CPU's per-parameter Adam (~320 kernels with
CUDA's foreach Adam), 143 GFLOP a step (FlopCounterMode). Estimated (not measured): ~1.5-2 ms of
GPU work a step (the decoder's products over 102,792 lattice points in bf16, the positional
encoding's sin/cos passes), ~2-3 ms of host issue, and the 8 cold reads 1.3-2.4 ms at 150-300
us a read on the GPU machine's disk: plain ~3.5-5.5 ms a step with the reads ~35-50% of it (more
on a network disk), the fix ~2-3 ms (host-bound): about 1.4-1.9x.

--fix: gpuwhy's C2 advice (keep the data set in RAM): every stack read once into one float32
array before training (cryoDRGN without --lazy; one sequential read of 2.6 GB, outside the
timed part), the same Dataset indexing it; order, batch, loader (num_workers=0), model and
optimizer unchanged.

Written blind for the whiskey batch.
"""
import math
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

import cc

HEADER = 1024


def mrc_header(nx, ny, nz, apix):
    """A 1,024-byte MRC2014 header for a float32 (mode 2) image stack."""
    h = np.zeros(256, np.int32)
    h[0:3] = (nx, ny, nz)
    h[3] = 2                                    # mode: float32
    h[7:10] = (nx, ny, nz)                      # mx, my, mz
    h.view(np.float32)[10:13] = (nx * apix, ny * apix, nz * apix)
    h.view(np.float32)[13:16] = 90.0
    h[16:19] = (1, 2, 3)
    b = bytearray(h.tobytes())
    b[208:212] = b"MAP "
    b[212:216] = bytes([0x44, 0x44, 0, 0])      # little-endian machine stamp
    return bytes(b)


def make_stacks(n_files, per_file, d, apix=1.5):
    """n_files .mrcs stacks of per_file particle images (d x d float32), written once, fsynced."""
    root = os.path.join(cc.CACHE, f"cryoem_mrcs_{n_files}x{per_file}_{d}")
    paths = [os.path.join(root, f"mic_{k:05d}_particles.mrcs") for k in range(n_files)]
    if os.path.exists(os.path.join(root, ".done")):
        return paths
    os.makedirs(root, exist_ok=True)
    rng = np.random.default_rng(0)
    yy, xx = np.mgrid[0:d, 0:d].astype(np.float32) - d / 2
    # 16 "projections" of a few conformations: sums of Gaussian blobs inside the particle radius
    templates = np.zeros((16, d, d), np.float32)
    for t in range(16):
        for _ in range(12):
            cy, cx = rng.normal(0, d / 10, 2)
            s = rng.uniform(d / 40, d / 14)
            templates[t] += rng.uniform(0.5, 1.0) * np.exp(-((yy - cy) ** 2 + (xx - cx) ** 2) / (2 * s * s))
    templates /= templates.std(axis=(1, 2), keepdims=True)
    for path in paths:
        imgs = rng.standard_normal((per_file, d, d), dtype=np.float32) * 3.0       # SNR ~0.1
        imgs += templates[rng.integers(0, 16, per_file)]
        with open(path, "wb") as f:
            f.write(mrc_header(d, d, per_file, apix))
            f.write(imgs.tobytes())
            f.flush()
            os.fsync(f.fileno())                 # written back, so that the pages can be dropped
    open(os.path.join(root, ".done"), "w").close()
    return paths


def drop_from_page_cache(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


class LazyImage:
    """cryodrgn.mrc.LazyImage: where one image lies; get() opens, seeks and reads it."""

    __slots__ = ("fname", "offset", "shape")

    def __init__(self, fname, offset, shape):
        self.fname, self.offset, self.shape = fname, offset, shape

    def get(self):
        with open(self.fname, "rb") as f:
            f.seek(self.offset)
            return np.fromfile(f, dtype=np.float32, count=self.shape[0] * self.shape[1]).reshape(self.shape)  # gpuwhy: plants C2 (one cold random 64 KB read a particle, 8 a step one after another on the training thread)


class ParticleDataset(torch.utils.data.Dataset):
    """cryoDRGN's ImageDataset in short: lazy (a LazyImage a particle) or the whole stack in RAM."""

    def __init__(self, paths, per_file, d, lazy):
        self.d = d
        self.lazy = lazy
        items = [LazyImage(p, HEADER + k * d * d * 4, (d, d)) for p in paths for k in range(per_file)]
        if lazy:
            self.items = items
        else:                                    # the advice: the data set in RAM, read once before training
            self.images = np.empty((len(items), d, d), np.float32)
            for j, p in enumerate(paths):
                with open(p, "rb") as f:
                    f.seek(HEADER)
                    self.images[j * per_file:(j + 1) * per_file] = np.fromfile(f, np.float32, per_file * d * d).reshape(per_file, d, d)
        self.n = len(items)
        self.reads = 0

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if self.lazy:
            self.reads += 1
            return torch.from_numpy(self.items[i].get()), i
        return torch.from_numpy(self.images[i]), i


class MLP(nn.Sequential):
    def __init__(self, n_in, n_hidden, n_layers, n_out):
        layers, k = [], n_in
        for _ in range(n_layers):
            layers += [nn.Linear(k, n_hidden), nn.ReLU()]
            k = n_hidden
        super().__init__(*layers, nn.Linear(k, n_out))


class HetOnlyVAE(nn.Module):
    """cryoDRGN's HetOnlyVAE in short: an MLP encoder over the masked Hartley image to (mu,
    logvar), and an FTPositionalDecoder over the rotated lattice with geom_lowf encoding."""

    def __init__(self, n_mask, d, zdim=8, qlayers=3, qdim=256, players=3, pdim=256):
        super().__init__()
        self.zdim, self.d = zdim, d
        self.encoder = MLP(n_mask, qdim, qlayers, 2 * zdim)
        self.decoder = MLP(3 * (d // 2) * 2 + zdim, pdim, players, 2)
        k = torch.arange(d // 2, dtype=torch.float32)
        self.register_buffer("freqs", (2 * math.pi) * (d // 2) ** (k / (d // 2 - 1)))   # geom_lowf: 2pi .. pi*D

    def positional_encoding(self, coords):
        x = coords[..., None] * self.freqs                                 # (B, M, 3, D/2)
        return torch.cat([torch.sin(x), torch.cos(x)], -1).flatten(-2)    # (B, M, 3 * D)

    def forward(self, y, lattice, rot):
        h = self.encoder(y)
        mu, logvar = h[:, :self.zdim], h[:, self.zdim:]
        z = mu + torch.randn_like(mu) * torch.exp(0.5 * logvar)
        coords = lattice @ rot                                             # (B, M, 3) rotated slices
        pe = self.positional_encoding(coords)
        x = torch.cat([pe, z[:, None, :].expand(-1, pe.shape[1], -1).to(pe.dtype)], -1)
        out = self.decoder(x)
        return out[..., 0] - out[..., 1], mu, logvar                       # Hartley: re - im


def random_rotations(n, g, dev):
    q = F.normalize(torch.randn(n, 4, device=dev, generator=g), dim=-1)
    w, x, y, z = q.unbind(-1)
    return torch.stack([1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w),
                        2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w),
                        2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)], -1).view(n, 3, 3)


def main():
    args = cc.parser(__doc__, warmup=10).parse_args()
    dev = cc.torch_device(args)
    gpu = dev.type == "cuda"
    n_files, per_file, d, batch = (8, 64, 32, 4) if args.smoke else (200, 200, 128, 8)
    apix = 1.5
    paths = make_stacks(n_files, per_file, d, apix)
    for p in paths:
        drop_from_page_cache(p)
    data = ParticleDataset(paths, per_file, d, lazy=not args.fix)
    loader = torch.utils.data.DataLoader(data, batch_size=batch, shuffle=True, num_workers=0, drop_last=True)
    n = len(data)

    # lattice (x, y, 0) in [-0.5, 0.5), inside the circular mask of radius D/2
    ax = (torch.arange(d, dtype=torch.float32) - d // 2) / d
    gy, gx = torch.meshgrid(ax, ax, indexing="ij")
    mask = (gx ** 2 + gy ** 2).flatten() < 0.25
    lattice = torch.stack([gx.flatten(), gy.flatten(), torch.zeros(d * d)], -1)[mask].to(dev)
    mask = mask.to(dev)
    freq2 = (lattice[:, 0] ** 2 + lattice[:, 1] ** 2) / apix ** 2            # |s|^2 in 1/A^2
    n_mask = int(mask.sum())

    g = torch.Generator(device=dev).manual_seed(1)
    rots = random_rotations(n, g, dev)                                     # poses.pkl
    defocus = 10000 + 20000 * torch.rand(n, device=dev, generator=g)       # ctf.pkl: defocus (A)
    lam, cs, w = 0.0197, 2.7e7, 0.1                                        # 300 kV, Cs 2.7 mm, amplitude contrast

    torch.manual_seed(0)
    model = HetOnlyVAE(n_mask, d).to(dev).train()
    params = sum(p.numel() for p in model.parameters())
    opt = torch.optim.Adam(model.parameters(), lr=1e-4)
    amp = torch.autocast(dev.type, dtype=torch.bfloat16, enabled=gpu)
    st = {"acc": torch.zeros((), device=dev), "loss": None, "reads": 0, "it": iter(loader), "norm": None}

    def hartley(img):
        f = torch.fft.fftshift(torch.fft.fft2(torch.fft.fftshift(img, dim=(-2, -1))), dim=(-2, -1))
        return (f.real - f.imag).flatten(1)[:, mask]

    def next_batch():
        try:
            return next(st["it"])
        except StopIteration:
            st["it"] = iter(loader)
            return next(st["it"])

    def step(i):
        img, idx = next_batch()
        img, idx = img.to(dev, non_blocking=True), idx.to(dev, non_blocking=True)
        y = hartley(img)
        if st["norm"] is None:
            st["norm"] = y.std().detach()                                   # cryoDRGN's norm, from the first batch
        y = y / st["norm"]
        df = defocus[idx][:, None]
        chi = math.pi * lam * df * freq2 - 0.5 * math.pi * cs * lam ** 3 * freq2 ** 2
        ctf = -(math.sqrt(1 - w * w) * torch.sin(chi) + w * torch.cos(chi))
        with amp:
            pred, mu, logvar = model(y, lattice, rots[idx])
        gen = F.mse_loss(pred.float() * ctf, y)
        kld = -0.5 * torch.mean(torch.sum(1 + logvar.float() - mu.float() ** 2 - logvar.float().exp(), 1))
        loss = gen + kld / model.zdim / n_mask
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        st["acc"] += loss.detach()
        if i % 50 == 49:
            st["loss"] = st["acc"].item() / 50
            st["acc"].zero_()
            st["reads"] += 1

    cc.run("c2_torch_cryodrgn_lazy_mrcs_particles_cold", args, step, batch,
           extra=lambda: {"particles": n, "box": d, "stacks": n_files, "mask_points": n_mask,
                          "stack_bytes": sum(os.path.getsize(p) for p in paths),
                          "params_m": round(params / 1e6, 2), "lazy": not args.fix,
                          "reads_in_loop": data.reads, "loss": st["loss"], "loss_reads": st["reads"]})


if __name__ == "__main__":
    main()
