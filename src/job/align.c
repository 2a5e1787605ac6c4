/* The ranks' clocks on one time line. Each recording's times are its
 * host's CLOCK_MONOTONIC, which counts from that host's boot: the meta's
 * clock pairs (monotonic and realtime read together at the start and the
 * end) put it on realtime, which NTP or PTP keeps within about a
 * millisecond across hosts, or within microseconds on one host. The ends
 * of the collectives refine it: an NCCL collective ends on every rank at
 * the same moment (none can finish before the last rank's data arrived),
 * so the k-th collective of each rank, matched by name, should end at
 * the same time; the median difference is the rank's correction, and what
 * is left (their median absolute difference) the residual error.
 * Ranks recorded on one host since one boot read the same monotonic clock:
 * their clocks need no correction (the collectives are matched only), and
 * host-staged collectives (gloo), which return on each rank at its own
 * moment, would only add their spread to it. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "job.h"

#define SHIFT_MAX 16     /* a rank may have missed or added this many collectives at its start */
#define SHIFT_SAMPLE 512 /* pairs compared per candidate shift */
#define MIN_PAIRS 3
#define SAME_BOOT_NS 100000 /* realtime minus monotonic within this: the same boot */

/* Rank r reads the reference's clock: the same host name, booted at the
 * same moment by the realtime clock (realtime minus monotonic is the boot
 * time; two machines named alike would have to boot within 100 us). */
static int same_clock(const struct rank_rec *ref, const struct rank_rec *r)
{
	int64_t a = (int64_t)(ref->real0 - ref->mono0), b = (int64_t)(r->real0 - r->mono0);

	return ref->clock_pairs == 2 && r->clock_pairs == 2 && ref->host[0] && !strcmp(ref->host, r->host) &&
	       llabs(a - b) < SAME_BOOT_NS;
}

static int cmp_i64(const void *x, const void *y)
{
	int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;

	return a < b ? -1 : a > b;
}

static int64_t median_i64(int64_t *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp_i64);
	return n % 2 ? v[n / 2] : v[n / 2 - 1] / 2 + v[n / 2] / 2;
}

/* The differences of the ends of the pairs (ref's k, r's k + shift) with
 * equal names, every `step`-th k: how many, into d. */
static size_t pair_diffs(const struct job *j, const struct rank_rec *ref, const struct rank_rec *r,
			 int shift, size_t step, int64_t *d)
{
	size_t n = 0;

	for (size_t k = 0; k < ref->coll.n; k += step) {
		long m = (long)k + shift;

		if (m < 0 || (size_t)m >= r->coll.n || r->coll.v[m].name != ref->coll.v[k].name)
			continue;
		d[n++] = job_rel(j, r, r->coll.v[m].end) - job_rel(j, ref, ref->coll.v[k].end);
	}
	return n;
}

/* The median of d and the median absolute deviation from it. */
static void spread(int64_t *d, size_t n, int64_t *med, int64_t *mad)
{
	*med = median_i64(d, n);
	for (size_t i = 0; i < n; i++)
		d[i] = llabs(d[i] - *med);
	*mad = median_i64(d, n);
}

/* Rank r against the reference: the shift whose pairs end together most
 * tightly (the right pairing leaves only the clocks' offset, the same for
 * every pair; a wrong one mixes the gaps between collectives). A shift of a
 * whole step pairs equally tightly when steps are regular: of those within
 * twice the best spread, the one nearest the realtime pairs' own offset. */
static int align_rank(struct job *j, const struct rank_rec *ref, struct rank_rec *r, int64_t *d)
{
	size_t fewer = r->coll.n < ref->coll.n ? r->coll.n : ref->coll.n;
	size_t step = ref->coll.n / SHIFT_SAMPLE + 1, need = fewer / step / 2; /* a rank cut short pairs less */
	int64_t best_mad = INT64_MAX, best_med = 0, med, mad;
	int best = 0, found = 0;

	if (need < MIN_PAIRS)
		need = MIN_PAIRS;
	for (int pass = 0; pass < 2; pass++)
		for (int s = -SHIFT_MAX; s <= SHIFT_MAX; s++) {
			size_t n = pair_diffs(j, ref, r, s, step, d);

			if (n < need)
				continue;
			spread(d, n, &med, &mad);
			if (pass == 0 && mad < best_mad)
				best_mad = mad;
			if (pass == 1 && mad <= 2 * best_mad + 2000 && (!found || llabs(med) < llabs(best_med))) {
				best = s;
				best_med = med;
				found = 1;
			}
		}
	if (!found)
		return 0;
	size_t n = pair_diffs(j, ref, r, best, 1, d);

	spread(d, n, &med, &mad);
	if (same_clock(ref, r)) {
		r->resid_ns = 0;
		r->one_clock = 1;
	} else {
		r->corr -= med;
		r->resid_ns = (double)mad;
	}
	r->shift = best;
	r->matched = n;
	return 1;
}

/* The collectives every whole aligned rank has: mc rows, one per
 * collective of the reference that all of them matched (a damaged rank's
 * entry is SIZE_MAX where it lacks one). */
static int match_table(struct job *j)
{
	const struct rank_rec *ref = &j->ranks.v[j->ref];
	size_t nr = j->ranks.n;

	j->nr = nr;
	j->mc = malloc((ref->coll.n ? ref->coll.n : 1) * nr * sizeof(*j->mc));
	if (!j->mc)
		return -ENOMEM;
	for (size_t k = 0; k < ref->coll.n; k++) {
		size_t *row = j->mc + j->ncoll * nr;
		int all = 1;

		for (size_t i = 0; i < nr; i++) {
			const struct rank_rec *r = &j->ranks.v[i];
			long m = (long)k + r->shift;

			row[i] = SIZE_MAX;
			if (r->status == RANK_UNREADABLE || !r->matched)
				continue;
			if (m >= 0 && (size_t)m < r->coll.n && r->coll.v[m].name == ref->coll.v[k].name)
				row[i] = (size_t)m;
			else if (r->status == RANK_OK)
				all = 0; /* a rank cut short may lack the rest: the others still count */
		}
		if (all)
			j->ncoll++;
	}
	return 0;
}

int job_align(struct job *j)
{
	size_t most = 0;
	int64_t *d = NULL;
	int ret = 0, pairs = 1;

	j->ref = -1;
	j->base = UINT64_MAX;
	for (size_t i = 0; i < j->ranks.n; i++) {
		struct rank_rec *r = &j->ranks.v[i];

		if (r->status == RANK_UNREADABLE)
			continue;
		if (r->clock_pairs < 2)
			pairs = 0;
		if (r->real0 < j->base)
			j->base = r->real0;
		/* the reference: a whole recording, with the most collectives */
		if (j->ref < 0 || (r->status == RANK_OK && j->ranks.v[j->ref].status != RANK_OK) ||
		    (r->status == j->ranks.v[j->ref].status && r->coll.n > most)) {
			j->ref = (int)i;
			most = r->coll.n;
		}
	}
	if (j->ref < 0)
		return 0;
	j->aligned_by = pairs ? ALIGN_REALTIME : ALIGN_NONE;
	struct rank_rec *ref = &j->ranks.v[j->ref];

	ref->matched = ref->coll.n;
	d = malloc((ref->coll.n ? ref->coll.n : 1) * sizeof(*d));
	if (!d)
		return -ENOMEM;
	for (size_t i = 0; i < j->ranks.n && ref->coll.n >= MIN_PAIRS; i++) {
		struct rank_rec *r = &j->ranks.v[i];

		if ((int)i == j->ref || r->status == RANK_UNREADABLE)
			continue;
		if (align_rank(j, ref, r, d)) {
			/* one clock only while no rank needed a correction */
			if (!r->one_clock)
				j->aligned_by = ALIGN_COLLECTIVES;
			else if (j->aligned_by != ALIGN_COLLECTIVES)
				j->aligned_by = ALIGN_ONE_CLOCK;
			if (r->resid_ns > j->residual_ns)
				j->residual_ns = r->resid_ns;
		}
	}
	free(d);
	if (ref->coll.n)
		ret = match_table(j);
	return ret;
}
