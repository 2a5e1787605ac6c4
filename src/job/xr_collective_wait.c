/* X2, collective wait: time inside the collectives before the last rank
 * arrived. A collective cannot finish before every rank has started it;
 * until the last one has, the ranks already in it only wait (docs/RULES.md
 * section 8). Per rank: that wait, how late it arrives after the median
 * rank, how often it is the last; for the job: how long the last arrival
 * keeps the median rank, per step. A step's collectives overlap (one per
 * gradient bucket): each of these times is the union of their spans, so
 * one late start that holds three buckets counts once. */
#include <stdlib.h>
#include <string.h>

#include "xr.h"

static int cmp_i64(const void *x, const void *y)
{
	int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;

	return a < b ? -1 : a > b;
}

void xr_collective_wait(struct job *j)
{
	int64_t *arr = malloc((j->nr ? j->nr : 1) * 3 * sizeof(*arr));
	int64_t *wait_to, *late_to, hold_to = INT64_MIN, xfer_to = INT64_MIN; /* counted up to */
	double hold = 0, xfer = 0, steps = xr_steps(j);
	size_t rows = 0;

	if (!arr) {
		j->nomem = 1;
		return;
	}
	wait_to = arr + j->nr;
	late_to = wait_to + j->nr;
	for (size_t i = 0; i < j->nr; i++)
		wait_to[i] = late_to[i] = INT64_MIN;
	for (size_t row = 0; row < j->ncoll; row++) {
		int64_t last = INT64_MIN, second = INT64_MIN, med, end = INT64_MIN;
		size_t n = 0, who = 0;

		if (!xr_row_used(j, row))
			continue;
		for (size_t i = 0; i < j->nr; i++) {
			const struct rank_coll *c = xr_coll(j, row, i);
			int64_t a;

			if (!c)
				continue;
			a = job_rel(j, &j->ranks.v[i], c->start);
			arr[n++] = a;
			xr_last_two(a, i, &last, &second, &who);
			if (job_rel(j, &j->ranks.v[i], c->end) > end)
				end = job_rel(j, &j->ranks.v[i], c->end);
		}
		qsort(arr, n, sizeof(*arr), cmp_i64);
		med = arr[(n - 1) / 2];
		rows++;
		hold += xr_span_add(&hold_to, med, last);
		xfer += xr_span_add(&xfer_to, last, end);
		if ((double)(last - second) >= XR_LATE_MIN_NS)
			j->ranks.v[who].times_last++;
		for (size_t i = 0; i < j->nr; i++) {
			const struct rank_coll *c = xr_coll(j, row, i);
			struct rank_rec *r = &j->ranks.v[i];
			int64_t a, e;

			if (!c)
				continue;
			a = job_rel(j, r, c->start);
			e = job_rel(j, r, c->end);
			r->wait_ns_step += xr_span_add(&wait_to[i], a, e < last ? e : last) / steps;
			r->late_ns_step += xr_span_add(&late_to[i], med, a) / steps;
		}
	}
	free(arr);
	if (!rows)
		return;
	double per = hold / steps, mean_wait = 0;
	size_t nw = 0;

	for (size_t i = 0; i < j->nr; i++)
		if (j->ranks.v[i].matched) {
			mean_wait += j->ranks.v[i].wait_ns_step;
			nw++;
		}
	mean_wait /= nw ? (double)nw : 1;
	if (xr_severity(j, per) == SEV_INFO)
		return;
	struct job_finding *f = job_finding_add(j, "X2.collective-wait", "X2");
	char a[32], b[32], c[32], d[32];

	if (!f)
		return;
	xr_gain(j, f, per);
	/* the share its gain is of: the last arrival's lead, which the waits
	 * of the ranks that came first add up to (their mean is less) */
	snprintf(f->title, sizeof(f->title),
		 "Ranks wait for each other inside collectives: the last arrives %s per step after the median "
		 "rank (%.0f%% of the step)", fmt_ns(a, sizeof(a), per), 100 * per / j->step_ns);
	snprintf(f->evidence, sizeof(f->evidence),
		 "Over the %zu collectives matched on every rank inside the steps: a rank waits %s per step on average inside "
		 "them before the last rank arrives; the last arrival comes %s per step after the median "
		 "rank's; the transfer itself (last arrival to end) takes %s per step, of a %s step.",
		 rows, fmt_ns(a, sizeof(a), mean_wait), fmt_ns(b, sizeof(b), per),
		 fmt_ns(c, sizeof(c), xfer / steps), fmt_ns(d, sizeof(d), j->step_ns));
	snprintf(f->fix, sizeof(f->fix),
		 "The wait is the late ranks' delay, not the network's: fix what keeps them (the findings "
		 "that name a rank, and those ranks' own findings; their gains are part of this one, not "
		 "in addition); a faster interconnect or NCCL setting shortens only the transfer.");
}
