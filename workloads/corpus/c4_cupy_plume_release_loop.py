"""C4 a Python loop over particle groups, ~100 small CuPy kernels each: a Lagrangian particle
dispersion model (a FLEXPART/HYSPLIT-style plume model for an emergency-response exercise)
ported from NumPy to CuPy by swapping the module. 64 stack sources over a 200 x 200 km domain,
each a `Release` object holding its own 65,536 particles (x, y, z, mass, age; float32); every
60 s model step each release is advanced by the same function: bilinear interpolation of the
wind (two hourly 512 x 512 analyses blended in time, held on the GPU), a random-walk
turbulence term (horizontal and vertical), reflection at the ground and at the mixing height,
dry deposition below 50 m, particles that leave the domain or get too old re-emitted at their
stack, and the ground-level concentration grid (particles below 100 m) accumulated with
cupyx.scatter_add; the grid's total and peak are read every 50 steps.

The NumPy original looped over its releases because each one was added to the scene as an
object; on the GPU each of a release's ~100 operations (gathers, elementwise updates, masks, the
scatter) is a kernel over 65,536 elements: a few microseconds of GPU work behind each launch's
host cost, ~6,400 launches a step.

--fix: gpuwhy's C4 advice (fewer, larger launches: batch the small operations): all releases'
particles in one set of arrays (4.2 M particles) with their stack coordinates as per-particle
arrays, advanced by the same function in one call a step; wind, turbulence, deposition,
re-emission and the concentration grid unchanged (both variants checked equal at start over
3 steps without turbulence; with turbulence both draw the same number of normal variates from
the same generator, in another order).

Written blind for the november batch.
"""
import numpy as np

import cc

try:
    import cupy as cp
    import cupyx
except ImportError:  # CPU smoke test: numpy stands in
    cp = cupyx = None


def main():
    args = cc.parser(__doc__, warmup=3).parse_args()
    gpu = args.device == "cuda"
    if gpu and cp is None:
        raise SystemExit("CuPy is not installed: run with --device cpu for a smoke test")
    xp = cp if gpu else np
    if args.smoke:
        R, N, G = 8, 512, 64
    else:
        R, N, G = 64, 65_536, 512
    L = 200_000.0                       # domain side, m
    dx = L / G
    dt = np.float32(60.0)
    zi = np.float32(1000.0)             # mixing height, m
    sig_h, sig_w = np.float32(0.6), np.float32(0.4)
    dep = np.float32(np.exp(-0.01 * 60.0 / 50.0))   # dry deposition over a step below 50 m
    max_age = np.float32(6 * 3600.0)

    scatter_add = cupyx.scatter_add if gpu else np.add.at

    # two hourly wind analyses on the grid (a rotating large-scale flow plus eddies), m/s
    rs = xp.random.RandomState(0)
    gy, gx = xp.meshgrid(xp.arange(G, dtype=xp.float32), xp.arange(G, dtype=xp.float32), indexing="ij")

    def analysis(phase):
        u = 6.0 + 3.0 * xp.sin(gy * (2 * np.pi / G) + phase) + 0.8 * rs.standard_normal((G, G)).astype(xp.float32)
        v = 2.0 + 3.0 * xp.cos(gx * (2 * np.pi / G) - phase) + 0.8 * rs.standard_normal((G, G)).astype(xp.float32)
        return u.astype(xp.float32).ravel(), v.astype(xp.float32).ravel()

    u0, v0 = analysis(0.0)
    u1, v1 = analysis(0.7)

    # the stacks: positions in the western half (the flow carries the plumes east), heights 30-250 m
    srng = np.random.default_rng(1)
    stacks = np.stack([srng.uniform(0.05 * L, 0.5 * L, R), srng.uniform(0.1 * L, 0.9 * L, R),
                       srng.uniform(30.0, 250.0, R), srng.uniform(0.5, 2.0, R)], 1).astype(np.float32)

    class Release:
        """One stack's particles (the NumPy original's object, arrays moved to CuPy)."""

        def __init__(self, k, n):
            sx, sy, sz, q = (np.float32(v) for v in stacks[k])
            self.src = (sx, sy, sz, q / n)
            r = xp.random.RandomState(100 + k)
            self.x = (sx + r.uniform(0, 20_000.0, n)).astype(xp.float32)
            self.y = (sy + r.uniform(-2_000.0, 2_000.0, n)).astype(xp.float32)
            self.z = (sz + r.uniform(0, 300.0, n)).astype(xp.float32)
            self.m = xp.full(n, q / n, xp.float32)
            self.age = r.uniform(0, float(max_age), n).astype(xp.float32)

    class Merged:
        """All releases' particles in one set of arrays, the stack values per particle (--fix)."""

        def __init__(self, rels):
            self.x = xp.concatenate([r.x for r in rels])
            self.y = xp.concatenate([r.y for r in rels])
            self.z = xp.concatenate([r.z for r in rels])
            self.m = xp.concatenate([r.m for r in rels])
            self.age = xp.concatenate([r.age for r in rels])
            n = rels[0].x.shape[0]
            self.src = tuple(xp.repeat(xp.asarray(np.array([r.src[j] for r in rels], np.float32)), n)
                             for j in range(4))

    def advance(p, u, v, rng, conc, sig_h, sig_w):
        """One model step for a set of particles p (a release, or all of them)."""
        sx, sy, sz, m0 = p.src
        n = p.x.shape[0]
        fx = p.x / np.float32(dx) - np.float32(0.5)
        fy = p.y / np.float32(dx) - np.float32(0.5)
        fx0 = xp.clip(xp.floor(fx), 0, G - 2)
        fy0 = xp.clip(xp.floor(fy), 0, G - 2)
        ax = xp.clip(fx - fx0, 0, 1)
        ay = xp.clip(fy - fy0, 0, 1)
        k = fy0.astype(xp.int32) * G + fx0.astype(xp.int32)
        w00, w01 = (1 - ay) * (1 - ax), (1 - ay) * ax
        w10, w11 = ay * (1 - ax), ay * ax
        uu = w00 * u[k] + w01 * u[k + 1] + w10 * u[k + G] + w11 * u[k + G + 1]
        vv = w00 * v[k] + w01 * v[k + 1] + w10 * v[k + G] + w11 * v[k + G + 1]
        e = rng.standard_normal((3, n), dtype=xp.float32)
        p.x += (uu + sig_h * e[0]) * dt
        p.y += (vv + sig_h * e[1]) * dt
        p.z += sig_w * e[2] * dt
        p.z = xp.abs(p.z)                                          # reflection at the ground
        p.z = xp.where(p.z > zi, 2 * zi - p.z, p.z)                # and at the mixing height
        p.m *= xp.where(p.z < 50.0, dep, np.float32(1.0))
        p.age += dt
        out = (p.x < 0) | (p.x >= L) | (p.y < 0) | (p.y >= L) | (p.age > max_age)
        p.x = xp.where(out, sx, p.x)
        p.y = xp.where(out, sy, p.y)
        p.z = xp.where(out, sz, p.z)
        p.m = xp.where(out, m0, p.m)
        p.age = xp.where(out, np.float32(0.0), p.age)
        cx = xp.clip((p.x / np.float32(dx)).astype(xp.int32), 0, G - 1)
        cy = xp.clip((p.y / np.float32(dx)).astype(xp.int32), 0, G - 1)
        scatter_add(conc, cy * G + cx, xp.where(p.z < 100.0, p.m, np.float32(0.0)))

    def wind(i):
        w = np.float32((i % 60) / 60.0)                            # the hour's blend of the analyses
        return u0 + w * (u1 - u0), v0 + w * (v1 - v0)

    def model_step(parts, i, rng, conc, sh, sw):
        u, v = wind(i)
        for p in parts:  # gpuwhy: plants C4 (a Python loop over 64 releases: ~100 small kernels each, ~6,400 launches a step)
            advance(p, u, v, rng, conc, sh, sw)

    # equivalence at start: the loop over releases and the merged arrays agree (no turbulence)
    rels = [Release(k, N) for k in range(R)]
    merged = Merged(rels)
    ca, cb = xp.zeros(G * G, xp.float32), xp.zeros(G * G, xp.float32)
    for i in range(3):
        model_step(rels, i, xp.random.default_rng(7), ca, np.float32(0), np.float32(0))
        model_step([merged], i, xp.random.default_rng(7), cb, np.float32(0), np.float32(0))
    for a, b in (("x", L), ("y", L), ("z", 1000.0), ("m", 1.0)):
        va = xp.concatenate([getattr(r, a) for r in rels])
        diff = float(xp.abs(va - getattr(merged, a)).max())
        if diff > 1e-5 * b:
            raise SystemExit(f"merged particles disagree with the loop over releases: {a} {diff}")
    if not bool(xp.allclose(ca, cb, rtol=1e-4, atol=1e-6 * float(xp.abs(ca).max()))):
        raise SystemExit("merged concentration grid disagrees with the loop over releases")

    rels = [Release(k, N) for k in range(R)]
    parts = [Merged(rels)] if args.fix else rels
    del merged, ca, cb
    rng = xp.random.default_rng(11)
    conc = xp.zeros(G * G, xp.float32)
    st = {"reads": 0, "total": None, "peak": None}

    def step(i):
        model_step(parts, i, rng, conc, sig_h, sig_w)
        if i % 50 == 49:
            st["total"] = float(conc.sum())
            st["peak"] = float(conc.max())
            st["reads"] += 1

    cc.run("c4_cupy_plume_release_loop", args, step, R * N,
           extra=lambda: {"releases": R, "particles": R * N, "unit": "particle steps",
                          "groups_per_step": len(parts), "grid": G, "conc_reads": st["reads"],
                          "conc_total": st["total"], "conc_peak": st["peak"]})


if __name__ == "__main__":
    main()
