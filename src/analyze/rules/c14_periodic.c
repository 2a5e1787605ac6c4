/* C14: periodic stalls: every N steps one step runs long (validation, checkpoints). */
#include "rule.h"

RULE(periodic, "C14.periodic-stall", "C14");

static void periodic_eval(struct analysis *a, struct finding *f)
{
	double extra = 0, longest = 0;
	unsigned n = 0, first = 0, second = 0;
	char b1[32], b2[32];

	if (!a->t->nops || a->steps.n < 6) {
		f->assessed = 0;
		snprintf(f->why, sizeof(f->why), "needs at least 6 detected steps");
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
	if (!n && pct(a, (double)a->site_ckpt_ns) >= 3) {
		/* no periodic steps, but the training thread's stacks show checkpoint
		 * serialization in its CPU-work gaps (sites.c, docs/RULES.md 6) */
		finding_set_gain(a, f, (double)a->site_ckpt_ns);
		snprintf(f->title, sizeof(f->title),
			 "Checkpoint serialization stalls the GPU: %.0f%% of the run",
			 pct(a, (double)a->site_ckpt_ns));
		snprintf(f->evidence, sizeof(f->evidence),
			 "the training thread's Python stacks show it serializing (torch.save, pickle, "
			 "np.save, h5py, safetensors) during %s of idle GPU time (%.0f%% of the run); "
			 "the sites below name the lines.",
			 fmt_ns(b1, sizeof(b1), (double)a->site_ckpt_ns), pct(a, (double)a->site_ckpt_ns));
		snprintf(f->fix, sizeof(f->fix),
			 "Checkpoint less often, or asynchronously: copy the state to CPU memory and "
			 "write it from a separate thread or process "
			 "(torch.distributed.checkpoint.async_save).");
		f->confidence = CONF_MEDIUM;
		return;
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
