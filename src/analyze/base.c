/* What every pass of the analysis uses, below all of them: the names of
 * the idle causes, the warnings and the out-of-memory state of an analysis,
 * kernel families from names, kernel names as shown, and the run's length
 * without gpuwhy's own tracing cost. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze.h"
#include "internal.h"

static const struct {
	const char *id, *name;
} causes[IDLE_NCAUSES] = {
#define CAUSE_ROW(e, id, name) [e] = { id, name },
	IDLE_CAUSES(CAUSE_ROW)
#undef CAUSE_ROW
};

const char *idle_cause_name(enum idle_cause c)
{
	return c < IDLE_NCAUSES ? causes[c].name : "?";
}

const char *idle_cause_label(const struct analysis *a, enum idle_cause c)
{
	/* a job that runs no Python issues its launches itself */
	if (c == IDLE_LAUNCH_OVERHEAD && !a->python[0] && !a->py_thread_samples &&
	    (a->framework == FW_CUDA_C || a->framework == FW_UNKNOWN))
		return "host too slow to issue work (launches)";
	return idle_cause_name(c);
}

const char *idle_cause_id(enum idle_cause c)
{
	return c < IDLE_NCAUSES ? causes[c].id : "?";
}

void analysis_warn(struct analysis *a, const char *fmt, ...)
{
	char buf[512], *s;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	s = strdup(buf);
	if (!s || VEC_PUSH(a->warnings, s) < 0) {
		free(s);
		analysis_nomem(a, "keeping a warning");
	}
}

void analysis_nomem(struct analysis *a, const char *what)
{
	if (a->err)
		return;
	a->err = -ENOMEM;
	snprintf(a->err_msg, sizeof(a->err_msg),
		 "out of memory while %s: no report (free memory or raise the limit, e.g. ulimit -v, "
		 "and run it again)", what);
}

static int contains(const char *s, const char *needle)
{
	return strstr(s, needle) != NULL;
}

enum kclass classify_kernel(const char *n)
{
	if (contains(n, "nccl") || contains(n, "NCCL"))
		return KC_COMM;
	/* cuBLAS (gemm, gemv: a batch of one turns a GEMM into a GEMV; its
	 * split-K reduction is part of the GEMM), nvjet and CUTLASS on Hopper,
	 * XLA's gemm_fusion_dot, cuDNN convolutions */
	int mm = contains(n, "gemm") || contains(n, "Gemm") || contains(n, "nvjet") ||
		 contains(n, "xmma") || contains(n, "matmul") || contains(n, "wgmma") ||
		 contains(n, "cutlass") || contains(n, "gemv") || contains(n, "splitKreduce") ||
		 contains(n, "convolve_") || !strncmp(n, "triton_tem_", 11);
	if (mm) {
		int tc = contains(n, "tf32") || contains(n, "bf16") || contains(n, "f16") ||
			 contains(n, "bfloat16") || contains(n, "__half") ||
			 contains(n, "hmma") || contains(n, "16816") || contains(n, "1688") ||
			 contains(n, "884") || contains(n, "tensorop") || contains(n, "nvjet") ||
			 contains(n, "wgmma") || contains(n, "e4m3") || contains(n, "i8i8");
		int fp32 = contains(n, "f32f32_f32f32") || contains(n, "_ffma") ||
			   contains(n, "sgemm") || contains(n, "simt");
		if (fp32 && !tc)
			return KC_MATMUL_FP32;
		return KC_MATMUL_TC;
	}
	/* optimizers (multi_tensor_apply) are already fused: not a fusion candidate */
	if (contains(n, "multi_tensor_apply") || contains(n, "Optimizer") || contains(n, "adam"))
		return KC_OTHER;
	if (contains(n, "elementwise") || contains(n, "cupy_") || contains(n, "reduce_kernel") ||
	    contains(n, "Functor"))
		return KC_ELEMENTWISE;
	/* XLA: one eager op (wrapped_add, wrapped_exp) or a loop or reduction
	 * fusion (loop_add_fusion, input_reduce_fusion); Triton from Inductor:
	 * pointwise and reduction kernels (triton_poi_, triton_red_, triton_per_;
	 * triton_tem_ are matrix templates) */
	if (!strncmp(n, "wrapped_", 8) || (!strncmp(n, "loop_", 5) && contains(n, "fusion")) ||
	    (!strncmp(n, "input_", 6) && contains(n, "fusion")) || !strncmp(n, "triton_poi_", 11) ||
	    !strncmp(n, "triton_red_", 11) || !strncmp(n, "triton_per_", 11))
		return KC_ELEMENTWISE;
	return KC_OTHER;
}

double launch_idle_untraced(const struct analysis *a)
{
	double idle = (double)a->idle_by_cause[IDLE_LAUNCH_OVERHEAD] - (double)a->trace_cost_ns;

	return idle > 0 ? idle : 0;
}

int gpu_set_the_pace(const struct analysis *a)
{
	return a->steady_ns && a->queue_full_ns * 100 >= GPU_PACED_PCT * a->steady_ns;
}

double steady_untraced_ns(const struct analysis *a)
{
	return a->steady_ns > a->trace_cost_ns ? (double)(a->steady_ns - a->trace_cost_ns) : 0;
}

const char *analysis_kname(const struct analysis *a, uint32_t name, int form)
{
	if (name >= a->t->names.n)
		return "?";
	return kname_cached(a->knames, name, a->t->names.v[name], form);
}
