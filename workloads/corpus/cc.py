"""Shared harness for the corpus scenarios (workloads/corpus/*.py).

Same last JSON line as workloads/common.py, plus the iteration counts gpuwhy's
step count is checked against:
  steps = iterations_total = warm-up + steady iterations (what the program ran),
  steady_steps, warmup_steps; step_ms and samples_per_s are over the steady part.
An iteration is one optimizer step (one forward+backward+update; with gradient
accumulation the micro-batches are reported apart), or one inference batch.

Also: data that real jobs read from disk (JPEG files, text lines), made once
into a cache directory outside the timed part, and a Lightning callback that
times a Trainer's own loop.
"""
import argparse
import json
import os
import sys
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# JAX would take 75% of the GPU at start; the jobs here need a few GB
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
# JAX compiles each scenario's step again in each of its three runs: cache the programs
os.environ.setdefault("JAX_COMPILATION_CACHE_DIR", os.path.join(os.environ.get("GW_CORPUS_CACHE", "/tmp/gw_corpus"), "jax_cache"))
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0.5")

CACHE = os.environ.get("GW_CORPUS_CACHE", os.path.join("/tmp", "gw_corpus"))


class _Given(argparse.Action):
    """Stores the value and notes that the option was given (args.NAME_given), so that
    --alt can raise a default the user did not choose."""

    def __call__(self, parser, namespace, values, option_string=None):
        setattr(namespace, self.dest, values)
        setattr(namespace, self.dest + "_given", True)


def parser(doc, warmup=3):
    p = argparse.ArgumentParser(description=doc.strip().splitlines()[0])
    p.add_argument("--fix", action="store_true", help="remove the planted cause(s)")
    p.add_argument("--alt", action="store_true",
                   help="apply the fix for the cause gpuwhy ranks first when it is not the "
                        "planted one; see manifest.tsv column notes")
    p.add_argument("--seconds", type=float, default=float(os.environ.get("GW_SECONDS", 2)),
                   help="steady-state seconds to run (default 2)")
    p.add_argument("--warmup", type=int, default=warmup, action=_Given,
                   help="warm-up iterations, not timed")
    p.add_argument("--device", default="cuda", help="cuda (default) or cpu for a smoke test")
    p.add_argument("--smoke", action="store_true", help="tiny sizes, for a CPU smoke test")
    return p


def alt_setup(args, mode, warmup):
    """For --alt: the torch.compile mode to use (GW_ALT_MODE overrides it, e.g. 'default'
    when CUDA graphs fail), and at least `warmup` warm-up iterations unless --warmup was
    given, so that compilation (and CUDA graph recording) stays out of the timed part."""
    args.alt_mode = os.environ.get("GW_ALT_MODE") or mode
    if not getattr(args, "warmup_given", False):
        args.warmup = max(args.warmup, warmup)
    return args.alt_mode


def fix_workers():
    """The loader workers a C1 --fix uses: the cores the job may use beside the training
    thread, as gpuwhy's C1 advice says (num_workers=N with N up to the free cores), or
    GW_FIX_WORKERS (a count) to time another number."""
    v = os.environ.get("GW_FIX_WORKERS")
    if v and v != "free":
        return int(v)
    return max(1, len(os.sched_getaffinity(0)) - 1)


def fix_batch(default):
    """The batch a C3 --fix uses: the scenario's default, or GW_FIX_BATCH (a count) to time
    another factor of gpuwhy's per-sample curve."""
    v = os.environ.get("GW_FIX_BATCH")
    return int(v) if v else default


def sync(out=None):
    """Waits for the GPU: JAX through the step's outputs, else the framework imported."""
    if out is not None and "jax" in sys.modules:
        sys.modules["jax"].block_until_ready(out)
    if "torch" in sys.modules:
        torch = sys.modules["torch"]
        if torch.cuda.is_available() and torch.cuda.is_initialized():
            torch.cuda.synchronize()
    if "cupy" in sys.modules:
        try:
            sys.modules["cupy"].cuda.runtime.deviceSynchronize()
        except Exception:  # no GPU: CPU smoke test through the numpy fallback
            pass


def report(name, args, n, warmup, dt, samples_per_step, extra=None):
    res = {"scenario": name, "fix": bool(args.fix), "steps": warmup + n,
           "iterations_total": warmup + n, "steady_steps": n, "warmup_steps": warmup,
           "seconds": round(dt, 4), "step_ms": round(dt / max(n, 1) * 1e3, 4),
           "samples_per_s": round(n * samples_per_step / dt, 2) if dt > 0 else 0.0}
    if getattr(args, "alt", False):  # only with --alt: plain and --fix lines stay as they were
        res["alt"] = True
        res["alt_mode"] = getattr(args, "alt_mode", None)
    if callable(extra):
        extra = extra()
    if extra:
        res.update(extra)
    sys.stdout.flush()
    print(json.dumps(res), flush=True)
    return res


def run(name, args, step, samples_per_step, extra=None):
    """Runs step(i) for the warm-up, then for args.seconds; prints one JSON line.
    step may return arrays to wait on (JAX dispatches asynchronously)."""
    out = None
    for i in range(args.warmup):
        out = step(i)
    sync(out)
    t0 = time.perf_counter()
    n = 0
    while time.perf_counter() - t0 < args.seconds:
        out = step(args.warmup + n)
        n += 1
    sync(out)
    dt = time.perf_counter() - t0
    return report(name, args, n, args.warmup, dt, samples_per_step, extra)


def torch_device(args):
    import torch
    if args.device == "cuda" and not torch.cuda.is_available():
        sys.exit("no CUDA device: run with --device cpu for a smoke test")
    return torch.device(args.device)


# ---- data on disk, made once ------------------------------------------------

def jpeg_dir(n=512, size=256, quality=90, tag="jpeg"):
    """n random RGB JPEG files of size x size, written once (outside the timed part).
    Smooth noise, so files and decode cost are those of photos, not of pure noise."""
    import numpy as np
    from PIL import Image
    d = os.path.join(CACHE, f"{tag}_{n}_{size}")
    done = os.path.join(d, ".done")
    if os.path.exists(done):
        return d, sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith(".jpg"))
    os.makedirs(d, exist_ok=True)
    rng = np.random.default_rng(0)
    for i in range(n):
        small = rng.integers(0, 256, (size // 8, size // 8, 3), dtype=np.uint8)
        img = Image.fromarray(small).resize((size, size), Image.BILINEAR)
        noise = rng.integers(0, 24, (size, size, 3), dtype=np.uint8)
        img = Image.fromarray(np.asarray(img) // 2 + noise * 4 % 128)
        img.save(os.path.join(d, f"img{i:05d}.jpg"), quality=quality)
    open(done, "w").close()
    return d, sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith(".jpg"))


WORDS = ("the a of to and in is for on with model data train loss gradient batch layer token "
         "sequence vector matrix kernel memory device host stream copy launch sync step epoch "
         "learning rate optimizer weight bias attention head norm residual dropout embedding "
         "position encoder decoder logits softmax label sample shuffle worker cache disk "
         "network image pixel channel width height crop flip scale mean variance").split()


def text_lines(n, seed=0, min_words=8, max_words=120):
    """n sentences of varying length (the variable sequence lengths of real text)."""
    import random
    r = random.Random(seed)
    return [" ".join(r.choice(WORDS) + ("s" if r.random() < 0.2 else "") for _ in range(r.randint(min_words, max_words)))
            for _ in range(n)]


def drop_caches(who):
    """Drops the page cache (root on the GPU machine), so that reads go to the disk."""
    try:
        os.sync()
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("1\n")
        return True
    except OSError as e:
        print(f"{who}: cannot drop the page cache ({e}); storage will look fast", file=sys.stderr, flush=True)
        return False


def prefetch(pool, fn, items, depth):
    """fn over items on a multiprocessing pool, in order, with at most `depth` tasks in
    flight (a loader's prefetch: nothing piles up while the job starts)."""
    import collections
    items = iter(items)
    q = collections.deque(pool.apply_async(fn, (next(items),)) for _ in range(depth))
    while True:
        r = q.popleft().get()
        q.append(pool.apply_async(fn, (next(items),)))
        yield r


# ---- Lightning ---------------------------------------------------------------

def lightning_timer(name, args, samples_per_step, extra=None):
    """A Callback that times the Trainer's own loop: warm-up batches, then
    args.seconds of batches, then asks the Trainer to stop; prints the JSON line
    when training ends."""
    import lightning as L

    class Timer(L.Callback):
        def __init__(self):
            self.n = 0
            self.t0 = None
            self.dt = 0.0
            self.res = None

        def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx):
            self.n += 1
            if self.n == args.warmup:
                sync()
                self.t0 = time.perf_counter()
            elif self.t0 is not None and time.perf_counter() - self.t0 >= args.seconds:
                trainer.should_stop = True

        def on_train_end(self, trainer, module):
            sync()
            if self.t0 is None:  # ended inside the warm-up
                self.t0 = time.perf_counter()
            self.dt = time.perf_counter() - self.t0
            self.res = report(name, args, self.n - args.warmup, args.warmup, self.dt, samples_per_step, extra)

    return Timer()


def lightning_trainer(args, callbacks, **kw):
    """A Trainer as the corpus uses it: max_steps bounded by the timer, no logger,
    no checkpointing unless a scenario plants it, no progress bar."""
    import lightning as L
    opts = dict(max_steps=10_000_000, max_epochs=-1, logger=False, enable_checkpointing=False,
                enable_progress_bar=False, enable_model_summary=False, num_sanity_val_steps=0,
                accelerator="gpu" if args.device == "cuda" else "cpu", devices=1)
    opts.update(kw)
    return L.Trainer(callbacks=callbacks, **opts)
