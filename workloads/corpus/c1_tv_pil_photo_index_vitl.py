"""C1 data loading (batch inference, torchvision): a photo-library indexer that embeds every
photo of a folder for near-duplicate detection and semantic search. The script walks the
folder with a map-style Dataset: each __getitem__ opens a JPEG file with PIL (the library's
512 x 512 previews), applies its EXIF orientation (ImageOps.exif_transpose), converts it to
RGB, resizes the shorter side to 384 px (bicubic, antialiased), centre-crops 384 x 384 and
turns it into a normalized float tensor (ToTensor, Normalize), the preprocessing of a
ViT-L/16 at 384 px. The model is torchvision's vit_l_16(image_size=384) (random weights, 24
layers, d=1024, 577 tokens, the classification head replaced by Identity: the class token
is the embedding), bf16, inference_mode, batch 32 photos with flip test-time augmentation
(each batch and its horizontal mirror, flipped on the GPU, in one forward pass of 64, the two
embeddings averaged); each batch's embeddings are L2-normalized and written as float16 into
an index ring on the GPU, nothing read back. The DataLoader is left at its default
num_workers=0 (with pin_memory=True), so decoding and resizing run on the thread that
feeds the GPU, between one batch's launches and the next: the GPU waits for JPEG decode.

--fix: gpuwhy's C1 advice (load data in worker processes): DataLoader(num_workers=N) with
N one per free core (cc.fix_workers()), persistent_workers=True, prefetch_factor=2 (a float
batch is 57 MB: 2 per worker keeps host memory under 2 GB); the same Dataset, files,
transforms, batch and model.

Written blind for the mesa batch.
"""
import torch
import torch.nn.functional as F
import torchvision
from PIL import Image, ImageOps
from torch.utils.data import DataLoader, Dataset
from torchvision import transforms as T

import cc


class PhotoFolder(Dataset):
    """The photos of a folder, in order, preprocessed for the embedding model."""

    def __init__(self, files, res):
        self.files = files
        self.tf = T.Compose([T.Resize(res, interpolation=T.InterpolationMode.BICUBIC, antialias=True),
                             T.CenterCrop(res), T.ToTensor(), T.Normalize([0.5, 0.5, 0.5], [0.5, 0.5, 0.5])])

    def __len__(self):
        return 1_000_000  # the library, many passes over the files on disk

    def __getitem__(self, i):
        with Image.open(self.files[i % len(self.files)]) as im:
            im = ImageOps.exif_transpose(im).convert("RGB")
        return self.tf(im), i


def main():
    args = cc.parser(__doc__).parse_args()
    dev = cc.torch_device(args)
    gpu = dev.type == "cuda"
    if args.smoke:
        batch, res, src, nfiles = 4, 32, 48, 32
        model = torchvision.models.VisionTransformer(image_size=res, patch_size=16, num_layers=2, num_heads=2,
                                                     hidden_dim=32, mlp_dim=64)
    else:
        batch, res, src, nfiles = 32, 384, 512, 512
        model = torchvision.models.vit_l_16(image_size=res)
    _, files = cc.jpeg_dir(n=nfiles, size=src, tag="mesa_photos")
    model.heads = torch.nn.Identity()
    dtype = torch.bfloat16 if gpu else torch.float32
    model = model.to(dev, dtype=dtype).eval()
    dim = model.hidden_dim
    workers = (2 if args.smoke else cc.fix_workers()) if args.fix else 0  # gpuwhy: plants C1 (JPEG decode + resize on the thread that feeds the GPU)
    loader = DataLoader(PhotoFolder(files, res), batch_size=batch, shuffle=False, num_workers=workers,
                        pin_memory=gpu, persistent_workers=workers > 0, prefetch_factor=2 if workers else None,
                        drop_last=True)
    it = iter(loader)
    ring = 64
    index = torch.empty(ring, batch, dim, device=dev, dtype=torch.float16)
    ids = torch.empty(ring, batch, device=dev, dtype=torch.long)

    @torch.inference_mode()
    def step(i):
        x, idx = next(it)
        x = x.to(dev, non_blocking=True).to(dtype)
        e = model(torch.cat([x, x.flip(-1)])).float()  # flip test-time augmentation, one forward pass
        e = F.normalize(e[:batch] + e[batch:], dim=-1)
        index[i % ring] = e.half()
        ids[i % ring] = idx.to(dev, non_blocking=True)

    cc.run("c1_tv_pil_photo_index_vitl", args, step, batch,
           extra={"num_workers": workers, "image_px": res, "source_px": src, "files": len(files)})


if __name__ == "__main__":
    main()
