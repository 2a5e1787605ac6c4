/* C4: launch overhead: many tiny kernels, the host cannot keep the queue full. */
#include "rule.h"

RULE(launch_bound, "C4.launch-bound", "C4", NEED_TIMELINE, 120, ADV_C4_LAUNCH);

static void launch_bound_eval(struct analysis *a, struct finding *f)
{
	double idle = (double)a->idle_by_cause[IDLE_LAUNCH_OVERHEAD];
	uint64_t n, small;
	char b1[32], b2[32];

	if (pct(a, idle) < FINDING_MIN_PCT)
		return;
	n = a->ops.kernels;
	small = a->ops.short_kernels;
	double med = median_kernel_ns(&a->ops);

	finding_set_gain(a, f, &(struct gain){ .idle_causes = IDLE_BIT(IDLE_LAUNCH_OVERHEAD),
					    .idle_ns = launch_idle_untraced(a) });
	snprintf(f->title, sizeof(f->title), "Launch-bound: the GPU waits for the host between tiny kernels (%.0f%% of the run)",
		 pct(a, idle));
	snprintf(f->evidence, sizeof(f->evidence),
		 "%.0f kernels per step%s, median kernel %s, %.0f%% of kernels shorter than %g us; "
		 "the GPU waited for the host to issue work (gaps under %g us, or the training "
		 "thread busy on the CPU inside a step) for %.0f%% of the run (%s per step).",
		 has_steps(a) ? (double)n / (double)has_steps(a) : (double)n, has_steps(a) ? "" : " (no steps found: whole run)",
		 fmt_ns(b1, sizeof(b1), med), n ? 100.0 * (double)small / (double)n : 0,
		 (double)SHORT_KERNEL_NS / 1e3, (double)SHORT_GAP_NS / 1e3, pct(a, idle),
		 fmt_ns(b2, sizeof(b2), has_steps(a) ? idle / (double)has_steps(a) : idle));
	if (a->trace_cost_ns)
		ADDF(f->evidence, " About %.0f%% of that wait is gpuwhy's own tracing cost (an "
		     "estimated %g us per launch, %g us with --launches%s), left out of the gain; "
		     "the range's low end takes out %g us a launch, what it cost the host-bound eager jobs "
		     "it was measured on (their median).",
		     idle > 0 ? 100.0 * (double)a->trace_cost_ns / idle : 0, (double)TRACE_COST_PER_LAUNCH_NS / 1e3,
		     (double)(TRACE_COST_PER_LAUNCH_NS + LAUNCH_CALLBACK_COST_NS) / 1e3,
		     a->trace_graph_gaps ? "; in a CUDA graph's launch call, up to that for each of its "
					   "operations" : "", (double)TRACE_COST_HIGH_NS / 1e3);
	SET_FIX(a, f, ADV_C4_LAUNCH);
	f->confidence = CONF_HIGH;
}
