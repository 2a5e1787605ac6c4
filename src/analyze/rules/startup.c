/* The start-up finding (docs/RULES.md section 2): not a rule of the steps,
 * whose gains are the steady window's, but the next run's gain from a warm
 * compilation cache. Computed after the rules, with the advice in the
 * compiler's own words (advice.c). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rule.h"

static double meta_ns(const struct trace *t, const char *key)
{
	const char *v = trace_meta(t, key);
	char *end;
	double x = v ? strtod(v, &end) : 0;

	return v && end != v && x > 0 ? x : 0;
}

/* The job ran to its own end: it exited with status 0, and the recording
 * holds all of it (not cut short by --duration or --max-size). */
static int ran_to_end(const struct trace *t)
{
	const char *st = trace_meta(t, "record.exit_status");

	return t->complete && st && !strcmp(st, "0") && !trace_meta(t, "record.stopped_early");
}

/* The start-up finding (docs/RULES.md section 2): a job that ran to its end
 * and started up for half of it or more, where a warm compilation cache
 * would save a fifth of it or more on the next run. A start-up costs once
 * per run, so it is info: it says what the next run of the same job saves,
 * not what is wrong with its steps. */
void startup_finding(struct analysis *a)
{
	struct startup_finding *sf = &a->startup_finding;
	const struct startup_parts *p = &a->startup;
	double start = meta_ns(a->t, "record.start_ns"), end = meta_ns(a->t, "record.end_ns");
	double job = start > 0 && end > start ? end - start : 0;

	memset(sf, 0, sizeof(*sf));
	if (!has_steps(a) || !ran_to_end(a->t) || !(job > 0) || p->cache_kind == STARTUP_CACHE_NONE ||
	    (double)a->startup_ns < STARTUP_JOB_SHARE * job ||
	    STARTUP_CACHE_KEPT * p->cache_ns < STARTUP_SAVED_SHARE * job)
		return;
	sf->shown = 1;
	sf->job_ns = job;
	sf->saved_ns = STARTUP_CACHE_KEPT * p->cache_ns;
	sf->saved_lo_ns = STARTUP_CACHE_KEPT_LO * p->cache_ns;
	sf->saved_hi_ns = fmin(fmin(STARTUP_CACHE_KEPT_HI * p->cache_ns, (double)a->startup_ns), CAP_SHARE * job);
	sf->saved_ns = fmin(sf->saved_ns, sf->saved_hi_ns);
	sf->speedup = job / (job - sf->saved_ns);
	sf->speedup_lo = job / (job - sf->saved_lo_ns);
	sf->speedup_hi = job / (job - sf->saved_hi_ns);
	sf->fix = advice(ADV_STARTUP_CACHE, p->cache_kind == STARTUP_CACHE_CUPY ? FW_CUPY : FW_JAX);
	snprintf(sf->evidence, sizeof(sf->evidence),
		 "The job ran to its end (exit status 0) in %.1f s. Its start-up before step 1 took %.1f s "
		 "(%.0f%% of it): the training thread compiled for %.1f s, %.1f s of it in %s's compiler, "
		 "whose output a persistent cache keeps between runs. Where it was measured "
		 "(tests/gpu/startup_cache.sh), a warm start saved about that time, %.0f%%-%.0f%% of it, "
		 "which the gain takes as %.0f%%. The findings of the steps are of this run and not changed "
		 "by it.",
		 job / 1e9, (double)a->startup_ns / 1e9, 100.0 * (double)a->startup_ns / job, p->compile_ns / 1e9,
		 p->cache_ns / 1e9, p->cache_kind == STARTUP_CACHE_CUPY ? "CuPy" : "XLA",
		 100 * STARTUP_CACHE_KEPT_LO, 100 * STARTUP_CACHE_KEPT_HI, 100 * STARTUP_CACHE_KEPT);
}
