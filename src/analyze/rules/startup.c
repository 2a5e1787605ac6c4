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
 * holds all of it (not cut short by --duration or --max-size, not only its
 * newest part with --ring, not windows of it with --duty). */
static int ran_to_end(const struct trace *t)
{
	const char *st = trace_meta(t, "record.exit_status");

	return t->complete && st && !strcmp(st, "0") && !trace_meta(t, "record.stopped_early") &&
	       !trace_meta(t, "record.ring_bytes") && !trace_meta(t, "record.duty_period_ms");
}

/* The job as recorded, gpuwhy's tracing included: from the recording's
 * start to the target's exit (the recording's end where that is not
 * known: it ends after merging the processes' files). 0: not known. */
static double job_ns(const struct trace *t)
{
	double start = meta_ns(t, "record.start_ns"), end = meta_ns(t, "record.end_ns");

	for (size_t i = 0; i < t->procs.n; i++)
		if (t->procs.v[i].is_target && t->procs.v[i].exit_ts > start)
			end = (double)t->procs.v[i].exit_ts;
	return start > 0 && end > start ? end - start : 0;
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
	const char *dir, *var;
	char key[48];
	double job = job_ns(a->t), su = (double)a->startup_ns;
	size_t n;

	memset(sf, 0, sizeof(*sf));
	a->job_ns = job;
	if (!has_steps(a) || !ran_to_end(a->t) || !(job > su) || p->cache_kind == STARTUP_CACHE_NONE ||
	    su < STARTUP_JOB_SHARE * job || STARTUP_CACHE_KEPT * p->cache_ns < STARTUP_SAVED_SHARE * job)
		return;
	sf->shown = 1;
	sf->job_ns = job;
	sf->compiler = p->cache_kind == STARTUP_CACHE_CUPY ? "CuPy" : "XLA";
	sf->compiler_id = p->cache_kind == STARTUP_CACHE_CUPY ? "cupy" : "xla";
	/* what a warm start saves, never more than the start-up or 95% of the job */
	sf->saved_hi_ns = fmin(fmin(STARTUP_CACHE_KEPT_HI * p->cache_ns, su), CAP_SHARE * job);
	sf->saved_ns = fmin(STARTUP_CACHE_KEPT * p->cache_ns, sf->saved_hi_ns);
	sf->saved_lo_ns = fmin(STARTUP_CACHE_KEPT_LO * p->cache_ns, sf->saved_ns);
	sf->speedup = job / (job - sf->saved_ns);
	sf->speedup_lo = job / (job - sf->saved_lo_ns);
	sf->speedup_hi = job / (job - sf->saved_hi_ns);
	sf->fix = advice(ADV_STARTUP_CACHE, p->cache_kind == STARTUP_CACHE_CUPY ? FW_CUPY : FW_JAX);
	snprintf(sf->title, sizeof(sf->title), "Start-up is most of the job: %.2f s of %.2f s, %.2f s of it in "
		 "%s's compiler", su / 1e9, job / 1e9, p->cache_ns / 1e9, sf->compiler);
	n = (size_t)snprintf(sf->evidence, sizeof(sf->evidence),
		"The job ran to its end (exit status 0) in %.1f s as recorded, gpuwhy's tracing included. "
		"Its start-up before step 1 took %.1f s (%.0f%% of it): the training thread compiled for "
		"%.1f s, %.1f s of it in %s's compiler, whose output a persistent cache keeps between runs, "
		"so this run started without a warm cache. Where it was measured "
		"(tests/gpu/startup_cache.sh), a warm start saved 0.99-1.10 times that time; the gain takes "
		"%.2f, its range %.2f-%.2f. The findings of the steps are of this run and not changed by it.",
		job / 1e9, su / 1e9, 100.0 * su / job, p->compile_ns / 1e9, p->cache_ns / 1e9, sf->compiler,
		STARTUP_CACHE_KEPT, STARTUP_CACHE_KEPT_LO, STARTUP_CACHE_KEPT_HI);
	var = p->cache_kind == STARTUP_CACHE_CUPY ? "CUPY_CACHE_DIR" : "JAX_COMPILATION_CACHE_DIR";
	snprintf(key, sizeof(key), "env.%s", var);
	dir = trace_meta(a->t, key);
	if (dir && n < sizeof(sf->evidence))
		snprintf(sf->evidence + n, sizeof(sf->evidence) - n,
			 " The job set %s=%s: that cache was cold, so a next run on the same disk starts warm; a "
			 "fresh container or machine starts cold again.", var, dir);
}
