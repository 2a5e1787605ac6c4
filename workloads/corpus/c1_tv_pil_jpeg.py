"""C1 data loading: a torchvision ResNet-18 fed by a Dataset that decodes JPEG files from
disk with PIL and augments them (RandomResizedCrop, flip, ToTensor, Normalize) with
num_workers=0, so decode and augmentation run on the training thread between steps.

--fix: one loader worker per free core (cc.fix_workers(): the cores beside the training thread,
as gpuwhy's C1 advice says), persistent workers, prefetch_factor 4.
"""
import torch
import torchvision
from PIL import Image
from torch.utils.data import DataLoader, Dataset
from torchvision import transforms as T

import cc


class JpegFolder(Dataset):
    def __init__(self, files, res):
        self.files = files
        self.tf = T.Compose([T.RandomResizedCrop(res, antialias=True), T.RandomHorizontalFlip(),
                             T.ToTensor(), T.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])])

    def __len__(self):
        return 1_000_000  # many epochs over the files

    def __getitem__(self, i):
        with Image.open(self.files[i % len(self.files)]) as im:
            return self.tf(im.convert("RGB")), i % 1000


def main():
    args = cc.parser(__doc__).parse_args()
    dev = cc.torch_device(args)
    batch, res = (4, 64) if args.smoke else (32, 128)
    _, files = cc.jpeg_dir(n=64 if args.smoke else 512, size=160)
    torch.backends.cudnn.benchmark = True
    model = torchvision.models.resnet18(num_classes=1000).to(dev).to(memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, foreach=True)
    workers = (2 if args.smoke else cc.fix_workers()) if args.fix else 0  # gpuwhy: plants C1 (decode + augmentation on the training thread)
    loader = DataLoader(JpegFolder(files, res), batch_size=batch, shuffle=True, num_workers=workers,
                        pin_memory=True, persistent_workers=workers > 0,
                        prefetch_factor=4 if workers else None, drop_last=True)
    it = iter(loader)

    def step(i):
        x, y = next(it)
        x = x.to(dev, non_blocking=True).contiguous(memory_format=torch.channels_last)
        y = y.to(dev, non_blocking=True)
        with torch.autocast(dev.type, dtype=torch.bfloat16):
            loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    cc.run("c1_tv_pil_jpeg", args, step, batch)


if __name__ == "__main__":
    main()
