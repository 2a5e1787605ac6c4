/* C14: periodic stalls: every N steps one step runs long (validation, checkpoints). */
#include "rule.h"

RULE(periodic, "C14.periodic-stall", "C14");

static void periodic_eval(struct analysis *a, struct finding *f)
{
	double extra = 0, longest = 0;
	unsigned n = 0, first = 0, second = 0;
	char b1[32], b2[32];

	if (!a->t->nops || has_steps(a) < 6) {
		/* without steps the run is cut in time windows, which are not
		 * steps: a long window is no periodic stall */
		f->assessed = 0;
		snprintf(f->why, sizeof(f->why), "needs at least 6 detected steps%s",
			 a->step_window_ns ? " (none found with confidence)" : "");
		return;
	}
	for (size_t i = 0; i < a->steps.n; i++) {
		const struct step *s = &a->steps.v[i];
		double d = (double)(s->end - s->start);

		if (!s->periodic)
			continue;
		if (n == 0)
			first = (unsigned)i;
		else if (n == 1)
			second = (unsigned)i;
		n++;
		extra += d - a->step_median_ns;
		if (d > longest)
			longest = d;
	}
	if (!n || pct(a, extra) < 3)
		return;
	finding_set_gain(a, f, extra);
	snprintf(f->title, sizeof(f->title), "Periodic stall every %u steps: %.0f%% of the run",
		 n > 1 ? second - first : 0, pct(a, extra));
	snprintf(f->evidence, sizeof(f->evidence),
		 "%u of %zu steps run long (up to %s against a median step of %s), recurring every "
		 "%u steps: training stops for something periodic (validation, checkpointing, "
		 "logging) that costs %.0f%% of the run.",
		 n, a->steps.n, fmt_ns(b1, sizeof(b1), longest), fmt_ns(b2, sizeof(b2), a->step_median_ns),
		 n > 1 ? second - first : 0, pct(a, extra));
	snprintf(f->fix, sizeof(f->fix),
		 "Validate or checkpoint less often, asynchronously (a separate process or thread, "
		 "torch.distributed.checkpoint.async_save), or on a subset; keep validation metrics "
		 "on the GPU instead of calling .item() per batch.");
	f->confidence = n >= 3 ? CONF_HIGH : CONF_MEDIUM;
}
