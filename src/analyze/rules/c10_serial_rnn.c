/* C10: serial structure: a loop of small kernels run one after another (an RNN
 * cell over time steps, a per-sample loss or metric). */
#include "rule.h"

RULE(serial_rnn, "C10.serial-structure", "C10", NEED_TIMELINE | NEED_STEPS, 100, ADV_C10_SERIAL);

static void serial_rnn_eval(struct analysis *a, struct finding *f)
{
	unsigned sms = main_gpu_sms(a);
	uint64_t k = a->ops.kernels, distinct = a->ops.distinct_names, mm = a->ops.matmul_kernels;
	double small_busy = a->ops.small_ns, small_eff = a->ops.small_fill_ns;

	if (!sms)
		return;
	double per_step = (double)k / (double)has_steps(a), med = median_kernel_ns(&a->ops);

	/* a cell repeated many times per step: each name runs >= 8 times a step,
	 * with matrix kernels in the loop, all of them short and small, and most
	 * kernels inside one body run many times in a row. A deep network at a
	 * small batch repeats its names as often, layer after layer, but not an
	 * identical body 8 times in a row: its small kernels are C3's. */
	double looped = k ? (double)a->ops.looped_kernels / (double)k : 0;

	/* the loop's cost: SMs left empty by grids under one wave, or, with
	 * nearly every kernel in the loop, the GPU waiting for its launches
	 * (grids that fill the SMs for 2 us each: a scan stepped over
	 * positions) */
	int costs = (small_busy >= C10_SMALL_SHARE * (double)a->busy_ns && looped >= C10_LOOP_SHARE) ||
		    ((double)a->idle_by_cause[IDLE_LAUNCH_OVERHEAD] >= C10_SMALL_SHARE * (double)(a->t1 - a->t0) &&
		     looped >= C10_LOOP_SHARE_WIDE);

	if (per_step < C10_KERNELS_PER_STEP || distinct == 0 || per_step / (double)distinct < C10_REPEATS || !mm ||
	    med > C10_MEDIAN_NS || !costs)
		return;
	/* the launching inside a model library's modules (a Hugging Face
	 * transformer, a timm ViT): their stack of identical layers repeats one
	 * body as a loop does, but it runs once a step; a bigger batch, not
	 * batched iterations, shortens it (C3, C4) */
	double sited = 0;

	for (int c = 0; c < SC_NCLASSES; c++)
		sited += a->site_class_ns[IDLE_LAUNCH_OVERHEAD][c];
	if (sited > 0 && a->site_model_ns[IDLE_LAUNCH_OVERHEAD] >= C10_MODEL_SHARE * sited)
		return;
	/* the launch gaps, and the empty SMs of the kernels under one wave */
	finding_set_gain(a, f, &(struct gain){ .idle_causes = IDLE_BIT(IDLE_LAUNCH_OVERHEAD),
					    .idle_ns = launch_idle_untraced(a), .busy_set = BUSY_ALL,
					    .busy_ns = small_busy - small_eff, .busy_of_ns = small_busy });
	snprintf(f->title, sizeof(f->title), "A loop of small kernels: %.0f per step, one after another",
		 per_step);
	snprintf(f->evidence, sizeof(f->evidence),
		 "Each step runs %.0f kernels drawn from only %llu distinct kernels (each repeated "
		 "~%.0f times); %.0f%% of the kernels run in a body of the same kernels with the same "
		 "grids repeated %d times or more in a row (a Python loop over time steps, samples or "
		 "items); median kernel %.1f us; kernels "
		 "smaller than one wave of the %u SMs take %.0f%% of the busy time; %.0f%% of the "
		 "run is launch gaps.",
		 per_step, (unsigned long long)distinct, per_step / (double)distinct, 100 * looped,
		 LOOP_MIN_COPIES, med / 1e3, sms,
		 100 * small_busy / (double)a->busy_ns, pct(a, (double)a->idle_by_cause[IDLE_LAUNCH_OVERHEAD]));
	SET_FIX(a, f, ADV_C10_SERIAL);
	f->confidence = CONF_MEDIUM;
}
