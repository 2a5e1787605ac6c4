"""C14 periodic stall: a Transformer encoder (nn.TransformerEncoder, bf16 autocast) saves a
full checkpoint (model + AdamW state, about 170 MB) with torch.save every 25 steps, on the
training thread: copy to host, pickle, write; training stops meanwhile.

--fix: the checkpoint is snapshotted into pinned host buffers with non_blocking copies on a
side stream and written by a background thread, so training goes on.
"""
import os
import threading

import torch

import cc


def main():
    args = cc.parser(__doc__).parse_args()
    dev = cc.torch_device(args)
    d, layers, batch, seq = (64, 2, 4, 32) if args.smoke else (768, 2, 64, 512)
    every = 25
    layer = torch.nn.TransformerEncoderLayer(d, nhead=12 if d % 12 == 0 else 4, dim_feedforward=4 * d,
                                             batch_first=True, norm_first=True)
    model = torch.nn.Sequential(torch.nn.TransformerEncoder(layer, layers), torch.nn.Linear(d, d)).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=dev.type == "cuda")
    x = torch.randn(batch, seq, d, device=dev)
    path = os.path.join(cc.CACHE, "ckpt", "c14_torch_ckpt_sync.pt")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    writer, side = None, torch.cuda.Stream() if dev.type == "cuda" else None
    host = {}

    def snapshot():
        """state -> pinned host copies (async on the side stream), then a thread writes them."""
        nonlocal writer
        if writer is not None:
            writer.join()  # the previous save is still being written: wait for it
        state = {"model": model.state_dict(), "opt": opt.state_dict()}
        flat = {}

        def walk(prefix, obj):
            if isinstance(obj, torch.Tensor):
                if prefix not in host:
                    host[prefix] = torch.empty(obj.shape, dtype=obj.dtype, pin_memory=True)
                host[prefix].copy_(obj, non_blocking=True)
                flat[prefix] = host[prefix]
            elif isinstance(obj, dict):
                for k, v in obj.items():
                    walk(f"{prefix}/{k}", v)
            else:
                flat[prefix] = obj
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            walk("", state)
            done = torch.cuda.Event()
            done.record(side)
        # training's next updates wait for the copies (a few ms on the copy engine), so the
        # snapshot is this step's state
        torch.cuda.current_stream().wait_event(done)

        def write():
            done.synchronize()
            torch.save(flat, path)
        writer = threading.Thread(target=write, daemon=True)
        writer.start()

    def step(i):
        with torch.autocast(dev.type, dtype=torch.bfloat16):
            loss = model(x).float().pow(2).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if i % every == every - 1:
            if args.fix and dev.type == "cuda":
                snapshot()
            else:
                torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": i}, path)  # gpuwhy: plants C14

    cc.run("c14_torch_ckpt_sync", args, step, batch)
    if writer is not None:
        writer.join()


if __name__ == "__main__":
    main()
