"""C3 small batch (training): a torchvision ResNet-18 trained on 128 px images two at a
time (batch 2, bf16 autocast, channels_last, SGD with momentum): its convolutions cover a
few of the H200's 132 SMs and the host's launches set the step time.

--fix: gpuwhy's C3 advice, batch 128 (learning rate scaled linearly); GW_FIX_BATCH times
another batch.
"""
import torch
import torchvision

import cc


def main():
    args = cc.parser(__doc__).parse_args()
    dev = cc.torch_device(args)
    res = 32 if args.smoke else 128
    batch = cc.fix_batch(8 if args.smoke else 128) if args.fix else 2  # gpuwhy: plants C3 (batch of 2)
    model = torchvision.models.resnet18(num_classes=100).to(dev).to(memory_format=torch.channels_last)
    model.train()
    opt = torch.optim.SGD(model.parameters(), lr=0.1 * batch / 256, momentum=0.9, foreach=True)
    loss_fn = torch.nn.CrossEntropyLoss()
    xs = [torch.randn(batch, 3, res, res, device=dev).contiguous(memory_format=torch.channels_last)
          for _ in range(4)]
    ys = [torch.randint(0, 100, (batch,), device=dev) for _ in range(4)]

    def step(i):
        with torch.autocast(dev.type, dtype=torch.bfloat16):
            loss = loss_fn(model(xs[i % 4]), ys[i % 4])
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    cc.run("c3_tv_resnet18_train_batch2", args, step, batch)


if __name__ == "__main__":
    main()
