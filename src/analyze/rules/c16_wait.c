/* C16: the thread that feeds the GPU sleeps or blocks on something other
 * than the GPU (time.sleep in a polling loop, a lock, a queue, a socket):
 * its Python samples say it was asleep (state S) in its own code or in a
 * standard-library wait while the GPU had nothing to do (sites.c). */
#include "rule.h"

RULE(host_wait, "C16.host-wait", "C16", NEED_TIMELINE, 70, ADV_C16_WAIT);

static void host_wait_eval(struct analysis *a, struct finding *f)
{
	double wait = (double)a->idle_by_cause[IDLE_WAIT];
	char b1[32];

	if (pct(a, wait) < FINDING_MIN_PCT)
		return;
	/* As for a synchronization (C9): with the waits gone the thread runs
	 * ahead of the GPU, so the run takes what the slower side needs, the
	 * GPU's work or the thread's own (the run less its time asleep); that
	 * also hides the launch gaps a queue drained during the sleep leaves
	 * after it (drawn on after the wait idle: C16 settles before C4). */
	double T = steady_untraced_ns(a), H = T > a->asleep_ns ? T - a->asleep_ns : 0;
	double after = (double)a->busy_ns > H ? (double)a->busy_ns : H;
	double overlap = T > after ? T - after : 0, launch = launch_idle_untraced(a);
	double saved = overlap < wait + launch ? overlap : wait + launch;
	unsigned causes = IDLE_BIT(IDLE_WAIT);
	/* a wait in the long steps that recur, most of their stall: the rest
	 * of their idle (the queue the wait drained, refilled) is the wait's
	 * too, and C14 leaves it (c14_periodic.c) */
	double rest = periodic_is_wait(a) ? (double)a->idle_by_cause[IDLE_PERIODIC] : 0;

	if (saved < wait)
		saved = wait;
	if (saved > wait)
		causes |= IDLE_BIT(IDLE_LAUNCH_OVERHEAD);
	if (rest > 0) {
		causes |= IDLE_BIT(IDLE_PERIODIC);
		saved += rest;
	}
	finding_set_gain(a, f, &(struct gain){ .idle_causes = causes, .idle_ns = saved });
	snprintf(f->title, sizeof(f->title),
		 "The training thread sleeps or waits while the GPU idles: %.0f%% of the run", pct(a, wait));
	snprintf(f->evidence, sizeof(f->evidence),
		 "In %llu idle intervals (%s per step) the thread that issues the GPU's work was "
		 "asleep or blocked (state S in its Python samples) in its own code or in a wait of "
		 "the standard library (a lock, a queue, select, a socket, a subprocess), not in a CUDA call and "
		 "not waiting for data-loader workers; the sites listed with it name the lines.",
		 (unsigned long long)a->gaps_by_cause[IDLE_WAIT],
		 fmt_ns(b1, sizeof(b1), has_steps(a) ? wait / (double)has_steps(a) : wait));
	if (a->periodic_wait_ns >= 0.5 * wait) {
		unsigned first = 0, every = 0, seen = 0;

		for (size_t i = 0; i < a->steps.n && seen < 2; i++)
			if (a->steps.v[i].periodic) {
				every = seen ? (unsigned)i - first : 0;
				first = seen ? first : (unsigned)i;
				seen++;
			}
		ADDF(f->evidence, " Most of it (%.0f%% of the run) came in the long steps that recur every "
		     "%u steps: the thread waits there on something it does every %u steps.",
		     pct(a, a->periodic_wait_ns), every, every);
	}
	if (saved > wait)
		ADDF(f->evidence, " It slept %.0f%% of the run in all: awake, it would issue the next "
		     "work while the GPU still runs the last, so the launch gaps after each sleep go too.",
		     pct(a, a->asleep_ns));
	SET_FIX(a, f, ADV_C16_WAIT);
	f->confidence = CONF_HIGH;
}
