/* SYNTHETIC crafted recordings (tests/unit/crafted.h): small files shaped to
 * make a not near-linear analysis slow or make it allocate far beyond the
 * file's size. Asserted on the work done (reorder-heap moves, hash probes)
 * and on the memory held, never on time (bench/crafted.sh times them). */
#include <malloc.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analyze/analyze.h"
#include "analyze/internal.h"
#include "t.h"
#include "crafted.h"

static char path[] = "/tmp/gw-test-crafted-XXXXXX";

/* Bytes the allocator holds now. */
static size_t held(void)
{
	struct mallinfo2 m = mallinfo2();

	return m.uordblks + m.hblkhd;
}

struct run {
	struct trace t;
	struct analysis a;
	size_t file_bytes, held_bytes; /* the recording; memory held once analyzed */
	int ret;
};

/* Writes crafted recording `kind` of size n, loads and analyzes it. */
static void run(struct run *r, enum crafted_kind kind, unsigned n)
{
	char err[256];
	struct stat st;
	size_t before = held();
	int fd = mkstemp(path);

	memset(r, 0, sizeof(*r));
	close(fd);
	crafted_write(path, kind, n);
	stat(path, &st);
	r->file_bytes = (size_t)st.st_size;
	r->ret = trace_load(&r->t, path, err, sizeof(err));
	if (r->ret == 0)
		r->ret = analyze(&r->t, &r->a, 0);
	r->held_bytes = held() - before;
	unlink(path);
	strcpy(path, "/tmp/gw-test-crafted-XXXXXX");
}

static void done(struct run *r)
{
	analysis_free(&r->a);
	trace_free(&r->t);
}

/* n log2 n, the most a heap may move n operations. */
static double nlogn(double n)
{
	return n * log2(n);
}

/* Kernels in descending time order: every arrival starts before all those
 * held, so it fits no sorted run of the reorder buffer. Inserting each into
 * a sorted array moved n^2/2 entries; the heap moves at most n log n. */
static void test_descending(void)
{
	const unsigned n = 20000;
	struct run r;

	run(&r, CRAFTED_DESCENDING, n);
	CHECK(r.ret == 0 && r.t.nops == n, "descending: loaded %llu of %u kernels (ret %d)",
	      (unsigned long long)r.t.nops, n, r.ret);
	CHECK(r.t.scan->replay_inserts > n / 2 && r.t.scan->replay_sifts <= 2 * nlogn(n),
	      "descending: %zu arrivals into the heap, %llu heap moves (bound %.0f)",
	      r.t.scan->replay_inserts, (unsigned long long)r.t.scan->replay_sifts, 2 * nlogn(n));
	CHECK(r.a.dev[0].nkernels == n && r.a.dev[0].busy_ns == (uint64_t)n * 5000,
	      "descending: %llu kernels, busy %llu ns (want %u, %llu)",
	      (unsigned long long)r.a.dev[0].nkernels, (unsigned long long)r.a.dev[0].busy_ns, n,
	      (unsigned long long)n * 5000);
	done(&r);
}

/* 2,000 process streams of 100 kernels over one time span: the reorder
 * buffer holds them all (each stream arrives late against the last). */
static void test_streams(void)
{
	const unsigned n = 2000;
	struct run r;

	run(&r, CRAFTED_STREAMS, n);
	CHECK(r.ret == 0 && r.t.nops == 100ull * n, "streams: loaded %llu of %u kernels (ret %d)",
	      (unsigned long long)r.t.nops, 100 * n, r.ret);
	CHECK(r.t.scan->replay_sifts <= 2 * nlogn(100.0 * n),
	      "streams: %llu heap moves for %u operations (bound %.0f)",
	      (unsigned long long)r.t.scan->replay_sifts, 100 * n, 2 * nlogn(100.0 * n));
	done(&r);
}

/* 50,000 processes, each with a thread sample and an I/O sample: process
 * lookups go through one hash table (a scan per record was quadratic), and
 * what the analysis holds per process stays small. */
static void test_processes(void)
{
	const unsigned n = 50000;
	struct run r;

	run(&r, CRAFTED_PROCESSES, n);
	CHECK(r.ret == 0 && r.t.procs.n == n && r.t.threads.n == n,
	      "processes: %zu processes, %zu threads of %u (ret %d)", r.t.procs.n, r.t.threads.n, n,
	      r.ret);
	CHECK(r.t.proc_index.probes <= 4ull * n && hmap_longest_run(&r.t.proc_index) <= 64,
	      "processes: %llu probes for %u processes, longest run %zu",
	      (unsigned long long)r.t.proc_index.probes, n, hmap_longest_run(&r.t.proc_index));
	CHECK(r.held_bytes <= 32 * r.file_bytes + (8u << 20),
	      "processes: %.1f MiB held for a %.1f MiB file (bound 32x + 8 MiB)", r.held_bytes / 1048576.0,
	      r.file_bytes / 1048576.0);
	done(&r);
}

/* Python frame and stack ids of 2^26 (the largest a writer may make) in 4
 * streams: ids map through a hash, not arrays sized by the id (256 MiB per
 * stream before). */
static void test_py_ids(void)
{
	struct run r;

	run(&r, CRAFTED_PY_IDS, 4);
	CHECK(r.ret == 0 && r.t.py_nodes.n == 5, "py_ids: %zu stack nodes (want 4 and the root), ret %d",
	      r.t.py_nodes.n, r.ret);
	CHECK(r.held_bytes <= (8u << 20), "py_ids: %.1f MiB held for a %zu-byte file",
	      r.held_bytes / 1048576.0, r.file_bytes);
	done(&r);
}

/* 100,000 NVTX ranges open at once, closed in the order opened: each end
 * finds its start through a hash (a scan of the open ones from the newest
 * was quadratic). */
static void test_markers(void)
{
	const unsigned n = 100000;
	struct run r;

	run(&r, CRAFTED_MARKERS, n);
	CHECK(r.ret == 0 && r.t.markers.n == n && r.t.markers.v[0].end - r.t.markers.v[0].start == 1000000000ull,
	      "markers: %zu ranges of %u (ret %d)", r.t.markers.n, n, r.ret);
	done(&r);
}

/* A fresh recording path from the template (mkstemp fills it in). */
static void fresh_path(void)
{
	strcpy(path, "/tmp/gw-test-crafted-XXXXXX");
	close(mkstemp(path));
}

/* Synthetic: 200 steps of 4 ms, a 3 ms matrix kernel `gemm` then a 1 ms
 * elementwise kernel `add`, written, loaded and analyzed into t and a. */
static void gemm_add_steps(const char *gemm, const char *add, struct trace *t, struct analysis *a)
{
	struct gw_writer w;
	char err[256];
	int fd;

	fresh_path();
	fd = synth_begin(&w, path, 100, 81559, 700000);
	for (unsigned i = 0; i < 200; i++) {
		uint64_t t0 = 1000000000ull + (uint64_t)i * 4000000ull;
		const char *names[2] = { gemm, add };
		const uint64_t at[2] = { 0, 3000000 }, dur[2] = { 3000000, 1000000 };

		for (int j = 0; j < 2; j++) {
			uint64_t v[GW_KERNEL_NF] = { t0 + at[j], t0 + at[j] + dur[j], gw_intern(&w, names[j]),
						     0, 1, 7, 264, 1, 1, 256, 1, 1, 0, 32, 0, 0 };

			gw_emit(&w, GW_REC_KERNEL, v, GW_KERNEL_NF);
		}
	}
	gw_flush(&w);
	gw_writer_free(&w);
	close(fd);
	CHECK(trace_load(t, path, err, sizeof(err)) == 0 && analyze(t, a, 0) == 0, "%s steps: %s", gemm, err);
	unlink(path);
}

/* Synthetic: matrix kernels on FP32 data run as TF32 (cuDNN's default in
 * PyTorch) take 3 ms of each 4 ms step, an elementwise kernel whose name
 * says no type the rest: C8 fires on them at bf16's twice the rate, and the
 * FP32 job's elementwise kernel moves half the bytes, 2 ms a step saved,
 * 2x; the same steps in bf16 give no C8. */
static void test_tf32_precision(void)
{
	static const char *const mm[2] = {
		"sm90_xmma_fprop_implicit_gemm_f32f32_tf32f32_f32_nhwckrsc_nhwc_tilesize128x128x32_warpgroupsize1x1x1_g1",
		"sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1" };

	CHECK(classify_kernel(mm[0]) == KC_MATMUL_TF32 && classify_kernel(mm[1]) == KC_MATMUL_TC &&
	      classify_kernel("sm80_xmma_gemm_f32f32_f32f32_f32_nt_n_ffma") == KC_MATMUL_FP32,
	      "TF32, bf16 and FP32 matrix kernels told apart");
	for (int k = 0; k < 2; k++) {
		struct trace t;
		struct analysis a;

		gemm_add_steps(mm[k], "vectorized_elementwise_kernel", &t, &a);
		const struct finding *f = finding_of(&a, "C8");

		if (k == 0)
			CHECK(f && strstr(f->title, "TF32") && f->speedup > 1.9 && f->speedup < 2.1,
			      "TF32 steps: C8 '%s' %.2fx (want about 2x)", f ? f->title : "none",
			      f ? f->speedup : 0);
		else
			CHECK(!f, "bf16 steps: no C8 (%s)", f ? f->title : "none");
		analysis_free(&a);
		trace_free(&t);
	}
}

/* Two streams of one GPU running the same three kernels each iteration,
 * overlapping in time: the steps are the iterations (the same kernel on two
 * streams is two operations, not one repeated), and the shares of the GPU's
 * time are of the union of busy time (200% of it in FP32 before). */
static void test_overlapping_streams(void)
{
	const unsigned iters = 100;
	struct gw_writer w;
	struct trace t;
	struct analysis a;
	char err[256];
	int fd = mkstemp(path);

	close(fd);
	fd = synth_begin(&w, path, 100, 81559, 700000);
	for (unsigned i = 0; i < iters; i++) {
		uint64_t t0 = 1000000000ull + (uint64_t)i * 10000000ull;

		for (uint64_t s = 0; s < 2; s++) {
			static const char *const names[3] = { "volta_sgemm_128x64_nn", "volta_sgemm_64x64_tn",
							      "vectorized_elementwise_kernel" };
			static const uint64_t at[3] = { 0, 3100000, 6200000 }, dur[3] = { 3000000, 3000000,
											  1000000 };

			for (int k = 0; k < 3; k++) {
				uint64_t v[GW_KERNEL_NF] = { t0 + at[k] + s * 1000, t0 + at[k] + s * 1000 + dur[k],
							     gw_intern(&w, names[k]), 0, 1, 7 + s, 264, 1, 1,
							     256, 1, 1, 0, 32, 0, 0 };

				gw_emit(&w, GW_REC_KERNEL, v, GW_KERNEL_NF);
			}
		}
	}
	gw_flush(&w);
	gw_writer_free(&w);
	close(fd);
	CHECK(trace_load(&t, path, err, sizeof(err)) == 0 && analyze(&t, &a, 0) == 0, "overlap: %s", err);
	CHECK(a.step_iterations == iters && has_steps(&a) < iters && has_steps(&a) >= iters - 2,
	      "overlap: %zu steps, %llu iterations (want %u)", has_steps(&a),
	      (unsigned long long)a.step_iterations, iters);
	CHECK(a.ops.class_ns[KC_MATMUL_FP32] <= (double)a.busy_ns && a.dev[0].kernel_ns <= a.dev[0].busy_ns,
	      "overlap: FP32 %.0f ns and kernels %llu ns of %llu busy", a.ops.class_ns[KC_MATMUL_FP32],
	      (unsigned long long)a.dev[0].kernel_ns, (unsigned long long)a.busy_ns);
	const struct finding *f = finding_of(&a, "C8");

	CHECK(f && atoi(strstr(f->title, ": ") + 2) <= 100, "overlap: C8 says '%s'", f ? f->title : "nothing");
	analysis_free(&a);
	trace_free(&t);
	unlink(path);
	strcpy(path, "/tmp/gw-test-crafted-XXXXXX");
}

/* The table itself: keys that share their low bits (tids that are multiples
 * of 2^16) do not line up in one probe run. */
static void test_hmap(void)
{
	struct hmap m = { 0 };
	int ok = 1;

	for (uint64_t i = 1; i <= 20000; i++)
		ok &= hmap_put(&m, i << 16, i) == 0;
	for (uint64_t i = 1; i <= 20000; i++)
		ok &= hmap_get(&m, i << 16) == i;
	CHECK(ok && hmap_get(&m, 12345) == 0, "hmap: every key found, an absent one not");
	CHECK(m.probes <= 4 * 20000 && hmap_longest_run(&m) <= 64,
	      "hmap: %llu probes for 20000 keys sharing their low bits, longest run %zu",
	      (unsigned long long)m.probes, hmap_longest_run(&m));
	for (uint64_t i = 1; i <= 20000; i += 2)
		hmap_del(&m, i << 16);
	ok = m.n == 10000;
	for (uint64_t i = 1; i <= 20000; i++)
		ok &= hmap_get(&m, i << 16) == (i % 2 ? 0 : i);
	CHECK(ok, "hmap: after deleting every other key, %zu left and each found or not as it should", m.n);
	hmap_free(&m);
}

/* Synthetic: a kernel named after the user's function ("dense_kernel")
 * takes the whole of each 7 ms step, GPM sampled every 100 ms. Launched with
 * a tiled matrix kernel's resources (186 registers, 64 KiB of shared memory)
 * while the counters read the FP32 pipes 65% busy and the tensor cores
 * idle, it is FP32 matrix work: C8, its time replayed at the tensor cores'
 * rate. The same kernel with the tensor cores 70% busy (a bf16 kernel), or
 * with an elementwise kernel's resources (17 registers, 1 KiB: an FP32
 * compute loop), is not. */
static void counted_kernel(const char *name, unsigned regs, unsigned shmem, unsigned tensor_x100,
			   unsigned fp32_x100, struct trace *t, struct analysis *a)
{
	struct gw_writer w;
	char err[256];
	int fd;

	fresh_path();
	fd = synth_begin(&w, path, 100, 143771, 700000);
	for (unsigned i = 0; i < 400; i++) {
		uint64_t t0 = 1000000000ull + (uint64_t)i * 7000000ull;
		uint64_t v[GW_KERNEL_NF] = { t0, t0 + 6999000, gw_intern(&w, name), 0, 1, 7, 512, 16, 1,
					     256, 1, 1, 0, regs, shmem, 0 };

		gw_emit(&w, GW_REC_KERNEL, v, GW_KERNEL_NF);
	}
	for (uint64_t ts = 1000000000ull; ts < 1000000000ull + 400 * 7000000ull; ts += 100000000ull) {
		uint64_t v[GW_GPM_NF] = { ts, 0, 0x1ff, 9900, 1200, tensor_x100, 1500, fp32_x100, 0, 0, 0, 0 };

		gw_emit(&w, GW_REC_GPM, v, GW_GPM_NF);
	}
	gw_flush(&w);
	gw_writer_free(&w);
	close(fd);
	CHECK(trace_load(t, path, err, sizeof(err)) == 0 && analyze(t, a, 0) == 0, "counted: %s", err);
	unlink(path);
}

static void counted_case(unsigned regs, unsigned shmem, unsigned tensor_x100, struct trace *t,
			 struct analysis *a)
{
	counted_kernel("dense_kernel", regs, shmem, tensor_x100, 6500, t, a);
}

static void test_counted_fp32(void)
{
	struct trace t;
	struct analysis a;
	const struct finding *f;

	counted_case(186, 65536, 0, &t, &a);
	f = finding_of(&a, "C8");
	CHECK(a.fp32_counted.ns > 0.9 * (double)a.busy_ns && a.fp32_counted.fp32 > 64 && a.fp32_counted.fp32 < 66,
	      "tiled, FP32 pipes busy: %.0f of %llu ns counted as FP32 matrix work (FP32 pipes %.0f%%)",
	      a.fp32_counted.ns, (unsigned long long)a.busy_ns, a.fp32_counted.fp32);
	CHECK(f && f->severity == SEV_HIGH && f->speedup > 5 && strstr(f->evidence, "dense_kernel") &&
	      strstr(f->fix, "input_precision"),
	      "C8 on it, replayed at the tensor cores' rate: %s %.2fx", f ? f->evidence : "none",
	      f ? f->speedup : 0);
	CHECK(!finding_of(&a, "C3"), "no C3 from its time (its grids were never measured as matrix kernels)");
	analysis_free(&a);
	trace_free(&t);

	counted_case(186, 65536, 7000, &t, &a);
	CHECK(!(a.fp32_counted.ns > 0) && !finding_of(&a, "C8"), "tensor cores busy: not FP32 (%.0f ns counted)",
	      a.fp32_counted.ns);
	analysis_free(&a);
	trace_free(&t);

	counted_case(17, 1024, 0, &t, &a);
	CHECK(!(a.fp32_counted.ns > 0) && !finding_of(&a, "C8"), "an elementwise kernel's resources: not matrix "
	      "work (%.0f ns counted)", a.fp32_counted.ns);
	analysis_free(&a);
	trace_free(&t);
}

/* Synthetic: cuBLAS's FP32 SIMT GEMM by name, the whole of each step. With
 * the FP32 pipes 65% busy (GPM) its math limits it: C8, at the tensor cores'
 * rate. With them 7% busy (tiny batched products, as a Kalman filter's 4 x 4
 * covariances: latency, not math) tensor cores would not run it faster: no
 * C8. cuBLAS's GEMV on floats names no precision but its template's float
 * operands: FP32, not a tensor-core kernel; on halves, not FP32. */
static void test_fp32_pipes(void)
{
	static const char gemm[] = "sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize32x32x8_stage3_warpsize1x2x1_"
				   "ffma_aligna4_alignc4_execute_kernel__5x_cublas";
	struct trace t;
	struct analysis a;
	const struct finding *f;

	counted_kernel(gemm, 128, 16384, 0, 6500, &t, &a);
	f = finding_of(&a, "C8");
	CHECK(a.fp32_pipes.intervals >= 20 && a.fp32_pipes.share > 0.63 && a.fp32_pipes.share < 0.67 && f && f->speedup > 3,
	      "FP32 pipes busy: C8 %.2fx (pipes %.2f of the kernels' time over %u intervals)", f ? f->speedup : 0,
	      a.fp32_pipes.share, a.fp32_pipes.intervals);
	analysis_free(&a);
	trace_free(&t);

	counted_kernel(gemm, 128, 16384, 0, 700, &t, &a);
	CHECK(a.fp32_pipes.share > 0.06 && a.fp32_pipes.share < 0.08 && !finding_of(&a, "C8"),
	      "FP32 pipes quiet: no C8 (pipes %.2f of the kernels' time)", a.fp32_pipes.share);
	analysis_free(&a);
	trace_free(&t);

	CHECK(classify_kernel("_ZN8internal5gemvx6kernelIiiffffLb1ELb1ELb1ELb0ELi5ELb0E18cublasGemvParamsExIi30cublas"
			      "GemvTensorStridedBatchedIKfES5_S3_IfEfEEENSt9enable_ifIXT5_EvE4typeET11_") ==
		      KC_MATMUL_FP32 &&
	      classify_kernel("_ZN8internal5gemvx6kernelIii6__halfS1_ffLb0ELb1ELb1ELb0ELi6ELb0E18cublasGemvParamsEx") !=
		      KC_MATMUL_FP32,
	      "cuBLAS's GEMV on floats is FP32 matrix work, on halves not");
}

/* Synthetic: a stencil time-stepped by five hand-written kernels of no
 * known family ("flux_x" ... "update": 32 registers, no shared memory),
 * 1 ms each, one grid, back to back: 5 ms a step, GPM sampled every 100 ms.
 * Where the counters read DRAM 80% busy with the tensor cores and the FP32
 * pipes quiet, they are memory-bound: elementwise, a chain of five each
 * step (a kernel's next run starts the next), fused into one pass: 5x.
 * With DRAM 20% busy (compute-bound kernels) they are not. */
static void stencil_case(unsigned dram_x100, struct trace *t, struct analysis *a)
{
	static const char *const names[5] = { "flux_x_kernel", "flux_y_kernel", "source_kernel", "halo_kernel",
					      "update_kernel" };
	struct gw_writer w;
	char err[256];
	int fd;

	fresh_path();
	fd = synth_begin(&w, path, 100, 143771, 700000);
	for (unsigned i = 0; i < 400; i++)
		for (unsigned k = 0; k < 5; k++) {
			uint64_t t0 = 1000000000ull + (uint64_t)i * 5000000ull + k * 1000000ull;
			uint64_t v[GW_KERNEL_NF] = { t0 + 2000, t0 + 1000000, gw_intern(&w, names[k]), 0, 1, 7, 4096, 1, 1,
						     256, 1, 1, 0, 32, 0, 0 };

			gw_emit(&w, GW_REC_KERNEL, v, GW_KERNEL_NF);
		}
	for (uint64_t ts = 1000000000ull; ts < 1000000000ull + 400 * 5000000ull; ts += 100000000ull) {
		uint64_t v[GW_GPM_NF] = { ts, 0, 0x1ff, 9900, 6000, 0, dram_x100, 1000, 0, 0, 0, 0 };

		gw_emit(&w, GW_REC_GPM, v, GW_GPM_NF);
	}
	gw_flush(&w);
	gw_writer_free(&w);
	close(fd);
	CHECK(trace_load(t, path, err, sizeof(err)) == 0 && analyze(t, a, 0) == 0, "stencil: %s", err);
	unlink(path);
}

static void test_counted_membound(void)
{
	struct trace t;
	struct analysis a;
	const struct finding *f;

	stencil_case(8000, &t, &a);
	f = finding_of(&a, "C11");
	CHECK(a.mem_counted.ns > 0.9 * (double)a.busy_ns && a.mem_counted.dram > 79 && a.mem_counted.dram < 81,
	      "DRAM busy, pipes quiet: %.0f of %llu ns counted memory-bound (DRAM %.0f%%)", a.mem_counted.ns,
	      (unsigned long long)a.busy_ns, a.mem_counted.dram);
	CHECK(f && f->replayed && f->speedup > 4.5 && f->speedup < 5.5 && strstr(f->evidence, "no known family"),
	      "C11 on them, a chain of five a step fused: %.2fx (want 5x; %s)", f ? f->speedup : 0,
	      f ? f->evidence : "none");
	analysis_free(&a);
	trace_free(&t);

	stencil_case(2000, &t, &a);
	CHECK(!(a.mem_counted.ns > 0) && !finding_of(&a, "C11"), "DRAM 20%% busy: not memory-bound (%.0f ns)",
	      a.mem_counted.ns);
	analysis_free(&a);
	trace_free(&t);
}

/* Synthetic: a model left in float64, every 4 ms step a 3 ms FP64 GEMM (DMMA
 * tensor cores: "f64f64") and a 1 ms elementwise add on doubles. C8 names the
 * float64 model and replays the GEMM at the 16-bit tensor cores' rate and the
 * add at a quarter of its bytes: about 4 / (0.3 + 0.25) = 7x. The same steps
 * with the add on floats and the GEMM in bf16 give no C8; the names are told
 * apart as such. */
static void test_float64_model(void)
{
	static const char *const add_d =
		"_ZN2at6native29vectorized_elementwise_kernelILi2ENS0_15CUDAFunctor_addIdEESt5arrayIPcLm3EEEEviT0_T1_";
	static const char *const add_f =
		"_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_15CUDAFunctor_addIfEESt5arrayIPcLm3EEEEviT0_T1_";
	static const char *const gemm_d =
		"sm90_xmma_gemm_f64f64_f64f64_f64_nn_n_tilesize64x128x16_stage3_warpsize2x2x1_tensor16x8x8_execute";

	CHECK(classify_kernel(gemm_d) == KC_MATMUL_FP64 &&
	      classify_kernel("_ZN7cutlass7Kernel2I49cutlass_80_tensorop_d884gemm_64x32_16x4_tn_align1EEvNT_6ParamsE") ==
		      KC_MATMUL_FP64,
	      "FP64 matrix kernels told apart");
	CHECK(kernel_on_doubles(add_d) && !kernel_on_doubles(add_f) && classify_kernel(add_d) == KC_ELEMENTWISE,
	      "an add on doubles told from one on floats");
	for (int k = 0; k < 2; k++) {
		struct trace t;
		struct analysis a;

		gemm_add_steps(k ? "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64" : gemm_d, k ? add_f : add_d,
			       &t, &a);
		const struct finding *f = finding_of(&a, "C8");

		if (!k)
			CHECK(f && strstr(f->title, "float64") && f->speedup > 5 && f->speedup < 9 &&
			      strstr(f->fix, "float64"),
			      "C8 on the float64 model: %s %.2fx", f ? f->title : "none", f ? f->speedup : 0);
		else
			CHECK(!f, "bf16 GEMM, float add: no C8 (%s)", f ? f->title : "none");
		analysis_free(&a);
		trace_free(&t);
	}
}

/* Synthetic: a model in float32, every 4 ms step a 3 ms FP32 GEMM (SIMT:
 * "f32f32", no tensor cores) and a 1 ms elementwise add on floats. C8's
 * replay runs the GEMM at the 16-bit tensor cores' rate (10x) and, as autocast
 * makes the GEMM's output 16-bit, the add on half the bytes: 4 / (0.3 + 0.5)
 * = 5x (3.1x with the add kept). A kernel of 16-bit data with a float
 * accumulator is not one on floats. */
static void test_float32_activations(void)
{
	static const char *const add_f =
		"_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_15CUDAFunctor_addIfEESt5arrayIPcLm3EEEEviT0_T1_";
	static const char *const add_d =
		"_ZN2at6native29vectorized_elementwise_kernelILi2ENS0_15CUDAFunctor_addIdEESt5arrayIPcLm3EEEEviT0_T1_";
	static const char *const ln_bf16 =
		"_ZN2at6native53_GLOBAL__N__21739cd4_20_layer_norm_kernel_cu_9c5ada8a28vectorized_layer_norm_kernelIN3c10"
		"8BFloat16EfLb0EEEviT0_PKT_S8_S8_PS5_S9_PS6_";
	struct trace t;
	struct analysis a;

	CHECK(kernel_on_floats(add_f) && !kernel_on_floats(add_d) && !kernel_on_floats(ln_bf16) &&
	      kernel_on_floats("cupy_multiply__float32_float32_float32") &&
	      !kernel_on_floats("cupy_multiply__float16_float16_float16"),
	      "kernels on floats told apart: add %d, on doubles %d, bf16 layer norm %d",
	      kernel_on_floats(add_f), kernel_on_floats(add_d), kernel_on_floats(ln_bf16));
	gemm_add_steps("sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize128x128x8_stage3_warpsize2x2x1_ffma", add_f, &t,
		       &a);
	const struct finding *f = finding_of(&a, "C8");

	CHECK(f && f->replayed && f->speedup > 4.5 && f->speedup < 5.5,
	      "C8 with the add on half the bytes: %.2fx (want 4 / 0.8 = 5x)", f ? f->speedup : 0);
	analysis_free(&a);
	trace_free(&t);
	/* XLA's fusion names no type; beside FP32 matrix work with no 16-bit
	 * tensor-core kernel, the job computes in float32 throughout */
	CHECK(kernel_untyped("loop_add_fusion") && !kernel_untyped(add_f) &&
	      !kernel_untyped("cupy_multiply__float32_float32_float32"), "kernels whose names say no type");
	gemm_add_steps("sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize128x128x8_stage3_warpsize2x2x1_ffma",
		       "loop_add_fusion", &t, &a);
	f = finding_of(&a, "C8");
	CHECK(f && f->replayed && f->speedup > 4.5 && f->speedup < 5.5,
	      "C8 with XLA's add in an FP32 job on half the bytes: %.2fx (want 5x)", f ? f->speedup : 0);
	analysis_free(&a);
	trace_free(&t);
}

/* A foreach optimizer's kernels are elementwise work a fused optimizer does
 * in one pass; a fused optimizer's own kernel is not a fusion candidate. */
static void test_foreach_kernels(void)
{
	static const char *const fe =
		"_ZN2at6native57_GLOBAL__N__e658eeb9_24_ForeachBinaryOpScalar_cu_86b9896c25multi_tensor_apply_kernelINS1_"
		"18TensorListMetadataILi1EEENS1_21BinaryOpScalarFunctorIfLi1ELi1ELi0EEEJSt10multipliesIfEfEEEvT_T0_DpT1_";
	static const char *const fused =
		"_ZN2at6native12_GLOBAL__N_125multi_tensor_apply_kernelINS1_18TensorListMetadataILi4EEENS1_"
		"20FusedAdamMathFunctorIfLi4ELNS0_8ADAM_MODEE1ELb0EEEJPfdddddbbS8_S8_EEEvT_T0_DpT1_";

	CHECK(classify_kernel(fe) == KC_ELEMENTWISE && kernel_updates_params(fe), "foreach: elementwise, the "
	      "parameters' (%d)", classify_kernel(fe));
	CHECK(classify_kernel(fused) == KC_OTHER && kernel_updates_params(fused), "fused Adam: other (%d)",
	      classify_kernel(fused));
}

int main(void)
{
	test_hmap();
	test_descending();
	test_streams();
	test_processes();
	test_py_ids();
	test_markers();
	test_overlapping_streams();
	test_tf32_precision();
	test_counted_fp32();
	test_fp32_pipes();
	test_counted_membound();
	test_float64_model();
	test_float32_activations();
	test_foreach_kernels();
	T_DONE();
}
