"""C14 periodic stall (keeping the best model): a torchvision ConvNeXt-Small (160 px, 100
classes, bf16 autocast, channels_last, AdamW fused, batch 128 images on the GPU: noisy
copies of 100 class templates, a task whose validation loss keeps falling) validated every
25 steps on 4 held-out batches (no_grad, the summed loss read once per pass); whenever the
validation loss improves, the loop keeps the best model the way many scripts do:
`best_model = copy.deepcopy(model)` and `torch.save({"model": best_model.state_dict(),
"optimizer": opt.state_dict(), ...}, "best.pt")` on the training thread: 50 M parameters
and the AdamW moments, about 600 MB, copied tensor by tensor to pageable host memory,
pickled and written (under GW_CORPUS_CACHE, overwritten each time) while the GPU waits.
Early in training nearly every validation improves, so the save comes every 25 steps.

--fix: gpuwhy's C14 advice (write checkpoints from a background thread): the same
deepcopy, then the state copied with non_blocking copies in stream order into pinned
host buffers (allocated at the first save), and a background thread waits for the copies'
event, torch.saves the host copy to the same file and is joined before the next save;
validation, its frequency and the improvement test unchanged.

Written blind for the quarry batch.
"""
import copy
import os
import threading

import torch
import torch.nn.functional as F
import torchvision

import cc

VAL_EVERY = 25


class AsyncSaver:
    """Pinned host copies of a checkpoint's tensors (same stream, non_blocking), written by a
    background thread once they have arrived."""

    def __init__(self):
        self.host, self.thread = {}, None

    def to_host(self, obj, key=""):
        if isinstance(obj, torch.Tensor):
            if obj.device.type == "cpu":
                return obj
            buf = self.host.get(key)
            if buf is None or buf.shape != obj.shape or buf.dtype != obj.dtype:
                buf = self.host[key] = torch.empty(obj.shape, dtype=obj.dtype, pin_memory=True)
            return buf.copy_(obj.detach(), non_blocking=True)
        if isinstance(obj, dict):
            return {k: self.to_host(v, f"{key}/{k}") for k, v in obj.items()}
        if isinstance(obj, (list, tuple)):
            return type(obj)(self.to_host(v, f"{key}/{j}") for j, v in enumerate(obj))
        return obj

    def save(self, state, path):
        self.join()  # the previous checkpoint is still being written: wait for it
        host = self.to_host(state)
        done = torch.cuda.Event() if torch.cuda.is_available() else None
        if done is not None:
            done.record()

        def write():
            if done is not None:
                done.synchronize()
            torch.save(host, path)

        self.thread = threading.Thread(target=write, name="ckpt-writer", daemon=True)
        self.thread.start()

    def join(self):
        if self.thread is not None:
            self.thread.join()
            self.thread = None


def main():
    args = cc.parser(__doc__, warmup=VAL_EVERY).parse_args()
    dev = cc.torch_device(args)
    if args.smoke:
        model = torchvision.models.ConvNeXt(
            [torchvision.models.convnext.CNBlockConfig(16, 32, 1), torchvision.models.convnext.CNBlockConfig(32, None, 1)],
            num_classes=10)
        batch, res, classes, val_batches = 8, 32, 10, 2
    else:
        model = torchvision.models.convnext_small(num_classes=100)
        batch, res, classes, val_batches = 128, 160, 100, 4
    model = model.to(dev, memory_format=torch.channels_last)
    opt = torch.optim.AdamW(model.parameters(), lr=5e-4, weight_decay=0.05, fused=dev.type == "cuda")
    g = torch.Generator(device=dev).manual_seed(0)
    templates = F.interpolate(torch.randn(classes, 3, res // 8, res // 8, device=dev, generator=g), size=res,
                              mode="bilinear", align_corners=False)

    def make_batch():
        y = torch.randint(0, classes, (batch,), device=dev, generator=g)
        x = templates[y] + 1.5 * torch.randn(batch, 3, res, res, device=dev, generator=g)
        return x.contiguous(memory_format=torch.channels_last), y

    train = [make_batch() for _ in range(8)]
    val = [make_batch() for _ in range(val_batches)]
    path = os.path.join(cc.CACHE, "ckpt", "c14_tv_best_ckpt_deepcopy.pt")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    saver = AsyncSaver() if args.fix else None
    state = {"best": float("inf"), "best_model": None, "validations": 0, "saves": 0}

    def validate():
        model.eval()
        total = torch.zeros((), device=dev)
        with torch.no_grad(), torch.autocast(dev.type, dtype=torch.bfloat16):
            for x, y in val:
                total += F.cross_entropy(model(x).float(), y)
        model.train()
        state["validations"] += 1
        return total.item() / len(val)

    def step(i):
        x, y = train[i % len(train)]
        with torch.autocast(dev.type, dtype=torch.bfloat16):
            loss = F.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if (i + 1) % VAL_EVERY == 0:
            val_loss = validate()
            if val_loss < state["best"]:
                state["best"] = val_loss
                state["best_model"] = best_model = copy.deepcopy(model)
                ckpt = {"step": i + 1, "model": best_model.state_dict(), "optimizer": opt.state_dict(),
                        "val_loss": val_loss}
                if args.fix:
                    saver.save(ckpt, path)
                else:
                    torch.save(ckpt, path)  # gpuwhy: plants C14 (best model and AdamW state, ~600 MB, saved on the training thread)
                state["saves"] += 1

    cc.run("c14_tv_best_ckpt_deepcopy", args, step, batch,
           extra=lambda: {"val_every": VAL_EVERY, "validations": state["validations"], "saves": state["saves"],
                          "best_val_loss": round(state["best"], 4), "async_save": bool(args.fix)})
    if saver is not None:
        saver.join()


if __name__ == "__main__":
    main()
