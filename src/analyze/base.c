/* What every pass of the analysis uses, below all of them: the names of
 * the idle causes, the warnings and the out-of-memory state of an analysis,
 * kernel names as shown, and the run's length without gpuwhy's own tracing
 * cost. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze.h"
#include "internal.h"

static const struct {
	const char *id, *name;
} causes[IDLE_NCAUSES] = {
#define CAUSE_ROW(e, id, name) [e] = { id, name },
	IDLE_CAUSES(CAUSE_ROW)
#undef CAUSE_ROW
};

const char *idle_cause_name(enum idle_cause c)
{
	return c < IDLE_NCAUSES ? causes[c].name : "?";
}

const char *idle_cause_label(const struct analysis *a, enum idle_cause c)
{
	/* a job that runs no Python issues its launches itself */
	if (c == IDLE_LAUNCH_OVERHEAD && !a->python[0] && !a->py_thread_samples &&
	    (a->framework == FW_CUDA_C || a->framework == FW_UNKNOWN))
		return "host too slow to issue work (launches)";
	/* collectives staged through host memory (gloo): the GPU idles in the
	 * transfer itself, not only waiting for the other ranks */
	if (c == IDLE_COMM && a->host_colls)
		return "in collectives on the host (gloo)";
	return idle_cause_name(c);
}

const char *idle_cause_id(enum idle_cause c)
{
	return c < IDLE_NCAUSES ? causes[c].id : "?";
}

void analysis_warn(struct analysis *a, const char *fmt, ...)
{
	char buf[512], *s;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	s = strdup(buf);
	if (!s || VEC_PUSH(a->warnings, s) < 0) {
		free(s);
		analysis_nomem(a, "keeping a warning");
	}
}

void analysis_nomem(struct analysis *a, const char *what)
{
	if (a->err)
		return;
	a->err = -ENOMEM;
	snprintf(a->err_msg, sizeof(a->err_msg),
		 "out of memory while %s: no report (free memory or raise the limit, e.g. ulimit -v, "
		 "and run it again)", what);
}

double launch_idle_untraced(const struct analysis *a)
{
	double idle = (double)a->idle_by_cause[IDLE_LAUNCH_OVERHEAD] - (double)a->trace_cost_ns;

	return idle > 0 ? idle : 0;
}

int periodic_is_wait(const struct analysis *a)
{
	return a->periodic_wait_ns > 0 && a->periodic_wait_ns >= (double)a->idle_by_cause[IDLE_PERIODIC];
}

int gpu_set_the_pace(const struct analysis *a)
{
	return a->steady_ns && a->queue_full_ns * 100 >= GPU_PACED_PCT * a->steady_ns;
}

/* The steady run without gpuwhy's own tracing cost and without the kernels
 * the job built on their first use there (compiling gaps: the warm-up left
 * them in the window, and a longer run pays them once): the run the gains
 * are of. */
double steady_untraced_ns(const struct analysis *a)
{
	double out = (double)a->trace_cost_ns + (double)a->idle_by_cause[IDLE_COMPILE];

	return (double)a->steady_ns > out ? (double)a->steady_ns - out : 0;
}

const char *analysis_kname(const struct analysis *a, uint32_t name, int form)
{
	if (name >= a->t->names.n)
		return "?";
	return kname_cached(a->knames, name, a->t->names.v[name], form);
}
