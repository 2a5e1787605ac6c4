/* C7: the job's threads wait for CPU cores: the host side crawls. Judged
 * from run-queue waits where they were recorded (attribute.c), else from
 * counts of runnable threads. */
#include "rule.h"

RULE(oversubscription, "C7.cpu-oversubscription", "C7", NEED_PROC, 50, ADV_C7_OVERSUB);

static void oversubscription_eval(struct analysis *a, struct finding *f)
{
	double idle = (double)a->idle_by_cause[IDLE_OVERSUB];
	char b1[32], b2[32], b3[32];

	if (pct(a, idle) < FINDING_MIN_PCT)
		return;
	finding_set_gain(a, f, &(struct gain){ .idle_causes = IDLE_BIT(IDLE_OVERSUB), .idle_ns = idle });
	SET_FIX(a, f, ADV_C7_OVERSUB);
	if (a->rq_known) {
		double steps = a->steps.n ? (double)a->steps.n : 1;
		double tw = a->oversub.train_wait_ns, tr = a->oversub.train_run_ns;

		snprintf(f->title, sizeof(f->title),
			 "CPU oversubscribed: the job's threads wait for a core (%.0f%% of the run)", pct(a, idle));
		snprintf(f->evidence, sizeof(f->evidence),
			 "During idle intervals worth %.0f%% of the run, the training thread waited on a CPU "
			 "run queue for %s per step%s (%.0f%% of that idle time) and ran for %s per step; "
			 "the job's threads together waited %s per step for a core (run-queue delay from "
			 "schedstat; sleeping threads count for nothing, however many).",
			 pct(a, idle), fmt_ns(b1, sizeof(b1), tw / steps), a->steps.n ? "" : " (no steps: whole run)",
			 idle > 0 ? 100.0 * tw / idle : 0, fmt_ns(b2, sizeof(b2), tr / steps),
			 fmt_ns(b3, sizeof(b3), a->oversub.job_wait_ns / steps));
		if (a->oversub.machine_ns > 0)
			ADDF(f->evidence, " The machine's CPUs were idle %.0f%% of that time%s.",
			     100.0 * a->oversub.machine_idle_ns / a->oversub.machine_ns,
			     a->oversub.machine_idle_ns < 0.05 * a->oversub.machine_ns ? " (saturated)" : "");
		if (a->oversub.takers_ns >= 0.5 * idle)
			ADDF(f->evidence, " Its code sites are what the job's other processes and threads "
					  "ran on a CPU meanwhile, in %.0f%% of that idle time: the work that "
					  "took the cores, to run on fewer threads.",
			     a->oversub.takers_ns < idle ? 100.0 * a->oversub.takers_ns / idle : 100.0);
		f->confidence = tw >= 0.25 * idle ? CONF_HIGH : CONF_MEDIUM;
		return;
	}
	uint64_t ivcsw0 = 0, ivcsw1 = 0;
	unsigned threads = 0;

	for (size_t i = 0; i < a->x->threads.n; i++) { /* first and last sample of each */
		const struct thread_samples *s = a->x->threads.v[i].s;

		threads++;
		ivcsw0 += s->blocks.v[0].ivcsw;
		ivcsw1 += s->last.ivcsw;
	}
	double secs = (double)(a->last_op - a->first_op) / 1e9;

	snprintf(f->title, sizeof(f->title), "CPU oversubscribed: more runnable threads than cores (%.0f%% of the run)",
		 pct(a, idle));
	snprintf(f->evidence, sizeof(f->evidence),
		 "While the GPU was idle (%.0f%% of the run), more threads were runnable than the %u "
		 "cores the job may use; the job ran %u threads in all, with %.0f involuntary context "
		 "switches per second. Run-queue delay was not recorded (a recording made before gpuwhy "
		 "read it, or a kernel without /proc/PID/schedstat), so runnable threads were counted "
		 "instead: a count cannot tell a thread that waited for a core from one that ran at once.",
		 pct(a, idle), a->cpus_allowed, threads, secs > 0 ? (double)(ivcsw1 - ivcsw0) / secs : 0.0);
	f->confidence = CONF_LOW;
}
