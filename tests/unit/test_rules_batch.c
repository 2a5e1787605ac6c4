/* C3 (small batch), C4 (launch overhead), C10 (a loop of small kernels) and C13 (power/thermal limits) on
 * SYNTHETIC recordings: each test writes a small made-up timeline with the
 * recording writer, loads it, analyzes it, and asserts on the findings, their
 * order and their gains. Real recordings are tested in tests/golden/. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analyze/analyze.h"
#include "analyze/internal.h"
#include "format/format.h"
#include "t.h"
#include "synth.h"

#define PID 100
#define US 1000ull
#define MS 1000000ull

static char path[] = "/tmp/gw-test-rules-batch-XXXXXX";
static struct gw_writer w;
static int fd;

/* A synthetic H200-like GPU: 132 SMs, 141 GiB, default power limit 700 W,
 * set to limit_mw. */
static void begin(uint64_t limit_mw)
{
	fd = synth_begin(&w, path, PID, 143771, limit_mw);
}

static void kernel(uint64_t start, uint64_t dur, const char *name, unsigned blocks)
{
	synth_kernel(&w, start, dur, name, blocks);
}

/* An NVML sample of GPU 0: clock, clock event reasons, memory in use, busy. */
static void nvml(uint64_t ts, unsigned mhz, uint64_t reasons, uint64_t mem_mib)
{
	uint64_t v[GW_GPU_NF] = { ts, 0, 0xff, mhz, 3200, reasons, 650000, 60, mem_mib, 100, 30 };

	gw_emit(&w, GW_REC_GPU, v, GW_GPU_NF);
}

static void end(struct trace *t, struct analysis *a)
{
	char err[256];

	gw_flush(&w);
	gw_writer_free(&w);
	close(fd);
	CHECK(trace_load(t, path, err, sizeof(err)) == 0, "load: %s", err);
	analyze(t, a, 0);
}

static const struct finding *top(const struct analysis *a)
{
	for (size_t i = 0; i < a->findings.n; i++)
		if (a->findings.v[i].assessed && a->findings.v[i].title[0])
			return &a->findings.v[i];
	return NULL;
}

/* 50 steps of four 2 ms GEMMs that fill the GPU, back to back (400 ms), and
 * 40 NVML samples over them: the first `limited` with `reasons` at `mhz`,
 * the rest unlimited at 1980 MHz. */
static void gemm_run(uint64_t limit_mw, int limited, uint64_t reasons, unsigned mhz)
{
	uint64_t ts = 1000 * MS;

	begin(limit_mw);
	for (int s = 0; s < 50; s++)
		for (int k = 0; k < 4; k++) {
			char nm[32];

			snprintf(nm, sizeof(nm), "sm90_xmma_gemm_bf16_%d", k);
			kernel(ts, 2 * MS, nm, 1024);
			ts += 2 * MS + 2 * US;
		}
	for (int i = 0; i < 40; i++)
		nvml(1000 * MS + (uint64_t)i * 10 * MS, i < limited ? mhz : 1980, i < limited ? reasons : 0,
		     20000);
}

/* Synthetic: sustained GEMMs at the default power limit, the software power
 * cap in 30 of 40 busy samples: information, no warning, no gain. */
static void test_power_cap_default_is_info(void)
{
	struct trace t;
	struct analysis a;

	gemm_run(700000, 30, 0x4, 1800);
	end(&t, &a);
	const struct finding *f = finding_of(&a, "C13");

	CHECK(f && f->severity == SEV_INFO, "C13 at the default limit is info (%d)", f ? (int)f->severity : -1);
	CHECK(f && f->saved_ns == 0 && f->speedup == 1.0, "no gain claimed (%.3fx)", f ? f->speedup : 0);
	CHECK(f && strstr(f->title, "75%") && strstr(f->title, "expected under sustained full load"),
	      "title says the share and that it is expected: %s", f ? f->title : "-");
	CHECK(!has_warning_or_above(&a), "no warning (top %s)", top(&a) ? top(&a)->rule_id : "-");
	CHECK(a.combined_saved_ns == 0, "nothing in the combined estimate (%.0f ns)", a.combined_saved_ns);
	analysis_free(&a);
	trace_free(&t);
}

/* Synthetic: the same load with the limit lowered to 450 W: a warning, and
 * the gain of every power-capped sample: 75% x (1 - 1485/1980) = 18.75% of
 * the busy time. */
static void test_power_cap_lowered_limit_warns(void)
{
	struct trace t;
	struct analysis a;

	gemm_run(450000, 30, 0x4, 1485);
	end(&t, &a);
	const struct finding *f = finding_of(&a, "C13");
	double share = f ? f->saved_ns / (double)a.busy_ns : 0;

	CHECK(f && f->severity >= SEV_WARN, "C13 with a lowered limit warns (%d)", f ? (int)f->severity : -1);
	CHECK(share > 0.18 && share < 0.195, "saved %.3f of busy (want 0.1875)", share);
	CHECK(f && strstr(f->evidence, "below the default 700 W"), "evidence names the limit: %s",
	      f ? f->evidence : "-");
	CHECK(a.combined_saved_ns > 0, "in the combined estimate");
	analysis_free(&a);
	trace_free(&t);
}

/* Synthetic: thermal slowdown (SwThermal) at the default limit in 20 of 40
 * samples at 1485 MHz: a warning, 50% x 25% = 12.5% of the busy time. */
static void test_thermal_warns(void)
{
	struct trace t;
	struct analysis a;

	gemm_run(700000, 20, 0x20, 1485);
	end(&t, &a);
	const struct finding *f = finding_of(&a, "C13");
	double share = f ? f->saved_ns / (double)a.busy_ns : 0;

	CHECK(f && f->severity >= SEV_WARN, "thermal slowdown warns (%d)", f ? (int)f->severity : -1);
	CHECK(share > 0.12 && share < 0.13, "saved %.3f of busy (want 0.125)", share);
	CHECK(f && strstr(f->evidence, "thermal"), "evidence says thermal: %s", f ? f->evidence : "-");
	analysis_free(&a);
	trace_free(&t);
}

/* Synthetic: the power cap and a hardware slowdown together in the same
 * samples (0x4 | 0x8) at the default limit: the slowdown makes it a warning. */
static void test_hw_slowdown_with_cap_warns(void)
{
	struct trace t;
	struct analysis a;

	gemm_run(700000, 30, 0x4 | 0x8, 1485);
	end(&t, &a);
	const struct finding *f = finding_of(&a, "C13");

	CHECK(f && f->severity >= SEV_WARN && f->saved_ns > 0, "HW slowdown warns with a gain");
	analysis_free(&a);
	trace_free(&t);
}

/* 200 steps of 30 kernels separated by `gap` ns of host issuing: a step
 * marker, then matrix kernels (`mm`, `mm_blocks` blocks, `mm_ns` long) every
 * third kernel and 2 us elementwise kernels of `ew_blocks` blocks between;
 * NVML sees `mem_mib` in use. */
static void host_issued_steps(const char *mm, unsigned mm_blocks, uint64_t mm_ns, unsigned ew_blocks,
			      uint64_t gap, uint64_t mem_mib)
{
	uint64_t ts = 1000 * MS;

	begin(700000);
	for (int s = 0; s < 200; s++) {
		kernel(ts, 2 * US, "step_begin", 4);
		ts += 2 * US + gap;
		for (int k = 1; k < 30; k++) {
			int is_mm = k % 3 == 0;
			uint64_t d = is_mm ? mm_ns : 2 * US;

			kernel(ts, d, is_mm ? mm : k % 2 ? "vectorized_elementwise_kernel_mul" :
				      "vectorized_elementwise_kernel_add", is_mm ? mm_blocks : ew_blocks);
			ts += d + gap;
		}
	}
	for (int i = 0; i < 20; i++)
		nvml(1000 * MS + (uint64_t)i * 5 * MS, 1980, 0, mem_mib);
}

/* Synthetic small batch: 4 us GEMMs of 96 blocks on 132 SMs (73% fill, as
 * nvjet's 64x32 tiles at batch 4 on an H200),
 * 8 us of host issuing between kernels (the GPU waits ~75% of the run), 2 GiB
 * of 141 in use: C3 first, with the launch gaps; C4 below it, its evidence
 * saying that C3 counts the same gaps. */
static void test_small_batch_ranks_first(void)
{
	struct trace t;
	struct analysis a;

	host_issued_steps("nvjet_sm90_tst_64x32_64x16_2x4_h_bz_NNT", 96, 4 * US, 8, 8 * US, 2048);
	end(&t, &a);
	const struct finding *c3 = finding_of(&a, "C3"), *c4 = finding_of(&a, "C4");
	double launch = (double)a.idle_by_cause[IDLE_LAUNCH_OVERHEAD] / (double)a.steady_ns;

	CHECK(launch > 0.7 && launch < 0.8, "launch gaps %.2f of the run (want ~0.75)", launch);
	CHECK(top(&a) && !strcmp(top(&a)->cause, "C3"), "top %s (want C3)", top(&a) ? top(&a)->rule_id : "-");
	CHECK(c3 && c3->idle_ns > 0.95 * launch_idle_untraced(&a), "C3 takes the launch gaps (%.1f of %.1f ms)",
	      c3 ? c3->idle_ns / 1e6 : 0, launch_idle_untraced(&a) / 1e6);
	CHECK(c3 && c3->busy_ns > 0, "C3 counts the empty SMs too");
	CHECK(c3 && strstr(c3->title, "73%") && strstr(c3->title, "the host sets the step time"),
	      "C3 title: %s", c3 ? c3->title : "-");
	CHECK(c4 && c4->severity == SEV_INFO && strstr(c4->evidence, "counted in the gain of C3"),
	      "C4 below, noting C3's shared gaps: %s", c4 ? c4->evidence : "-");
	analysis_free(&a);
	trace_free(&t);
}

/* Synthetic op-by-op dispatch of a big batch: the same host-issued steps, but
 * the GEMMs launch 2048 blocks (a full wave and more): C4 only, no C3. */
static void test_big_batch_op_by_op_is_launch_bound(void)
{
	struct trace t;
	struct analysis a;

	host_issued_steps("nvjet_sm90_tst_256x128_64x4_2x1_v_bz_NNT", 2048, 15 * US, 1024, 8 * US, 2048);
	end(&t, &a);
	CHECK(top(&a) && !strcmp(top(&a)->cause, "C4"), "top %s (want C4)", top(&a) ? top(&a)->rule_id : "-");
	CHECK(!finding_of(&a, "C3"), "no C3 finding when GEMMs fill the SMs");
	CHECK(finding_of(&a, "C4") && finding_of(&a, "C4")->speedup > 1.5, "C4 keeps its gain (%.2fx)",
	      finding_of(&a, "C4") ? finding_of(&a, "C4")->speedup : 0);
	analysis_free(&a);
	trace_free(&t);
}

/* Synthetic: the small batch again, but 100 GiB of 141 in use: no room for
 * a bigger batch, so no C3; the gaps stay C4's. */
static void test_small_batch_needs_memory_headroom(void)
{
	struct trace t;
	struct analysis a;

	host_issued_steps("nvjet_sm90_tst_64x32_64x16_2x4_h_bz_NNT", 48, 4 * US, 8, 8 * US, 100 * 1024);
	end(&t, &a);
	CHECK(!finding_of(&a, "C3"), "no C3 without memory headroom");
	CHECK(top(&a) && !strcmp(top(&a)->cause, "C4"), "top %s (want C4)", top(&a) ? top(&a)->rule_id : "-");
	analysis_free(&a);
	trace_free(&t);
}

/* 100 steps of `layers` small layers (a 4 us GEMM of 48 blocks and two
 * 2 us elementwise kernels), 20 us of host issuing between kernels (more
 * than the cost per launch of gpuwhy's own tracing that a gain's range
 * allows for, TRACE_COST_HIGH_NS), after a step marker; the layers' grids change every `same` layers (a network's
 * stages), so a body of the same kernels with the same grids runs `same`
 * times in a row. */
static void layered_steps_from(int layers, int same, unsigned base, int split)
{
	uint64_t ts = 1000 * MS;

	begin(700000);
	for (int s = 0; s < 100; s++) {
		kernel(ts, 2 * US, "step_begin", 4);
		ts += 10 * US;
		for (int l = 0; l < layers; l++) {
			/* the stage's grid; with split, stages of 4 from layer 5 x same on */
			unsigned g = !split || l < 5 * same ? base + (unsigned)(l / same)
							    : base + 100 + (unsigned)((l - 5 * same) / 4);

			kernel(ts, 4 * US, "nvjet_sm90_tst_64x32_64x16_2x4_h_bz_NNT", 40 + g);
			ts += 24 * US;
			kernel(ts, 2 * US, "vectorized_elementwise_kernel_add", g);
			ts += 22 * US;
			kernel(ts, 2 * US, "vectorized_elementwise_kernel_mul", g);
			ts += 22 * US;
		}
	}
	for (int i = 0; i < 20; i++)
		nvml(1000 * MS + (uint64_t)i * 5 * MS, 1980, 0, 2048);
}

/* layers of small grids (8 blocks and up, on 132 SMs) */
static void layered_steps(int layers, int same)
{
	layered_steps_from(layers, same, 8, 0);
}

/* Synthetic: a cell run over 64 time steps (one body of three kernels, 64
 * times in a row) is a loop of small kernels, C10, ranked first; the same
 * names in 64 layers whose grids change every 4 layers (a deep network at a
 * small batch) are not a loop: C3 first, no C10. The loop finder counts a
 * body run 8 times in a row, and not one run 7 times. */
static void test_loop_against_layers(void)
{
	struct trace t;
	struct analysis a;

	layered_steps(64, 64);
	end(&t, &a);
	CHECK(a.ops.looped_kernels >= 0.95 * (double)a.ops.kernels, "the cell: %llu of %llu kernels in a loop",
	      (unsigned long long)a.ops.looped_kernels, (unsigned long long)a.ops.kernels);
	CHECK(top(&a) && !strcmp(top(&a)->cause, "C10"), "the cell: top %s (want C10)",
	      top(&a) ? top(&a)->rule_id : "-");
	CHECK(finding_of(&a, "C10") && strstr(finding_of(&a, "C10")->evidence, "repeated 8 times or more in a row"),
	      "C10 says what it found: %s", finding_of(&a, "C10") ? finding_of(&a, "C10")->evidence : "-");
	analysis_free(&a);
	trace_free(&t);

	layered_steps(64, 4);
	end(&t, &a);
	CHECK(a.ops.looped_kernels == 0, "the layers: %llu kernels in a loop (want none)",
	      (unsigned long long)a.ops.looped_kernels);
	CHECK(!finding_of(&a, "C10"), "the layers: no C10");
	CHECK(top(&a) && !strcmp(top(&a)->cause, "C3"), "the layers: top %s (want C3)",
	      top(&a) ? top(&a)->rule_id : "-");
	analysis_free(&a);
	trace_free(&t);

	/* 8 layers of a grid, then 7: the first body is a loop (24 kernels a
	 * step), the second is not */
	layered_steps(15, 8);
	end(&t, &a);
	CHECK(a.ops.looped_kernels >= 24 * 99 && a.ops.looped_kernels <= 24 * 100,
	      "8 copies a loop, 7 not: %llu kernels in loops (want 24 a step)",
	      (unsigned long long)a.ops.looped_kernels);
	analysis_free(&a);
	trace_free(&t);
}

/* Synthetic: the same loops with grids that fill the SMs (400 blocks and
 * up, 2-4 us kernels, the GPU waiting on launches most of the step: a scan
 * stepped over positions): with every kernel in the loop it is C10; with
 * five stages of 8 layers and six of 4 (62% of the kernels in a loop), a
 * deep network that is launch-bound, it is not, while the same layers with
 * small grids are (their SMs left empty). */
static void test_loop_of_full_grids(void)
{
	struct trace t;
	struct analysis a;

	layered_steps_from(64, 64, 400, 0);
	end(&t, &a);
	CHECK(a.ops.small_ns < 0.5 * (double)a.busy_ns, "full grids: %.0f%% of busy in small kernels",
	      100 * a.ops.small_ns / (double)a.busy_ns);
	CHECK(finding_of(&a, "C10") && finding_of(&a, "C10")->severity >= SEV_WARN, "the loop: C10 (top %s)",
	      top(&a) ? top(&a)->rule_id : "-");
	analysis_free(&a);
	trace_free(&t);

	layered_steps_from(64, 8, 400, 1);
	end(&t, &a);
	CHECK(!finding_of(&a, "C10"), "half of the kernels in a loop, full grids: no C10 (top %s)",
	      top(&a) ? top(&a)->rule_id : "-");
	analysis_free(&a);
	trace_free(&t);

	layered_steps_from(64, 8, 8, 1);
	end(&t, &a);
	CHECK(finding_of(&a, "C10") != NULL, "half of the kernels in a loop, small grids: C10 (top %s)",
	      top(&a) ? top(&a)->rule_id : "-");
	analysis_free(&a);
	trace_free(&t);
}

/* Matrix kernel names of cuBLAS, nvjet, CUTLASS, XLA and cuDNN on Hopper. */
static void test_matrix_kernel_names(void)
{
	static const char *const mm[] = {
		"nvjet_sm90_tst_64x32_64x16_2x4_h_bz_bias_TNT", "gemm_fusion_dot_6",
		"sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1",
		"_ZN8internal5gemvx6kernelIiiffffLb0ELb1ELb0ELb0ELi6ELb0E18cublasGemvParamsExIi30cublasGemvTensorStridedBatchedIKfES5_S3_IfEfEEENSt9enable_ifIXntT",
		"_ZN8cublasLt19splitKreduce_kernelILi32ELi16Ei13__nv_bfloat16S1_fS1_Lb0ES1_S1_S1_Lb1ELb0ELb0ELb0EEEvNS_18cublasSplitKParamsIT4_EE",
		"_Z33convolve_common_engine_float_NHWCI13__nv_bfloat16S0_Li128ELi5ELi5ELi3ELi3ELi3ELb1ELb0ELb0ELb0ELb0EEviiiPKT_S3_iPT0_",
		"cutlass_80_tensorop_s16816gemm_bf16_128x128_32x3_nn_align8",
	};
	static const char *const other[] = { "wrapped_convert_2", "loop_add_fusion_12",
					     "_Z11scal_kernelIffLi1ELb1ELi6ELi5ELi5ELi3EEv21cublasTransposeParamsIT0_EPKT_PS3_PKS1_" };

	for (size_t i = 0; i < sizeof(mm) / sizeof(mm[0]); i++) {
		enum kclass c = classify_kernel(mm[i]);

		CHECK(c == KC_MATMUL_TC || c == KC_MATMUL_FP32, "matrix kernel %s -> %d", mm[i], (int)c);
	}
	CHECK(classify_kernel(mm[4]) == KC_MATMUL_TC, "bf16 split-K is tensor-core work");
	for (size_t i = 0; i < sizeof(other) / sizeof(other[0]); i++) {
		enum kclass c = classify_kernel(other[i]);

		CHECK(c != KC_MATMUL_TC && c != KC_MATMUL_FP32, "not a matrix kernel: %s -> %d", other[i], (int)c);
	}
	/* elementwise and reductions of every framework (C11's family) */
	static const char *const ew[] = { "wrapped_subtract", "wrapped_exp_3", "loop_add_fusion_12",
					  "input_reduce_fusion_1", "triton_poi_fused_add_mul_0",
					  "triton_red_fused_sum_1", "triton_per_fused_native_layer_norm_2",
					  "cupy_multiply__float32_float32_float32",
					  "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_10CUDAFunctor_addIfEE" };

	for (size_t i = 0; i < sizeof(ew) / sizeof(ew[0]); i++)
		CHECK(classify_kernel(ew[i]) == KC_ELEMENTWISE, "elementwise: %s -> %d", ew[i],
		      (int)classify_kernel(ew[i]));
	CHECK(classify_kernel("triton_tem_fused_mm_0") == KC_MATMUL_TC, "an Inductor matmul template");
	CHECK(classify_kernel("gemm_fusion_dot_6") == KC_MATMUL_TC, "XLA's gemm fusion stays a matrix kernel");
	/* PyTorch's memory-efficient attention: FP32 data on tensor cores from
	 * sm80 (3xTF32), FFMA before; in bf16 tensor-core work */
	CHECK(classify_kernel("_Z39fmha_cutlassF_f32_aligned_64x64_rf_sm80N22PyTorchMemEffAttention15AttentionKernelIfN7"
			      "cutlass4arch5Sm80ELb1ELi64ELi64ELi64ELb1ELb1EEEEvNT_6ParamsE") == KC_MATMUL_TF32,
	      "FP32 memory-efficient attention on sm80: TF32-class");
	CHECK(classify_kernel("fmha_cutlassB_f32_aligned_64x64_k64_sm80") == KC_MATMUL_TF32,
	      "its backward too");
	CHECK(classify_kernel("fmha_cutlassF_f32_aligned_32x128_gmem_sm70") == KC_MATMUL_FP32,
	      "before sm80: FFMA");
	CHECK(classify_kernel("fmha_cutlassF_bf16_aligned_64x64_rf_sm80") == KC_MATMUL_TC, "bf16 attention");
}

int main(void)
{
	int tmp = mkstemp(path);

	if (tmp < 0)
		return 1;
	close(tmp);
	test_power_cap_default_is_info();
	test_power_cap_lowered_limit_warns();
	test_thermal_warns();
	test_hw_slowdown_with_cap_warns();
	test_small_batch_ranks_first();
	test_big_batch_op_by_op_is_launch_bound();
	test_small_batch_needs_memory_headroom();
	test_loop_against_layers();
	test_loop_of_full_grids();
	test_matrix_kernel_names();
	unlink(path);
	T_DONE();
}
