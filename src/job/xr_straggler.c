/* X1, the straggler: one rank last into most collectives, so that every
 * other rank waits for it each step (docs/RULES.md section 8). Its own
 * report says what it does with the time; its GPU work per step beside the
 * median rank's says whether it has more work (X4) or a slower host. */
#include <stdlib.h>
#include <string.h>

#include "xr.h"

#define STRAGGLER_SHARE 0.5 /* last into at least half of the collectives */
#define MORE_WORK 1.10      /* GPU work per step this much above the median: more work */

/* The median GPU work per step (outside collectives) of the ranks read;
 * 0 when none has steps, or out of memory (said by j->nomem). */
static double median_compute(struct job *j)
{
	double *v = malloc((j->nr ? j->nr : 1) * sizeof(*v)), med = 0;
	size_t n = 0;

	if (!v) {
		j->nomem = 1;
		return 0;
	}
	for (size_t i = 0; i < j->nr; i++)
		if (j->ranks.v[i].status != RANK_UNREADABLE && j->ranks.v[i].nsteps)
			v[n++] = j->ranks.v[i].compute_ns_step;
	if (n) {
		qsort(v, n, sizeof(*v), xr_cmp_dbl);
		med = v[(n - 1) / 2];
	}
	free(v);
	return med;
}

/* 1 if every other rank read has a finding of this cause too: it is not
 * what makes this rank late. */
static int every_rank_has(const struct job *j, const struct rank_rec *r, const char *cause)
{
	for (size_t i = 0; i < j->nr; i++) {
		const struct rank_rec *o = &j->ranks.v[i];
		int has = 0;

		if (o == r || o->status == RANK_UNREADABLE)
			continue;
		for (size_t k = 0; k < o->findings.n && !has; k++)
			has = !strcmp(o->findings.v[k].cause, cause);
		if (!has)
			return 0;
	}
	return 1;
}

static void own_story(char *buf, size_t len, const struct job *j, const struct rank_rec *r, double med_work)
{
	const struct rank_finding *top = r->findings.n ? &r->findings.v[0] : NULL;
	char a[32], b[32];
	size_t o;

	o = (size_t)snprintf(buf, len, "Its own GPU work per step: %s against the median rank's %s. ",
			     fmt_ns(a, sizeof(a), r->compute_ns_step), fmt_ns(b, sizeof(b), med_work));
	if (o < len && top)
		o += (size_t)snprintf(buf + o, len - o, "Its own report's top finding: [%s] %s (%.2fx for that rank)%s. ",
				      top->cause, top->title, top->speedup,
				      every_rank_has(j, r, top->cause) ? ", which every rank has: not what makes it late" : "");
	else if (o < len)
		o += (size_t)snprintf(buf + o, len - o, "Its own report has no finding at warning or above. ");
	for (int k = 1; k < ACT_N && o < len; k++)
		if (r->act_ns[k] > 0.05 * r->steady_ns)
			o += (size_t)snprintf(buf + o, len - o, "Its training thread spends %.0f%% of the run %s. ",
					      100 * r->act_ns[k] / r->steady_ns, activity_name((enum activity)k));
}

void xr_straggler(struct job *j)
{
	size_t rows = 0, best = SIZE_MAX;

	for (size_t row = 0; row < j->ncoll; row++)
		rows += xr_row_used(j, row);
	for (size_t i = 0; i < j->nr; i++)
		if (best == SIZE_MAX || j->ranks.v[i].times_last > j->ranks.v[best].times_last)
			best = i;
	if (rows < 3 || best == SIZE_MAX)
		return;
	struct rank_rec *r = &j->ranks.v[best];
	double share = (double)r->times_last / (double)rows;

	if (share < STRAGGLER_SHARE || r->late_ns_step < XR_LATE_MIN_NS ||
	    xr_severity(j, r->late_ns_step) == SEV_INFO)
		return;
	/* the rank doing work the others wait for (X3, found first): one
	 * cause, whose fix (the work spread or moved off the loop) is the
	 * straggler's too */
	for (size_t i = 0; i < j->findings.n; i++)
		if (!strcmp(j->findings.v[i].cause, "X3") && j->findings.v[i].rank == r->rank)
			return;
	struct job_finding *f = job_finding_add(j, "X1.straggler", "X1");
	double med_work = median_compute(j);
	char a[32], b[32], story[600];

	if (!f)
		return;
	int more_work = med_work > 0 && r->compute_ns_step > MORE_WORK * med_work;

	f->rank = r->rank;
	snprintf(f->host, sizeof(f->host), "%s", r->host);
	/* with more work, evening it out saves that work, not all of the lead
	 * (c15_ddp_straggler: 1.1 ms of a 1.6 ms lead; measured 1.23x) */
	xr_gain(j, f, more_work && r->compute_ns_step - med_work < r->late_ns_step ? r->compute_ns_step - med_work
										  : r->late_ns_step);
	snprintf(f->title, sizeof(f->title),
		 "Rank %ld is the straggler: last into %.0f%% of the collectives, %s per step after the median rank",
		 r->rank, 100 * share, fmt_ns(a, sizeof(a), r->late_ns_step));
	own_story(story, sizeof(story), j, r, med_work);
	snprintf(f->evidence, sizeof(f->evidence),
		 "Rank %ld%s%s arrived last, by %s or more, in %zu of the %zu collectives matched on every "
		 "rank inside the steps (the job's step is %s). %s(gpuwhy report --rank %ld shows its own report.)",
		 r->rank, r->host[0] ? " on " : "", r->host, fmt_ns(b, sizeof(b), XR_LATE_MIN_NS), r->times_last,
		 rows, fmt_ns(a, sizeof(a), j->step_ns), story, r->rank);
	if (more_work)
		snprintf(f->fix, sizeof(f->fix),
			 "Rank %ld has more GPU work per step than the others: give every rank the same "
			 "amount of data, or move its extra work off the loop.", r->rank);
	else if (r->findings.n && every_rank_has(j, r, r->findings.v[0].cause))
		snprintf(f->fix, sizeof(f->fix),
			 "Its GPU work is the others'; its host is slower to issue it, and its top finding is every "
			 "rank's: look for what only it does (gpuwhy report -v --rank %ld: its info findings and "
			 "sites, against another rank's) and what differs on its host (CPU binding, loader "
			 "workers, other processes, a slower GPU or link).", r->rank);
	else
		snprintf(f->fix, sizeof(f->fix),
			 "Its GPU work is the others'; its host is slower to issue it: fix its own top finding "
			 "(gpuwhy report --rank %ld), and check what differs on its host (CPU binding, loader "
			 "workers, other processes, a slower GPU or link).", r->rank);
}
