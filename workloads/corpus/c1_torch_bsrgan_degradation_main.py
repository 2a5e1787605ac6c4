"""C1 data loading (image restoration): blind 4x super-resolution training with BSRGAN's
degradation model (Zhang et al., ICCV 2021) as cszn/KAIR runs it, on the CPU inside the
Dataset's __getitem__ (data/dataset_blindsr.py calling utils/utils_blindsr.degradation_bsrgan):
each sample decodes a 512 x 512 JPEG photo, crops a 256 x 256 high-resolution patch with a
random flip/rotation, then degrades it to a 64 x 64 low-resolution input in shuffled order: two
random anisotropic or isotropic Gaussian blurs (kernels 7-25 wide, KAIR's ndimage.convolve with
mode 'mirror'; here scipy.ndimage.convolve as cv2 is not installed), a random down-and-up
resize and the final 4x downscale (bicubic/bilinear/area, PIL instead of cv2.resize), Gaussian
noise (colour, grey or channel-correlated, sigma 2-25), and JPEG re-compression at quality
30-95 (PIL in memory) twice. The network is ESRGAN's generator RRDBNet (Wang et al. 2018,
xinntao/BasicSR's rrdbnet_arch: 64 features, growth 32, 23 residual-in-residual dense blocks,
nearest-neighbour 2 x 2x upsampling; 16.7 M parameters, random weights), trained PSNR-oriented
first as BSRNet is (L1 loss), Adam (lr 1e-4), bf16 autocast, channels_last, batch 12 (BasicSR's
RealESRNet batch per GPU); the loss stays on the GPU and is read every 50 steps.

Plant: the DataLoader is left at num_workers=0 (KAIR's option dataloader_num_workers set to 0
while debugging the degradation), so the JPEG decode and the whole degradation of 12 samples
run on the training thread between steps while the GPU idles.
Timed on the CPU-only machine of two loaded cores: 62 ms a sample (~0.74 s a batch there).
Estimated (not measured): ~35-50 ms a sample on a server core, ~0.4-0.6 s a batch; an RRDBNet
step at batch 12 ~30-50 ms on an H100 (147 GFLOP forward a sample by FlopCounterMode, ~5.3
TFLOP a step of 32-64-channel 3 x 3 convolutions at ~150-250 TFLOP/s, plus the dense blocks'
concatenations and LeakyReLUs): the degradation ~85-93% of a plain step (KAIR's ndimage blurs
are that slow); the fix's 15 workers make ~25-40 batches a second, near the GPU's rate, so the
fixed step may stay partly input-bound: about 5-10x.

--fix: gpuwhy's C1 advice for PyTorch: DataLoader(num_workers = the free cores
(cc.fix_workers()), pin_memory=True, prefetch_factor=4, persistent_workers=True); NumPy/BLAS
threads one per worker (OMP/OPENBLAS/MKL_NUM_THREADS=1, set before NumPy is imported, unless the
environment sets them; beyond the advice's text, as c1_torch_audio_numpy does). The same
Dataset, degradation, model, batch and optimizer.

Written blind for the xray batch.
"""
import io
import os
import random
import sys

if "--fix" in sys.argv:
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(var, "1")

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from PIL import Image
from scipy import ndimage
from torch.utils.data import DataLoader, Dataset

import cc

PIL_INTERP = (Image.BICUBIC, Image.BILINEAR, Image.BOX)   # cv2: INTER_CUBIC, INTER_LINEAR, INTER_AREA


# ---- KAIR's utils_blindsr, in NumPy / SciPy / PIL ------------------------------------

def anisotropic_gaussian(ksize, theta, l1, l2):
    v = np.array([np.cos(theta), np.sin(theta)])
    V = np.array([[v[0], v[1]], [v[1], -v[0]]])
    sigma = V @ np.diag([l1, l2]) @ np.linalg.inv(V)
    c = ksize // 2
    xx, yy = np.meshgrid(np.arange(ksize) - c, np.arange(ksize) - c)
    z = np.stack([xx, yy], -1)
    k = np.exp(-0.5 * np.einsum("...i,ij,...j->...", z, np.linalg.inv(sigma), z))
    return k / k.sum()


def fspecial_gaussian(ksize, sigma):
    c = ksize // 2
    xx, yy = np.meshgrid(np.arange(ksize) - c, np.arange(ksize) - c)
    k = np.exp(-(xx ** 2 + yy ** 2) / (2 * sigma ** 2))
    return k / k.sum()


def add_blur(img, sf=4):
    wd2, wd = 4.0 + sf, 2.0 + 0.2 * sf
    if random.random() < 0.5:
        l1, l2 = wd2 * random.random(), wd2 * random.random()
        k = anisotropic_gaussian(2 * random.randint(2, 11) + 3, random.random() * np.pi, l1 + 0.1, l2 + 0.1)
    else:
        k = fspecial_gaussian(2 * random.randint(2, 11) + 3, wd * random.random() + 0.1)
    return ndimage.convolve(img, k[..., None], mode="mirror")


def resize(img, h, w):
    out = []
    for c in range(3):   # PIL's float mode is one channel
        out.append(np.asarray(Image.fromarray(img[..., c]).resize((w, h), random.choice(PIL_INTERP))))
    return np.clip(np.stack(out, -1), 0.0, 1.0)


def add_gaussian_noise(img, lo=2, hi=25):
    level = random.randint(lo, hi)
    r = random.random()
    if r > 0.6:
        img = img + np.random.normal(0, level / 255.0, img.shape).astype(np.float32)
    elif r < 0.4:
        img = img + np.random.normal(0, level / 255.0, (*img.shape[:2], 1)).astype(np.float32)
    else:
        L = hi / 255.0
        D = np.diag(np.random.rand(3))
        U = np.linalg.qr(np.random.randn(3, 3))[0]
        conv = np.abs(L ** 2 * (U.T @ D @ U))
        img = img + np.random.multivariate_normal([0, 0, 0], conv, img.shape[:2]).astype(np.float32)
    return np.clip(img, 0.0, 1.0)


def add_jpeg_noise(img):
    q = random.randint(30, 95)
    buf = io.BytesIO()
    Image.fromarray((img * 255).round().astype(np.uint8)).save(buf, "JPEG", quality=q)
    return np.asarray(Image.open(io.BytesIO(buf.getvalue())).convert("RGB"), dtype=np.float32) / 255.0


def degradation_bsrgan(hr, sf=4, lq_size=64):
    """utils_blindsr.degradation_bsrgan: hr (H, W, 3) float32 in [0, 1] -> (lq, hr)."""
    h, w = hr.shape[:2]
    img = hr.copy()
    if random.random() < 0.25:                                 # sf = 4: a 2x downscale first
        img = resize(img, h // 2, w // 2)
        cur_sf = 2
    else:
        cur_sf = sf
    order = random.sample(range(7), 7)
    i2, i3 = order.index(2), order.index(3)
    if i2 > i3:
        order[i2], order[i3] = order[i3], order[i2]
    for op in order:
        if op in (0, 1):
            img = add_blur(img, sf)
        elif op == 2:                                          # random resize, then back
            a, b = img.shape[:2]
            s = random.uniform(0.5, 2.0) if random.random() < 0.75 else 1.0
            img = resize(img, max(int(a / cur_sf / s), 4), max(int(b / cur_sf / s), 4))
        elif op == 3:                                          # downscale to 1/sf of the crop
            img = resize(img, h // sf, w // sf)
        elif op == 4:
            img = add_gaussian_noise(img)
        elif op == 5 and random.random() < 0.75:
            img = add_jpeg_noise(img)
    if img.shape[0] != h // sf:
        img = resize(img, h // sf, w // sf)
    img = add_jpeg_noise(img)
    return img[:lq_size, :lq_size], hr[:lq_size * sf, :lq_size * sf]


class BlindSRDataset(Dataset):
    """KAIR's DatasetBlindSR: read an HR photo, crop, augment, degrade on the fly."""

    def __init__(self, paths, hr_size=256, sf=4, length=1 << 30):
        self.paths, self.hr_size, self.sf, self.length = paths, hr_size, sf, length

    def __len__(self):
        return self.length

    def __getitem__(self, i):
        img = np.asarray(Image.open(self.paths[i % len(self.paths)]).convert("RGB"), dtype=np.float32) / 255.0
        H, W = img.shape[:2]
        y, x = random.randint(0, H - self.hr_size), random.randint(0, W - self.hr_size)
        hr = img[y:y + self.hr_size, x:x + self.hr_size]
        mode = random.randint(0, 7)                            # utils_image.augment_img
        hr = np.rot90(hr, mode % 4)
        if mode >= 4:
            hr = hr[:, ::-1]
        hr = np.ascontiguousarray(hr)
        lq, hr = degradation_bsrgan(hr, self.sf, self.hr_size // self.sf)
        return (torch.from_numpy(np.ascontiguousarray(lq.transpose(2, 0, 1))),
                torch.from_numpy(np.ascontiguousarray(hr.transpose(2, 0, 1))))


# ---- BasicSR's RRDBNet --------------------------------------------------------------

class ResidualDenseBlock(nn.Module):
    def __init__(self, nf=64, gc=32):
        super().__init__()
        self.c = nn.ModuleList(nn.Conv2d(nf + k * gc, gc, 3, 1, 1) for k in range(4))
        self.c5 = nn.Conv2d(nf + 4 * gc, nf, 3, 1, 1)

    def forward(self, x):
        feats = [x]
        for conv in self.c:
            feats.append(F.leaky_relu(conv(torch.cat(feats, 1)), 0.2))
        return self.c5(torch.cat(feats, 1)) * 0.2 + x


class RRDB(nn.Module):
    def __init__(self, nf, gc):
        super().__init__()
        self.rdb = nn.Sequential(*(ResidualDenseBlock(nf, gc) for _ in range(3)))

    def forward(self, x):
        return self.rdb(x) * 0.2 + x


class RRDBNet(nn.Module):
    def __init__(self, nf=64, nb=23, gc=32):
        super().__init__()
        self.conv_first = nn.Conv2d(3, nf, 3, 1, 1)
        self.body = nn.Sequential(*(RRDB(nf, gc) for _ in range(nb)))
        self.conv_body = nn.Conv2d(nf, nf, 3, 1, 1)
        self.conv_up1, self.conv_up2 = nn.Conv2d(nf, nf, 3, 1, 1), nn.Conv2d(nf, nf, 3, 1, 1)
        self.conv_hr, self.conv_last = nn.Conv2d(nf, nf, 3, 1, 1), nn.Conv2d(nf, 3, 3, 1, 1)

    def forward(self, x):
        feat = self.conv_first(x)
        feat = feat + self.conv_body(self.body(feat))
        feat = F.leaky_relu(self.conv_up1(F.interpolate(feat, scale_factor=2, mode="nearest")), 0.2)
        feat = F.leaky_relu(self.conv_up2(F.interpolate(feat, scale_factor=2, mode="nearest")), 0.2)
        return self.conv_last(F.leaky_relu(self.conv_hr(feat), 0.2))


def seed_worker(wid):
    s = torch.initial_seed() % (1 << 32)
    random.seed(s)
    np.random.seed(s)


def main():
    args = cc.parser(__doc__, warmup=3).parse_args()
    dev = cc.torch_device(args)
    gpu = dev.type == "cuda"
    if args.smoke:
        n_img, img_size, hr_size, batch, nb = 16, 128, 64, 2, 1
    else:
        n_img, img_size, hr_size, batch, nb = 256, 512, 256, 12, 23
    _, paths = cc.jpeg_dir(n=n_img, size=img_size, tag="bsrgan_hr")
    random.seed(0)
    np.random.seed(0)
    ds = BlindSRDataset(paths, hr_size)
    if args.fix:
        nw = cc.fix_workers()
        loader = DataLoader(ds, batch_size=batch, shuffle=False, num_workers=nw, pin_memory=gpu,
                            prefetch_factor=4, persistent_workers=True, worker_init_fn=seed_worker)
    else:
        nw = 0
        loader = DataLoader(ds, batch_size=batch, shuffle=False, num_workers=0)  # gpuwhy: plants C1 (the degradation on the training thread)
    it = iter(loader)

    torch.manual_seed(0)
    model = RRDBNet(64, nb, 32).to(dev).to(memory_format=torch.channels_last)
    params = sum(p.numel() for p in model.parameters())
    opt = torch.optim.Adam(model.parameters(), lr=1e-4, betas=(0.9, 0.99), fused=gpu)
    amp = torch.autocast(dev.type, dtype=torch.bfloat16, enabled=gpu)
    st = {"acc": torch.zeros((), device=dev), "loss": None}

    def step(i):
        lq, hr = next(it)
        lq = lq.to(dev, non_blocking=True).contiguous(memory_format=torch.channels_last)
        hr = hr.to(dev, non_blocking=True)
        with amp:
            sr = model(lq)
        loss = F.l1_loss(sr.float(), hr)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        st["acc"] += loss.detach()
        if i % 50 == 49:
            st["loss"] = st["acc"].item() / 50
            st["acc"].zero_()

    cc.run("c1_torch_bsrgan_degradation_main", args, step, batch,
           extra=lambda: {"params_m": round(params / 1e6, 1), "num_workers": nw, "rrdb_blocks": nb,
                          "samples_degraded_per_step": batch, "loss": st["loss"]})


if __name__ == "__main__":
    main()
