/* Shared by the cross-rank rules: the matched collectives (align.c's
 * table) on the common time line, in the reference rank's steady window. */
#ifndef GPUWHY_JOB_XR_H
#define GPUWHY_JOB_XR_H

#include "../util/util.h"
#include "job.h"

/* A collective this late behind the others is a rank being late, not the
 * jitter of launching it (tens of microseconds). */
#define XR_LATE_MIN_NS 50000.0
/* Shares of the job's step from which a cross-rank cause is a warning, and
 * critical (the single-rank rules' 5% and 20%: docs/RULES.md section 4). */
#define XR_WARN_SHARE 0.05
#define XR_HIGH_SHARE 0.20

/* qsort's order of doubles: the rules take medians across ranks */
static inline int xr_cmp_dbl(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;

	return a < b ? -1 : a > b;
}

static inline const struct rank_coll *xr_coll(const struct job *j, size_t row, size_t i)
{
	size_t m = j->mc[row * j->nr + i];

	return m == SIZE_MAX ? NULL : &j->ranks.v[i].coll.v[m];
}

/* The row's collective lies in the reference rank's steady window, and
 * at least two ranks have it. */
static inline int xr_row_used(const struct job *j, size_t row)
{
	const struct rank_rec *ref = &j->ranks.v[j->ref];
	const struct rank_coll *c = xr_coll(j, row, (size_t)j->ref);
	size_t n = 0;

	if (!c || (ref->steps.n && (c->start < ref->steps.v[0].start ||
				    c->start > ref->steps.v[ref->steps.n - 1].end)))
		return 0;
	for (size_t i = 0; i < j->nr && n < 2; i++)
		n += xr_coll(j, row, i) != NULL;
	return n >= 2;
}

/* Steps the per-step figures divide by: the reference rank's. */
static inline double xr_steps(const struct job *j)
{
	size_t n = j->ref >= 0 ? j->ranks.v[j->ref].steps.n : 0;

	return n ? (double)n : 1;
}

static inline enum severity xr_severity(const struct job *j, double per_step_ns)
{
	double share = j->step_ns > 0 ? per_step_ns / j->step_ns : 0;

	return share >= XR_HIGH_SHARE ? SEV_HIGH : share >= XR_WARN_SHARE ? SEV_WARN : SEV_INFO;
}

static inline double xr_speedup(const struct job *j, double per_step_ns)
{
	return j->step_ns > per_step_ns && per_step_ns > 0 ? j->step_ns / (j->step_ns - per_step_ns) : 1;
}

/* A cross-rank finding's saving per step, its severity and speed-up. */
static inline void xr_gain(const struct job *j, struct job_finding *f, double per_step_ns)
{
	f->per_step_ns = per_step_ns;
	f->severity = xr_severity(j, per_step_ns);
	f->speedup = xr_speedup(j, per_step_ns);
}

/* The part of [s, e) not yet counted, where what was counted ends at
 * *covered: a step's collectives overlap (one per gradient bucket, each
 * waiting for the same late rank), and a delay that holds them all is
 * counted once. Spans come in about start order (the reference's
 * collectives, in start order). */
static inline double xr_span_add(int64_t *covered, int64_t s, int64_t e)
{
	if (s < *covered)
		s = *covered;
	if (e <= s)
		return 0;
	*covered = e;
	return (double)(e - s);
}

/* Arrival a of rank i at a collective into the last (and who) and the
 * second last so far. */
static inline void xr_last_two(int64_t a, size_t i, int64_t *last, int64_t *second, size_t *who)
{
	if (a > *last) {
		*second = *last;
		*last = a;
		*who = i;
	} else if (a > *second) {
		*second = a;
	}
}

#endif
