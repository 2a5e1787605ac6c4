/* C5: CUDA_LAUNCH_BLOCKING=1 left on: every launch waits for the kernel. */
#include "rule.h"

RULE(launch_blocking, "C5.launch-blocking", "C5", 0, 10, ADV_C5_BLOCKING);

static void launch_blocking_eval(struct analysis *a, struct finding *f)
{
	double idle = (double)a->idle_by_cause[IDLE_LAUNCH_BLOCKING];

	if (!a->launch_blocking)
		return;
	/* Blocking launches serialize host and GPU: a step costs host + GPU time
	 * instead of the larger of the two, so unsetting saves at most the smaller. */
	f->min_severity = SEV_WARN; /* a debugging switch left on is always worth a warning */
	finding_set_gain(a, f, &(struct gain){ .idle_causes = IDLE_BIT(IDLE_LAUNCH_BLOCKING),
					    .idle_ns = idle < (double)a->busy_ns ? idle : (double)a->busy_ns });
	snprintf(f->title, sizeof(f->title), "CUDA_LAUNCH_BLOCKING=1 is set: every kernel launch waits for the GPU");
	snprintf(f->evidence, sizeof(f->evidence),
		 "The job's environment has CUDA_LAUNCH_BLOCKING=1, so the host cannot queue work "
		 "ahead; the GPU sat idle between kernels for %.0f%% of the run.", pct(a, idle));
	SET_FIX(a, f, ADV_C5_BLOCKING);
	f->confidence = CONF_HIGH;
}
