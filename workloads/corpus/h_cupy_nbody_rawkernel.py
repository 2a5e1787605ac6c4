"""Healthy control (CuPy, FP32 compute-bound, no matrix kernel): a direct-summation N-body
simulation of a star cluster as an astrophysics student writes it in CuPy: 131,072 bodies
(Plummer sphere, equal masses, G = 1), softened gravity (epsilon 0.01), kick-drift-kick
leapfrog with a fixed time step. The accelerations are one cupy.RawKernel (the tiled
all-pairs kernel of GPU Gems 3, chapter 31: each block stages 128 bodies in shared memory,
each thread sums their pull on its body with rsqrtf; float32 throughout), about 17 G
interactions (some 340 GFLOP of FP32 arithmetic on the CUDA cores, and one rsqrtf an
interaction) a step; the kicks and the drift are four small CuPy array expressions over
(131072, 3) arrays. Nothing is read back inside the loop except a diagnostic every 100
steps (kinetic energy and the centre-of-mass drift, one float() each). There is no GEMM:
the work has no tensor-core equivalent, and the GPU should be busy the whole step with one
long kernel.

--fix: nothing (control).

Written blind for the canyon batch.
"""
import math

import numpy as np

import cc

try:
    import cupy as cp
except ImportError:  # CPU smoke test: numpy stands in
    cp = None

TILE = 128
ACCEL_SRC = r"""
extern "C" __global__ void accel(const float4* __restrict__ pos, float* __restrict__ acc, const int n,
                                 const float eps2) {
    __shared__ float4 tile[%(tile)d];
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    const float4 me = i < n ? pos[i] : make_float4(0.f, 0.f, 0.f, 0.f);
    float ax = 0.f, ay = 0.f, az = 0.f;
    for (int base = 0; base < n; base += %(tile)d) {
        const int j = base + threadIdx.x;
        tile[threadIdx.x] = j < n ? pos[j] : make_float4(0.f, 0.f, 0.f, 0.f);  /* w = mass: 0 pads */
        __syncthreads();
#pragma unroll 16
        for (int k = 0; k < %(tile)d; ++k) {
            const float4 o = tile[k];
            const float dx = o.x - me.x, dy = o.y - me.y, dz = o.z - me.z;
            const float inv = rsqrtf(dx * dx + dy * dy + dz * dz + eps2);
            const float s = o.w * inv * inv * inv;
            ax += dx * s; ay += dy * s; az += dz * s;
        }
        __syncthreads();
    }
    if (i < n) { acc[3 * i] = ax; acc[3 * i + 1] = ay; acc[3 * i + 2] = az; }
}
""" % {"tile": TILE}


def plummer(n, rng):
    """Positions, velocities and masses of a Plummer sphere (Aarseth, Henon & Wielen 1974)."""
    m = np.full(n, 1.0 / n)
    r = 1.0 / np.sqrt(rng.uniform(1e-3, 1.0, n) ** (-2.0 / 3.0) - 1.0)
    def iso(radius):
        z = rng.uniform(-1, 1, len(radius))
        phi = rng.uniform(0, 2 * np.pi, len(radius))
        s = np.sqrt(1 - z * z)
        return np.stack([radius * s * np.cos(phi), radius * s * np.sin(phi), radius * z], 1)
    pos = iso(r)
    # velocity: rejection sampling of q = v / v_escape from g(q) = q^2 (1 - q^2)^3.5
    q = np.empty(n)
    todo = np.arange(n)
    while len(todo):
        x, y = rng.uniform(0, 1, len(todo)), rng.uniform(0, 0.1, len(todo))
        ok = y < x * x * (1 - x * x) ** 3.5
        q[todo[ok]] = x[ok]
        todo = todo[~ok]
    vel = iso(q * math.sqrt(2.0) * (1 + r * r) ** -0.25)
    return pos - pos.mean(0), vel - vel.mean(0), m


def main():
    args = cc.parser(__doc__).parse_args()
    gpu = args.device == "cuda"
    if gpu and cp is None:
        raise SystemExit("CuPy is not installed: run with --device cpu for a smoke test")
    xp = cp if gpu else np
    n = 512 if args.smoke else 131_072
    dt, eps2 = 1e-3, 1e-4
    pos0, vel0, m0 = plummer(n, np.random.default_rng(0))
    pos4 = np.concatenate([pos0, m0[:, None]], 1).astype(np.float32)  # x, y, z, mass
    pos = xp.asarray(pos4)  # (n, 4): the kernel reads float4
    vel = xp.asarray(vel0.astype(np.float32))
    mass = xp.asarray(m0.astype(np.float32))
    acc = xp.zeros((n, 3), xp.float32)
    if gpu:
        kernel = cp.RawKernel(ACCEL_SRC, "accel")
        blocks = (n + TILE - 1) // TILE

        def accel(out):
            kernel((blocks,), (TILE,), (pos, out, np.int32(n), np.float32(eps2)))
    else:
        def accel(out):
            d = pos[None, :, :3] - pos[:, None, :3]  # (n, n, 3): j's offset from i
            inv = 1.0 / np.sqrt((d * d).sum(-1) + eps2)
            out[...] = (d * (pos[None, :, 3] * inv ** 3)[..., None]).sum(1)

    accel(acc)
    diag = {"reads": 0, "kinetic": None, "com_drift": None}
    half = np.float32(0.5 * dt)

    def step(i):
        vel[...] += acc * half  # kick
        pos[:, :3] += vel * np.float32(dt)  # drift
        accel(acc)
        vel[...] += acc * half  # kick
        if i % 100 == 99:  # diagnostics, one read each
            diag["kinetic"] = float(0.5 * (mass[:, None] * vel * vel).sum())
            diag["com_drift"] = float(xp.abs((mass[:, None] * pos[:, :3]).sum(0)).max())
            diag["reads"] += 1

    cc.run("h_cupy_nbody_rawkernel", args, step, 1,
           extra=lambda: {"bodies": n, "interactions_per_step": n * n,
                          "gflop_per_step": round(20 * n * n / 1e9, 1), "diagnostic_reads": diag["reads"]})


if __name__ == "__main__":
    main()
