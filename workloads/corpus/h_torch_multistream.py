"""healthy (multi-stream): knowledge distillation with the frozen teacher's forward on a
second CUDA stream, one batch ahead of the student's training step on the main stream
(events order them); bf16, large batch, fused AdamW.

--fix changes nothing: this is a control.
"""
import torch

import cc


def mlp(d, hidden, depth, out):
    layers = []
    for k in range(depth):
        layers += [torch.nn.Linear(d if k == 0 else hidden, hidden), torch.nn.GELU()]
    return torch.nn.Sequential(*layers, torch.nn.Linear(hidden, out))


def main():
    args = cc.parser(__doc__).parse_args()
    dev = cc.torch_device(args)
    d, batch, classes = (64, 32, 10) if args.smoke else (1024, 8192, 1000)
    teacher = mlp(d, 4 * d, 6, classes).to(dev, torch.bfloat16).eval().requires_grad_(False)
    student = mlp(d, 2 * d, 4, classes).to(dev)
    opt = torch.optim.AdamW(student.parameters(), lr=1e-4, fused=dev.type == "cuda")
    data = [torch.randn(batch, d, device=dev) for _ in range(4)]
    cuda = dev.type == "cuda"
    side = torch.cuda.Stream() if cuda else None
    soft = [None, None]
    ready = [torch.cuda.Event() for _ in range(2)] if cuda else None

    def teach(i):
        """The teacher's soft labels for batch i, on the side stream."""
        x = data[i % 4]
        if not cuda:
            soft[i % 2] = torch.softmax(teacher(x.bfloat16()).float() / 2, -1)
            return
        side.wait_stream(torch.cuda.current_stream())  # the slot's previous use is done
        with torch.cuda.stream(side), torch.no_grad():
            soft[i % 2] = torch.softmax(teacher(x.bfloat16()).float() / 2, -1)
            ready[i % 2].record(side)

    teach(0)

    def step(i):
        if cuda:
            torch.cuda.current_stream().wait_event(ready[i % 2])
        target = soft[i % 2]
        teach(i + 1)  # next batch's teacher forward overlaps this student step
        with torch.autocast(dev.type, dtype=torch.bfloat16):
            logp = torch.log_softmax(student(data[i % 4]).float() / 2, -1)
        loss = torch.nn.functional.kl_div(logp, target, reduction="batchmean")
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    cc.run("h_torch_multistream", args, step, batch)


if __name__ == "__main__":
    main()
