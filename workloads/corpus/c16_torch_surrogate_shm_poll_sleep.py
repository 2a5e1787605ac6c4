"""C16 the feeding thread asleep (an online-training coupling that polls shared-memory flags with
time.sleep): online training of a neural surrogate from a running simulation, as in-situ
frameworks (Melissa, SmartSim-style couplings) do it on one node: a solver process, forked
before CUDA starts, advances an ensemble of 64 two-dimensional heat-equation runs on a 64 x 64
grid (each with its own smooth conductivity field and a heat source, explicit finite
differences in NumPy, 4 substeps between snapshots, a run restarted every 200 snapshots) and
hands each snapshot pair to the trainer through shared memory; the trainer fits a UNet
surrogate (the temperature and the conductivity in, the temperature 4 substeps later out;
three levels of two 3 x 3 convolutions with GroupNorm and GELU, widths 64-128-256 and a
512-wide bottleneck, bilinear upsampling; 7.8 M parameters, random weights), bf16 autocast,
fused AdamW (lr 3e-4), MSE on the increment, batch 64 (one snapshot of every run); the loss
stays on the device and is read every 50 steps.

The coupling is the one written for the solver's in-situ analysis: one shared buffer and a
flag word. The solver waits until the trainer has taken the last batch, writes the next one
and raises the flag; the trainer waits until the flag is raised, copies the batch to the GPU
and lowers it. Both sides wait the way such code usually does, `while flag != X:
time.sleep(0.01)`, so after each batch the trainer's thread sleeps 10 ms slices until the
solver, which itself only notices the lowered flag at its next 10 ms poll, has written the
next batch: about 10-15 ms asleep every step against ~5 ms of GPU work, the GPU idle.

--fix: gpuwhy's C16 advice (block on the queue instead of a time.sleep() loop, so that the
feeding thread is woken when data is there): a ring of 4 buffers whose free and filled slots
are counted by two multiprocessing semaphores, each side blocking in acquire(), so the solver
runs up to 4 batches ahead; solver, batches, model and optimizer unchanged.

Written blind for the romeo batch.
"""
import multiprocessing as mp
import os
import signal
import time

import numpy as np

import cc

FREE, READY = 0, 1
POLL = 0.01


class HeatEnsemble:
    """m explicit heat-equation runs on an n x n grid (zero-temperature walls)."""

    def __init__(self, m, n, seed):
        self.m, self.n = m, n
        self.rng = np.random.default_rng(seed)
        self.u = np.zeros((m, n, n), np.float32)
        self.kappa = np.zeros((m, n, n), np.float32)
        self.src = np.zeros((m, n, n), np.float32)
        self.lap = np.zeros((m, n, n), np.float32)
        self.age = np.zeros(m, np.int64)
        self.restart(np.arange(m))

    def restart(self, idx):
        n, k = self.n, len(idx)
        low = self.rng.random((k, 8, 8), dtype=np.float32)
        up = np.kron(low, np.ones((n // 8, n // 8), np.float32))            # blocky, then smoothed
        for _ in range(2):
            up = 0.25 * (np.roll(up, 1, 1) + np.roll(up, -1, 1) + np.roll(up, 1, 2) + np.roll(up, -1, 2))
        self.kappa[idx] = 0.05 + 0.2 * up
        yy, xx = np.mgrid[0:n, 0:n].astype(np.float32) / n
        c = self.rng.random((k, 2, 1, 1), dtype=np.float32) * 0.6 + 0.2
        self.src[idx] = 0.02 * np.exp(np.maximum(-((yy - c[:, 0]) ** 2 + (xx - c[:, 1]) ** 2) / 0.01, -30.0))
        self.u[idx] = self.rng.random((k, n, n), dtype=np.float32) * 0.1
        self.age[idx] = 0

    def advance(self, substeps):
        u, lap = self.u, self.lap
        for _ in range(substeps):
            lap[:, 1:-1, 1:-1] = u[:, :-2, 1:-1] + u[:, 2:, 1:-1] + u[:, 1:-1, :-2] + u[:, 1:-1, 2:] - 4 * u[:, 1:-1, 1:-1]
            u += 0.2 * self.kappa * lap + self.src
            u[:, 0, :] = u[:, -1, :] = u[:, :, 0] = u[:, :, -1] = 0
        self.age += 1
        old = np.nonzero(self.age >= 200)[0]
        if len(old):
            self.restart(old)


def solver(buf, flags, free, filled, slots, m, n, substeps, ring):
    """The simulation process: writes (u_t, kappa, u_t+substeps) of every run into a slot."""
    try:
        import ctypes
        ctypes.CDLL("libc.so.6").prctl(1, signal.SIGKILL)              # PR_SET_PDEATHSIG: die with the job
    except OSError:
        pass
    data = np.frombuffer(buf, np.float32).reshape(slots, m, 3, n, n)
    flag = np.frombuffer(flags, np.int64)
    sim = HeatEnsemble(m, n, seed=os.getpid())
    k = 0
    while True:
        s = k % slots
        if ring:
            free.acquire()                                  # blocks until a slot is free
        else:
            while flag[s] != FREE:                          # the in-situ coupling's wait
                time.sleep(POLL)
        data[s, :, 0] = sim.u
        data[s, :, 1] = sim.kappa
        sim.advance(substeps)
        data[s, :, 2] = sim.u
        if ring:
            filled.release()
        else:
            flag[s] = READY
        k += 1


def main():
    args = cc.parser(__doc__, warmup=5).parse_args()
    if args.smoke:
        m, n, base, substeps = 8, 32, 16, 4
    else:
        m, n, base, substeps = 64, 64, 64, 4
    ring = bool(args.fix)
    slots = 4 if ring else 1
    # shared memory and the solver process before CUDA starts (fork)
    ctx = mp.get_context("fork")
    buf = mp.RawArray("b", slots * m * 3 * n * n * 4)
    flags = mp.RawArray("b", slots * 8)
    free, filled = ctx.Semaphore(slots), ctx.Semaphore(0)
    proc = ctx.Process(target=solver, args=(buf, flags, free, filled, slots, m, n, substeps, ring), daemon=True)
    proc.start()

    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    dev = cc.torch_device(args)
    gpu = dev.type == "cuda"
    data = np.frombuffer(buf, np.float32).reshape(slots, m, 3, n, n)
    flag = np.frombuffer(flags, np.int64)

    def block(cin, cout):
        return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1), nn.GroupNorm(8, cout), nn.GELU(),
                             nn.Conv2d(cout, cout, 3, padding=1), nn.GroupNorm(8, cout), nn.GELU())

    class UNet(nn.Module):
        def __init__(self, cin, cout, w):
            super().__init__()
            self.enc = nn.ModuleList([block(cin, w), block(w, 2 * w), block(2 * w, 4 * w)])
            self.mid = block(4 * w, 8 * w)
            self.dec = nn.ModuleList([block(12 * w, 4 * w), block(6 * w, 2 * w), block(3 * w, w)])
            self.out = nn.Conv2d(w, cout, 1)

        def forward(self, x):
            skips = []
            for e in self.enc:
                x = e(x)
                skips.append(x)
                x = F.max_pool2d(x, 2)
            x = self.mid(x)
            for d in self.dec:
                x = F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=False)
                x = d(torch.cat([x, skips.pop()], 1))
            return self.out(x)

    torch.manual_seed(0)
    model = UNet(2, 1, base).to(dev).train()
    if gpu:
        model = model.to(memory_format=torch.channels_last)
    params = sum(p.numel() for p in model.parameters())
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, fused=gpu)
    amp = torch.autocast(dev.type, dtype=torch.bfloat16, enabled=gpu)
    st = {"k": 0, "acc": torch.zeros((), device=dev), "loss": None, "reads": 0, "slept": 0.0}

    def receive():
        """The next snapshot batch from the solver, on the GPU."""
        s = st["k"] % slots
        if ring:
            filled.acquire()                                # woken as soon as a slot is filled
        else:
            t0 = time.perf_counter()
            while flag[s] != READY:
                time.sleep(POLL)  # gpuwhy: plants C16 (the trainer polls the solver's flag in 10 ms sleeps; the GPU idles)
            st["slept"] += time.perf_counter() - t0
        batch = torch.from_numpy(data[s]).to(dev, copy=True)   # copies (and waits for the previous step)
        if ring:
            free.release()
        else:
            flag[s] = FREE
        st["k"] += 1
        return batch

    def step(i):
        b = receive()
        x, y = b[:, :2], b[:, 2:] - b[:, :1]                   # predict the increment
        if gpu:
            x = x.contiguous(memory_format=torch.channels_last)
        with amp:
            pred = model(x)
        loss = F.mse_loss(pred.float(), y * 100)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        st["acc"] += loss.detach()
        if i % 50 == 49:
            st["loss"] = st["acc"].item() / 50
            st["acc"].zero_()
            st["reads"] += 1

    try:
        cc.run("c16_torch_surrogate_shm_poll_sleep", args, step, m,
               extra=lambda: {"runs": m, "grid": n, "slots": slots, "blocking_ring": ring,
                              "params_m": round(params / 1e6, 1), "slept_s": round(st["slept"], 3),
                              "loss": st["loss"], "loss_reads": st["reads"]})
    finally:
        proc.kill()
        proc.join(timeout=3)


if __name__ == "__main__":
    main()
