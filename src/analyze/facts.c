/* The facts every output prints and none may work out for itself: the
 * verdict, whether the GPU set the pace, the time windows' busy shares.
 * Computed once, after the rules, so that the terminal, JSON, HTML and diff
 * outputs cannot disagree on them. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static int cmp_dbl(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;

	return a < b ? -1 : a > b;
}

static int healthy(const struct analysis *a)
{
	if (!a->t->nops || a->too_little)
		return 0;
	for (size_t i = 0; i < a->findings.n; i++)
		if (a->findings.v[i].assessed && a->findings.v[i].severity >= SEV_WARN)
			return 0;
	return 1;
}

/* Without steps: the GPU's busy share of each time window that has a
 * length, the median (the upper of the middle two) and the lowest. */
static void window_busy(struct analysis *a)
{
	struct report_facts *x = &a->facts;
	double *busy;
	size_t k = 0;

	if (!a->step_window_ns || !a->steps.n)
		return;
	busy = malloc(a->steps.n * sizeof(*busy));
	if (!busy) {
		analysis_nomem(a, "summarizing the time windows");
		return;
	}
	for (size_t i = 0; i < a->steps.n; i++)
		if (a->steps.v[i].end > a->steps.v[i].start)
			busy[k++] = 100.0 * (double)a->steps.v[i].busy_ns /
				    (double)(a->steps.v[i].end - a->steps.v[i].start);
	if (k) {
		qsort(busy, k, sizeof(*busy), cmp_dbl);
		x->windows_busy_n = k;
		x->window_busy_median_pct = busy[k / 2];
		x->window_busy_lowest_pct = busy[0];
	}
	free(busy);
}

/* The start-up's parts worth a line (a tenth of it or more each), and
 * whether a persistent cache keeps most of its compiling. */
static void startup_said(struct analysis *a)
{
	const struct startup_parts *p = &a->startup;
	double su = (double)a->startup_ns;

	a->facts.startup_said = 0;
	a->facts.startup_cache_said = 0;
	if (!(su > 0))
		return;
	a->facts.startup_said = (p->compile_ns >= STARTUP_PART_SAID * su ? SAID_COMPILE : 0) |
				(p->import_ns >= STARTUP_PART_SAID * su ? SAID_IMPORT : 0) |
				(p->first_ops_ns >= STARTUP_PART_SAID * su ? SAID_FIRST_OPS : 0) |
				(p->workers_ns >= STARTUP_PART_SAID * su ? SAID_WORKERS : 0) |
				(p->once_ns >= STARTUP_PART_SAID * su ? SAID_ONCE : 0);
	a->facts.startup_cache_said = p->cache_ns >= STARTUP_CACHE_SAID * su;
}

/* A periodic finding's share of the run holds the extra steps' GPU work as
 * well as their idle; the idle split holds the idle alone. */
static void periodic_parts(struct analysis *a)
{
	const struct finding *most = NULL;

	for (size_t i = 0; i < a->findings.n; i++) {
		const struct finding *f = &a->findings.v[i];

		if (f->assessed && f->cause && !strcmp(f->cause, "C14") &&
		    (!most || f->claim.busy_ns > most->claim.busy_ns))
			most = f;
	}
	a->facts.periodic_idle_ns = a->facts.periodic_busy_ns = 0;
	if (most && most->claim.busy_ns >= PERIODIC_BUSY_SHOWN * (double)a->steady_ns) {
		a->facts.periodic_idle_ns = most->claim.idle_ns;
		a->facts.periodic_busy_ns = most->claim.busy_ns;
	}
	/* no C14 finding, and another one the report shows claims the long
	 * steps that recur: the split's "periodic stalls" is no checkpoint */
	a->facts.periodic_claimed_by = NULL;
	for (size_t i = 0; !most && i < a->findings.n && !a->facts.periodic_claimed_by; i++) {
		const struct finding *f = &a->findings.v[i];

		if (f->assessed && f->title[0] && f->severity >= SEV_WARN &&
		    (f->claim.idle_causes & IDLE_BIT(IDLE_PERIODIC)) &&
		    (double)a->idle_by_cause[IDLE_PERIODIC] >= PERIODIC_CLAIM_SHOWN * (double)a->steady_ns)
			a->facts.periodic_claimed_by = f->cause;
	}
}

/* Info findings that would save a twentieth of the run at their point
 * estimate, but not at the low end of their range: smaller gains the
 * report without -v still counts. */
static void quiet_gains(struct analysis *a)
{
	struct report_facts *x = &a->facts;
	double T = steady_untraced_ns(a), best = 0;

	x->quiet_n = 0;
	x->quiet_best = 0;
	for (size_t i = 0; T > 0 && !a->too_little && i < a->findings.n; i++) {
		const struct finding *f = &a->findings.v[i];

		if (!f->assessed || f->severity != SEV_INFO || f->saved_ns < SEV_WARN_SHARE * T)
			continue;
		x->quiet_n++;
		if (f->saved_ns > best) {
			best = f->saved_ns;
			x->quiet_best = i;
		}
	}
}

/* Compiling in the steady window (kernels built on first use, recompiles)
 * is no finding's: the split's line for it is said with its site. */
static void compile_part(struct analysis *a)
{
	double most = 0;

	a->facts.compile_shown = (double)a->idle_by_cause[IDLE_COMPILE] >= COMPILE_SHOWN * (double)a->steady_ns &&
				 a->steady_ns > 0;
	a->facts.compile_site = SIZE_MAX;
	for (size_t i = 0; a->facts.compile_shown && i < a->sites.n; i++)
		if (a->sites.v[i].ns[IDLE_COMPILE] > most) {
			most = a->sites.v[i].ns[IDLE_COMPILE];
			a->facts.compile_site = i;
		}
}

void analysis_facts(struct analysis *a)
{
	struct report_facts *x = &a->facts;

	x->healthy = healthy(a);
	x->tail_shown = a->tail.ns > 0 && a->tail.ns >= TAIL_SHOWN * (double)a->steady_ns;
	x->tail_eval_shown = x->tail_shown && a->tail.eval_ns >= TAIL_SHOWN * a->tail.ns;
	x->tail_ckpt_shown = x->tail_shown && a->tail.ckpt_ns >= TAIL_SHOWN * a->tail.ns;
	const struct activity_stat *ev = &a->act[ACT_EVAL];
	uint32_t ev_file = ev->call_file ? ev->call_file : ev->file, ev_line = ev->call_file ? ev->call_line : ev->line;

	int eval_finding = 0;

	for (size_t i = 0; i < a->findings.n; i++)
		eval_finding |= a->findings.v[i].assessed && a->findings.v[i].activity == ACT_EVAL;
	/* the renderers name C14's finding: it must be there */
	x->tail_eval_again = x->tail_eval_shown && eval_finding && ev->wall_ns > 0 && ev_line &&
			     a->tail.eval_file == ev_file && a->tail.eval_line == ev_line;
	x->untraced_step_shown = has_steps(a) && a->steady_ns &&
				 ((double)a->trace_cost_ns >= TRACE_COST_SHOWN * (double)a->steady_ns ||
				  (double)a->idle_by_cause[IDLE_COMPILE] >= COMPILE_SHOWN * (double)a->steady_ns);
	x->untraced_step_ns = steady_untraced_ns(a) / (double)(has_steps(a) ? has_steps(a) : 1);
	x->verdict = !a->t->nops ? "no-gpu-data" : a->too_little ? "too-little" : x->healthy ? "healthy"
											      : "bottlenecked";
	x->gpu_paced = gpu_set_the_pace(a);
	periodic_parts(a);
	compile_part(a);
	x->step_mean_ns = 0;
	for (size_t i = 0; has_steps(a) && i < a->steps.n; i++)
		x->step_mean_ns += (double)(a->steps.v[i].end - a->steps.v[i].start) / (double)a->steps.n;
	window_busy(a);
	startup_said(a);
	quiet_gains(a);
}
