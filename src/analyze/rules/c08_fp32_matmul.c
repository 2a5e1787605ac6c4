/* C8: matrix work in FP32: tensor cores idle (no mixed precision). */
#include "rule.h"

RULE(fp32_matmul, "C8.no-mixed-precision", "C8", NEED_TIMELINE, SETTLE_NO_IDLE, ADV_C8_PRECISION);

static void fp32_matmul_eval(struct analysis *a, struct finding *f)
{
	double fp32, tc, tensor = 0;
	unsigned ngpm = 0;

	fp32 = a->ops.class_ns[KC_MATMUL_FP32];
	tc = a->ops.class_ns[KC_MATMUL_TC];
	if (!a->busy_ns || fp32 < C8_FP32_SHARE * (double)a->busy_ns)
		return;
	tensor = a->gpm_tensor;
	ngpm = a->gpm_tensor_n;
	/* bf16 tensor-core GEMMs against FP32 SIMT ones: dense peak ratios are 15x
	 * (H100/H200) and 16x (A100), 8x on Volta/Turing; real GEMMs reach less
	 * of the peak in bf16 (docs/RULES.md). Unknown GPU: the older ratio. */
	double k = main_gpu_cc(a) >= C8_TC_CC ? C8_SPEEDUP_TC : C8_SPEEDUP_OLD;

	finding_set_gain(a, f, &(struct gain){ .busy_set = BUSY_MATMUL, .busy_ns = fp32 * (1 - 1 / k),
					    .busy_of_ns = fp32 });
	snprintf(f->title, sizeof(f->title), "No mixed precision: %.0f%% of GPU time in FP32 matrix kernels",
		 100 * fp32 / (double)a->busy_ns);
	snprintf(f->evidence, sizeof(f->evidence),
		 "FP32 (non-tensor-core) matrix kernels took %.0f%% of the GPU's busy time, "
		 "tensor-core ones %.0f%%%s.",
		 100 * fp32 / (double)a->busy_ns, 100 * tc / (double)a->busy_ns, "");
	if (ngpm)
		ADDF(f->evidence, " Hardware counters (GPM): tensor pipes active %.1f%% of the time.",
		     tensor / ngpm);
	SET_FIX(a, f, ADV_C8_PRECISION);
	f->confidence = ngpm && tensor / ngpm < 5 ? CONF_HIGH : CONF_MEDIUM;
}
