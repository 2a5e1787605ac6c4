"""C16 the training thread waits on a file lock held by another process: a decoder-only LM in
plain JAX + optax (jaxlm: 4 layers, d=1024, 16 heads, vocabulary 8192, bf16 compute,
float32 parameters; AdamW with warm-up/cosine and global-norm clipping in one jit with
params and state donated; batch 32 x 512 tokens made once on the device) that appends a
JSON line per step (step, loss, learning rate, tokens seen, wall time) to the run's
metrics file, as experiment scripts do when several runs share a results directory: each
append takes an exclusive fcntl.flock on the directory's lock file, so that no reader sees
half a line. A results syncer (another process, forked before JAX starts: the job that
mirrors the results directory to shared storage) sleeps 80 ms, then takes the same lock
and holds it for 80 ms while it copies the metrics file out (a local copy plus the network
file system's latency, simulated), and again: the lock is held half the time. The loss is read with float() for the line, so nothing is
queued on the GPU when the training thread then blocks in flock() for up to 80 ms.

--fix: gpuwhy's C16 advice (do not block the feeding thread on something else): the line
goes into a queue.Queue and a background writer thread takes the lock and appends it; the
training thread never waits on the lock. float(loss) every step stays; the syncer, its
lock and its timing are unchanged.

Written blind for the quarry batch.
"""
import fcntl
import json
import math
import multiprocessing as mp
import os
import queue
import shutil
import threading
import time

import cc

HOLD_S = 0.08
EVERY_S = 0.08


def results_syncer(lock_path, src, dst, hold_s, every_s):
    """Mirrors the metrics file every every_s seconds, holding the results lock for hold_s."""
    lock = open(lock_path, "a")
    while True:
        time.sleep(every_s)
        fcntl.flock(lock, fcntl.LOCK_EX)
        t0 = time.monotonic()
        if os.path.exists(src):
            shutil.copyfile(src, dst)
        left = hold_s - (time.monotonic() - t0)
        if left > 0:
            time.sleep(left)  # the shared file system's write latency
        fcntl.flock(lock, fcntl.LOCK_UN)


class MetricsFile:
    """Appends JSON lines under an exclusive flock on the results directory's lock file."""

    def __init__(self, path, lock_path):
        self.f = open(path, "a", buffering=1)
        self.lock = open(lock_path, "a")
        self.lines = 0

    def append(self, line):
        fcntl.flock(self.lock, fcntl.LOCK_EX)  # gpuwhy: plants C16 (waits while the syncer holds the lock)
        try:
            self.f.write(line + "\n")
            self.f.flush()
        finally:
            fcntl.flock(self.lock, fcntl.LOCK_UN)
        self.lines += 1


def main():
    args = cc.parser(__doc__).parse_args()
    runs = os.path.join(cc.CACHE, "c16_jax_flock_metrics")
    os.makedirs(runs, exist_ok=True)
    path = os.path.join(runs, f"metrics.{os.getpid()}.jsonl")
    lock_path = os.path.join(runs, ".results.lock")
    syncer = mp.get_context("fork").Process(  # forked before JAX starts
        target=results_syncer, args=(lock_path, path, os.path.join(runs, "mirror.jsonl"), HOLD_S, EVERY_S),
        daemon=True)
    syncer.start()

    import jax
    import jax.numpy as jnp
    import optax

    import jaxlm

    dev = jaxlm.device(args)
    vocab, d, layers, heads, seq, batch = (512, 64, 1, 4, 65, 4) if args.smoke else (8192, 1024, 4, 16, 513, 32)
    peak, warm, total, end = 3e-4, 200, 50_000, 3e-5
    sched = optax.warmup_cosine_decay_schedule(0.0, peak, warm, total, end_value=end)

    def lr_at(i):  # the schedule's value for the log line, on the host
        if i < warm:
            return peak * i / warm
        return end + (peak - end) * 0.5 * (1 + math.cos(math.pi * min(1.0, (i - warm) / (total - warm))))

    opt = optax.chain(optax.clip_by_global_norm(1.0), optax.adamw(sched, b1=0.9, b2=0.95, weight_decay=0.1))
    with jax.default_device(dev):
        params = jaxlm.init(jax.random.PRNGKey(0), vocab, d, layers, seq)
        state = opt.init(params)
        data = [jax.random.randint(jax.random.PRNGKey(k), (batch, seq), 0, vocab, jnp.int32) for k in range(4)]
    train_step = jax.jit(jaxlm.make_step(opt, heads, jnp.bfloat16), donate_argnums=(0, 1))
    metrics = MetricsFile(path, lock_path)
    lines = None
    if args.fix:
        lines = queue.Queue()

        def writer():
            while True:
                metrics.append(lines.get())

        threading.Thread(target=writer, name="metrics-writer", daemon=True).start()

    def step(i):
        nonlocal params, state
        params, state, loss = train_step(params, state, data[i % len(data)])
        rec = json.dumps({"step": i, "loss": round(float(loss), 5), "lr": lr_at(i),
                          "tokens": (i + 1) * batch * (seq - 1), "time": round(time.time(), 4)})
        if args.fix:
            lines.put(rec)
        else:
            metrics.append(rec)
        return loss

    cc.run("c16_jax_flock_metrics", args, step, batch,
           extra=lambda: {"lock_hold_ms": HOLD_S * 1e3, "lock_every_ms": EVERY_S * 1e3,
                          "lines_written": metrics.lines, "writer_thread": bool(args.fix)})
    syncer.terminate()
    syncer.join()
    try:
        os.remove(path)
    except OSError:
        pass


if __name__ == "__main__":
    main()
