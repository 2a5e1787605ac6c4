/* The ranks' own findings, grouped by cause: "ranks 0-7: data loading,
 * 1.6x" once rather than eight times, then what only some ranks have. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "job.h"

static struct job_group *group_of(struct job *j, const struct rank_finding *f)
{
	struct job_group g = { .min_speedup = f->speedup, .max_speedup = f->speedup, .first = 1 };

	for (size_t i = 0; i < j->groups.n; i++)
		if (!strcmp(j->groups.v[i].cause, f->cause))
			return &j->groups.v[i];
	snprintf(g.rule, sizeof(g.rule), "%s", f->rule);
	snprintf(g.cause, sizeof(g.cause), "%s", f->cause);
	snprintf(g.title, sizeof(g.title), "%s", f->title);
	if (VEC_PUSH(j->groups, g) < 0)
		return NULL;
	return &j->groups.v[j->groups.n - 1];
}

static int by_size(const void *x, const void *y)
{
	const struct job_group *a = x, *b = y;

	if (a->ranks.n != b->ranks.n)
		return a->ranks.n > b->ranks.n ? -1 : 1;
	return a->max_speedup > b->max_speedup ? -1 : a->max_speedup < b->max_speedup;
}

int job_groups(struct job *j)
{
	size_t read = 0;

	for (size_t i = 0; i < j->ranks.n; i++) {
		const struct rank_rec *r = &j->ranks.v[i];

		if (r->status == RANK_UNREADABLE)
			continue;
		read++;
		for (size_t k = 0; k < r->findings.n; k++) {
			const struct rank_finding *f = &r->findings.v[k];
			struct job_group *g = group_of(j, f);

			if (!g || VEC_PUSH(g->ranks, r->rank) < 0)
				return -ENOMEM;
			if (f->speedup < g->min_speedup)
				g->min_speedup = f->speedup;
			if (f->speedup > g->max_speedup)
				g->max_speedup = f->speedup;
			if (f->severity > g->severity)
				g->severity = f->severity;
			if (k)
				g->first = 0;
		}
	}
	for (size_t i = 0; i < j->groups.n; i++)
		j->groups.v[i].all = j->groups.v[i].ranks.n == read;
	if (j->groups.n > 1)
		qsort(j->groups.v, j->groups.n, sizeof(*j->groups.v), by_size);
	return 0;
}
