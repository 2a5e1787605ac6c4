/* Idle attribution, step detection and rules on SYNTHETIC recordings: each
 * test writes a small made-up timeline with the recording writer, loads it,
 * analyzes it, and asserts on the numbers and the findings. Real recordings
 * are tested in tests/golden/. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analyze/analyze.h"
#include "analyze/internal.h"
#include "analyze/rules/rule.h"
#include "format/format.h"
#include "report/report.h"
#include "t.h"
#include "synth.h"

#define PID 100
#define US 1000ull
#define MS 1000000ull

static char path[] = "/tmp/gw-test-analysis-XXXXXX";
static struct gw_writer w;
static int fd;

static void begin(void)
{
	fd = synth_begin(&w, path, PID, 81920, 700000);
}

static void kernel(uint64_t start, uint64_t dur, const char *name, unsigned blocks)
{
	synth_kernel(&w, start, dur, name, blocks);
}

/* A kernel on GPU dev, [start, end), in CUDA stream `stream`. */
static void dev_kernel(uint64_t dev, uint64_t start, uint64_t end, const char *name, unsigned blocks,
		       unsigned stream)
{
	static uint64_t corr = 100000;
	uint64_t v[GW_KERNEL_NF] = { start, end, gw_intern(&w, name), dev, 1, stream, blocks, 1, 1,
				     256, 1, 1, ++corr, 32, 0, 0 };

	gw_emit(&w, GW_REC_KERNEL, v, GW_KERNEL_NF);
}

static void copy(uint64_t start, uint64_t dur, int kind, int src, int dst, uint64_t bytes, int async)
{
	uint64_t v[GW_MEMCPY_NF] = { start, start + dur, (uint64_t)kind, (uint64_t)src, (uint64_t)dst,
				     bytes, (uint64_t)async, 0, 7, 0 };

	gw_emit(&w, GW_REC_MEMCPY, v, GW_MEMCPY_NF);
}

static void api(uint64_t start, uint64_t end, const char *name)
{
	uint64_t v[GW_API_NF] = { start, end, 131, PID, 0, gw_intern(&w, name), 2 };

	gw_emit(&w, GW_REC_API, v, GW_API_NF);
}

static void thread(uint64_t ts, uint32_t pid, uint32_t tid, char state, uint64_t ticks)
{
	uint64_t v[GW_THREAD_NF] = { ts, pid, tid, (uint64_t)state, ticks, 0, 0, 0 };

	gw_emit(&w, GW_REC_THREAD, v, GW_THREAD_NF);
}

/* A thread sample with its run-queue wait (schedstat; ns, cumulative). */
static void thread_rd(uint64_t ts, uint32_t pid, uint32_t tid, char state, uint64_t ticks, uint64_t rd)
{
	uint64_t v[GW_THREAD_NF] = { ts, pid, tid, (uint64_t)state, ticks, 0, 0, 0, rd };

	gw_emit(&w, GW_REC_THREAD, v, GW_THREAD_NF);
}

static void proc_io(uint64_t ts, uint32_t pid, uint64_t read, uint64_t written)
{
	uint64_t v[GW_PIO_NF] = { ts, pid, read, written, read, written };

	gw_emit(&w, GW_REC_PROC_IO, v, GW_PIO_NF);
}

static void proc_libs(uint32_t pid, unsigned flags, const char *python)
{
	uint64_t v[GW_PLIBS_NF] = { 1000 * MS, pid, flags, python ? gw_intern(&w, python) : 0 };

	gw_emit(&w, GW_REC_PROC_LIBS, v, GW_PLIBS_NF);
}

/* The kept gaps (--trace) and the per-step aggregates the report reads are
 * two views of one attribution: they must agree cause by cause. */
static int gaps_agree(const struct analysis *a)
{
	uint64_t ns[IDLE_NCAUSES] = { 0 }, n[IDLE_NCAUSES] = { 0 }, at[IDLE_NCAUSES] = { 0 };

	for (size_t i = 0; i < a->gaps.n; i++) {
		ns[a->gaps.v[i].cause] += a->gaps.v[i].end - a->gaps.v[i].start;
		n[a->gaps.v[i].cause]++;
		at[a->gaps.v[i].cause] += a->gaps.v[i].at_step_start;
	}
	for (int c = 0; c < IDLE_NCAUSES; c++)
		if (ns[c] != a->idle_by_cause[c] || n[c] != a->gaps_by_cause[c] ||
		    at[c] != a->gaps_at_step_start[c])
			return 0;
	return 1;
}

static void end_flags(struct trace *t, struct analysis *a, unsigned load_flags)
{
	char err[256];

	gw_flush(&w);
	gw_writer_free(&w);
	close(fd);
	CHECK(trace_load_flags(t, path, load_flags, err, sizeof(err)) == 0, "load: %s", err);
	analyze(t, a, ANALYZE_KEEP_GAPS);
	CHECK(gaps_agree(a), "kept gaps and per-step aggregates agree");
}

static void end(struct trace *t, struct analysis *a)
{
	end_flags(t, a, 0);
}

static const struct finding *top(const struct analysis *a)
{
	for (size_t i = 0; i < a->findings.n; i++)
		if (a->findings.v[i].assessed)
			return &a->findings.v[i];
	return NULL;
}

/* Synthetic: back-to-back large kernels, 50 steps. Healthy: no warning. */
static void test_healthy(void)
{
	struct trace t;
	struct analysis a;
	uint64_t ts = 1000 * MS;

	begin();
	for (int s = 0; s < 50; s++)
		for (int k = 0; k < 4; k++) {
			char nm[16];

			snprintf(nm, sizeof(nm), "big_gemm_%d", k);
			kernel(ts, 2 * MS, nm, 1024);
			ts += 2 * MS + 2 * US;
		}
	end(&t, &a);
	CHECK(a.steps.n == 49, "steps %zu", a.steps.n);
	CHECK(!has_warning_or_above(&a), "healthy run has no warning (top %s)", top(&a) ? top(&a)->rule_id : "-");
	CHECK(a.idle_ns * 100 < a.steady_ns, "idle %.2f%%", 100.0 * a.idle_ns / a.steady_ns);
	analysis_free(&a);
	trace_free(&t);
}

/* 200 steps of 30 tiny kernels (2 us) separated by 8 us gaps. */
static void tiny_kernel_steps(uint64_t ts)
{
	for (int s = 0; s < 200; s++) {
		kernel(ts, 2 * US, "step_begin", 4);
		ts += 10 * US;
		for (int k = 0; k < 29; k++) {
			kernel(ts, 2 * US, k % 2 ? "tiny_mul" : "tiny_add", 4);
			ts += 10 * US;
		}
	}
}

/* Synthetic: 600 steps, each a CUDA graph of 20 kernels (2 us, back to back)
 * launched by one cuGraphLaunch call of 100 us, the GPU idle meanwhile (XLA's
 * step under CUPTI). Tracing costs each of the graph's operations at the
 * launch: the call's 100 us in the gap, less an untraced launch's 0.2 us an
 * operation, at most 3 us an operation: 60 us a step, not one launch's 3 us. */
static void test_graph_launch_trace_cost(void)
{
	struct trace t;
	struct analysis a;
	uint64_t ts = 1000 * MS;

	begin();
	for (uint64_t s = 0; s < 600; s++) {
		uint64_t at = ts + s * 200 * US, corr = 500000 + s;
		uint64_t c[GW_API_NF] = { at, at + 100 * US, 514, PID, corr, gw_intern(&w, "cuGraphLaunch"), 1 };

		gw_emit(&w, GW_REC_API, c, GW_API_NF);
		for (uint64_t k = 0; k < 20; k++) {
			uint64_t st = at + 105 * US + k * 2 * US;
			uint64_t v[GW_KERNEL_NF] = { st, st + 2 * US, gw_intern(&w, k ? "graph_k" : "graph_first"),
						     0, 1, 7, 4, 1, 1, 256, 1, 1, corr, 32, 0, 1 };

			gw_emit(&w, GW_REC_KERNEL, v, GW_KERNEL_NF);
		}
	}
	/* the launching thread on its CPU throughout (a tick is 10 ms) */
	for (uint64_t i = 0; i <= 13; i++)
		thread(ts + i * 10 * MS, PID, PID, 'R', 100 + i);
	end(&t, &a);
	CHECK(a.steps.n == 599, "steps %zu", a.steps.n);
	CHECK(a.idle_by_cause[IDLE_LAUNCH_OVERHEAD] > 599 * 160 * US - 1 * MS, "launch gaps %.2f ms",
	      (double)a.idle_by_cause[IDLE_LAUNCH_OVERHEAD] / 1e6);
	CHECK(a.trace_cost_ns > 599 * 60 * US - 1 * MS && a.trace_cost_ns < 600 * 60 * US + 1 * MS,
	      "tracing cost %.2f ms (want ~35.9: 60 us a graph launch)", (double)a.trace_cost_ns / 1e6);
	double step = steady_untraced_ns(&a) / (double)a.steps.n;

	CHECK(step > 135 * US && step < 145 * US, "untraced step %.1f us (want ~140)", step / 1e3);
	/* the replay takes the same out: its untraced window against the recorded one */
	CHECK(a.replay.replayed_ns > 0 && fabs(a.replay_base_ns / a.replay.replayed_ns - 140.0 / 200.0) < 0.02,
	      "untraced replay %.3f of the recorded one (want ~0.70)",
	      a.replay.replayed_ns > 0 ? a.replay_base_ns / a.replay.replayed_ns : 0);
	analysis_free(&a);
	trace_free(&t);
}

/* Synthetic: the same steps recorded with --launches: 3.9 us of each gap is
 * taken as tracing cost (3 us, plus 0.9 us for the launch callbacks). */
static void test_launch_bound_with_callbacks(void)
{
	struct trace t;
	struct analysis a;

	begin();
	gw_emit_meta(&w, "record.launch_calls", "traced");
	/* a launch call per kernel, and three synchronizations, all before the run */
	for (uint64_t i = 0; i < 6000; i++)
		api(100 * MS + i * 10 * US, 100 * MS + i * 10 * US + 3 * US, "cudaLaunchKernel");
	for (uint64_t i = 0; i < 3; i++)
		api(200 * MS + i * MS, 200 * MS + i * MS + 100 * US, "cudaStreamSynchronize");
	tiny_kernel_steps(1000 * MS);
	end(&t, &a);
	CHECK(a.trace_cost_ns > 199 * 30 * 3900 - 1 * MS && a.trace_cost_ns < 200 * 30 * 3900 + 1 * MS,
	      "tracing cost with launch callbacks %.1f ms (want ~23.3)", (double)a.trace_cost_ns / 1e6);
	CHECK(t.ncalls == 6003 && t.calls.n == 3 && a.main_tid == PID,
	      "launch calls counted (%llu calls) but not held (%zu held), training thread %u",
	      (unsigned long long)t.ncalls, t.calls.n, a.main_tid);
	analysis_free(&a);
	trace_free(&t);
}

/* Synthetic: 200 steps of 30 tiny kernels (2 us) separated by 8 us gaps; the
 * gain is for the program without gpuwhy (3 us of tracing cost per launch). */
static void test_launch_bound(void)
{
	struct trace t;
	struct analysis a;
	uint64_t ts = 1000 * MS;

	begin();
	tiny_kernel_steps(ts);
	end(&t, &a);
	CHECK(a.steps.n == 199 && !strcmp(a.step_marker, "step_begin"), "steps %zu marker %s", a.steps.n,
	      a.step_marker);
	CHECK(a.step_median_ns > 299 * US && a.step_median_ns < 301 * US, "median step %.0f",
	      a.step_median_ns);
	double share = (double)a.idle_by_cause[IDLE_LAUNCH_OVERHEAD] / (double)a.steady_ns;

	CHECK(share > 0.79 && share < 0.81, "launch overhead share %.3f (want 0.80)", share);
	CHECK(top(&a) && !strcmp(top(&a)->cause, "C4"), "top %s", top(&a) ? top(&a)->rule_id : "-");
	/* 3 us of each 8 us gap is taken as gpuwhy's own cost: without gpuwhy a
	 * step would last 300 - 30*3 = 210 us, with no gaps 60 us: 3.5x */
	CHECK(a.trace_cost_ns > 199 * 90 * US - 1 * MS && a.trace_cost_ns < 200 * 90 * US + 1 * MS,
	      "tracing cost %.1f ms (want ~17.9)", (double)a.trace_cost_ns / 1e6);
	CHECK(top(&a) && top(&a)->speedup > 3.4 && top(&a)->speedup < 3.6, "speed-up %.2f (want 3.5)",
	      top(&a) ? top(&a)->speedup : 0);
	CHECK(top(&a) && strstr(top(&a)->evidence, "gpuwhy's own tracing cost"), "evidence names gpuwhy's share");
	/* the one-pass aggregates: 199 steady steps of 30 kernels, all 2 us */
	CHECK(a.ops.kernels == 199 * 30 && a.ops.short_kernels == a.ops.kernels, "kernels %llu",
	      (unsigned long long)a.ops.kernels);
	double med = median_kernel_ns(&a.ops);

	CHECK(med > 1.95 * US && med < 2.05 * US, "median kernel %.0f ns from the histogram (want ~2000)", med);
	analysis_free(&a);
	trace_free(&t);
}

/* 100 synthetic steps of `step` ns: 1 ms of GPU work (two kernels), a
 * stream sync the host enters at `sync_at` and leaves at `sync_end` (from the
 * step's start), and, with `dtoh`, the 4-byte copy of an .item() after it. */
static void sync_steps(uint64_t step, uint64_t sync_at, uint64_t sync_end, int dtoh)
{
	uint64_t ts = 1000 * MS;

	begin();
	for (int s = 0; s < 100; s++) {
		kernel(ts, 500 * US, "fwd", 264);
		kernel(ts + 500 * US, 500 * US, "bwd", 264);
		if (dtoh)
			copy(ts + 1000 * US, 2 * US, 2, 3, 1, 4, 1);
		api(ts + sync_at, ts + sync_end, "cudaStreamSynchronize");
		ts += step;
	}
}

/* Synthetic: each step ends with a 4-byte DtoH copy and a stream sync; the
 * host then needs 300 us before the next kernel. */
static void test_sync_stall(void)
{
	struct trace t;
	struct analysis a;

	sync_steps(1302 * US, 10 * US, 1005 * US, 1);
	end(&t, &a);
	double share = (double)a.idle_by_cause[IDLE_SYNC] / (double)a.steady_ns;

	CHECK(share > 0.2 && share < 0.25, "sync share %.3f (want 0.23)", share);
	CHECK(top(&a) && !strcmp(top(&a)->cause, "C9"), "top %s", top(&a) ? top(&a)->rule_id : "-");
	analysis_free(&a);
	trace_free(&t);
}

/* Synthetic: 1 ms of GPU work per 3 ms step; the host launches it, waits
 * 0.9 ms in a sync for it, then works 2 ms on its own. Without the sync the
 * host's 2.1 ms per step is the floor: 3 / 2.1 = 1.43x, not the 1.5x that
 * min(idle, busy) alone would promise. */
static void test_sync_stall_host_bound(void)
{
	struct trace t;
	struct analysis a;

	sync_steps(3000 * US, 100 * US, 1000 * US, 0);
	end(&t, &a);
	const struct finding *f = top(&a);

	CHECK(f && !strcmp(f->cause, "C9"), "top %s", f ? f->rule_id : "-");
	CHECK(f && f->per_step_ns > 0.89 * MS && f->per_step_ns < 0.91 * MS,
	      "saved per step %.0f us (want 900: the host's wait)", f ? f->per_step_ns / 1e3 : 0);
	CHECK(f && f->speedup > 1.40 && f->speedup < 1.46, "speed-up %.3f (want 1.43)",
	      f ? f->speedup : 0);
	analysis_free(&a);
	trace_free(&t);
}

/* Synthetic: three processes on one GPU with 10, 30 and 20 kernels: the one
 * with the most is the main process (not merely one with more than the first). */
static void test_main_process(void)
{
	static const uint32_t pids[3] = { 301, 302, 303 };
	static const int nk[3] = { 10, 30, 20 };
	struct trace t;
	struct analysis a;
	uint64_t ts = 1000 * MS;

	begin();
	for (int p = 0; p < 3; p++) {
		struct gw_writer wp;

		gw_writer_init(&wp, fd, pids[p], 0, 1 << 16);
		for (int k = 0; k < nk[p]; k++, ts += MS) {
			uint64_t v[GW_KERNEL_NF] = { ts, ts + 500 * US, gw_intern(&wp, "k"), 0, 1, 7, 64, 1, 1,
						     256, 1, 1, (uint64_t)k + 1, 32, 0, 0 };

			gw_emit(&wp, GW_REC_KERNEL, v, GW_KERNEL_NF);
		}
		gw_flush(&wp);
		gw_writer_free(&wp);
	}
	end(&t, &a);
	CHECK(a.main_pid == 302, "main process %u (want 302, 30 kernels)", a.main_pid);
	analysis_free(&a);
	trace_free(&t);
}

/* Synthetic: 60 steps of 10 ms; every 10th step runs 40 ms longer. */
static void test_periodic(void)
{
	struct trace t;
	struct analysis a;
	uint64_t ts = 1000 * MS;

	begin();
	for (int s = 0; s < 60; s++) {
		kernel(ts, 5 * MS, "train_a", 528);
		kernel(ts + 5 * MS, 5 * MS, "train_b", 528);
		ts += 10 * MS;
		if (s % 10 == 9) {
			for (int k = 0; k < 4; k++)
				kernel(ts + (uint64_t)k * 10 * MS, 5 * MS, "val_fwd", 528);
			ts += 40 * MS;
		}
	}
	end(&t, &a);
	CHECK(a.steps.n == 59, "steps %zu", a.steps.n);
	CHECK(top(&a) && !strcmp(top(&a)->cause, "C14"), "top %s", top(&a) ? top(&a)->rule_id : "-");
	CHECK(a.step_min_ns > 9.9 * MS && a.step_min_ns < 10.1 * MS && a.step_max_ns > 49.9 * MS &&
	      a.step_max_ns < 50.1 * MS, "step min %.1f ms, max %.1f ms (want 10 and 50)",
	      a.step_min_ns / 1e6, a.step_max_ns / 1e6);
	/* 5 periodic steps of 50 ms vs a 10 ms median in 58 steps + 0 ms: 200 ms of 790 */
	CHECK(top(&a) && top(&a)->saved_ns > 195 * MS && top(&a)->saved_ns < 205 * MS, "saved %.0f ms",
	      top(&a) ? top(&a)->saved_ns / 1e6 : 0);
	analysis_free(&a);
	trace_free(&t);
}

/* A copy with its correlation id, and the training thread's call that made it. */
static void copy_call(uint64_t call_start, uint64_t copy_start, uint64_t copy_end, int src, uint64_t corr)
{
	uint64_t v[GW_MEMCPY_NF] = { copy_start, copy_end, 1, (uint64_t)src, 3, 4 << 20, 0, 0, 7, corr };
	uint64_t c[GW_API_NF] = { call_start, copy_end + 2 * US, 276, PID, corr,
				  gw_intern(&w, "cuMemcpyHtoD_v2"), 1 };

	gw_emit(&w, GW_REC_MEMCPY, v, GW_MEMCPY_NF);
	gw_emit(&w, GW_REC_API, c, GW_API_NF);
}

/* Synthetic: 10 ms steps of 2 ms of GPU work; the training thread then sits
 * 7 ms inside a synchronous 4 MiB host-to-device copy call before the copy
 * reaches the GPU, busy on a core all along (the driver staging pageable
 * memory on the CPU). what: 0 the copy is from pageable memory, 1 from pinned
 * memory, 2 the thread sits in a synchronize call instead. */
static void inside_call_steps(int what)
{
	uint64_t ts = 1000 * MS, ticks = 0;

	begin();
	for (int s = 0; s < 100; s++) {
		kernel(ts, 2 * MS, "conv", 1024);
		if (what == 2) {
			api(ts + 2 * MS + 10 * US, ts + 9 * MS, "cudaStreamSynchronize");
			copy(ts + 9 * MS, MS, 1, 2, 3, 4 << 20, 1);
		} else {
			copy_call(ts + 2 * MS + 10 * US, ts + 9 * MS, ts + 10 * MS, what == 0 ? 1 : 2,
				  (uint64_t)s + 1);
		}
		for (int k = 1; k <= 4; k++)
			thread(ts + (uint64_t)k * 2 * MS, PID, PID, 'R', ticks);
		ticks += 1; /* a 10 ms tick per 10 ms step: one core */
		thread(ts + 10 * MS - 1, PID, PID, 'R', ticks);
		ts += 10 * MS;
	}
}

/* The pageable copy: its 7 ms gaps are pageable_copy (C6), not the training
 * thread's CPU work (C1), however long. */
static void test_gap_inside_pageable_copy(void)
{
	struct trace t;
	struct analysis a;

	inside_call_steps(0);
	end(&t, &a);
	double share = (double)a.idle_by_cause[IDLE_PAGEABLE] / (double)a.idle_ns;

	CHECK(share > 0.99, "pageable_copy share of idle %.3f (want all of it)", share);
	CHECK(a.idle_by_cause[IDLE_HOST_COMPUTE] == 0, "host_compute %llu ns (want 0)",
	      (unsigned long long)a.idle_by_cause[IDLE_HOST_COMPUTE]);
	CHECK(top(&a) && !strcmp(top(&a)->cause, "C6"), "top %s (want C6)", top(&a) ? top(&a)->rule_id : "-");
	CHECK(!finding_of(&a, "C1"), "no C1");
	/* C6's gain: the pageable idle plus part of the copies' own time (the
	 * share pinned memory would save), each counted once: above the idle
	 * alone, at most idle + the copies */
	const struct finding *f = finding_of(&a, "C6");
	double idle = (double)a.idle_by_cause[IDLE_PAGEABLE], copies = a.ops.pageable_ns;

	CHECK(f && f->saved_ns > idle + 0.5 * copies && f->saved_ns <= idle + copies,
	      "C6 saved %.1f ms (want %.1f-%.1f: the idle + a share of the copies)", f ? f->saved_ns / 1e6 : 0,
	      (idle + 0.5 * copies) / 1e6, (idle + copies) / 1e6);
	analysis_free(&a);
	trace_free(&t);
}

/* The pinned copy: the host issuing the copy (launch_overhead), not C1, and
 * not C6 either (the memory is already pinned). */
static void test_gap_inside_pinned_copy(void)
{
	struct trace t;
	struct analysis a;

	inside_call_steps(1);
	end(&t, &a);
	double share = (double)a.idle_by_cause[IDLE_LAUNCH_OVERHEAD] / (double)a.idle_ns;

	CHECK(share > 0.99, "launch_overhead share of idle %.3f (want all of it)", share);
	CHECK(a.idle_by_cause[IDLE_HOST_COMPUTE] == 0 && a.idle_by_cause[IDLE_PAGEABLE] == 0,
	      "host_compute %llu, pageable %llu ns (want 0, 0)",
	      (unsigned long long)a.idle_by_cause[IDLE_HOST_COMPUTE],
	      (unsigned long long)a.idle_by_cause[IDLE_PAGEABLE]);
	CHECK(!finding_of(&a, "C1") && !finding_of(&a, "C6"), "no C1, no C6");
	analysis_free(&a);
	trace_free(&t);
}

/* A gap spent inside a synchronize call is sync (C9), not the CPU work the
 * thread's counters show. */
static void test_gap_inside_sync(void)
{
	struct trace t;
	struct analysis a;

	inside_call_steps(2);
	end(&t, &a);
	double share = (double)a.idle_by_cause[IDLE_SYNC] / (double)a.idle_ns;

	CHECK(share > 0.99, "sync share of idle %.3f (want all of it)", share);
	CHECK(top(&a) && !strcmp(top(&a)->cause, "C9"), "top %s (want C9)", top(&a) ? top(&a)->rule_id : "-");
	CHECK(!finding_of(&a, "C1"), "no C1");
	analysis_free(&a);
	trace_free(&t);
}

/* Synthetic: 40 steps of 10 ms; 7 of them, at irregular places, run 40 ms
 * longer (as c9_hf_log_item's new batch shapes). Some spacing and phase hit
 * 3 of 4 of them (steps 6, 15, 24 of 6, 15, 24, 33), but the pattern leaves
 * most long steps off it: chance, not a periodic stall. */
static void test_irregular_long_steps_not_periodic(void)
{
	static const int longs[] = { 3, 6, 9, 15, 18, 24, 31 };
	struct trace t;
	struct analysis a;
	uint64_t ts = 1000 * MS;
	size_t periodic = 0;

	begin();
	for (int s = 0; s < 40; s++) {
		kernel(ts, 5 * MS, "train_a", 528);
		kernel(ts + 5 * MS, 5 * MS, "train_b", 528);
		ts += 10 * MS;
		for (size_t k = 0; k < sizeof(longs) / sizeof(*longs); k++)
			if (longs[k] == s)
				ts += 40 * MS;
	}
	end(&t, &a);
	for (size_t i = 0; i < a.steps.n; i++)
		periodic += a.steps.v[i].periodic;
	CHECK(periodic == 0, "%zu periodic steps (want none)", periodic);
	CHECK(!finding_of(&a, "C14"), "no C14");
	analysis_free(&a);
	trace_free(&t);
}

/* Synthetic: the training thread is busy on the CPU for 6 ms before each
 * step (num_workers=0 data loading): C1. */
static void test_data_loading(void)
{
	struct trace t;
	struct analysis a;
	uint64_t ts = 1000 * MS, ticks = 0;

	begin();
	for (int s = 0; s < 100; s++) {
		copy(ts, 100 * US, 1, 2, 3, 4 << 20, 1);
		kernel(ts + 100 * US, 1900 * US, "conv", 1024);
		for (int k = 0; k < 4; k++) /* /proc samples every 2 ms: main thread running */
			thread(ts + 2 * MS + (uint64_t)k * 2 * MS, PID, PID, 'R', ticks += 0);
		ticks += 1; /* 10 ms tick per 8 ms step: ~1.2 cores */
		thread(ts + 8 * MS - 1, PID, PID, 'R', ticks);
		ts += 8 * MS;
	}
	end(&t, &a);
	double share = (double)(a.idle_by_cause[IDLE_HOST_COMPUTE] + a.idle_by_cause[IDLE_DATA_WAIT]) /
		       (double)a.steady_ns;

	CHECK(share > 0.7 && share < 0.8, "input wait share %.3f (want 0.75)", share);
	CHECK(top(&a) && !strcmp(top(&a)->cause, "C1"), "top %s", top(&a) ? top(&a)->rule_id : "-");
	analysis_free(&a);
	trace_free(&t);
}

/* Synthetic: the GPU idles 6 ms of every 8 ms step while the training
 * thread sleeps and another process is busy on a CPU core. A loader worker
 * (no CUDA) makes that a data wait; another GPU rank (it has an injection
 * stream, as DDP ranks do) does not. */
static void test_other_rank_not_loader(void)
{
	for (int rank = 0; rank < 2; rank++) {
		struct trace t;
		struct analysis a;
		struct gw_writer w2;
		uint64_t ts = 1000 * MS;

		begin();
		gw_writer_init(&w2, fd, 200, 0, 1 << 16);
		if (rank) {
			uint64_t e[GW_IEV_NF] = { ts, GW_IEV_STARTED, gw_intern(&w2, "cupti"), 130000 };

			gw_emit(&w2, GW_REC_INJECT_EVENT, e, GW_IEV_NF);
		}
		for (int s = 0; s < 100; s++) {
			kernel(ts, 2 * MS, "step_kernel", 1024);
			for (int k = 0; k < 4; k++) {
				uint64_t at = ts + (uint64_t)k * 2 * MS;

				thread(at, PID, PID, 'S', 0);
				thread(at, 200, 200, 'R', (at - 1000 * MS) / (10 * MS)); /* one core */
			}
			ts += 8 * MS;
		}
		gw_flush(&w2);
		gw_writer_free(&w2);
		end(&t, &a);
		double wait = (double)a.idle_by_cause[IDLE_DATA_WAIT] / (double)a.steady_ns;

		if (rank)
			CHECK(wait == 0, "another GPU rank's CPU time is no data wait (share %.3f)", wait);
		else
			CHECK(wait > 0.6, "a busy loader worker means data wait (share %.3f)", wait);
		analysis_free(&a);
		trace_free(&t);
	}
}

/* Synthetic: two GPUs (two ranks); GPU 1 computes 30% longer per step, so
 * GPU 0 waits in its NCCL all-reduce: C15 names GPU 1 the straggler. */
static void test_straggler(void)
{
	struct trace t;
	struct analysis a;
	uint64_t ts = 1000 * MS;

	begin();
	for (int s = 0; s < 40; s++) {
		for (uint64_t dev = 0; dev < 2; dev++) {
			uint64_t comp = dev ? 13 * MS : 10 * MS;

			dev_kernel(dev, ts, ts + comp, "gemm_fwd_bwd", 1024, 7);
			dev_kernel(dev, ts + comp, ts + 15 * MS, "ncclDevKernel_AllReduce_Sum_bf16_RING_LL", 32, 8);
		}
		ts += 15 * MS + 10 * US;
	}
	end(&t, &a);
	const struct finding *f = NULL;

	for (size_t i = 0; i < a.findings.n; i++)
		if (a.findings.v[i].assessed && !strcmp(a.findings.v[i].cause, "C15"))
			f = &a.findings.v[i];
	CHECK(a.ndev == 2 && a.dev[0].comm_ns > a.dev[1].comm_ns, "two GPUs, GPU 0 communicates longer");
	CHECK(f && strstr(f->title, "GPU 1 is a straggler"), "straggler finding: %s", f ? f->title : "none");
	/* both GPUs are busy (computing or waiting in NCCL) 15 of every 15.01 ms,
	 * measured over the same steady window */
	double span = (double)(a.t1 - a.t0);

	CHECK(a.dev[0].steady_busy_ns > 0.99 * span && a.dev[1].steady_busy_ns > 0.99 * span &&
		      a.dev[1].steady_busy_ns <= span,
	      "steady busy %.3f / %.3f of the window", (double)a.dev[0].steady_busy_ns / span,
	      (double)a.dev[1].steady_busy_ns / span);
	analysis_free(&a);
	trace_free(&t);
}

/* Synthetic: GPU 1 does most of the work (the main GPU) and GPU 0 works on
 * after GPU 1's last step: the op statistics still cover GPU 1's steady
 * kernels (a pass that stopped at the first operation past the window, on any
 * GPU, saw none of them). */
static void test_op_stats_second_gpu(void)
{
	struct trace t;
	struct analysis a;
	uint64_t ts = 1000 * MS;

	begin();
	for (int s = 0; s < 40; s++, ts += 10 * MS)
		for (uint64_t dev = 0; dev < 2; dev++)
			dev_kernel(dev, ts, ts + (dev ? 9 : 2) * MS, "gemm_step", 1024, 7);
	dev_kernel(0, ts + 50 * MS, ts + 60 * MS, "late", 1024, 7);
	end(&t, &a);
	CHECK(a.main_dev == 1, "main GPU %u (want 1)", a.main_dev);
	CHECK(a.ops.kernels >= 38, "op statistics saw %llu of GPU 1's steady kernels (want 38+)",
	      (unsigned long long)a.ops.kernels);
	analysis_free(&a);
	trace_free(&t);
}

/* Synthetic: kernels stop after 1 s while NVML still sees the GPU busy for
 * 5 s more (another profiler took CUPTI over): the report must say so. */
static void test_lost_tail(void)
{
	struct trace t;
	struct analysis a;
	int warned = 0;

	begin();
	for (int s = 0; s < 100; s++) {
		kernel(1000 * MS + (uint64_t)s * 10 * MS, 9 * MS, "step_a", 528);
		kernel(1000 * MS + (uint64_t)s * 10 * MS + 9 * MS, 900 * US, "step_b", 528);
	}
	for (int i = 0; i < 60; i++) {
		uint64_t v[GW_GPU_NF] = { 1000 * MS + (uint64_t)i * 100 * MS, 0, 0xff, 1980, 3200, 0,
					  500000, 50, 1000, 90, 30 };
		gw_emit(&w, GW_REC_GPU, v, GW_GPU_NF);
	}
	end(&t, &a);
	for (size_t i = 0; i < a.warnings.n; i++)
		warned += strstr(a.warnings.v[i], "another profiler") != NULL;
	CHECK(warned == 1, "lost-tail warning given");
	analysis_free(&a);
	trace_free(&t);
}

/* Synthetic: a recording made with --ring by a job that ran 20 s, of which
 * the last 5 s were kept, and a CUPTI held by another tool: both are said. */
static void test_data_notes(void)
{
	struct trace t;
	struct analysis a;
	int ring = 0, busy = 0;

	begin();
	gw_emit_meta(&w, "record.ring_bytes", "33554432");
	uint64_t p[GW_PROC_NF] = { 1000 * MS, PID, 1, 0, gw_intern(&w, "python3 train.py"), 1 };
	gw_emit(&w, GW_REC_PROCESS, p, GW_PROC_NF);
	uint64_t e[GW_IEV_NF] = { 1000 * MS, GW_IEV_CUPTI_BUSY,
				  gw_intern(&w, "cuptiSubscribe: CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED"), 39 };
	gw_emit(&w, GW_REC_INJECT_EVENT, e, GW_IEV_NF);
	for (int s = 0; s < 50; s++)
		kernel(16000 * MS + (uint64_t)s * 100 * MS, 99 * MS, "step", 528);
	uint64_t x[GW_PEXIT_NF] = { 21000 * MS, PID, 0 };
	gw_emit(&w, GW_REC_PROC_EXIT, x, GW_PEXIT_NF);
	end(&t, &a);
	for (size_t i = 0; i < a.warnings.n; i++) {
		ring += strstr(a.warnings.v[i], "budget 32 MiB") &&
			strstr(a.warnings.v[i], "last 5.0 s of a 20.0 s run");
		busy += strstr(a.warnings.v[i], "another tool held CUPTI") &&
			strstr(a.warnings.v[i], "MULTIPLE_SUBSCRIBERS");
	}
	CHECK(ring == 1, "ring warning says the budget and the covered part of the run");
	CHECK(busy == 1, "a CUPTI held by another tool is reported with CUPTI's message");
	analysis_free(&a);
	trace_free(&t);
}

/* Synthetic: kernels on three GPUs written in a scrambled order: after the
 * analysis the timeline is ordered by (device, start), nothing lost. */
static void test_sort_ops(void)
{
	struct trace t;
	struct analysis a;
	uint64_t sum_in = 0, sum_out = 0;
	int ordered = 1;

	begin();
	for (unsigned i = 0; i < 3000; i++) {
		unsigned j = (i * 7919u) % 3000u; /* a permutation of 0..2999 */
		uint64_t v[GW_KERNEL_NF] = { 1000 * MS + j * 10 * US, 1000 * MS + j * 10 * US + 5 * US,
					     gw_intern(&w, "k"), j % 3, 1, 7, 4, 1, 1, 32, 1, 1, i + 1, 32, 0, 0 };

		gw_emit(&w, GW_REC_KERNEL, v, GW_KERNEL_NF);
		sum_in += v[0];
	}
	end_flags(&t, &a, TRACE_KEEP_OPS);
	for (size_t i = 0; i < t.ops.n; i++) {
		sum_out += t.ops.v[i].start;
		if (i && (t.ops.v[i - 1].dev > t.ops.v[i].dev ||
			  (t.ops.v[i - 1].dev == t.ops.v[i].dev && t.ops.v[i - 1].start > t.ops.v[i].start)))
			ordered = 0;
	}
	CHECK(t.ops.n == 3000 && sum_in == sum_out, "all %zu operations kept", t.ops.n);
	CHECK(ordered, "ordered by device, then start");
	analysis_free(&a);
	trace_free(&t);

	/* starts 2^62 ns apart on four devices (only a damaged file has that):
	 * too wide for the radix keys, the comparison sort takes over */
	begin();
	for (unsigned i = 0; i < 8; i++) {
		uint64_t st = 1000 * MS + ((i % 2) ? (1ull << 62) : 0) + i;
		uint64_t v[GW_KERNEL_NF] = { st, st + 5, gw_intern(&w, "k"), 3 - (i % 4), 1, 7, 4, 1, 1,
					     32, 1, 1, i + 1, 32, 0, 0 };

		gw_emit(&w, GW_REC_KERNEL, v, GW_KERNEL_NF);
	}
	end_flags(&t, &a, TRACE_KEEP_OPS);
	ordered = t.ops.n == 8;
	for (size_t i = 1; i < t.ops.n; i++)
		if (t.ops.v[i - 1].dev > t.ops.v[i].dev ||
		    (t.ops.v[i - 1].dev == t.ops.v[i].dev && t.ops.v[i - 1].start > t.ops.v[i].start))
			ordered = 0;
	CHECK(ordered, "a 2^62 ns span is ordered too (%zu operations)", t.ops.n);
	analysis_free(&a);
	trace_free(&t);
}

/* Synthetic: step lengths in a scrambled order: min, max and median exact. */
static void test_step_stats(void)
{
	static const unsigned ms[] = { 12, 30, 9, 11, 10, 14, 8, 13, 10, 11, 9, 12, 10, 25, 11 };
	struct trace t;
	struct analysis a;
	uint64_t ts = 1000 * MS;

	begin();
	for (int r = 0; r < 3; r++)
		for (size_t i = 0; i < sizeof(ms) / sizeof(ms[0]); i++) {
			kernel(ts, ms[i] * MS - 5 * US, "one_step", 528);
			ts += ms[i] * MS;
		}
	kernel(ts, MS, "one_step", 528);
	end(&t, &a);
	CHECK(a.steps.n == 45, "steps %zu", a.steps.n);
	CHECK(a.step_min_ns > 7.99 * MS && a.step_min_ns < 8.01 * MS, "min %.2f ms, want 8", a.step_min_ns / 1e6);
	CHECK(a.step_max_ns > 29.99 * MS && a.step_max_ns < 30.01 * MS, "max %.2f ms, want 30", a.step_max_ns / 1e6);
	CHECK(a.step_median_ns > 10.99 * MS && a.step_median_ns < 11.01 * MS, "median %.2f ms, want 11",
	      a.step_median_ns / 1e6);
	analysis_free(&a);
	trace_free(&t);
}

/* Synthetic: a duty-cycled recording: two traced windows of 1 s, 9 s apart,
 * GPU-bound inside them. The untraced time must not count as idle. */
static void test_duty_windows(void)
{
	struct trace t;
	struct analysis a;
	uint64_t ev[][2] = { { 1000 * MS, GW_IEV_STARTED }, { 2000 * MS, GW_IEV_TRACE_OFF },
			     { 11000 * MS, GW_IEV_TRACE_ON }, { 12000 * MS, GW_IEV_TRACE_OFF } };

	begin();
	for (size_t i = 0; i < 4; i++) {
		uint64_t v[GW_IEV_NF] = { ev[i][0], ev[i][1], 0, 0 };

		gw_emit(&w, GW_REC_INJECT_EVENT, v, GW_IEV_NF);
	}
	for (int win = 0; win < 2; win++)
		for (int s = 0; s < 99; s++) {
			uint64_t ts = (win ? 11000 : 1000) * MS + (uint64_t)s * 10 * MS + MS;

			kernel(ts, 5 * MS, "fwd", 528);
			kernel(ts + 5 * MS, 5 * MS - 2 * US, "bwd", 528);
		}
	end(&t, &a);
	CHECK(a.windows.n == 4, "two traced windows (%zu bounds)", a.windows.n);
	CHECK(a.steady_ns < 2100 * MS, "steady time counts traced time only: %.2f s", a.steady_ns / 1e9);
	CHECK(a.idle_ns * 100 < a.steady_ns, "untraced time is not idle: idle %.1f%%",
	      100.0 * a.idle_ns / (double)(a.steady_ns ? a.steady_ns : 1));
	CHECK(!has_warning_or_above(&a), "a GPU-bound duty-cycled run is healthy");
	analysis_free(&a);
	trace_free(&t);
}

/* Synthetic: CUDA_LAUNCH_BLOCKING=1 in the target's environment. */
static void test_launch_blocking(void)
{
	struct trace t;
	struct analysis a;
	uint64_t ts = 1000 * MS;

	begin();
	gw_emit_meta(&w, "env.CUDA_LAUNCH_BLOCKING", "1");
	for (int s = 0; s < 50; s++) {
		kernel(ts, 100 * US, "k_first", 528);
		kernel(ts + 150 * US, 100 * US, "k_second", 528);
		ts += 300 * US;
	}
	end(&t, &a);
	CHECK(top(&a) && !strcmp(top(&a)->cause, "C5"), "top %s", top(&a) ? top(&a)->rule_id : "-");
	analysis_free(&a);
	trace_free(&t);
}

/* A host-only recording (no GPU timeline): warnings, no crash, rules not assessed. */
static void test_no_gpu(void)
{
	struct trace t;
	struct analysis a;

	begin();
	thread(1000 * MS, PID, PID, 'R', 5);
	end(&t, &a);
	CHECK(a.warnings.n >= 1 && strstr(a.warnings.v[a.warnings.n - 1], "no GPU"), "warning given");
	CHECK(!top(&a), "no assessed finding");
	analysis_free(&a);
	trace_free(&t);
}

/* Synthetic: gpuwhy was killed before finalizing: the main file has no
 * record.complete and the injection stream is still in PATH.parts/. */
static void test_unmerged_parts(void)
{
	struct trace t;
	struct analysis a;
	char parts[128], side[160], err[256];
	int sfd;

	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	gw_write_file_header(fd);
	gw_writer_init(&w, fd, 0, 0, 1 << 16);
	gw_emit_meta(&w, "host.clk_tck", "100");
	gw_flush(&w);
	gw_writer_free(&w);
	close(fd);
	snprintf(parts, sizeof(parts), "%s.parts", path);
	mkdir(parts, 0700);
	snprintf(side, sizeof(side), "%s/inject-%d.gws", parts, PID);
	sfd = open(side, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	gw_write_file_header(sfd);
	gw_writer_init(&w, sfd, PID, 0, 1 << 16);
	for (int i = 0; i < 10; i++)
		kernel(1000 * MS + (uint64_t)i * MS, 500 * US, "k", 132);
	gw_flush(&w);
	gw_writer_free(&w);
	close(sfd);
	CHECK(trace_load(&t, path, err, sizeof(err)) == 0, "load: %s", err);
	analyze(&t, &a, 0);
	CHECK(t.parts_read == 1 && t.nops == 10 && a.dev[0].nkernels == 10,
	      "parts read %u, ops %llu", t.parts_read, (unsigned long long)t.nops);
	int named = 0;

	for (size_t i = 0; i < a.warnings.n; i++)
		named += strstr(a.warnings.v[i], ".parts") != NULL;
	CHECK(named == 1, "a warning names the parts folder");
	CHECK(t.verdict.kind == GW_VERDICT_TRUNCATED && a.warnings.n >= 1 &&
	      strstr(a.warnings.v[0], "cut short"), "no end record: truncated, and said first (%s)",
	      a.warnings.n ? a.warnings.v[0] : "");
	analysis_free(&a);
	trace_free(&t);
	unlink(side);
	rmdir(parts);
}

/* C12 and C13 cannot be planted on the GPU machine (we never change links,
 * clocks or power limits): these tests take a REAL recording
 * (tests/fixtures/healthy.gwr, H200) and change its metadata in memory. */
/* Real recordings: CUPTI's "command buffer full" records mark the host
 * blocked on a full GPU queue. The GPU-bound healthy run shows it most of the
 * time; the launch-bound one never. */
static void test_real_queue_full(void)
{
	const char *fx[2] = { "tests/fixtures/healthy.gwr", "tests/fixtures/c4_launch_bound.gwr" };

	for (int i = 0; i < 2; i++) {
		struct trace t;
		struct analysis a;
		char err[256];

		if (trace_load(&t, fx[i], err, sizeof(err)) < 0) {
			CHECK(0, "load fixture: %s", err);
			return;
		}
		analyze(&t, &a, 0);
		double share = (double)a.queue_full_ns / (double)a.steady_ns;

		if (i == 0)
			CHECK(share > 0.5 && share < 0.8, "healthy: host blocked on a full queue %.2f of the time", share);
		else
			CHECK(a.queue_full_ns == 0, "launch-bound: never blocked on a full queue (%.3f)", share);
		analysis_free(&a);
		trace_free(&t);
	}
}

static void test_real_recording_metadata_changed_by_test(void)
{
	struct trace t;
	struct analysis a;
	char err[256];
	int c12 = 0, c13 = 0;

	if (trace_load(&t, "tests/fixtures/healthy.gwr", err, sizeof(err)) < 0) {
		CHECK(0, "load fixture: %s", err);
		return;
	}
	CHECK(t.gpus.n >= 1 && t.gpus.v[0].index == 0 && t.gpus.v[0].pcie_gen == 5,
	      "fixture: the job's GPU 0 is a Gen5 H200");
	analyze(&t, &a, 0);
	for (size_t i = 0; i < a.findings.n; i++)
		c12 += a.findings.v[i].assessed && !strcmp(a.findings.v[i].cause, "C12");
	CHECK(c12 == 0, "unchanged recording: no PCIe finding");
	analysis_free(&a);
	t.gpus.v[0].pcie_gen = 3;       /* changed by the test: a link trained down to Gen3 */
	t.gpus.v[0].pcie_width = 8;     /* ... at x8 */
	t.gpus.v[0].power_limit_mw = 450000; /* ... and a power limit under the 700 W default */
	analyze(&t, &a, 0);
	for (size_t i = 0; i < a.findings.n; i++) {
		c12 += a.findings.v[i].assessed && !strcmp(a.findings.v[i].cause, "C12") &&
		       strstr(a.findings.v[i].evidence, "Gen3 of Gen5") &&
		       strstr(a.findings.v[i].evidence, "x8 of x16");
		c13 += a.findings.v[i].assessed && !strcmp(a.findings.v[i].cause, "C13") &&
		       strstr(a.findings.v[i].evidence, "450 W");
	}
	CHECK(c12 == 1, "Gen3 x8 link reported");
	CHECK(c13 == 1, "power limit under default reported");
	analysis_free(&a);
	trace_free(&t);
}

/* Loads every real recording in tests/fixtures, or every stride-th (with
 * load_flags), and calls fn on it; returns how many it loaded. */
static unsigned each_fixture(unsigned load_flags, unsigned stride,
			     void (*fn)(struct trace *t, const char *name, void *ctx), void *ctx)
{
	DIR *d = opendir("tests/fixtures");
	struct dirent *de;
	unsigned files = 0, seen = 0;

	if (!d) {
		CHECK(0, "tests/fixtures: %s", strerror(errno));
		return 0;
	}
	while ((de = readdir(d))) {
		size_t len = strlen(de->d_name);
		char file[512], err[256];
		struct trace t;

		if (len < 5 || strcmp(de->d_name + len - 4, ".gwr") || seen++ % stride)
			continue;
		snprintf(file, sizeof(file), "tests/fixtures/%s", de->d_name);
		if (trace_load_flags(&t, file, load_flags, err, sizeof(err)) < 0)
			CHECK(0, "load %s: %s", file, err);
		else
			fn(&t, de->d_name, ctx);
		trace_free(&t);
		files++;
	}
	closedir(d);
	return files;
}

/* Every real recording: the attribution without kept gaps (the default)
 * equals the one with them, and the kept gaps agree with the aggregates. */
static void gaps_agree_on(struct trace *t, const char *name, void *ctx)
{
	struct analysis kept, plain;

	(void)ctx;
	analyze(t, &kept, ANALYZE_KEEP_GAPS);
	CHECK(gaps_agree(&kept), "%s: kept gaps agree with the aggregates", name);
	analyze(t, &plain, 0);
	CHECK(plain.gaps.n == 0 && plain.idle_ns == kept.idle_ns &&
	      !memcmp(plain.idle_by_cause, kept.idle_by_cause, sizeof(kept.idle_by_cause)) &&
	      plain.trace_cost_ns == kept.trace_cost_ns,
	      "%s: same attribution with and without kept gaps", name);
	analysis_free(&kept);
	analysis_free(&plain);
}

/* Under the sanitizers every third recording: the kept gaps' code is the
 * same for all, and the plain build checks every one. */
static void test_real_gaps_agree(void)
{
	const char *san = getenv("GW_SANITIZED");
	unsigned stride = san && !strcmp(san, "1") ? 3 : 1;
	unsigned files = each_fixture(0, stride, gaps_agree_on, NULL);

	CHECK(files >= 15 / stride, "%u real recordings checked", files);
}

/* Synthetic: thread samples, kept delta-coded in blocks. Three threads of
 * two processes, 200 samples each at irregular times (and one sample going
 * back in time), their run-queue waits changing in about half of them:
 * every sample reads back as written, and the CPU time, run-queue waits and
 * runnable threads over 300 windows equal a direct computation over the
 * samples as written. */
struct raw_sample {
	uint64_t ts, ticks, rd;
	uint32_t pid, tid;
	char state;
};

/* The cumulative CPU ticks (rd 0) or run-queue wait (rd 1) at x, interpolated. */
static double raw_value(const struct raw_sample *v, size_t n, uint64_t x, int rd)
{
	size_t lo = 0;

	while (lo < n && v[lo].ts <= x)
		lo++;
	if (lo == 0)
		return (double)(rd ? v[0].rd : v[0].ticks);
	if (lo == n)
		return (double)(rd ? v[n - 1].rd : v[n - 1].ticks);
	double f = (double)(x - v[lo - 1].ts) / (double)(v[lo].ts - v[lo - 1].ts);
	double p = (double)(rd ? v[lo - 1].rd : v[lo - 1].ticks), q = (double)(rd ? v[lo].rd : v[lo].ticks);

	return p + f * (q - p);
}

static double raw_ticks(const struct raw_sample *v, size_t n, uint64_t x)
{
	return raw_value(v, n, x, 0);
}

static void test_thread_samples(void)
{
	enum { NT = 3, NS = 200 };
	static struct raw_sample raw[NT][NS];
	static const uint32_t pids[NT] = { PID, PID, PID + 1 }, tids[NT] = { PID, PID + 7, PID + 1 };
	struct trace t;
	struct analysis a;
	unsigned seed = 12345, bad = 0, badwin = 0, windows = 0;

	begin();
	for (int k = 0; k < 4; k++)
		kernel(1000 * MS + (uint64_t)k * 10 * MS, 5 * MS, "k", 132);
	for (int i = 0; i < NS; i++)
		for (int th = 0; th < NT; th++) {
			struct raw_sample *r = &raw[th][i];

			seed = seed * 1103515245u + 12345u;
			r->ts = (i ? raw[th][i - 1].ts : 900 * MS) + 1 * MS + (seed >> 8) % (40 * MS);
			r->ticks = (i ? raw[th][i - 1].ticks : 0) + (seed >> 4) % 3;
			r->pid = pids[th];
			r->tid = tids[th];
			r->state = "RSDt"[(seed >> 12) % 4];
			/* the run-queue wait changes in about half the samples, by up to 40 ms */
			r->rd = (i ? raw[th][i - 1].rd : 0) + ((seed >> 14) % 2 ? (seed >> 3) % (40 * MS) : 0);
			thread_rd(r->ts, r->pid, r->tid, r->state, r->ticks, r->rd);
		}
	thread_rd(raw[0][NS - 1].ts - 5 * MS, PID, PID, 'S', raw[0][NS - 1].ticks, raw[0][NS - 1].rd); /* back in time */
	end(&t, &a);
	CHECK(t.threads.n == NT && t.nsamples == NT * NS + 1 && t.samples_back_in_time == 1,
	      "%zu threads, %llu samples, %llu back in time", t.threads.n,
	      (unsigned long long)t.nsamples, (unsigned long long)t.samples_back_in_time);
	for (size_t th = 0; th < t.threads.n && th < NT; th++) {
		struct sample_iter it;
		size_t i = 0;

		sample_at(&it, &t.threads.v[th], 0);
		do {
			const struct raw_sample *r = &raw[th][i < NS ? i : NS - 1];

			bad += i < NS && (it.s.ts != r->ts || it.s.cpu_ticks != r->ticks ||
					  it.s.state != r->state || it.s.tid != r->tid || it.s.run_delay != r->rd);
			i++;
		} while (sample_next(&it));
		bad += i != NS + (th == 0);
	}
	CHECK(bad == 0 && t.threads.v[0].n == NS + 1 && t.threads.v[0].last.ts == raw[0][NS - 1].ts,
	      "samples read back as written (%u wrong), the late one at its predecessor's time", bad);
	CHECK(a.warnings.n >= 1 && strstr(a.warnings.v[a.warnings.n - 1], "1 thread samples went back"),
	      "the report says a sample went back in time");
	a.main_pid = PID;
	a.main_tid = PID + 7;
	for (int wi = 0; wi < 300; wi++) {
		uint64_t w0 = 890 * MS + (uint64_t)wi * 9 * MS, w1 = w0 + 40 * MS;
		double m, wk, want_m = 0, want_w = 0, want_job = 0, want_train = 0;
		unsigned want_r = 0;
		struct rq_window q;

		cpu_cores_split(&a, w0, w1, &m, &wk);
		run_queue_split(&a, w0, w1, &q);
		for (int th = 0; th < NT; th++) {
			double d = raw_ticks(raw[th], NS, w1) - raw_ticks(raw[th], NS, w0);
			double rq = (raw_value(raw[th], NS, w1, 1) - raw_value(raw[th], NS, w0, 1)) / (double)(w1 - w0);

			want_job += rq;
			if (tids[th] == PID + 7)
				want_train = rq;
			size_t lo = 0;

			if (pids[th] == PID)
				want_m += d;
			else
				want_w += d;
			while (lo < NS && raw[th][lo].ts <= w0)
				lo++;
			int run = lo > 0 && raw[th][lo - 1].state == 'R';

			for (size_t i = lo; !run && i < NS && raw[th][i].ts <= w1; i++)
				run = raw[th][i].state == 'R';
			want_r += (unsigned)run;
		}
		want_m *= a.clk_tck_ns / (double)(w1 - w0);
		want_w *= a.clk_tck_ns / (double)(w1 - w0);
		/* the first thread's last sample went back: leave its end out */
		if (w1 >= raw[0][NS - 1].ts - 5 * MS)
			continue;
		windows++;
		badwin += fabs(m - want_m) > 1e-9 || fabs(wk - want_w) > 1e-9 ||
			  runnable_threads(&a, w0, w1) != want_r || fabs(q.job_wait - want_job) > 1e-9 ||
			  fabs(q.train_wait - want_train) > 1e-9;
	}
	CHECK(badwin == 0 && windows >= 200,
	      "CPU time, run-queue waits and runnable threads in %u windows as computed directly (%u wrong)",
	      windows, badwin);
	analysis_free(&a);
	trace_free(&t);
}

/* Synthetic: the reorder buffer alone. Groups of 20 operations arriving
 * in descending order, two by two with equal starts (more descending
 * arrivals than it keeps sorted runs, so some are inserted): everything
 * comes out, in (start, arrival) order, holding about a window's worth. */
struct ro_out {
	uint64_t n, bad, last_start, last_seq;
};

static void ro_collect(void *ctx, const struct gpu_op *o)
{
	struct ro_out *c = ctx;

	/* o->stream carries the arrival index */
	if (c->n && (o->start < c->last_start || (o->start == c->last_start && o->stream < c->last_seq)))
		c->bad++;
	c->last_start = o->start;
	c->last_seq = o->stream;
	c->n++;
}

static void test_reorder(void)
{
	struct reorder ro = { .window = 1000 };
	struct ro_out c = { 0 };
	uint32_t i = 0;

	for (uint64_t k = 0; k < 200; k++)
		for (uint64_t j = 0; j < 20; j++, i++) {
			struct gpu_op o = { .start = 10000 + k * 1000 + (19 - j) / 2 * 10, .stream = i };

			o.end = o.start + 1;
			reorder_push(&ro, &o, ro_collect, &c);
		}
	reorder_flush(&ro, ro_collect, &c);
	CHECK(c.n == 4000 && c.bad == 0 && !ro.violated,
	      "reorder: %llu of 4000 out, %llu out of order, %zu inserted", (unsigned long long)c.n,
	      (unsigned long long)c.bad, ro.inserts);
	CHECK(ro.inserts > 0 && ro.peak <= 40, "more descending arrivals than runs: %zu inserted, %zu held at most",
	      ro.inserts, ro.peak);
	reorder_free(&ro);
}

/* A synthetic run on two GPUs: 300 steps of 6 kernels (one with a gap
 * before it) per GPU. `scramble`: each GPU's operations are written in blocks
 * of 50 in reverse, as CUPTI hands buffers back out of order. */
static void two_gpu_steps(int scramble)
{
	enum { STEPS = 300, K = 6, N = STEPS * K, BLOCK = 50 };
	static uint64_t st[2][N], en[2][N];
	static const char *names[K] = { "fwd_a", "fwd_b", "fwd_c", "bwd_a", "bwd_b", "opt" };

	for (int d = 0; d < 2; d++) {
		uint64_t ts = 1000 * MS;

		for (int i = 0; i < N; i++) {
			if (i % K == 0)
				ts += 300 * US; /* input wait before each step */
			st[d][i] = ts;
			en[d][i] = ts + 100 * US;
			ts += 105 * US;
		}
	}
	for (int b = 0; b < N; b += BLOCK)
		for (int d = 0; d < 2; d++)
			for (int j = 0; j < BLOCK; j++) {
				int i = scramble ? b + BLOCK - 1 - j : b + j;

				dev_kernel((uint64_t)d, st[d][i], en[d][i], names[i % K], 64, 7);
			}
}

/* The analysis does not depend on the order operations arrive in: the
 * same run written in order and scrambled gives the same steps, idle
 * attribution and findings, and the second reading held only about a block
 * of operations at once, not the run. */
static void test_arrival_order(void)
{
	struct trace t[2];
	struct analysis a[2];

	for (int k = 0; k < 2; k++) {
		begin();
		two_gpu_steps(k);
		end(&t[k], &a[k]);
	}
	CHECK(a[0].steps.n >= 290 && a[0].steps.n == a[1].steps.n && a[0].t0 == a[1].t0 &&
		      a[0].t1 == a[1].t1,
	      "steps %zu / %zu, same window", a[0].steps.n, a[1].steps.n);
	CHECK(!memcmp(a[0].idle_by_cause, a[1].idle_by_cause, sizeof(a[0].idle_by_cause)) &&
		      a[0].idle_ns > 0 && a[0].dev[1].busy_ns == a[1].dev[1].busy_ns &&
		      a[0].dev[1].steady_busy_ns == a[1].dev[1].steady_busy_ns,
	      "same attribution (idle %llu / %llu ns)", (unsigned long long)a[0].idle_ns,
	      (unsigned long long)a[1].idle_ns);
	int same = a[0].findings.n == a[1].findings.n && a[0].findings.n > 0;

	for (size_t i = 0; same && i < a[0].findings.n; i++)
		same = !strcmp(a[0].findings.v[i].rule_id, a[1].findings.v[i].rule_id) &&
		       a[0].findings.v[i].saved_ns == a[1].findings.v[i].saved_ns &&
		       !strcmp(a[0].findings.v[i].evidence, a[1].findings.v[i].evidence);
	CHECK(same, "same %zu findings", a[0].findings.n);
	CHECK(t[0].ops.n == 0 && t[1].ops.n == 0, "operations not kept in memory");
	CHECK(t[0].scan->late_ns[0] == 0 && t[1].scan->late_ns[0] > 4 * MS,
	      "lateness measured: %llu ns in order, %llu ns scrambled",
	      (unsigned long long)t[0].scan->late_ns[0], (unsigned long long)t[1].scan->late_ns[0]);
	CHECK(t[1].scan->replay_peak > 0 && t[1].scan->replay_peak <= 100,
	      "at most %zu operations of a GPU held at once (of 1800)", t[1].scan->replay_peak);
	for (int k = 0; k < 2; k++) {
		analysis_free(&a[k]);
		trace_free(&t[k]);
	}
}

/* A run longer than the step finder's prefix: the marker is chosen on the
 * prefix, and the steps still cover the whole run; with a prefix of the
 * whole run the result is the same. When the prefix's process is not the
 * main process, the main GPU is read again for it. */
static void test_step_prefix(void)
{
	struct trace t[2];
	struct analysis a[2];
	size_t saved = step_prefix_ops;

	for (int k = 0; k < 2; k++) {
		step_prefix_ops = k ? 500 : saved;
		begin();
		two_gpu_steps(1);
		end(&t[k], &a[k]);
	}
	CHECK(a[1].steps.n == a[0].steps.n && a[1].t0 == a[0].t0 && a[1].t1 == a[0].t1 &&
		      !strcmp(a[1].step_marker, a[0].step_marker) &&
		      !memcmp(a[0].idle_by_cause, a[1].idle_by_cause, sizeof(a[0].idle_by_cause)),
	      "prefix of 500 of 1800 operations: %zu steps (whole run: %zu), marker %s / %s, "
	      "t0 %llu / %llu, t1 %llu / %llu, idle %llu / %llu",
	      a[1].steps.n, a[0].steps.n, a[1].step_marker, a[0].step_marker,
	      (unsigned long long)a[1].t0, (unsigned long long)a[0].t0, (unsigned long long)a[1].t1,
	      (unsigned long long)a[0].t1, (unsigned long long)a[1].idle_ns,
	      (unsigned long long)a[0].idle_ns);
	for (int k = 0; k < 2; k++) {
		analysis_free(&a[k]);
		trace_free(&t[k]);
	}

	/* GPU 0: process 401 first (fills the prefix), process 402 after it with
	 * more operations in all: the steps are 402's */
	struct trace tp;
	struct analysis ap;
	uint64_t ts = 1000 * MS;

	step_prefix_ops = 100;
	begin();
	for (int p = 0; p < 2; p++) {
		struct gw_writer wp;
		int steps = p ? 60 : 30;

		gw_writer_init(&wp, fd, 401 + (uint32_t)p, 0, 1 << 16);
		for (int s2 = 0; s2 < steps; s2++) {
			for (int k = 0; k < 4; k++, ts += 1 * MS) {
				char nm[16];

				snprintf(nm, sizeof(nm), "%s_%d", p ? "b" : "a", k);
				uint64_t v[GW_KERNEL_NF] = { ts, ts + 900 * US, gw_intern(&wp, nm), 0, 1, 7,
							     64, 1, 1, 256, 1, 1, (uint64_t)k + 1, 32, 0, 0 };

				gw_emit(&wp, GW_REC_KERNEL, v, GW_KERNEL_NF);
			}
			ts += 2 * MS;
		}
		gw_flush(&wp);
		gw_writer_free(&wp);
	}
	end(&tp, &ap);
	step_prefix_ops = saved;
	CHECK(ap.main_pid == 402 && ap.steps.n >= 55 && ap.step_marker[0] == 'b',
	      "main process %u, %zu steps marked by %s", ap.main_pid, ap.steps.n, ap.step_marker);
	analysis_free(&ap);
	trace_free(&tp);
}

/* Every real recording: the second reading gives each GPU's operations in
 * exactly the order a stable sort of the whole timeline gives (CUPTI's
 * buffers arrive up to a second out of order in most of them). */
struct order_check {
	const struct trace *t;
	size_t next[GW_MAX_GPUS];
	uint64_t seen, wrong;
};

static void check_order(void *ctx, const struct gpu_op *o)
{
	struct order_check *c = ctx;
	size_t i = c->next[o->dev]++;

	c->seen++;
	if (i >= c->t->ops.n || c->t->ops.v[i].dev != o->dev || c->t->ops.v[i].start != o->start ||
	    c->t->ops.v[i].end != o->end || c->t->ops.v[i].name != o->name ||
	    c->t->ops.v[i].pid != o->pid || c->t->ops.v[i].kind != o->kind)
		c->wrong++;
}

static void replay_order_on(struct trace *t, const char *name, void *ctx)
{
	unsigned *late = ctx;
	struct analysis a;
	struct order_check c = { t, { 0 }, 0, 0 };
	struct op_sinks k = { check_order, NULL, NULL, &c, NULL };
	size_t first = 0;
	char err[256];

	analyze(t, &a, 0); /* sorts the kept operations */
	for (unsigned dev = 0; dev < GW_MAX_GPUS; dev++) { /* each device's first index */
		c.next[dev] = first;
		while (first < t->ops.n && t->ops.v[first].dev == dev)
			first++;
	}
	CHECK(timeline_replay(t, UINT32_MAX, &k, err, sizeof(err)) == 0 && c.seen == t->ops.n &&
		      c.wrong == 0,
	      "%s: %llu of %zu operations read again, %llu out of place", name,
	      (unsigned long long)c.seen, t->ops.n, (unsigned long long)c.wrong);
	for (unsigned dev = 0; dev < GW_MAX_GPUS; dev++)
		*late += t->scan->late_ns[dev] > 100 * MS;
	analysis_free(&a);
}

static void test_real_replay_order(void)
{
	unsigned late = 0, files = each_fixture(TRACE_KEEP_OPS, 1, replay_order_on, &late);

	CHECK(files >= 15 && late >= 8, "%u real recordings checked, %u GPUs with operations over "
					"100 ms late", files, late);
}

/* The warning before loading a recording too large for the memory left. */
static void test_memory_note(void)
{
	char msg[512];

	CHECK(!report_memory_note(msg, sizeof(msg), "small.gwr", 100u << 20, 8ull << 30, 0),
	      "100 MB with 8 GiB available: no warning");
	CHECK(!report_memory_note(msg, sizeof(msg), "big.gwr", 1ull << 30, 4ull << 30, 0),
	      "1 GiB with 4 GiB available: no warning (the operations are not held)");
	CHECK(report_memory_note(msg, sizeof(msg), "big.gwr", 2ull << 30, 4ull << 30, 0) &&
		      strstr(msg, "big.gwr is 2.1 GB") && strstr(msg, "about 6.4 GB") &&
		      strstr(msg, "--duty"),
	      "2 GiB with 4 GiB available: %s", msg);
	CHECK(report_memory_note(msg, sizeof(msg), "big.gwr", 1ull << 30, 4ull << 30, 1) &&
		      strstr(msg, "about 12.9 GB") && strstr(msg, "--trace"),
	      "1 GiB with --trace and 4 GiB available: %s", msg);
	CHECK(!report_memory_note(msg, sizeof(msg), "x.gwr", 2ull << 30, 0, 0), "unknown memory: no warning");
}


/* Synthetic: 100 steps of 8 ms (2 ms of kernels, 6 ms idle) on 8 CPUs; the
 * training thread is busy on the CPU (about 1.25 cores) and never waits for
 * a core; 240 parked runtime threads wake for an instant each step (sampled
 * 'R') and never wait either. With run-queue waits recorded that is host
 * work, not oversubscription; without them the runnable-thread count says
 * C7, at low confidence, and says that the delay was not recorded. */
static void parked_threads(int schedstat)
{
	uint64_t ts = 1000 * MS, ticks = 0;

	begin();
	if (schedstat)
		gw_emit_meta(&w, "record.schedstat", "yes");
	for (int s = 0; s < 100; s++) {
		copy(ts, 100 * US, 1, 2, 3, 4 << 20, 1);
		kernel(ts + 100 * US, 1900 * US, "conv", 1024);
		for (int k = 0; k < 4; k++)
			thread_rd(ts + 2 * MS + (uint64_t)k * 2 * MS, PID, PID, 'R', ticks, schedstat ? 5 * US : 0);
		ticks += 1;
		thread_rd(ts + 8 * MS - 1, PID, PID, 'R', ticks, schedstat ? 5 * US : 0);
		for (uint32_t k = 0; k < 240; k++) {
			thread_rd(ts + 3 * MS, PID, PID + 1 + k, 'R', 0, schedstat ? 1 * US : 0);
			thread_rd(ts + 3 * MS + 100 * US, PID, PID + 1 + k, 'S', 0, schedstat ? 1 * US : 0);
		}
		ts += 8 * MS;
	}
}

static void test_parked_threads_not_oversubscription(void)
{
	struct trace t;
	struct analysis a;
	const struct finding *f;

	parked_threads(1);
	end(&t, &a);
	CHECK(a.rq_known, "run-queue waits recorded");
	CHECK(a.idle_by_cause[IDLE_OVERSUB] == 0 && !finding_of(&a, "C7"),
	      "240 parked threads and a busy main thread: no C7 (oversubscription idle %.1f ms)",
	      a.idle_by_cause[IDLE_OVERSUB] / 1e6);
	CHECK(top(&a) && !strcmp(top(&a)->cause, "C1"), "host work on the training thread instead (top %s)",
	      top(&a) ? top(&a)->rule_id : "-");
	analysis_free(&a);
	trace_free(&t);

	parked_threads(0);
	end(&t, &a);
	f = finding_of(&a, "C7");
	CHECK(!a.rq_known && f && f->confidence == CONF_LOW &&
		      strstr(f->evidence, "Run-queue delay was not recorded"),
	      "without run-queue waits: C7 from the thread count, low confidence, and it says why (%s)",
	      f ? f->evidence : "no C7");
	analysis_free(&a);
	trace_free(&t);
}

/* Synthetic: the same steps; the training thread is runnable all the time
 * but gets a core only 40% of it: it waits on a run queue 60% of the time
 * (3.6 ms of each 6 ms gap). C7, with the delay figures. */
static void test_run_queue_delay_oversubscription(void)
{
	struct trace t;
	struct analysis a;
	uint64_t t0 = 1000 * MS, ts = t0;
	const struct finding *f;

	begin();
	for (int s = 0; s < 100; s++) {
		kernel(ts, 2 * MS, "step_kernel", 1024);
		ts += 8 * MS;
	}
	for (uint64_t x = t0 - 40 * MS; x < ts + 40 * MS; x += 2 * MS) /* 0.4 cores: a tick per 25 ms */
		thread_rd(x, PID, PID, 'R', (x - (t0 - 40 * MS)) / (25 * MS), (x - (t0 - 40 * MS)) * 6 / 10);
	for (uint64_t x = t0 - 100 * MS, k = 0; x < ts + 100 * MS; x += 20 * MS, k++) {
		/* the machine: 8 CPUs, all busy (kept one sample per 100 ms) */
		uint64_t v[GW_SCPU_NF] = { x, 16 * k, 0, 0, 0, 0, 0, 0, 0, 8 };

		gw_emit(&w, GW_REC_SYS_CPU, v, GW_SCPU_NF);
	}
	end(&t, &a);
	f = finding_of(&a, "C7");
	double share = (double)a.idle_by_cause[IDLE_OVERSUB] / (double)a.idle_ns;
	double per_step = a.oversub.train_wait_ns / (double)a.steps.n;

	CHECK(share > 0.95, "idle attributed to oversubscription: %.2f", share);
	CHECK(f && top(&a) == f, "C7 ranks first (top %s)", top(&a) ? top(&a)->rule_id : "-");
	CHECK(per_step > 3.5 * MS && per_step < 3.7 * MS, "training thread waited %.2f ms per step (want 3.6)",
	      per_step / 1e6);
	CHECK(f && strstr(f->evidence, "waited on a CPU run queue for 3.6 ms per step") &&
		      strstr(f->evidence, "(60% of that idle time)") && f->confidence == CONF_HIGH &&
		      strstr(f->evidence, "CPUs were idle 0% of that time (saturated)"),
	      "evidence gives the delay: %s", f ? f->evidence : "none");
	analysis_free(&a);
	trace_free(&t);
}

/* Synthetic: 60 steps of 10 ms; every 10th is followed by 40 ms with no GPU
 * work, in which a thread sits in state D while the job reads (reads = 1)
 * or writes (reads = 0) 64 MiB, in two proc_io samples; reads = 2: it
 * writes 64 MiB and reads 64 KiB (a checkpoint's metadata). */
static void io_stalls(int reads)
{
	uint64_t ts = 1000 * MS, done = 0, meta = 0;

	begin();
	thread_rd(ts - 50 * MS, PID, PID, 'S', 0, 0);
	proc_io(ts - 50 * MS, PID, 0, 0);
	for (int s = 0; s < 60; s++) {
		kernel(ts, 5 * MS, "train_a", 528);
		kernel(ts + 5 * MS, 5 * MS, "train_b", 528);
		ts += 10 * MS;
		if (s % 10 == 9) {
			thread_rd(ts + 1 * MS, PID, PID + 1, 'D', 0, 0);
			for (int k = 1; k <= 2; k++) {
				done += 32 << 20;
				meta += 32 << 10;
				proc_io(ts + (uint64_t)k * 15 * MS, PID, reads == 1 ? done : reads == 2 ? meta : 0,
					reads == 1 ? 0 : done);
			}
			thread_rd(ts + 39 * MS, PID, PID + 1, 'S', 0, 0);
			ts += 40 * MS;
		}
	}
}

static void test_checkpoint_writes_not_storage_reads(void)
{
	struct trace t;
	struct analysis a;
	const struct finding *f;

	io_stalls(0);
	end(&t, &a);
	f = finding_of(&a, "C14");
	CHECK(a.idle_by_cause[IDLE_IO] == 0 && !finding_of(&a, "C2"), "writes are no storage reads (%.1f ms)",
	      a.idle_by_cause[IDLE_IO] / 1e6);
	CHECK(a.idle_by_cause[IDLE_WRITE] > 190 * MS && a.write_occurrences == 5 &&
		      a.io_write_bytes == 5.0 * (64 << 20),
	      "file writes: %.1f ms idle, %u occurrences, %.0f bytes", a.idle_by_cause[IDLE_WRITE] / 1e6,
	      a.write_occurrences, a.io_write_bytes);
	CHECK(f && strstr(f->title, "checkpoint / file writes") &&
		      strstr(f->evidence, "wrote 64.0 MiB per occurrence") && strstr(f->fix, "checkpoints"),
	      "C14 names the checkpoint writes: %s / %s", f ? f->title : "none", f ? f->evidence : "");
	analysis_free(&a);
	trace_free(&t);

	/* ... and the few KiB read meanwhile (metadata) do not make them reads */
	io_stalls(2);
	end(&t, &a);
	CHECK(a.idle_by_cause[IDLE_IO] == 0 && !finding_of(&a, "C2") && a.idle_by_cause[IDLE_WRITE] > 190 * MS,
	      "writes with 64 KiB read: storage reads %.1f ms, writes %.1f ms", a.idle_by_cause[IDLE_IO] / 1e6,
	      a.idle_by_cause[IDLE_WRITE] / 1e6);
	analysis_free(&a);
	trace_free(&t);

	io_stalls(1);
	end(&t, &a);
	f = finding_of(&a, "C2");
	CHECK(a.idle_by_cause[IDLE_WRITE] == 0 && a.idle_by_cause[IDLE_IO] > 190 * MS,
	      "reads: storage reads %.1f ms", a.idle_by_cause[IDLE_IO] / 1e6);
	CHECK(f && a.io_read_bytes == 5.0 * (64 << 20) && strstr(f->evidence, "read 320.0 MiB from storage") &&
		      !strstr(f->evidence, " 0 B"),
	      "C2 gives the bytes read: %s", f ? f->evidence : "none");
	analysis_free(&a);
	trace_free(&t);
}

/* Synthetic: as io_stalls(1), but the training thread runs on its CPU the
 * whole time (a core's worth of ticks) and no thread is ever in D: the
 * 64 MiB read in each 40 ms gap went on beside its own work, which is what
 * the GPU waited for. */
static void test_reads_beside_cpu_work(void)
{
	struct trace t;
	struct analysis a;
	uint64_t ts = 1000 * MS, t0 = ts - 50 * MS, done = 0;

	begin();
	proc_io(t0, PID, 0, 0);
	for (int s = 0; s < 60; s++) {
		kernel(ts, 5 * MS, "train_a", 528);
		kernel(ts + 5 * MS, 5 * MS, "train_b", 528);
		ts += 10 * MS;
		if (s % 10 == 9) {
			for (int k = 1; k <= 2; k++) {
				done += 32 << 20;
				proc_io(ts + (uint64_t)k * 15 * MS, PID, done, 0);
			}
			ts += 40 * MS;
		}
	}
	for (uint64_t x = t0; x < ts + 50 * MS; x += 5 * MS) /* a core: a tick per 10 ms */
		thread_rd(x, PID, PID, 'R', (x - t0) / (10 * MS), 0);
	end(&t, &a);
	/* the gaps recur every 10 steps: the periodic pass takes them from the
	 * thread's CPU work, as it would not take storage reads */
	CHECK(a.idle_by_cause[IDLE_IO] == 0 && !finding_of(&a, "C2") &&
		      a.idle_by_cause[IDLE_HOST_COMPUTE] + a.idle_by_cause[IDLE_PERIODIC] > 190 * MS,
	      "reads beside the training thread's CPU work: storage %.1f ms, its work %.1f ms",
	      a.idle_by_cause[IDLE_IO] / 1e6,
	      (a.idle_by_cause[IDLE_HOST_COMPUTE] + a.idle_by_cause[IDLE_PERIODIC]) / 1e6);
	analysis_free(&a);
	trace_free(&t);
}

/* Synthetic: as above, with another thread of the job in D through each
 * gap (a pool's process paging in its libraries) while the training thread
 * runs on its CPU and is never in D: the reads were not in its way. The same
 * gaps with the training thread itself in D are storage reads. */
static void test_reads_beside_other_in_d(void)
{
	struct trace t;
	struct analysis a;

	for (int own_d = 0; own_d < 2; own_d++) {
		uint64_t ts = 1000 * MS, t0 = ts - 50 * MS, done = 0, ticks = 0;

		begin();
		proc_io(t0, PID, 0, 0);
		for (int s = 0; s < 60; s++) {
			kernel(ts, 5 * MS, "train_a", 528);
			kernel(ts + 5 * MS, 5 * MS, "train_b", 528);
			for (uint64_t x = ts; x < ts + 10 * MS; x += 5 * MS)
				thread_rd(x, PID, PID, 'R', ticks++ / 2, 0);
			ts += 10 * MS;
			if (s % 7 == 6) { /* not periodic enough to be its own pass's */
				for (int k = 1; k <= 2; k++) {
					done += 32 << 20;
					proc_io(ts + (uint64_t)k * 15 * MS, PID, done, 0);
				}
				for (uint64_t x = ts; x < ts + 40 * MS; x += 5 * MS) {
					thread_rd(x, PID, PID + 5, 'D', 0, 0);
					thread_rd(x, PID, PID, own_d ? 'D' : 'R', own_d ? ticks / 2 : ticks++ / 2, 0);
				}
				ts += 40 * MS;
			}
		}
		thread_rd(ts + 50 * MS, PID, PID, 'R', ticks / 2, 0);
		end(&t, &a);
		if (!own_d)
			CHECK(a.idle_by_cause[IDLE_IO] == 0 && !finding_of(&a, "C2"),
			      "another thread in D, the training thread on its CPU: storage %.1f ms (want none)",
			      a.idle_by_cause[IDLE_IO] / 1e6);
		else
			CHECK(a.idle_by_cause[IDLE_IO] > 190 * MS, "the training thread in D: storage %.1f ms",
			      a.idle_by_cause[IDLE_IO] / 1e6);
		analysis_free(&a);
		trace_free(&t);
	}
}

/* Synthetic: the data-loading steps, with the main process's libraries
 * recorded: every fix is in that framework's words. JAX (with PyTorch also
 * mapped for its DataLoader, and no ATen kernels) and CUDA C never say
 * "torch"; and every entry of the advice table for them, used or not. */
static void framework_run(unsigned libs, const char *python, const char *kname, struct trace *t,
			  struct analysis *a)
{
	uint64_t ts = 1000 * MS, ticks = 0;

	begin();
	if (libs)
		proc_libs(PID, libs, python);
	for (int s = 0; s < 100; s++) {
		copy(ts, 1 * MS, 1, 1, 3, 4 << 20, 0); /* pageable, 4 GB/s */
		kernel(ts + 1 * MS, 1 * MS, kname, 1024);
		for (int k = 0; k < 4; k++)
			thread(ts + 2 * MS + (uint64_t)k * 2 * MS, PID, PID, 'R', ticks);
		ticks += 1;
		thread(ts + 8 * MS - 1, PID, PID, 'R', ticks);
		ts += 8 * MS;
	}
	end(t, a);
}

static int fixes_mention(const struct analysis *a, const char *word)
{
	for (size_t i = 0; i < a->findings.n; i++)
		if (strstr(a->findings.v[i].fix, word))
			return 1;
	return 0;
}

static void test_framework_advice(void)
{
	static const struct {
		unsigned libs;
		const char *python, *kernel;
		enum framework want;
	} cases[] = {
		{ GW_LIB_JAX | GW_LIB_TORCH | GW_LIB_PYTHON | GW_LIB_CUDA, "3.12", "loop_fusion", FW_JAX },
		{ GW_LIB_CUDA | GW_LIB_CUDART, NULL, "my_conv_kernel", FW_CUDA_C },
		{ GW_LIB_JAX | GW_LIB_TORCH | GW_LIB_PYTHON, "3.11",
		  "_ZN2at6native29vectorized_elementwise_kernel", FW_TORCH },
		{ GW_LIB_CUPY | GW_LIB_PYTHON, "3.10", "cupy_add", FW_CUPY },
		{ 0, NULL, "_ZN2at6native29vectorized_elementwise_kernel", FW_TORCH },
		{ 0, NULL, "my_conv_kernel", FW_UNKNOWN },
	};

	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		struct trace t;
		struct analysis a;

		framework_run(cases[c].libs, cases[c].python, cases[c].kernel, &t, &a);
		CHECK(a.framework == cases[c].want && !strcmp(a.python, cases[c].python ? cases[c].python : "") &&
			      !strcmp(a.framework_source, cases[c].libs ? "libraries"
						     : cases[c].want == FW_TORCH ? "kernel names" : "none"),
		      "case %zu: framework %s (want %s), Python '%s', from %s", c, framework_name(a.framework),
		      framework_name(cases[c].want), a.python, a.framework_source);
		CHECK(finding_of(&a, "C1") && finding_of(&a, "C6"), "case %zu: C1 and C6 found", c);
		if (a.framework == FW_JAX || a.framework == FW_CUDA_C || a.framework == FW_CUPY)
			CHECK(!fixes_mention(&a, "torch") && !fixes_mention(&a, "DataLoader(") &&
				      !fixes_mention(&a, "pin_memory"),
			      "case %zu (%s): no PyTorch words in any fix", c, framework_name(a.framework));
		if (a.framework == FW_JAX)
			CHECK(fixes_mention(&a, "jax.device_put"), "JAX advice speaks JAX");
		if (a.framework == FW_CUDA_C)
			CHECK(fixes_mention(&a, "cudaMallocHost"), "CUDA C advice speaks CUDA");
		if (a.framework == FW_TORCH)
			CHECK(fixes_mention(&a, "pin_memory=True"), "PyTorch advice keeps its wording");
		analysis_free(&a);
		trace_free(&t);
	}
	/* the whole table: no PyTorch words outside PyTorch's column */
	unsigned bad = 0;

	for (int what = 0; what < ADV_N; what++)
		for (int fw = 0; fw < FW_NFRAMEWORKS; fw++) {
			const char *text = advice((enum advice)what, (enum framework)fw);

			if (!text || !*text || (fw != FW_TORCH && (strstr(text, "torch") || strstr(text, "Torch")))) {
				printf("advice %d for %s: %s\n", what, framework_name((enum framework)fw), text);
				bad++;
			}
		}
	CHECK(bad == 0, "%u advice texts empty or in another framework's words", bad);
}

int main(void)
{
	int tmp = mkstemp(path);

	if (tmp < 0)
		return 1;
	close(tmp);
	test_healthy();
	test_launch_bound();
	test_launch_bound_with_callbacks();
	test_graph_launch_trace_cost();
	test_sync_stall();
	test_sync_stall_host_bound();
	test_main_process();
	test_periodic();
	test_gap_inside_pageable_copy();
	test_gap_inside_pinned_copy();
	test_gap_inside_sync();
	test_irregular_long_steps_not_periodic();
	test_data_loading();
	test_other_rank_not_loader();
	test_launch_blocking();
	test_straggler();
	test_op_stats_second_gpu();
	test_lost_tail();
	test_data_notes();
	test_duty_windows();
	test_step_stats();
	test_sort_ops();
	test_no_gpu();
	test_unmerged_parts();
	test_real_recording_metadata_changed_by_test();
	test_real_queue_full();
	test_real_gaps_agree();
	test_thread_samples();
	test_reorder();
	test_arrival_order();
	test_step_prefix();
	test_real_replay_order();
	test_memory_note();
	test_parked_threads_not_oversubscription();
	test_run_queue_delay_oversubscription();
	test_checkpoint_writes_not_storage_reads();
	test_reads_beside_cpu_work();
	test_reads_beside_other_in_d();
	test_framework_advice();
	unlink(path);
	T_DONE();
}
