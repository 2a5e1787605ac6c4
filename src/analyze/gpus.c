/* The main GPU's facts (NVML's gpu_info record): SM count, compute
 * capability, PCIe link, memory. */
#include "../util/util.h"
#include "analyze.h"
#include "internal.h"

unsigned main_gpu_sms(const struct analysis *a)
{
	const struct trace *t = a->t;

	for (size_t i = 0; i < t->gpus.n; i++)
		if (t->gpus.v[i].index == a->main_dev || t->gpus.n == 1)
			return t->gpus.v[i].sm_count;
	return 0;
}

static const struct gpu_info *main_gpu(const struct analysis *a)
{
	for (size_t i = 0; i < a->t->gpus.n; i++)
		if (a->t->gpus.v[i].index == a->main_dev || a->t->gpus.n == 1)
			return &a->t->gpus.v[i];
	return NULL;
}

double main_gpu_link_gbs(const struct analysis *a)
{
	const struct gpu_info *g = main_gpu(a);

	if (!g || !FIELD_VALID(g, GINFO_VALID_PCIE_GEN_MAX) || !FIELD_VALID(g, GINFO_VALID_PCIE_WIDTH_MAX))
		return 0;
	return pcie_practical_gbs(g->pcie_gen_max, g->pcie_width_max);
}

int c8_on_doubles(const struct analysis *a)
{
	return a->busy_ns && a->ops.class_ns[KC_MATMUL_FP64] >= C8_FP32_SHARE * (double)a->busy_ns;
}

int c8_fp32_not_math_bound(const struct analysis *a)
{
	return a->fp32_pipes.intervals && a->fp32_pipes.share < C8_FP32_PIPE_MIN && !(a->fp32_counted.ns > 0);
}

/* FP64 matrix work runs on Ampere's and Hopper's DMMA tensor cores at about
 * FP32's SIMT rate (19.5 and 67 TFLOP/s dense on A100 and H100 both, the
 * published peaks; not measured apart here): the same factor as FP32
 * against 16-bit tensor cores */
double c8_speedup(const struct analysis *a, enum kclass c)
{
	if (c == KC_MATMUL_FP32 && c8_fp32_not_math_bound(a))
		return 1;
	if (c == KC_MATMUL_TF32)
		return C8_SPEEDUP_TF32;
	return main_gpu_cc(a) >= C8_TC_CC ? C8_SPEEDUP_TC : C8_SPEEDUP_OLD;
}

unsigned main_gpu_cc(const struct analysis *a)
{
	const struct gpu_info *g = main_gpu(a);

	return g && FIELD_VALID(g, GINFO_VALID_CC_MAJOR) ? g->cc_major : 0;
}

void main_gpu_mem(const struct analysis *a, double *used_mib, double *total_mib)
{
	const struct gpu_info *g = main_gpu(a);

	*used_mib = a->main_dev < GW_MAX_GPUS ? (double)a->t->gsum[a->main_dev].max_mem_used_mib : 0;
	*total_mib = g ? (double)g->mem_total_mib : 0;
}
