"""C14 + C9 a BasicSR experiment left in its debug mode: a checkpoint every 8 iterations and the
training batch's PSNR/SSIM computed on the host at every iteration. Single-image
super-resolution (x2) with EDSR-L as BasicSR builds it (a mean shift, a 3 x 3 convolution to 256
features, 32 residual blocks without batch norm at res_scale 0.1, a convolution after the body,
a pixel-shuffle upsampler and a last convolution; 40.7 M parameters, random weights), trained the
way BasicSR's SRModel does: L1 pixel loss, Adam (lr 1e-4, betas 0.9/0.99) with a MultiStepLR,
batch 16 of 96 x 96 ground-truth / 48 x 48 low-resolution crops with random flips and
rotations; the fork this job stands for trains under bf16 autocast with channels_last. The
DIV2K sub-images (64 of 480 x 480, synthetic textures here) and their bicubic x2 reductions are
held on the GPU (BasicSR's prefetch_mode: cuda keeps batches there) and cropped on the GPU.

BasicSR's option parser switches an experiment whose name contains "debug" to its debug
settings: `opt['logger']['print_freq'] = 1` and `opt['logger']['save_checkpoint_freq'] = 8`.
This experiment is still called EDSR_Lx2_f256b32_DIV2K_300k_B16G1_debug from a first test
run, so:
- every 8 iterations it saves the network (save_network: each state_dict tensor .cpu(), then
  torch.save, 163 MB) and the training state (save_training_state: the Adam state, 326 MB,
  through torch.save, which copies the CUDA tensors to the host), training stopped meanwhile
  (C14);
- every iteration the message logger, which in this fork also reports the training batch's
  PSNR and SSIM as BasicSR computes them, copies the output and ground truth back image by
  image (tensor2img), computes calculate_psnr and calculate_ssim (an 11 x 11 Gaussian window,
  per channel, float64 NumPy/SciPy) on the host and reads the loss (.item()), so the GPU waits
  for that host work and the host waits for the GPU at every iteration (C9).

--fix: both causes' advice at once, by renaming the experiment without "_debug" (BasicSR's own
defaults from the options file: print_freq 100, save_checkpoint_freq 5,000): the checkpoint is
never in the measured window and the logger's reads and host metrics run every 100
iterations; model, data, loss, optimizer and the metrics code unchanged.

Written blind for the oscar batch.
"""
import logging
import os
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from scipy import ndimage

import cc

OPT = {
    "name": "EDSR_Lx2_f256b32_DIV2K_300k_B16G1_debug",
    "scale": 2,
    "datasets": {"train": {"gt_size": 96, "use_hflip": True, "use_rot": True, "batch_size_per_gpu": 16,
                           "prefetch_mode": "cuda"}},
    "network_g": {"num_in_ch": 3, "num_out_ch": 3, "num_feat": 256, "num_block": 32, "upscale": 2,
                  "res_scale": 0.1, "img_range": 255.0, "rgb_mean": [0.4488, 0.4371, 0.4040]},
    "train": {"optim_g": {"lr": 1e-4, "weight_decay": 0, "betas": [0.9, 0.99]},
              "scheduler": {"milestones": [200_000], "gamma": 0.5}, "total_iter": 300_000, "use_amp": "bf16"},
    "val": None,
    "logger": {"print_freq": 100, "save_checkpoint_freq": 5_000, "use_tb_logger": False},
    "metrics": {"crop_border": 2},
}


def parse_options(opt):
    """BasicSR's debug switch (basicsr/utils/options.py)."""
    if "debug" in opt["name"]:
        if opt.get("val"):
            opt["val"]["val_freq"] = 8
        opt["logger"]["print_freq"] = 1
        opt["logger"]["save_checkpoint_freq"] = 8
    return opt


class ResidualBlockNoBN(nn.Module):
    def __init__(self, num_feat, res_scale):
        super().__init__()
        self.res_scale = res_scale
        self.conv1 = nn.Conv2d(num_feat, num_feat, 3, 1, 1)
        self.conv2 = nn.Conv2d(num_feat, num_feat, 3, 1, 1)

    def forward(self, x):
        return x + self.conv2(F.relu(self.conv1(x))) * self.res_scale


class EDSR(nn.Module):
    def __init__(self, num_in_ch, num_out_ch, num_feat, num_block, upscale, res_scale, img_range, rgb_mean):
        super().__init__()
        self.img_range = img_range
        self.register_buffer("mean", torch.tensor(rgb_mean).view(1, 3, 1, 1))
        self.conv_first = nn.Conv2d(num_in_ch, num_feat, 3, 1, 1)
        self.body = nn.Sequential(*[ResidualBlockNoBN(num_feat, res_scale) for _ in range(num_block)])
        self.conv_after_body = nn.Conv2d(num_feat, num_feat, 3, 1, 1)
        self.upsample = nn.Sequential(nn.Conv2d(num_feat, 4 * num_feat, 3, 1, 1), nn.PixelShuffle(2))
        self.conv_last = nn.Conv2d(num_feat, num_out_ch, 3, 1, 1)

    def forward(self, x):
        x = (x - self.mean) * self.img_range
        x = self.conv_first(x)
        res = self.conv_after_body(self.body(x)) + x
        x = self.conv_last(self.upsample(res))
        return x / self.img_range + self.mean


# ---- BasicSR's metrics (basicsr/metrics/psnr_ssim.py), host side ------------------------------

def tensor2img(t):
    """One CHW tensor in [0, 1] -> HWC uint8 BGR, as BasicSR's tensor2img."""
    img = t.float().detach().cpu().clamp_(0, 1).numpy().transpose(1, 2, 0)[:, :, ::-1]
    return (img * 255.0).round().astype(np.uint8)


def calculate_psnr(img, img2, crop_border):
    img, img2 = img.astype(np.float64), img2.astype(np.float64)
    if crop_border:
        img, img2 = img[crop_border:-crop_border, crop_border:-crop_border], img2[crop_border:-crop_border, crop_border:-crop_border]
    mse = np.mean((img - img2) ** 2)
    return float("inf") if mse == 0 else 10.0 * np.log10(255.0 * 255.0 / mse)


_G = np.exp(-0.5 * (np.arange(11) - 5) ** 2 / 1.5 ** 2)
_G /= _G.sum()


def _filter_valid(x):
    """cv2.filter2D(x, -1, outer(g, g)) restricted to the valid part ([5:-5, 5:-5])."""
    y = ndimage.correlate1d(ndimage.correlate1d(x, _G, axis=0, mode="reflect"), _G, axis=1, mode="reflect")
    return y[5:-5, 5:-5]


def _ssim(img, img2):
    c1, c2 = (0.01 * 255) ** 2, (0.03 * 255) ** 2
    mu1, mu2 = _filter_valid(img), _filter_valid(img2)
    s11 = _filter_valid(img ** 2) - mu1 ** 2
    s22 = _filter_valid(img2 ** 2) - mu2 ** 2
    s12 = _filter_valid(img * img2) - mu1 * mu2
    m = ((2 * mu1 * mu2 + c1) * (2 * s12 + c2)) / ((mu1 ** 2 + mu2 ** 2 + c1) * (s11 + s22 + c2))
    return m.mean()


def calculate_ssim(img, img2, crop_border):
    img, img2 = img.astype(np.float64), img2.astype(np.float64)
    if crop_border:
        img, img2 = img[crop_border:-crop_border, crop_border:-crop_border], img2[crop_border:-crop_border, crop_border:-crop_border]
    return float(np.mean([_ssim(img[..., c], img2[..., c]) for c in range(img.shape[2])]))


def main():
    args = cc.parser(__doc__, warmup=4).parse_args()
    dev = cc.torch_device(args)
    gpu = dev.type == "cuda"
    opt = dict(OPT, logger=dict(OPT["logger"]))
    if args.fix:
        opt["name"] = opt["name"].replace("_debug", "")
    opt = parse_options(opt)
    net_opt = dict(opt["network_g"])
    batch, gt_size = opt["datasets"]["train"]["batch_size_per_gpu"], opt["datasets"]["train"]["gt_size"]
    n_img, src = 64, 480
    if args.smoke:
        net_opt.update(num_feat=16, num_block=2)
        batch, gt_size, n_img, src = 2, 24, 4, 64
    scale, lq_size = opt["scale"], gt_size // opt["scale"]
    print_freq, save_freq = opt["logger"]["print_freq"], opt["logger"]["save_checkpoint_freq"]
    root = os.path.join(cc.CACHE, "basicsr_experiments" + ("_smoke" if args.smoke else ""), opt["name"])
    os.makedirs(os.path.join(root, "models"), exist_ok=True)
    os.makedirs(os.path.join(root, "training_states"), exist_ok=True)
    log = logging.getLogger("basicsr")
    log.propagate = False
    log.setLevel(logging.INFO)
    handler = logging.FileHandler(os.path.join(root, f"train_{opt['name']}.log"), mode="w")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s: %(message)s"))
    log.addHandler(handler)

    torch.backends.cudnn.benchmark = True
    torch.manual_seed(0)
    net_g = EDSR(**net_opt).to(dev, memory_format=torch.channels_last).train()
    o = opt["train"]["optim_g"]
    optimizer = torch.optim.Adam(net_g.parameters(), lr=o["lr"], weight_decay=o["weight_decay"], betas=tuple(o["betas"]))
    scheduler = torch.optim.lr_scheduler.MultiStepLR(optimizer, opt["train"]["scheduler"]["milestones"],
                                                     opt["train"]["scheduler"]["gamma"])
    amp = torch.autocast(dev.type, dtype=torch.bfloat16, enabled=gpu)

    # the sub-images (smooth textures with edges) and their bicubic x2 reductions, on the GPU
    g = torch.Generator(device=dev).manual_seed(1)
    base = torch.rand(n_img, 3, src // 16, src // 16, device=dev, generator=g)
    hr = F.interpolate(base, size=(src, src), mode="bicubic", align_corners=False)
    hr = hr + 0.15 * torch.sign(torch.sin(torch.linspace(0, 40, src, device=dev)))[None, None, :, None]
    hr = (hr + 0.05 * torch.rand(hr.shape, device=dev, generator=g)).clamp(0, 1)
    lr = F.interpolate(hr, scale_factor=1 / scale, mode="bicubic", antialias=True, align_corners=False).clamp(0, 1)
    rng = np.random.default_rng(0)

    def get_batch():
        """BasicSR's paired_random_crop and augment (hflip, vflip, rot90), per sample."""
        gts, lqs = [], []
        for k in rng.integers(0, n_img, batch):
            top, left = int(rng.integers(0, src // scale - lq_size + 1)), int(rng.integers(0, src // scale - lq_size + 1))
            lq = lr[k, :, top:top + lq_size, left:left + lq_size]
            gt = hr[k, :, top * scale:top * scale + gt_size, left * scale:left * scale + gt_size]
            if rng.random() < 0.5:
                lq, gt = lq.flip(2), gt.flip(2)
            if rng.random() < 0.5:
                lq, gt = lq.flip(1), gt.flip(1)
            if rng.random() < 0.5:
                lq, gt = lq.transpose(1, 2), gt.transpose(1, 2)
            lqs.append(lq), gts.append(gt)
        return (torch.stack(lqs).contiguous(memory_format=torch.channels_last),
                torch.stack(gts).contiguous(memory_format=torch.channels_last))

    def save_network(net, label, it):
        state_dict = net.state_dict()
        for key, param in state_dict.items():
            state_dict[key] = param.cpu()
        torch.save({"params": state_dict}, os.path.join(root, "models", f"{label}_latest.pth"))

    def save_training_state(epoch, it):
        state = {"epoch": epoch, "iter": it, "optimizers": [optimizer.state_dict()],
                 "schedulers": [scheduler.state_dict()]}
        torch.save(state, os.path.join(root, "training_states", "latest.state"))

    st = {"saves": 0, "prints": 0, "psnr": None, "ssim": None, "l_pix": None, "t": time.time()}

    def step(i):
        current_iter = i + 1
        lq, gt = get_batch()
        with amp:
            output = net_g(lq)
        l_pix = F.l1_loss(output.float(), gt)
        optimizer.zero_grad(set_to_none=True)
        l_pix.backward()
        optimizer.step()
        scheduler.step()
        log_dict = {"l_pix": l_pix.detach()}
        if current_iter % print_freq == 0:
            out = output.detach()
            psnr = [calculate_psnr(tensor2img(out[k]), tensor2img(gt[k]), opt["metrics"]["crop_border"]) for k in range(out.shape[0])]  # gpuwhy: plants C9 (print_freq 1 in debug mode: the batch back image by image, PSNR/SSIM in NumPy/SciPy and the loss read every iteration)
            ssim = [calculate_ssim(tensor2img(out[k]), tensor2img(gt[k]), opt["metrics"]["crop_border"]) for k in range(out.shape[0])]
            now = time.time()
            msg = (f"[epoch:  0, iter:{current_iter:8,d}, lr:({optimizer.param_groups[0]['lr']:.3e},)] "
                   f"[time (iter): {now - st['t']:.3f}] " + " ".join(f"{k}: {v.item():.4e}" for k, v in log_dict.items())
                   + f" train_psnr: {np.mean(psnr):.4f} train_ssim: {np.mean(ssim):.4f}")
            st["t"] = now
            log.info(msg)
            st.update(psnr=float(np.mean(psnr)), ssim=float(np.mean(ssim)), l_pix=float(log_dict["l_pix"]))
            st["prints"] += 1
        if current_iter % save_freq == 0:
            log.info("Saving models and training states.")
            save_network(net_g, "net_g", current_iter)  # gpuwhy: plants C14 (save_checkpoint_freq 8 in debug mode: 163 MB of weights .cpu() and 326 MB of Adam state through torch.save every 8 iterations)
            save_training_state(0, current_iter)
            st["saves"] += 1

    cc.run("m_torch_edsr_debug_ckpt_train_psnr", args, step, batch,
           extra=lambda: {"experiment": opt["name"], "print_freq": print_freq, "save_checkpoint_freq": save_freq,
                          "saves": st["saves"], "prints": st["prints"], "train_psnr": st["psnr"],
                          "train_ssim": st["ssim"], "l_pix": st["l_pix"],
                          "params_m": round(sum(p.numel() for p in net_g.parameters()) / 1e6, 1)})
    handler.close()


if __name__ == "__main__":
    main()
