"""C11 memory-bound elementwise chain (a NumPy Monte Carlo pricer ported to CuPy by swapping
the module): pricing a down-and-out arithmetic-average (Asian) call under the Heston
stochastic-volatility model by Monte Carlo, the way a quant desk's NumPy prototype writes it
(full-truncation Euler on the log price, correlated normals, a running sum for the average and
an alive flag for the barrier, both monitored at every date), run on the GPU with
`xp = cupy`. One iteration is one batch of 16,777,216 paths (2^24) through the option's 24
monitoring dates (one year, semi-monthly), float32: log price, variance, running sum (67 MB
each) and a bool alive flag. Each date draws two standard-normal arrays with
cupy.random.default_rng() and then updates the state with array expressions, each operator
its own CuPy kernel and temporary: about 24 elementwise kernels a date over the 16.8 M paths,
~56 path-sized float passes of DRAM traffic (~3.8 GB a date), for ~20 flops a path. The
discounted payoff's sum and sum of squares are added up on the device over the batches and
read every 50 batches (price and standard error).

--fix: gpuwhy's C11 advice (fuse the elementwise chain): the whole update of a monitoring date
(correlating the normals, the truncated variance, the log-price and variance steps, the
running sum and the barrier test) in one cupy.ElementwiseKernel, which reads the state and the
two normal arrays once and writes the state once (~10.5 passes with the draws); model
parameters, paths, dates, random draws, payoff and the reads unchanged.

Written blind for the tango batch.
"""
import math

import numpy as np

import cc

try:
    import cupy as cp
except ImportError:  # CPU smoke test: numpy stands in
    cp = None

# Heston parameters (a typical equity calibration) and the contract
S0, V0, KAPPA, THETA, XI, RHO, R = 100.0, 0.04, 1.5, 0.04, 0.5, -0.7, 0.03
STRIKE, BARRIER, MATURITY = 100.0, 80.0, 1.0

STEP_SRC = r"""
const float vp = fmaxf(v, 0.f);
const float sv = sqrtf(vp);
const float zs = rho * z1 + sq * z2;
log_s = log_s + (r - 0.5f * vp) * dt + sv * sqrt_dt * zs;
v = v + kappa * (theta - vp) * dt + xi * sv * sqrt_dt * z1;
const float s = expf(log_s);
acc += s;
alive = alive && (s > barrier);
"""


def main():
    args = cc.parser(__doc__).parse_args()
    gpu = args.device == "cuda"
    if gpu and cp is None:
        raise SystemExit("CuPy is not installed: run with --device cpu for a smoke test")
    xp = cp if gpu else np
    n_paths = 4096 if args.smoke else 1 << 24
    n_dates = 24
    dt = MATURITY / n_dates
    sqrt_dt = math.sqrt(dt)
    sq = math.sqrt(1.0 - RHO * RHO)
    disc = math.exp(-R * MATURITY)
    rng = xp.random.default_rng(1234)

    if args.fix and gpu:
        f32 = np.float32
        step_k = cp.ElementwiseKernel(
            "float32 z1, float32 z2, float32 rho, float32 sq, float32 r, float32 dt, float32 sqrt_dt, "
            "float32 kappa, float32 theta, float32 xi, float32 barrier",
            "float32 log_s, float32 v, float32 acc, bool alive", STEP_SRC, "heston_barrier_asian_step")

        def advance(log_s, v, acc, alive, z1, z2):
            step_k(z1, z2, f32(RHO), f32(sq), f32(R), f32(dt), f32(sqrt_dt), f32(KAPPA), f32(THETA), f32(XI),
                   f32(BARRIER), log_s, v, acc, alive)
            return log_s, v
    elif args.fix:  # CPU smoke test: the kernel's arithmetic, line by line, in numpy
        def advance(log_s, v, acc, alive, z1, z2):
            vp = np.maximum(v, np.float32(0))
            sv = np.sqrt(vp)
            zs = np.float32(RHO) * z1 + np.float32(sq) * z2
            log_s += (np.float32(R) - np.float32(0.5) * vp) * np.float32(dt) + sv * np.float32(sqrt_dt) * zs
            v += np.float32(KAPPA) * (np.float32(THETA) - vp) * np.float32(dt) + np.float32(XI) * sv * np.float32(sqrt_dt) * z1
            s = np.exp(log_s)
            acc += s
            alive &= s > np.float32(BARRIER)
            return log_s, v
    else:
        def advance(log_s, v, acc, alive, z1, z2):
            zv = z1
            zs = RHO * z1 + sq * z2  # gpuwhy: plants C11
            v_pos = xp.maximum(v, 0.0)                     # full truncation
            sqrt_v = xp.sqrt(v_pos)
            log_s = log_s + (R - 0.5 * v_pos) * dt + sqrt_v * sqrt_dt * zs
            v = v + KAPPA * (THETA - v_pos) * dt + XI * sqrt_v * sqrt_dt * zv
            s = xp.exp(log_s)
            acc += s                                       # arithmetic average, monitored at each date
            alive &= s > BARRIER                           # down-and-out, monitored at each date
            return log_s, v

    st = {"sum": xp.zeros((), xp.float64), "sq": xp.zeros((), xp.float64), "n": 0,
          "price": None, "stderr": None, "reads": 0}

    def step(i):
        log_s = xp.full(n_paths, math.log(S0), xp.float32)
        v = xp.full(n_paths, V0, xp.float32)
        acc = xp.zeros(n_paths, xp.float32)
        alive = xp.ones(n_paths, bool)
        for _ in range(n_dates):
            z1 = rng.standard_normal(n_paths, dtype=xp.float32)
            z2 = rng.standard_normal(n_paths, dtype=xp.float32)
            log_s, v = advance(log_s, v, acc, alive, z1, z2)
        payoff = xp.maximum(acc / n_dates - STRIKE, 0.0) * alive
        st["sum"] += disc * payoff.sum(dtype=xp.float64)
        st["sq"] += disc * disc * (payoff * payoff).sum(dtype=xp.float64)
        st["n"] += n_paths
        if i % 50 == 49:
            mean = float(st["sum"]) / st["n"]
            st["price"] = round(mean, 4)
            st["stderr"] = round(math.sqrt(max(float(st["sq"]) / st["n"] - mean * mean, 0.0) / st["n"]), 6)
            st["reads"] += 1

    cc.run("c11_cupy_heston_barrier_asian_mc", args, step, n_paths,
           extra=lambda: {"paths_per_step": n_paths, "dates": n_dates, "state_mb": round(13 * n_paths / 2 ** 20, 1),
                          "price": st["price"], "stderr": st["stderr"], "price_reads": st["reads"],
                          "update": "ElementwiseKernel" if args.fix else "array expressions"})


if __name__ == "__main__":
    main()
