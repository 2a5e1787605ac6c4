/* C16: the thread that feeds the GPU sleeps or blocks on something other
 * than the GPU (time.sleep in a polling loop, a lock, a queue, a socket):
 * its Python samples say it was asleep (state S) in its own code or in a
 * standard-library wait while the GPU had nothing to do (sites.c). */
#include "rule.h"

RULE(host_wait, "C16.host-wait", "C16", NEED_TIMELINE);

static void host_wait_eval(struct analysis *a, struct finding *f)
{
	double wait = (double)a->idle_by_cause[IDLE_WAIT];
	char b1[32];

	if (pct(a, wait) < 5)
		return;
	finding_set_gain(a, f, &(struct gain){ .idle_causes = IDLE_BIT(IDLE_WAIT), .idle_ns = wait });
	snprintf(f->title, sizeof(f->title),
		 "The training thread sleeps or waits while the GPU idles: %.0f%% of the run", pct(a, wait));
	snprintf(f->evidence, sizeof(f->evidence),
		 "In %llu idle intervals (%s per step) the thread that issues the GPU's work was "
		 "asleep or blocked (state S in its Python samples) in its own code or in a wait of "
		 "the standard library (a lock, a queue, select, a socket), not in a CUDA call and "
		 "not waiting for data-loader workers; the sites below name the lines.",
		 (unsigned long long)a->gaps_by_cause[IDLE_WAIT],
		 fmt_ns(b1, sizeof(b1), has_steps(a) ? wait / (double)has_steps(a) : wait));
	SET_FIX(a, f, ADV_C16_WAIT);
	f->confidence = CONF_HIGH;
}
