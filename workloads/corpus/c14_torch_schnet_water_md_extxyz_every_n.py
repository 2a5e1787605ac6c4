"""C14 periodic stall (an MD trajectory frame and a log line written on the simulating thread
every 5 steps): molecular dynamics of liquid water driven by a machine-learned potential, the
way SchNetPack's and TorchMD-Net's users run a trained model through an ASE-style loop
(ase.md.Langevin with `dyn.attach(traj_writer, interval=N)` and an MDLogger), in plain PyTorch
with the integrator on the GPU. The system is a periodic box of 4,000 water molecules (12,000
atoms, 49.3 A a side, 1 g/cm^3, made at start on the GPU from a jittered lattice); the potential
is SchNet (Schuett et al. 2018, schnetpack's layout: 128 atom features, 128 filters, 3
interaction blocks, 50 Gaussian radial functions to a 4.5 A cosine cutoff, shifted softplus,
an atomwise 128 -> 64 -> 1 energy head; 0.23 M parameters, random weights, the output layer
scaled down so that the random forces stay small), its forces -dE/dx by autograd, in float32
with TF32 matrix products (torch.set_float32_matmul_precision("high")). The neighbour list is a
padded one (48 nearest atoms within 4.5 A + a 1.0 A skin, minimum image), rebuilt on the GPU
every 20 steps by a chunked brute-force top-k (no host read). The integrator is ASE's
Langevin (0.5 fs, 300 K, friction 0.01/fs) written on tensors, so an MD step is one force
evaluation and a few elementwise updates, and the loop never waits for the GPU between
steps.

Plant: the trajectory observer left at interval=5 (set while equilibrating to watch the
structure; production runs write every 1-2 ps, 2,000-4,000 steps): every 5 steps the
positions, velocities and forces are copied to the host and written as one extended-XYZ frame
(Lattice and Properties header, then one "%-2s" + 9 x "%16.8f" line an atom, formatted row by
row in Python as ase.io.extxyz does; 1.8 MB a frame) to a file under GW_CORPUS_CACHE (removed
at the end), and an MDLogger line (time, Etot, Epot, Ekin, T read with .item()) appended to a
log; the GPU has nothing queued while the host formats 12,000 lines. Timed on a CPU-only
machine (2 loaded cores): 42-48 ms a frame (3.5-4 us a line); counted there: 227 aten
operations a force evaluation (~250 kernels an MD step with the integrator). Estimated (not
measured): an MD step ~8-14 ms of GPU work (576,000 padded pairs: ~0.16 TFLOP of filter-network
products forward and backward in TF32, under 1 ms, and ~25-35 GB of gathers and elementwise
passes over 576,000 x 128 float32 pair tensors, memory-bound), ~2 ms of host issue, so 5 steps
~40-70 ms against a ~35-50 ms frame write: the writes ~35-50% of a plain run.

--fix: gpuwhy's C14 advice (write less often): the trajectory frame and the log line every
2,000 steps (1 ps) instead of 5, never inside the measured window; system, potential,
neighbour list and integrator unchanged.

Written blind for the whiskey batch.
"""
import math
import os
import shutil

import torch
import torch.nn as nn
import torch.nn.functional as F

import cc

KB = 8.617333262e-5          # eV/K
ACC = 9.648533212e-3         # eV/A/amu -> A/fs^2
MASS = {1: 1.008, 8: 15.999}
SYMBOL = {1: "H", 8: "O"}


def ssp(x):
    return F.softplus(x) - math.log(2.0)


class Interaction(nn.Module):
    """SchNet interaction block: continuous-filter convolution over the padded neighbour list."""

    def __init__(self, n_atom, n_filter, n_rbf):
        super().__init__()
        self.in2f = nn.Linear(n_atom, n_filter, bias=False)
        self.filt1, self.filt2 = nn.Linear(n_rbf, n_filter), nn.Linear(n_filter, n_filter)
        self.f2out1, self.f2out2 = nn.Linear(n_filter, n_atom), nn.Linear(n_atom, n_atom)

    def forward(self, x, rbf, fcut, nbr):
        w = self.filt2(ssp(self.filt1(rbf))) * fcut[..., None]          # (N, K, F)
        y = self.in2f(x)
        y = (y[nbr] * w).sum(1)                                          # cfconv: gather, filter, sum
        return x + self.f2out2(ssp(self.f2out1(y)))


class SchNet(nn.Module):
    def __init__(self, n_atom=128, n_filter=128, n_interactions=3, n_rbf=50, cutoff=4.5):
        super().__init__()
        self.cutoff = cutoff
        self.embedding = nn.Embedding(10, n_atom)
        self.register_buffer("mu", torch.linspace(0.0, cutoff, n_rbf))
        self.gamma = 0.5 / float(cutoff / (n_rbf - 1)) ** 2
        self.interactions = nn.ModuleList(Interaction(n_atom, n_filter, n_rbf) for _ in range(n_interactions))
        self.out1, self.out2 = nn.Linear(n_atom, n_atom // 2), nn.Linear(n_atom // 2, 1)
        with torch.no_grad():
            self.out2.weight.mul_(0.05)

    def forward(self, z, pos, nbr, box):
        rij = pos[nbr] - pos[:, None, :]
        rij = rij - box * torch.round(rij / box)                          # minimum image
        d = torch.sqrt((rij * rij).sum(-1) + 1e-12)                       # (N, K)
        rbf = torch.exp(-self.gamma * (d[..., None] - self.mu) ** 2)
        fcut = 0.5 * (torch.cos(d * math.pi / self.cutoff) + 1.0) * (d < self.cutoff)
        x = self.embedding(z)
        for block in self.interactions:
            x = block(x, rbf, fcut, nbr)
        return self.out2(ssp(self.out1(x))).sum()


def water_box(n_mol, dev, seed=0):
    """Jittered lattice of water molecules at 1 g/cm^3: positions (A), atomic numbers, box."""
    g = torch.Generator(device=dev).manual_seed(seed)
    box = (n_mol / 0.03343) ** (1.0 / 3.0)                               # 0.03343 molecules/A^3
    m = math.ceil(n_mol ** (1.0 / 3.0))
    grid = torch.stack(torch.meshgrid(*[torch.arange(m, device=dev, dtype=torch.float32)] * 3, indexing="ij"), -1)
    o = (grid.reshape(-1, 3)[:n_mol] + 0.5) * (box / m)
    o = o + 0.2 * torch.randn(o.shape, device=dev, generator=g)
    u = F.normalize(torch.randn(n_mol, 3, device=dev, generator=g), dim=-1)
    v = F.normalize(torch.cross(u, torch.randn(n_mol, 3, device=dev, generator=g), dim=-1), dim=-1)
    half = math.radians(104.5) / 2
    h1 = o + 0.9572 * (math.cos(half) * u + math.sin(half) * v)
    h2 = o + 0.9572 * (math.cos(half) * u - math.sin(half) * v)
    pos = torch.stack([o, h1, h2], 1).reshape(-1, 3) % box
    z = torch.tensor([8, 1, 1], device=dev).repeat(n_mol)
    return pos, z, box


def neighbour_list(pos, box, k, cutoff, chunk=1024):
    """The k nearest atoms of each atom (minimum image), chunked brute force on the GPU; pairs
    beyond the cutoff stay in the list and get a zero filter (the padded layout)."""
    n = pos.shape[0]
    out = torch.empty(n, k, dtype=torch.long, device=pos.device)
    for s in range(0, n, chunk):
        d = pos[s:s + chunk, None, :] - pos[None, :, :]
        d = d - box * torch.round(d / box)
        r2 = (d * d).sum(-1)
        r2[torch.arange(r2.shape[0], device=pos.device), torch.arange(s, s + r2.shape[0], device=pos.device)] = float("inf")
        r2 = torch.where(r2 < cutoff * cutoff, r2, r2 + 1e6)
        out[s:s + chunk] = r2.topk(k, dim=1, largest=False).indices
    return out


class ExtXYZWriter:
    """ase.io.extxyz.write_xyz in miniature: a comment line with the lattice and the per-atom
    properties, then one formatted line an atom, row by row."""

    def __init__(self, path, symbols, box):
        self.f = open(path, "w")
        self.symbols, self.box = symbols, box
        self.frames = 0

    def write(self, step, pos, vel, forces, energy):
        p, v, f = pos.cpu().numpy(), vel.cpu().numpy(), forces.cpu().numpy()
        b = self.box
        self.f.write(f"{len(self.symbols)}\n")
        self.f.write(f'Lattice="{b:.8f} 0.0 0.0 0.0 {b:.8f} 0.0 0.0 0.0 {b:.8f}" '
                     f'Properties=species:S:1:pos:R:3:velocities:R:3:forces:R:3 '
                     f'energy={energy:.8f} step={step} pbc="T T T"\n')
        fmt = "%-2s" + " %16.8f" * 9 + "\n"
        for s, a, c, e in zip(self.symbols, p, v, f):
            self.f.write(fmt % (s, a[0], a[1], a[2], c[0], c[1], c[2], e[0], e[1], e[2]))
        self.f.flush()
        self.frames += 1

    def close(self):
        self.f.close()


def main():
    args = cc.parser(__doc__, warmup=5).parse_args()
    dev = cc.torch_device(args)
    n_mol, k = (64, 16) if args.smoke else (4000, 48)
    dt, temp, friction = 0.5, 300.0, 0.01
    cutoff, skin, rebuild_every = 4.5, 1.0, 20
    interval = 2000 if args.fix else 5  # gpuwhy: plants C14 (a trajectory frame and a log line every 5 MD steps)
    torch.set_float32_matmul_precision("high")

    pos, z, box = water_box(n_mol, dev)
    n = pos.shape[0]
    mass = torch.tensor([MASS[8], MASS[1], MASS[1]], device=dev).repeat(n_mol)[:, None]
    g = torch.Generator(device=dev).manual_seed(1)
    vel = torch.randn(n, 3, device=dev, generator=g) * torch.sqrt(KB * temp / mass * ACC)   # A/fs
    torch.manual_seed(0)
    model = SchNet(cutoff=cutoff).to(dev).eval().requires_grad_(False)
    params = sum(p.numel() for p in model.parameters())
    symbols = [SYMBOL[int(a)] for a in z.tolist()]

    out_dir = os.path.join(cc.CACHE, "c14_md_traj")
    shutil.rmtree(out_dir, ignore_errors=True)
    os.makedirs(out_dir, exist_ok=True)
    traj = ExtXYZWriter(os.path.join(out_dir, "md.extxyz"), symbols, box)
    log = open(os.path.join(out_dir, "md.log"), "w")
    log.write("%-10s %12s %12s %12s %8s\n" % ("Time[ps]", "Etot[eV]", "Epot[eV]", "Ekin[eV]", "T[K]"))

    # Langevin (ase.md.langevin, Vanden-Eijnden & Ciccotti) coefficients
    sigma = torch.sqrt(2 * temp * KB * friction / mass * ACC)              # A/fs^1.5
    c1, c2 = dt / 2 - dt * dt * friction / 8, dt * friction / 2 - dt * dt * friction * friction / 8
    c3, c5 = math.sqrt(dt) * sigma / 2 - dt ** 1.5 * friction * sigma / 8, dt ** 1.5 * sigma / (2 * math.sqrt(3))
    c4 = friction / 2 * c5

    def forces_of(p):
        p = p.detach().requires_grad_(True)
        e = model(z, p, st["nbr"], box)
        (grad,) = torch.autograd.grad(e, p)
        return -grad, e.detach()

    st = {"nbr": neighbour_list(pos, box, k, cutoff + skin), "rebuilds": 1, "frames": 0, "nan": False}
    st["f"], st["e"] = forces_of(pos)

    def observe(i, p, v):
        ekin = (0.5 * mass * v * v).sum() / ACC
        epot, ek = st["e"].item(), ekin.item()                            # MDLogger's values, read on the host
        log.write("%-10.4f %12.4f %12.4f %12.4f %8.1f\n" % (i * dt / 1000, epot + ek, epot, ek, ek / (1.5 * n * KB)))
        log.flush()
        traj.write(i, p, v, st["f"], epot)
        st["nan"] = st["nan"] or not math.isfinite(epot)

    def step(i):
        nonlocal pos, vel
        if i % rebuild_every == 0 and i > 0:
            st["nbr"] = neighbour_list(pos, box, k, cutoff + skin)
            st["rebuilds"] += 1
        xi = torch.randn(n, 3, device=dev, generator=g)
        eta = torch.randn(n, 3, device=dev, generator=g)
        acc = st["f"] / mass * ACC
        rnd_pos = c5 * eta
        rnd_vel = c3 * xi - c4 * eta
        vel = vel + c1 * acc - c2 * vel + rnd_vel
        pos = (pos + dt * vel + rnd_pos) % box
        st["f"], st["e"] = forces_of(pos)
        vel = vel + c1 * st["f"] / mass * ACC - c2 * vel + rnd_vel
        if (i + 1) % interval == 0:                                       # dyn.attach(..., interval=N)
            observe(i + 1, pos, vel)

    cc.run("c14_torch_schnet_water_md_extxyz_every_n", args, step, 1,
           extra=lambda: {"atoms": n, "waters": n_mol, "neighbours": k, "pairs": n * k,
                          "params_m": round(params / 1e6, 3), "interval": interval,
                          "frames_written": traj.frames, "nbr_rebuilds": st["rebuilds"],
                          "nan_seen": st["nan"]})
    traj.close()
    log.close()
    shutil.rmtree(out_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
