/* C3: the batch (or the work per kernel) is too small to fill the GPU.
 *
 * The evidence that the batch is too small is that each step's GPU work is
 * tiny for the machine, and the host sets the step time issuing it:
 *   the matrix kernels are short (most of the time of those with fewer
 *   blocks than SMs in kernels under SMALL_MATMUL_NS, about what the host
 *   spends issuing one launch: one with a block for every SM at such a
 *   batch works on the model, as the batch replay holds) and leave SMs
 *   empty (grids under one wave);
 *   the GPU waits for the host to issue work for at least half the run;
 *   most of the GPU's memory is unused (room for a bigger batch).
 * A bigger batch then amortizes the same host cost over more samples and
 * fills the SMs; CUDA graphs (C4's fix) remove only the launch part. So C3
 * takes the launch gaps before C4 does (gain.c's order) and ranks first.
 * Without the host-bound part, matrix kernels that leave half the SMs empty
 * still make a finding, for their empty SMs alone. Its gain is a replay of
 * the step with the batch k times larger, per sample (fixes.c, simulate.c;
 * docs/RULES.md section 4). */
#include "rule.h"

RULE(small_batch, "C3.small-batch", "C3", NEED_TIMELINE, 110, ADV_C3_BATCH);

#define SHORT_SHARE 0.75  /* of matrix kernel time in short kernels: "most" */
#define POOR_FILL 0.8     /* mean fill under which SMs sit empty in matrix kernels */
#define EMPTY_FILL 0.5    /* ... half the SMs empty: a finding even when not host-bound */
#define HOST_SHARE 50     /* % of the run waiting for the host: it sets the step time */
#define MEM_HEADROOM 0.5  /* peak memory under half the GPU's: room for a bigger batch */

static void small_batch_eval(struct analysis *a, struct finding *f)
{
	unsigned sms = main_gpu_sms(a);
	double mm = 0, mm_eff = 0, used = 0, total = 0;
	char b1[32], b2[32], b3[32];

	if (!sms) {
		f->assessed = 0;
		snprintf(f->why, sizeof(f->why), "the GPU's SM count is unknown (no NVML data)");
		return;
	}
	/* the matrix kernels whose grids the pass measured: not those that
	 * GPM's counters showed to be matrix work after it (counters.c) */
	mm = matmul_ns(a->ops.class_ns) - a->fp32_counted.ns;
	mm_eff = a->ops.matmul_fill_ns;
	main_gpu_mem(a, &used, &total);
	if (mm <= 0 || pct(a, mm) < C3_MIN_PCT)
		return;
	if (total > 0 && used > MEM_HEADROOM * total)
		return; /* no room for a bigger batch */
	/* "short" among the matrix kernels with fewer blocks than SMs: one
	 * with a block for every SM at a batch this small works on the model
	 * (a language model's vocabulary projection), not on the batch */
	double narrow = a->ops.matmul_narrow_ns, eff = mm_eff / mm;
	double short_share = narrow > 0 ? a->ops.matmul_narrow_short_ns / narrow : 0;
	double launch = (double)a->idle_by_cause[IDLE_LAUNCH_OVERHEAD];
	int host_bound = short_share >= SHORT_SHARE && eff < POOR_FILL && pct(a, launch) >= HOST_SHARE;

	if (!host_bound && eff >= EMPTY_FILL)
		return;
	/* the launch gaps (when the host sets the pace), and the empty SMs of
	 * the matrix kernels */
	finding_set_gain(a, f, &(struct gain){ .idle_causes = IDLE_BIT(IDLE_LAUNCH_OVERHEAD),
					    .idle_ns = host_bound ? launch_idle_untraced(a) : 0,
					    .busy_set = BUSY_MATMUL, .busy_ns = mm * (1 - eff), .busy_of_ns = mm });
	snprintf(f->title, sizeof(f->title),
		 "Batch too small for the GPU: short matrix kernels fill %.0f%% of the SMs%s", 100 * eff,
		 host_bound ? ", the host sets the step time" : "");
	snprintf(f->evidence, sizeof(f->evidence),
		 "Matrix/convolution kernels (%.0f%% of the run) launch grids that cover %.0f%% of the %u "
		 "SMs on average (time-weighted); median matrix kernel %s; of those with fewer blocks than "
		 "SMs (the ones a batch fills), %.0f%% of the time in kernels shorter than %s; the GPU "
		 "waits for the host to issue work %.0f%% of the run; "
		 "peak GPU memory in use %s of %.0f GiB.",
		 pct(a, mm), 100 * eff, sms, fmt_ns(b1, sizeof(b1), median_matmul_ns(&a->ops)),
		 100 * short_share, fmt_ns(b2, sizeof(b2), (double)SMALL_MATMUL_NS), pct(a, launch),
		 used > 0 ? fmt_bytes(b3, sizeof(b3), used * 1048576.0) : "unknown", total / 1024);
	if (host_bound)
		ADDF(f->evidence, " Each step's GPU work is tiny and the host's issuing sets its time: a "
		     "batch k times larger costs about the same host time per step and fills the SMs. "
		     "CUDA graphs (C4) would remove only the launch part.");
	SET_FIX(a, f, ADV_C3_BATCH);
	f->confidence = host_bound ? CONF_MEDIUM : CONF_LOW;
}
