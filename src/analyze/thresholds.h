/* The thresholds the analysis judges by, each named once here and stated
 * with its reason in docs/RULES.md ("Thresholds": a table of these names
 * and values that tests/cli/test_thresholds.sh holds to this file). Text
 * that quotes one (a finding's evidence) formats it from its name. */
#ifndef GPUWHY_ANALYZE_THRESHOLDS_H
#define GPUWHY_ANALYZE_THRESHOLDS_H

/* Idle attribution (docs/RULES.md section 3) and the figures that quote it. */
#define SHORT_GAP_NS 30000ull        /* HTA's "kernel wait": launch overhead */
/* a sync gap this long whose samples show framework ops launched nothing:
 * they ran on the CPU (two samples of the 100 Hz sampler at least) */
#define CPU_OPS_GAP_NS 20000000ull
/* What tracing adds on the host to each kernel launch: 1.4-6.7 us, median
 * about 3 us, recorded against uninstrumented runs on the H200 machine
 * (bench/RESULTS.md, "tracing cost per kernel"). Where the GPU waited on
 * launches, that much of each gap is gpuwhy's own doing. */
#define TRACE_COST_PER_LAUNCH_NS 3000ull
/* ... and what it added where it cost most: 5.2-9.6 us per GPU operation on
 * seven host-bound eager PyTorch and CuPy jobs, their median 6.7 us
 * (bench/RESULTS.md, "The untraced step against uninstrumented runs"). A
 * gain's range reaches down to its replay with this much taken out of each
 * launch gap, so that a fix whose gain may be gpuwhy's own cost is no
 * warning (their most, 9.6 us, took the warning from launch gains that
 * fixes measured: bench/RESULTS.md). */
#define TRACE_COST_HIGH_NS 6700ull
/* With `--launches` each launch also runs a callback pair: 0.9 us more on
 * the H200 machine, on the wall clock and in the main thread's CPU time alike
 * (bench/RESULTS.md, "Launch callbacks"). */
#define LAUNCH_CALLBACK_COST_NS 900ull
/* A CUDA graph's launch untraced: the host's cost per operation of the
 * graph, one call for all of them (C4's replay of a step in a graph) */
#define GRAPH_PACE_NS 200.0
/* nsys: copies this small are sync points (a scalar read), not transfers;
 * C9 counts the device-to-host ones */
#define SMALL_COPY_BYTES (64u << 10)
/* A copy this small carries a scalar (a Python number a jitted JAX call
 * sends before its kernels, a step count), not an input, a row or a result */
#define SCALAR_BYTES 16u
#define SHORT_KERNEL_NS 10000ull     /* C4's evidence: kernels shorter than this */
/* Reads this large in a gap's window are storage reads, state D or not
 * (attribute.c); and what a file loaded on the training thread read from
 * storage, not from the page cache (sites.c). */
#define READ_BYTES (1u << 20)
/* A line of the training thread's input code where it waited on storage
 * (state D) for this share of its sampled time or more, and for this long
 * at least (a few of the 100 Hz sampler's samples), while its process read
 * from storage: the line reads from storage, and its time on a CPU there is
 * the same reading (the kernel's read path, its copies of the pages), which
 * reading ahead or from RAM takes away with the waits (sites.c). */
#define SITE_DISK_SHARE 0.15
#define SITE_DISK_MIN_NS 30000000ull

/* Severity from the share of the run a fix saves at least, the low end of
 * its range (gain.c; TensorFlow's input-pipeline analyzer: 5% "moderately",
 * 20% "highly" bound). */
#define SEV_WARN_SHARE 0.05
#define SEV_HIGH_SHARE 0.20
#define CAP_SHARE 0.95 /* no fix takes a run to zero time: S <= 95% of T */

/* The start-up finding (section 2): the start-up is this share of the job or
 * more, and a warm compilation cache saves this share of it or more. What a
 * warm start saves, as a multiple of the time the training thread spent in a
 * cached compiler (XLA's, CuPy's), and its range: 0.99-1.10 measured on three
 * jobs by tests/gpu/startup_cache.sh (tests/gpu/RESULTS.md, "Start-up"), the
 * low end a margin below that. */
#define STARTUP_JOB_SHARE 0.50
#define STARTUP_SAVED_SHARE 0.20
#define STARTUP_CACHE_KEPT 1.00
#define STARTUP_CACHE_KEPT_LO 0.90
#define STARTUP_CACHE_KEPT_HI 1.10

/* The host blocked on a full GPU queue this share of the steady window
 * (percent) or more: the GPU set the pace (section 1). */
#define GPU_PACED_PCT 1

/* When a rule fires: its idle (or saving) as a share of the run, percent
 * (section 4's table). */
#define FINDING_MIN_PCT 5.0 /* C1, C2, C4, C7, C11, C15, C16 */
#define C3_MIN_PCT 1.0      /* matrix kernels' share of the run */
#define C6_MIN_PCT 2.0      /* the saving */
#define C6_PINNED_RATIO 2.0 /* pinned over pageable copy speed, with nothing measured */
/* C6's sites from the training thread's samples inside its pageable copies
 * from this much sampled time on (three samples at the default 100 Hz) */
#define C6_SITES_SAMPLED_NS 30000000ull
#define C8_FP32_SHARE 0.10  /* matrix time on FP32 data (FP32 or TF32 kernels), of busy */
/* a float64 model under bf16 autocast: its elementwise kernels move a quarter
 * of the bytes (bf16), the others (norms, softmax, reductions: float32 under
 * autocast) half */
#define C8_F64_ELEMENTWISE_SCALE 0.25
#define C8_F64_OTHER_SCALE 0.5
#define C8_F32_ELEMENTWISE_SCALE 0.5
/* ... applied to kernels whose names say no type where 16-bit tensor-core
 * kernels are under this share of the matrix time: the job is FP32 */
#define C8_TC16_FEW 0.10
/* A kernel of no known family launched as tiled matrix kernels are: its
 * accumulators in registers, its operand tiles in shared memory (a 128 x 128
 * tile over 256 threads holds 64 FP32 accumulators a thread; elementwise and
 * reduction kernels use 16-64 registers) (load.c) */
#define TILE_REGS 96
#define TILE_SHMEM 16384
/* ... read as FP32 matrix work by GPM's counters (counters.c) over the GPM
 * intervals where such kernels held COUNTED_HELD of the kernel time and the
 * GPU was busy COUNTED_BUSY of it: FP32 pipes at least COUNTED_FP32_PCT,
 * tensor cores under COUNTED_TENSOR_PCT; in intervals holding COUNTED_SEEN of
 * their time at least, and in others holding at most COUNTED_AGAINST of that */
#define COUNTED_HELD 0.8
#define COUNTED_BUSY 0.5
#define COUNTED_FP32_PCT 30.0
#define COUNTED_TENSOR_PCT 5.0
#define COUNTED_SEEN 0.5
#define COUNTED_AGAINST 0.25
/* ... and kernels of no known family not launched as tiled ones are
 * memory-bound where, in such intervals, DRAM is busy this much with the
 * tensor cores and FP32 pipes under the shares above (a stencil or an
 * elementwise update written as a Triton or CUDA C kernel) */
#define COUNTED_DRAM_PCT 60.0
/* FP32 matrix kernels whose GPM intervals (C8_FP32_PIPE_INTERVALS of them at
 * least) show the FP32 pipes active under C8_FP32_PIPE_MIN of their time are
 * not limited by their math: tensor cores would not run them faster */
#define C8_FP32_PIPE_MIN 0.30
#define C8_FP32_PIPE_INTERVALS 3
/* C8: a bf16 tensor-core GEMM against an FP32 SIMT one, from compute
 * capability C8_TC_CC (Ampere) on, and before (dense peaks are 15-16x and
 * 8x). From Ampere on, the median of the GEMMs bench/matmul_rates.py timed
 * whose bf16 run the GPU bounds (13.4x on an H100: bench/RESULTS.md,
 * "Matrix rates by precision"); batched products over 64-wide heads and
 * FP32 convolutions gain less (1.1-9x there). Before Ampere, half the
 * 8x peak ratio (not measured: no such GPU here) */
#define C8_TC_CC 8
#define C8_SPEEDUP_TC 13.0
#define C8_SPEEDUP_OLD 4.0
/* C8: TF32 matrix time's (FP32 data on tensor cores) speed-up in bf16: 2x,
 * the dense peaks' ratio from Ampere on, and what the same GEMMs measured
 * (median 2.05x; convolutions 1.5-2.0x, the 7x7 stem over 3 channels 1.0x) */
#define C8_SPEEDUP_TF32 2.0
#define C9_MIN_PCT 3.0
/* C9: the work between reads that only feeds them is said from this share of busy */
#define READ_WORK_SHOWN 0.01
#define C10_KERNELS_PER_STEP 100
#define C10_REPEATS 8          /* each kernel name runs this often a step */
#define C10_MEDIAN_NS 20000    /* median kernel shorter than this */
#define C10_SMALL_SHARE 0.5    /* kernels under one wave, of busy */
#define C10_LOOP_SHARE 0.5     /* kernels inside a body repeated LOOP_MIN_COPIES times in a row */
/* ... where the loop's grids fill the SMs and its cost is the launch gaps:
 * only the loop sets it apart from a deep network that is launch-bound (C4),
 * so nearly every kernel is inside it (a scan stepped over positions: 96%;
 * a RegNet's repeated blocks and per-tensor optimizer: 55%) */
#define C10_LOOP_SHARE_WIDE 0.9
/* ... and not where this much of the launch wait placed in the code is inside
 * a model library's modules (their layer stack, not a loop of the user's) */
#define C10_MODEL_SHARE 0.5
/* The loop finder (opstats.c): a body of up to LOOP_MAX_BODY kernels, the
 * same names with the same grids, run LOOP_MIN_COPIES times or more in a row
 * is a loop (an RNN cell over time steps runs its body 64-256 times on the
 * fixtures; no body of ResNet-50 at batch 1 runs more than 6 times:
 * tests/golden/loop_copies.py) */
#define LOOP_MAX_BODY 64
#define LOOP_MIN_COPIES 8
#define C11_ELEMENTWISE_SHARE 0.3 /* elementwise kernels, of busy */
/* Long steps every N steps are a periodic stall (C14) only where the
 * training thread's stacks in them differ from its stacks in the others by
 * this much or more (the total variation distance between the shares of its
 * time per stack): alike, they are the loop's own work, one of its
 * iterations several of gpuwhy's steps (attribute.c). */
#define PERIODIC_STACKS_APART 0.15
#define C11_FOREACH_SHOWN 0.25    /* a foreach optimizer's share of them from which C11 names it */
#define C11_FOREACH_FUSED 0.5     /* ... and from which its fix is the fused optimizer's rate (fixes.c) */
#define C11_ATTENTION_SHARE 0.1   /* attention's inner kernels (unfused), of busy */
#define C11_DRAM_PCT 30           /* GPM DRAM utilization while active */
#define C11_DRAM_HIGH_PCT 50      /* ... above this: high confidence */
#define C11_CHAIN_KERNEL_NS 20000 /* without GPM: chain kernels this long stream real memory */
#define C12_LINK_SHARE 0.8        /* pinned copies under this share of the link's bandwidth
				   * (where copies are 1% of the window or more, the fixtures'
				   * contiguous ones reach 0.94-1.07 of it: pinned_rates.py) */
/* C12's small copies: the GPU idles this share of the run before copies the
 * host issued one after another, with this many such copies a step or more */
#define C12_COPIES_IDLE_SHARE 0.05
#define C12_COPIES_PER_STEP 8
#define C13_LIMITED_PCT 5         /* busy NVML samples under a limit */
#define C14_MIN_PCT 3.0
#define C14_MIN_STEPS 6
#define PERIODIC_TWICE_LONG 3.0 /* two long steps make a period when both run longer than this many median steps */
#define C14_FREE_STEPS 3 /* steps free of activities for a baseline of their GPU work */

/* Severity of a finding that saves `share` of the run, before a rule's
 * floor and the too-little-to-diagnose cut (gain.c, invariants.c). */
static inline enum severity severity_of_share(double share)
{
	return share >= SEV_HIGH_SHARE ? SEV_HIGH : share >= SEV_WARN_SHARE ? SEV_WARN : SEV_INFO;
}

#endif
