"""A PyTorch loop that marks each iteration with an NVTX range (train_step),
three identical layers inside, 60 iterations: recorded by tests/gpu/nvtx_steps.sh."""
import torch

x = torch.randn(4096, 4096, device="cuda")
for i in range(60):
    torch.cuda.nvtx.range_push("train_step")
    for _ in range(3):
        x = torch.tanh(x @ x * 1e-3)
    torch.cuda.nvtx.range_pop()
torch.cuda.synchronize()
print('{"iterations": 60}')
