/* C14: periodic stalls: every N steps one step runs long (validation,
 * checkpoints), and checkpoint / file writes: threads in state D while the
 * job wrote to storage (attribute.c's file_writes idle). */
#include "rule.h"

RULE(periodic, "C14.periodic-stall", "C14");

static void periodic_eval(struct analysis *a, struct finding *f)
{
	double extra = 0, longest = 0;
	double writes = (double)a->idle_by_cause[IDLE_WRITE];
	/* file-write idle outside the periodic steps is not in their extra time */
	double writes_apart = writes - (double)a->write_idle_periodic_ns;
	unsigned n = 0, first = 0, second = 0;
	char b1[32], b2[32];

	if (!a->t->nops || (a->steps.n < 6 && pct(a, writes) < 3)) {
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
	if (writes_apart < 0)
		writes_apart = 0;
	int periodic = n && pct(a, extra) >= 3;

	if (!periodic && pct(a, writes) < 3)
		return;
	finding_set_gain(a, f, (periodic ? extra : 0) + writes_apart);
	f->evidence[0] = 0;
	if (periodic) {
		snprintf(f->title, sizeof(f->title), "Periodic stall every %u steps%s: %.0f%% of the run",
			 n > 1 ? second - first : 0,
			 a->write_idle_periodic_ns * 4 >= (uint64_t)extra ? " (checkpoint / file writes)" : "",
			 pct(a, extra + writes_apart));
		ADDF(f->evidence,
		     "%u of %zu steps run long (up to %s against a median step of %s), recurring every "
		     "%u steps: training stops for something periodic (validation, checkpointing, "
		     "logging) that costs %.0f%% of the run.",
		     n, a->steps.n, fmt_ns(b1, sizeof(b1), longest), fmt_ns(b2, sizeof(b2), a->step_median_ns),
		     n > 1 ? second - first : 0, pct(a, extra));
	} else {
		snprintf(f->title, sizeof(f->title), "Checkpoint / file writes stall the GPU: %.0f%% of the run",
			 pct(a, writes));
	}
	if (writes > 0) {
		unsigned occ = a->write_occurrences ? a->write_occurrences : 1;

		ADDF(f->evidence,
		     "%sCheckpoint / file writes: in %u occurrence%s threads sat in uninterruptible "
		     "sleep (state D) while the job wrote %s per occurrence to storage (write_bytes) and "
		     "read nothing, for %.0f%% of the run (%s each).",
		     f->evidence[0] ? " " : "", occ, occ == 1 ? "" : "s",
		     fmt_bytes(b1, sizeof(b1), a->io_write_bytes / occ), pct(a, writes),
		     fmt_ns(b2, sizeof(b2), writes / occ));
	}
	SET_FIX(a, f, writes > 0 && (!periodic || a->write_idle_periodic_ns * 4 >= (uint64_t)extra)
			      ? ADV_C14_WRITES
			      : ADV_C14_PERIODIC);
	f->confidence = n >= 3 || a->write_occurrences >= 3 ? CONF_HIGH : CONF_MEDIUM;
}
