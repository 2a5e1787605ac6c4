/* C3: the batch (or the work per kernel) is too small to fill the GPU. */
#include "rule.h"

RULE(small_batch, "C3.small-batch", "C3");

static void small_batch_eval(struct analysis *a, struct finding *f)
{
	unsigned sms = main_gpu_sms(a);
	double mm = 0, mm_eff = 0, used = 0, total = 0;
	char b1[32];

	if (!a->t->nops) {
		f->assessed = 0;
		snprintf(f->why, sizeof(f->why), "needs the GPU timeline");
		return;
	}
	if (!sms) {
		f->assessed = 0;
		snprintf(f->why, sizeof(f->why), "the GPU's SM count is unknown (no NVML data)");
		return;
	}
	mm = a->ops.class_ns[KC_MATMUL_TC] + a->ops.class_ns[KC_MATMUL_FP32];
	mm_eff = a->ops.matmul_fill_ns;
	if (a->main_dev < 16)
		used = (double)a->t->gsum[a->main_dev].max_mem_used_mib;
	for (size_t i = 0; i < a->t->gpus.n; i++)
		if (a->t->gpus.v[i].index == a->main_dev || a->t->gpus.n == 1)
			total = (double)a->t->gpus.v[i].mem_total_mib;
	if (mm <= 0 || pct(a, mm) < 1)
		return;
	double eff = mm_eff / mm;

	if (eff >= 0.5 || (total > 0 && used > 0.5 * total))
		return;
	/* the launch gaps, and the empty SMs of the matrix kernels */
	finding_set_gain(a, f, &(struct gain){ .idle_causes = IDLE_BIT(IDLE_LAUNCH_OVERHEAD),
					    .idle_ns = launch_idle_untraced(a), .busy_set = BUSY_MATMUL,
					    .busy_ns = mm * (1 - eff), .busy_of_ns = mm });
	snprintf(f->title, sizeof(f->title), "Batch too small for the GPU: matrix kernels fill %.0f%% of the SMs",
		 100 * eff);
	snprintf(f->evidence, sizeof(f->evidence),
		 "Matrix/convolution kernels launch grids that cover %.0f%% of the %u SMs on average "
		 "(time-weighted); the GPU spends %.0f%% of the run idle between short kernels; "
		 "peak GPU memory in use %s of %.0f GiB.",
		 100 * eff, sms, pct(a, (double)a->idle_by_cause[IDLE_LAUNCH_OVERHEAD]),
		 used > 0 ? fmt_bytes(b1, sizeof(b1), used * 1048576.0) : "unknown", total / 1024);
	SET_FIX(a, f, ADV_C3_BATCH);
	f->confidence = CONF_LOW;
}
