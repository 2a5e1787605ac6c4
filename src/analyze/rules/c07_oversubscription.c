/* C7: more runnable CPU threads than cores: the host side crawls. */
#include "rule.h"

RULE(oversubscription, "C7.cpu-oversubscription", "C7");

static void oversubscription_eval(struct analysis *a, struct finding *f)
{
	const struct trace *t = a->t;
	double idle = (double)a->idle_by_cause[IDLE_OVERSUB];
	uint64_t ivcsw0 = 0, ivcsw1 = 0;
	unsigned threads = 0;

	if (!t->nsamples) {
		f->assessed = 0;
		snprintf(f->why, sizeof(f->why), "needs /proc samples");
		return;
	}
	if (pct(a, idle) < 5)
		return;
	for (size_t i = 0; i < a->threads.n; i++) { /* first and last sample of each */
		const struct thread_samples *s = a->threads.v[i].s;

		threads++;
		ivcsw0 += s->blocks.v[0].ivcsw;
		ivcsw1 += s->last.ivcsw;
	}
	double secs = (double)(a->last_op - a->first_op) / 1e9;

	finding_set_gain(a, f, &(struct gain){ .idle_causes = IDLE_BIT(IDLE_OVERSUB), .idle_ns = idle });
	snprintf(f->title, sizeof(f->title), "CPU oversubscribed: more runnable threads than cores (%.0f%% of the run)",
		 pct(a, idle));
	snprintf(f->evidence, sizeof(f->evidence),
		 "While the GPU was idle (%.0f%% of the run), more threads were runnable than the %u "
		 "cores the job may use; the job ran %u threads in all, with %.0f involuntary context "
		 "switches per second.",
		 pct(a, idle), a->cpus_allowed, threads, secs > 0 ? (double)(ivcsw1 - ivcsw0) / secs : 0.0);
	snprintf(f->fix, sizeof(f->fix),
		 "Bound the thread pools to the cores: torch.set_num_threads(cores / processes), "
		 "OMP_NUM_THREADS and MKL_NUM_THREADS per process (1 inside data-loader workers), "
		 "and no more loader workers than free cores.");
	f->confidence = CONF_MEDIUM;
}
