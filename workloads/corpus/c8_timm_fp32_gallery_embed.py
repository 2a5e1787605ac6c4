"""C8 no mixed precision (float32 inference, timm): embedding a photo collection for
near-duplicate search with a timm ViT-B/16 backbone (vit_base_patch16_224, num_classes=0:
the pooled 768-d feature; random weights, eval, inference_mode), the way a notebook turned
into a batch job does it: the model created and moved to the GPU, images in, features
out, no autocast and PyTorch's default precision flags, so every nn.Linear runs as a
float32 GEMM on the CUDA cores (TF32 is off for matmuls by default) and the attention as
float32 SDPA. Batches of 128 decoded 256 x 256 uint8 images (8 made once on the device and
cycled: the decoding pipeline is not what is measured) are center-cropped to 224,
normalized with the ImageNet mean and std on the GPU, embedded, L2-normalized and stored
as float16 into the gallery's feature matrix on the GPU; each batch is also compared with
the previous one (a 128 x 128 similarity) for duplicates, counted on the GPU and read every
50 batches. About 4.5 TFLOP a batch, nearly all in the 48 Linear layers' GEMMs.

--fix: gpuwhy's C8 advice: the forward pass under torch.autocast(bfloat16) with TF32
allowed for what stays in float32; model, weights, images and outputs unchanged.

Written blind for the canyon batch.
"""
import torch
import torch.nn.functional as F
import timm

import cc


def main():
    args = cc.parser(__doc__).parse_args()
    dev = cc.torch_device(args)
    if args.smoke:
        model = timm.create_model("vit_tiny_patch16_224", pretrained=False, num_classes=0, img_size=32)
        batch, stored, crop, gallery_size = 4, 40, 32, 64
    else:
        model = timm.create_model("vit_base_patch16_224", pretrained=False, num_classes=0)
        batch, stored, crop, gallery_size = 128, 256, 224, 1 << 16
    amp = args.fix and dev.type == "cuda"  # gpuwhy: plants C8 (float32 forward: no autocast, TF32 off for matmuls)
    if args.fix:
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    model = model.to(dev).eval()
    gen = torch.Generator(device=dev).manual_seed(0)
    images = [torch.randint(0, 256, (batch, stored, stored, 3), dtype=torch.uint8, device=dev, generator=gen)
              for _ in range(8)]
    mean = torch.tensor([0.485, 0.456, 0.406], device=dev).view(1, 3, 1, 1) * 255
    std = torch.tensor([0.229, 0.224, 0.225], device=dev).view(1, 3, 1, 1) * 255
    gallery = torch.zeros(gallery_size, model.num_features, device=dev, dtype=torch.float16)
    dups = torch.zeros((), device=dev, dtype=torch.int64)
    state = {"prev": None, "dups_read": None, "reads": 0}
    off = (stored - crop) // 2

    @torch.inference_mode()
    def step(i):
        x = images[i % len(images)][:, off:off + crop, off:off + crop].permute(0, 3, 1, 2).float()
        x = (x - mean) / std
        with torch.autocast(dev.type, dtype=torch.bfloat16, enabled=amp):
            feats = model(x)
        feats = F.normalize(feats.float(), dim=-1)
        slot = (i * batch) % gallery_size
        gallery[slot:slot + batch] = feats.half()
        if state["prev"] is not None:
            dups.add_((feats @ state["prev"].T > 0.95).sum())
        state["prev"] = feats
        if i % 50 == 49:
            state["dups_read"] = int(dups)
            state["reads"] += 1

    cc.run("c8_timm_fp32_gallery_embed", args, step, batch,
           extra=lambda: {"precision": "bf16 autocast" if amp else "float32",
                          "params_m": round(sum(p.numel() for p in model.parameters()) / 1e6, 1),
                          "dup_reads": state["reads"]})


if __name__ == "__main__":
    main()
