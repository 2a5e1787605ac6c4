/* X4, uneven work: one rank's GPU runs more work per step than the others
 * (outside the collectives), so that it reaches each collective late
 * however fast its host is: a shard with longer sequences, a larger
 * batch, a rank-dependent code path (docs/RULES.md section 8). */
#include <stdlib.h>

#include "xr.h"

#define UNEVEN_RATIO 1.10 /* the most loaded rank's work over the median rank's */

void xr_uneven(struct job *j)
{
	double *v = malloc((j->nr ? j->nr : 1) * sizeof(*v)), med;
	size_t n = 0, top = SIZE_MAX;

	if (!v) {
		j->nomem = 1;
		return;
	}
	for (size_t i = 0; i < j->nr; i++) {
		const struct rank_rec *r = &j->ranks.v[i];

		if (r->status == RANK_UNREADABLE || !r->nsteps)
			continue;
		v[n++] = r->compute_ns_step;
		if (top == SIZE_MAX || r->compute_ns_step > j->ranks.v[top].compute_ns_step)
			top = i;
	}
	if (n < 2) {
		free(v);
		return;
	}
	qsort(v, n, sizeof(*v), xr_cmp_dbl);
	med = v[(n - 1) / 2];
	double lo = v[0];

	free(v);
	const struct rank_rec *r = &j->ranks.v[top];
	double extra = r->compute_ns_step - med;

	if (med <= 0 || r->compute_ns_step < UNEVEN_RATIO * med || xr_severity(j, extra) == SEV_INFO)
		return;
	struct job_finding *f = job_finding_add(j, "X4.uneven-work", "X4");
	char a[32], b[32], c[32];

	if (!f)
		return;
	f->rank = r->rank;
	snprintf(f->host, sizeof(f->host), "%s", r->host);
	xr_gain(j, f, extra);
	snprintf(f->title, sizeof(f->title), "Uneven work across ranks: rank %ld's GPU does %.2fx the median rank's work per step",
		 r->rank, r->compute_ns_step / med);
	snprintf(f->evidence, sizeof(f->evidence),
		 "GPU busy time per step outside collectives: rank %ld %s, the median rank %s, the least "
		 "loaded %s, over %zu ranks with steps. Every other rank waits for the most loaded one in the "
		 "next collective.",
		 r->rank, fmt_ns(a, sizeof(a), r->compute_ns_step), fmt_ns(b, sizeof(b), med),
		 fmt_ns(c, sizeof(c), lo), n);
	snprintf(f->fix, sizeof(f->fix),
		 "Give every rank the same work per step: a DistributedSampler over equal shards "
		 "(drop_last=True), batches bucketed or packed to the same number of tokens, and no "
		 "rank-dependent branch inside the step.");
}
