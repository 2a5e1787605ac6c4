"""C4 launch-bound (CuPy): an N-body-style particle update on 4096 particles written as
array expressions: about 40 small elementwise kernels per step, each finishing in a few
microseconds while CuPy needs longer than that to launch the next one.

--fix: the update written once as a cupy.fuse function (a few kernels per step).
"""
import numpy as np

import cc

try:
    import cupy as cp
except ImportError:  # CPU smoke test: numpy stands in
    cp = None


# abs() of an array is not traced by cupy.fuse; the ufunc is (one kernel either way)
_abs = cp.absolute if cp is not None else np.absolute


def update(x, y, vx, vy, cx, cy, dt):
    dx, dy = cx - x, cy - y
    r2 = dx * dx + dy * dy + 0.01
    inv = 1.0 / (r2 * (r2 ** 0.5))
    ax, ay = dx * inv - 0.01 * vx, dy * inv - 0.01 * vy
    vx = (vx + dt * ax) * 0.999
    vy = (vy + dt * ay) * 0.999
    speed = (vx * vx + vy * vy) ** 0.5
    scale = 1.0 / (1.0 + 0.1 * speed)
    vx, vy = vx * scale, vy * scale
    x, y = x + dt * vx, y + dt * vy
    # reflect at the walls of the unit box
    vx = vx * (1.0 - 2.0 * ((x < -1.0) | (x > 1.0)))
    vy = vy * (1.0 - 2.0 * ((y < -1.0) | (y > 1.0)))
    x = x * (_abs(x) <= 1.0) + (x > 1.0) - (x < -1.0)
    y = y * (_abs(y) <= 1.0) + (y > 1.0) - (y < -1.0)
    return x, y, vx, vy


def main():
    args = cc.parser(__doc__).parse_args()
    gpu = args.device == "cuda"
    if gpu and cp is None:
        raise SystemExit("CuPy is not installed: run with --device cpu for a smoke test")
    xp = cp if gpu else np
    n = 4096
    rng = np.random.default_rng(0)
    x, y, vx, vy = (xp.asarray(rng.uniform(-1, 1, n).astype(np.float32)) for _ in range(4))
    # gpuwhy: plants C4 (about 40 tiny kernels per step, one per operator)
    f = cp.fuse(kernel_name="particles")(update) if gpu and args.fix else update
    centers = [(np.float32(np.cos(k)), np.float32(np.sin(k))) for k in range(64)]

    def step(i):
        nonlocal x, y, vx, vy
        cx, cy = centers[i % 64]
        for _ in range(4):  # substeps
            x, y, vx, vy = f(x, y, vx, vy, cx, cy, np.float32(1e-3))
        return x

    cc.run("c4_cupy_small_chain", args, step, n)


if __name__ == "__main__":
    main()
