/* C14: periodic stalls: every N steps one step runs long (validation,
 * checkpoints), and checkpoint / file writes: threads in state D while the
 * job wrote to storage (attribute.c's file_writes idle). */
#include "rule.h"

RULE(periodic, "C14.periodic-stall", "C14", 0);

/* Median of the steps that do not run long, of one of their figures. */
static double normal_median(struct analysis *a, int what)
{
	double *x = malloc(a->steps.n * sizeof(*x)), m;
	size_t n = 0;

	if (!x) {
		if (a->steps.n)
			analysis_nomem(a, "measuring periodic steps");
		return 0;
	}
	for (size_t i = 0; i < a->steps.n; i++) {
		const struct step *s = &a->steps.v[i];

		if (!s->periodic)
			x[n++] = what == 0 ? (double)s->idle_ns : what == 1 ? (double)s->busy_ns : (double)s->nops;
	}
	m = quantile(x, n, 0.5);
	free(x);
	return m;
}

static void periodic_eval(struct analysis *a, struct finding *f)
{
	double extra = 0, longest = 0, idle = 0, work = 0, busy_of = 0, more_ops = 0;
	double writes = (double)a->idle_by_cause[IDLE_WRITE];
	/* file-write idle outside the periodic steps is not in their idle */
	double writes_apart = writes - (double)a->write_idle_periodic_ns;
	unsigned n = 0, first = 0, second = 0;
	int gpu_paced = a->steady_ns && a->queue_full_ns * 100 >= a->steady_ns;
	char b1[32], b2[32], b3[32], b4[32];

	if (!a->t->nops || (has_steps(a) < 6 && pct(a, writes + (double)a->site_ckpt_ns) < 3)) {
		/* without steps the run is cut in time windows, which are not
		 * steps: a long window is no periodic stall (file writes still
		 * count: they are measured, not inferred from step lengths) */
		f->assessed = 0;
		snprintf(f->why, sizeof(f->why), "needs at least 6 detected steps%s",
			 a->step_window_ns ? " (none found with confidence)" : "");
		return;
	}
	double idle0 = normal_median(a, 0), busy0 = normal_median(a, 1), ops0 = normal_median(a, 2);

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
		/* The stall: the long step's idle beyond a normal step's. Its extra
		 * busy time counts only as work a normal step does not run (more
		 * operations: a validation pass, a checkpoint's copies), at most the
		 * share of its busy time those operations take, and never where the
		 * GPU set the pace: then a long step is the GPU working, not waiting. */
		idle += (double)s->idle_ns > idle0 ? (double)s->idle_ns - idle0 : 0;
		if (!gpu_paced && s->nops > ops0 && (double)s->busy_ns > busy0) {
			double w = (double)s->busy_ns - busy0;
			double share = (double)s->busy_ns * ((double)s->nops - ops0) / (double)s->nops;

			work += w < share ? w : share;
			busy_of += (double)s->busy_ns;
			more_ops += (double)s->nops - ops0;
		}
	}
	if (writes_apart < 0)
		writes_apart = 0;
	/* no periodic steps, but the training thread's stacks show checkpoint
	 * serialization in its CPU-work gaps (sites.c, docs/RULES.md 6): that
	 * idle went to the periodic cause */
	double ser = n ? 0 : (double)a->site_ckpt_ns;
	int periodic = n && pct(a, idle + work) >= 3;
	/* the long steps' stall is mostly file writes: name them */
	int ckpt = (writes > 0 || ser > 0) && (!periodic || (double)a->write_idle_periodic_ns * 4 >= idle);

	if (!periodic && pct(a, writes + ser) < 3)
		return;
	if (!periodic)
		idle = work = busy_of = 0;
	finding_set_gain(a, f, &(struct gain){ .idle_causes = IDLE_BIT(IDLE_PERIODIC) | IDLE_BIT(IDLE_WRITE),
					    .idle_ns = idle + writes_apart + ser, .busy_set = BUSY_ALL,
					    .busy_ns = work, .busy_of_ns = busy_of });
	f->evidence[0] = 0;
	if (periodic) {
		snprintf(f->title, sizeof(f->title), "Periodic %s every %u steps%s: %.0f%% of the run",
			 work > idle ? "extra work" : "stall", n > 1 ? second - first : 0,
			 ckpt ? " (checkpoint / file writes)" : "", pct(a, idle + work + writes_apart));
		snprintf(f->evidence, sizeof(f->evidence),
			 "%u of %zu steps run long (up to %s against a median step of %s), recurring every "
			 "%u steps: training stops for something periodic (validation, checkpointing, "
			 "logging) that costs %.0f%% of the run.",
			 n, a->steps.n, fmt_ns(b1, sizeof(b1), longest), fmt_ns(b2, sizeof(b2), a->step_median_ns),
			 n > 1 ? second - first : 0, pct(a, idle + work));
		ADDF(f->evidence, " Of that, %s is the GPU idle beyond a normal step's and %s GPU work a "
		     "normal step does not run (%.0f more operations per long step).",
		     fmt_ns(b3, sizeof(b3), idle), fmt_ns(b4, sizeof(b4), work), work > 0 ? more_ops / n : 0.0);
		if (gpu_paced && extra > idle)
			ADDF(f->evidence, " The host was blocked on a full GPU queue %.0f%% of the run: the GPU "
			     "set the pace, so the long steps' extra busy time is the GPU working, not a stall.",
			     pct(a, (double)a->queue_full_ns));
	} else if (ser > writes) {
		snprintf(f->title, sizeof(f->title), "Checkpoint serialization stalls the GPU: %.0f%% of the run",
			 pct(a, ser + writes_apart));
		snprintf(f->evidence, sizeof(f->evidence),
			 "The training thread's Python stacks show it serializing (torch.save, pickle, "
			 "np.save, h5py, safetensors) during %s of idle GPU time (%.0f%% of the run); "
			 "the sites below name the lines.",
			 fmt_ns(b1, sizeof(b1), ser), pct(a, ser));
	} else {
		snprintf(f->title, sizeof(f->title), "Checkpoint / file writes stall the GPU: %.0f%% of the run",
			 pct(a, writes + ser));
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
	SET_FIX(a, f, ckpt ? ADV_C14_WRITES : ADV_C14_PERIODIC);
	f->confidence = n >= 3 || a->write_occurrences >= 3 ? CONF_HIGH : CONF_MEDIUM;
}
