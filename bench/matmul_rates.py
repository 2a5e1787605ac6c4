#!/usr/bin/env python3
"""How much faster matrix work runs in bf16 than in FP32 and TF32, on this GPU.

The precision finding (C8) replays a job's FP32 matrix kernels at the rate they would
run in bf16 under autocast, and its TF32 point at TF32's. This measures those rates
apart from any job: the same products (GEMMs of the sizes training jobs run, a batched
attention product, convolutions of a ResNet) timed in FP32 (TF32 off), in TF32 and in
bf16, each back to back 30 times between CUDA events after a warm-up, on one GPU.

Prints one JSON line per product ({"op", "shape", "fp32_us", "tf32_us", "bf16_us"}) and
then the ratios: fp32/bf16 and tf32/bf16 for each product, their median, the ratio of their
sums, by the FP32 product's duration (under 20 us, 20-200 us, over 200 us), and the median
of the GEMMs whose bf16 run takes 25 us or more (below that, the time does not grow with
the size: not the math's; the figure C8_SPEEDUP_TC takes). Run on the GPU machine:
python3 bench/matmul_rates.py; python3 bench/matmul_rates.py --summary FILE prints the same
summary from the JSON lines of an earlier run's output (bench/RESULTS.md, "Matrix rates by
precision")."""
import json
import statistics
import sys

try:  # not needed for --summary
    import torch
except ImportError:
    torch = None

REPS = 30
GPU_BOUND_US = 25.0  # a bf16 run this long is the GPU's, not the launches'


def timed(fn):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    best = None
    for _ in range(3):  # the least of three rounds: the card's clock ramps
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        for _ in range(REPS):
            fn()
        b.record()
        b.synchronize()
        us = a.elapsed_time(b) * 1e3 / REPS
        best = us if best is None else min(best, us)
    return best


def set_tf32(on):
    torch.backends.cuda.matmul.allow_tf32 = on
    torch.backends.cudnn.allow_tf32 = on


def gemm(m, n, k):
    def make(dtype):
        a = torch.randn(m, k, device="cuda", dtype=dtype)
        b = torch.randn(k, n, device="cuda", dtype=dtype)
        return lambda: torch.matmul(a, b)
    return make


def bmm(batch, m, n, k):
    def make(dtype):
        a = torch.randn(batch, m, k, device="cuda", dtype=dtype)
        b = torch.randn(batch, k, n, device="cuda", dtype=dtype)
        return lambda: torch.bmm(a, b)
    return make


def conv(n, c, hw, k, r, stride=1):
    def make(dtype):
        x = torch.randn(n, c, hw, hw, device="cuda", dtype=dtype)
        w = torch.randn(k, c, r, r, device="cuda", dtype=dtype)
        return lambda: torch.nn.functional.conv2d(x, w, stride=stride, padding=r // 2)
    return make


OPS = [
    ("gemm", (256, 256, 256), gemm(256, 256, 256)),
    ("gemm", (512, 512, 512), gemm(512, 512, 512)),
    ("gemm", (2048, 512, 512), gemm(2048, 512, 512)),
    ("gemm", (1024, 1024, 1024), gemm(1024, 1024, 1024)),
    ("gemm", (65536, 64, 64), gemm(65536, 64, 64)),
    ("gemm", (65536, 256, 64), gemm(65536, 256, 64)),
    ("gemm", (4096, 768, 768), gemm(4096, 768, 768)),
    ("gemm", (4096, 3072, 768), gemm(4096, 3072, 768)),
    ("gemm", (4096, 768, 3072), gemm(4096, 768, 3072)),
    ("gemm", (25216, 2304, 768), gemm(25216, 2304, 768)),
    ("gemm", (25216, 3072, 768), gemm(25216, 3072, 768)),
    ("gemm", (25216, 768, 3072), gemm(25216, 768, 3072)),
    ("gemm", (16384, 4096, 1024), gemm(16384, 4096, 1024)),
    ("gemm", (8192, 8192, 8192), gemm(8192, 8192, 8192)),
    ("gemm", (128, 32000, 4096), gemm(128, 32000, 4096)),
    ("bmm", (1536, 197, 197, 64), bmm(1536, 197, 197, 64)),
    ("bmm", (1536, 197, 64, 197), bmm(1536, 197, 64, 197)),
    ("bmm", (384, 512, 512, 64), bmm(384, 512, 512, 64)),
    ("conv", (64, 3, 224, 64, 7, 2), conv(64, 3, 224, 64, 7, 2)),
    ("conv", (64, 64, 56, 64, 3), conv(64, 64, 56, 64, 3)),
    ("conv", (64, 256, 56, 64, 1), conv(64, 256, 56, 64, 1)),
    ("conv", (64, 128, 28, 128, 3), conv(64, 128, 28, 128, 3)),
    ("conv", (64, 256, 14, 256, 3), conv(64, 256, 14, 256, 3)),
    ("conv", (64, 512, 7, 512, 3), conv(64, 512, 7, 512, 3)),
    ("conv", (16, 64, 128, 64, 3), conv(16, 64, 128, 64, 3)),
]


def measure():
    if torch is None or not torch.cuda.is_available():
        sys.exit("no CUDA device")
    torch.backends.cudnn.benchmark = True
    rows = []
    for op, shape, make in OPS:
        r = {"op": op, "shape": list(shape)}
        for name, dtype, tf32 in (("fp32", torch.float32, False), ("tf32", torch.float32, True),
                                  ("bf16", torch.bfloat16, False)):
            set_tf32(tf32)
            r[name + "_us"] = round(timed(make(dtype)), 2)
        torch.cuda.empty_cache()
        rows.append(r)
        print(json.dumps(r), flush=True)
    set_tf32(False)
    return rows, f"{torch.cuda.get_device_name()}, torch {torch.__version__}"


def summary(rows, title):
    print(f"# {title}")
    print("| product | shape | FP32 us | TF32 us | bf16 us | FP32/bf16 | TF32/bf16 |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['op']} | {'x'.join(map(str, r['shape']))} | {r['fp32_us']:.1f} | {r['tf32_us']:.1f} | "
              f"{r['bf16_us']:.1f} | {r['fp32_us'] / r['bf16_us']:.1f} | {r['tf32_us'] / r['bf16_us']:.2f} |")
    f32 = [r["fp32_us"] / r["bf16_us"] for r in rows]
    t32 = [r["tf32_us"] / r["bf16_us"] for r in rows]
    w = sum(r["fp32_us"] for r in rows)
    print(f"median FP32/bf16 {statistics.median(f32):.1f}, TF32/bf16 {statistics.median(t32):.2f}; "
          f"ratio of the sums: FP32/bf16 {w / sum(r['bf16_us'] for r in rows):.1f}, "
          f"TF32/bf16 {sum(r['tf32_us'] for r in rows) / sum(r['bf16_us'] for r in rows):.2f}")
    for lo, hi in ((0, 20), (20, 200), (200, 1e12)):
        sel = [r for r in rows if lo <= r["fp32_us"] < hi]
        if sel:
            print(f"FP32 kernels of {lo}-{hi if hi < 1e12 else 'inf'} us: {len(sel)}, FP32/bf16 median "
                  f"{statistics.median(r['fp32_us'] / r['bf16_us'] for r in sel):.1f}, TF32/bf16 median "
                  f"{statistics.median(r['tf32_us'] / r['bf16_us'] for r in sel):.2f}, shortest bf16 "
                  f"{min(r['bf16_us'] for r in sel):.1f} us")
    big = [r for r in rows if r["op"] == "gemm" and r["bf16_us"] >= GPU_BOUND_US]
    if big:
        f32 = [r["fp32_us"] / r["bf16_us"] for r in big]
        t32 = [r["tf32_us"] / r["bf16_us"] for r in big]
        f2t = [r["fp32_us"] / r["tf32_us"] for r in big]
        print(f"GEMMs whose bf16 run takes {GPU_BOUND_US:.0f} us or more: {len(big)}, FP32/bf16 median "
              f"{statistics.median(f32):.1f} ({min(f32):.1f}-{max(f32):.1f}), TF32/bf16 median "
              f"{statistics.median(t32):.2f} ({min(t32):.2f}-{max(t32):.2f}), FP32/TF32 median "
              f"{statistics.median(f2t):.1f}")


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--summary":
        rows = [json.loads(l) for l in open(sys.argv[2]) if l.startswith("{")]
        summary(rows, f"from {sys.argv[2]}")
        return
    rows, title = measure()
    summary(rows, title)


if __name__ == "__main__":
    main()
