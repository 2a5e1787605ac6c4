/* The job: its ranks' summaries in rank order, and which ranks are missing. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "job.h"

static int by_rank(const void *x, const void *y)
{
	const struct rank_rec *a = x, *b = y;

	if ((a->rank < 0) != (b->rank < 0))
		return a->rank < 0 ? 1 : -1;
	if (a->rank != b->rank)
		return a->rank < b->rank ? -1 : 1;
	return strcmp(a->path, b->path);
}

static int find_gaps(struct job *j)
{
	long top = -1, world = -1;
	size_t i = 0;

	for (size_t k = 0; k < j->ranks.n; k++) {
		const struct rank_rec *r = &j->ranks.v[k];

		if (r->world > world)
			world = r->world;
		if (r->rank > top)
			top = r->rank;
		if (k && r->rank >= 0 && r->rank == j->ranks.v[k - 1].rank &&
		    (!j->duplicate.n || j->duplicate.v[j->duplicate.n - 1] != r->rank) &&
		    VEC_PUSH(j->duplicate, r->rank) < 0)
			return -ENOMEM;
	}
	/* no world size recorded: the ranks up to the highest one read */
	j->world = world > top ? world : top + 1;
	for (long want = 0; want < j->world; want++) {
		while (i < j->ranks.n && j->ranks.v[i].rank >= 0 && j->ranks.v[i].rank < want)
			i++;
		if ((i >= j->ranks.n || j->ranks.v[i].rank != want) && VEC_PUSH(j->missing, want) < 0)
			return -ENOMEM;
	}
	return 0;
}

int job_load(struct job *j, const char *const *files, size_t n, const char *steps)
{
	memset(j, 0, sizeof(*j));
	j->ref = -1;
	for (size_t i = 0; i < n; i++) {
		struct rank_rec r;
		int ret = rank_load(&r, files[i], steps);

		if (ret == -ENOMEM && r.status != RANK_UNREADABLE) {
			rank_free(&r);
			return -ENOMEM;
		}
		if (r.status == RANK_UNREADABLE && r.rank < 0) {
			long k = rank_peek(files[i]); /* its first chunk may still say */

			r.rank = k >= 0 ? k : -1;
		}
		if (!r.path || !r.load_path || VEC_PUSH(j->ranks, r) < 0) {
			rank_free(&r);
			return -ENOMEM;
		}
	}
	if (j->ranks.n > 1)
		qsort(j->ranks.v, j->ranks.n, sizeof(*j->ranks.v), by_rank);
	return find_gaps(j);
}

int64_t job_rel(const struct job *j, const struct rank_rec *r, uint64_t t)
{
	int64_t d = (int64_t)(t - r->mono0);

	return (int64_t)(r->real0 - j->base) + d + (int64_t)((double)d * r->drift) + r->corr;
}

struct job_finding *job_finding_add(struct job *j, const char *rule, const char *cause)
{
	struct job_finding f = { .rule = rule, .cause = cause, .rank = -1, .speedup = 1 };

	if (VEC_PUSH(j->findings, f) < 0) {
		j->nomem = 1;
		return NULL;
	}
	return &j->findings.v[j->findings.n - 1];
}

void job_rank_list(char *buf, size_t len, const long *set, size_t n)
{
	size_t o = 0;

	buf[0] = 0;
	if (len)
		o = (size_t)snprintf(buf, len, "%s", n == 1 ? "rank " : "ranks ");
	for (size_t i = 0; i < n && o < len; i++) {
		size_t e = i;

		while (e + 1 < n && set[e + 1] == set[e] + 1)
			e++;
		o += (size_t)snprintf(buf + o, len - o, e > i ? "%s%ld-%ld" : "%s%ld", i ? "," : "", set[i],
				      set[e]);
		i = e;
	}
}

static int by_gain(const void *x, const void *y)
{
	const struct job_finding *a = x, *b = y;

	/* the collective wait sums what the others explain: it comes after them */
	if (!strcmp(a->cause, "X2") != !strcmp(b->cause, "X2"))
		return !strcmp(a->cause, "X2") ? 1 : -1;
	if (a->severity != b->severity)
		return a->severity > b->severity ? -1 : 1;
	return a->per_step_ns > b->per_step_ns ? -1 : a->per_step_ns < b->per_step_ns;
}

static int cmp_dbl(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;

	return a < b ? -1 : a > b;
}

/* The job's step: the median rank's mean step (steady window / steps:
 * what the loop's own timer measures, the long steps included), which the
 * per-step savings are shares of. */
static int job_step(struct job *j)
{
	double *v = malloc((j->ranks.n ? j->ranks.n : 1) * sizeof(*v));
	size_t n = 0;

	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < j->ranks.n; i++)
		if (j->ranks.v[i].status != RANK_UNREADABLE && j->ranks.v[i].nsteps)
			v[n++] = j->ranks.v[i].steady_ns / (double)j->ranks.v[i].nsteps;
	if (n) {
		qsort(v, n, sizeof(*v), cmp_dbl);
		j->step_ns = v[(n - 1) / 2];
	}
	free(v);
	return 0;
}

int job_rules(struct job *j)
{
	if (job_step(j) < 0)
		return -ENOMEM;
	if (j->ref < 0 || !j->mc)
		return job_groups(j); /* nothing on one time line: no cross-rank cause */
	/* the wait first: the others explain it */
	xr_collective_wait(j);
	xr_one_rank_work(j); /* before the straggler: a rank late for its own work is X3's */
	xr_straggler(j);
	xr_uneven(j);
	xr_host(j);
	xr_exposed(j);
	if (j->nomem)
		return -ENOMEM;
	if (j->findings.n > 1)
		qsort(j->findings.v, j->findings.n, sizeof(*j->findings.v), by_gain);
	return job_groups(j);
}

void job_free(struct job *j)
{
	for (size_t i = 0; i < j->ranks.n; i++)
		rank_free(&j->ranks.v[i]);
	free(j->ranks.v);
	free(j->missing.v);
	free(j->duplicate.v);
	free(j->findings.v);
	for (size_t i = 0; i < j->groups.n; i++)
		free(j->groups.v[i].ranks.v);
	free(j->groups.v);
	free(j->mc);
	memset(j, 0, sizeof(*j));
}
