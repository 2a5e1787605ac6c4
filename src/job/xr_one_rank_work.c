/* X3, work on one rank only: now and then one rank (rank 0, almost always)
 * logs, evaluates or writes a checkpoint while the others go on into the
 * next collective and wait there for it (docs/RULES.md section 8). Seen as
 * collectives that rank reaches last by a wide margin, in a minority of
 * the steps (in most of them it would be the straggler, X1); what it was
 * doing is its own analysis's activity in the steps before them. */
#include <stdlib.h>
#include <string.h>

#include "xr.h"

#define STALL_MIN_NS 1000000.0 /* a stall: at least 1 ms ... */
#define STALL_STEP_SHARE 0.5   /* ... and half the job's step behind the second-latest rank */
#define STALL_MAX_SHARE 0.5    /* in at most half of the collectives */

struct stall {
	size_t n;
	double ns;
	int64_t to; /* the stalls counted so far end here (xr_span_add) */
	unsigned acts[ACT_N];
	long first_step, last_step;
};

/* The rank's step holding its own time t, or -1. */
static long step_at(const struct rank_rec *r, uint64_t t)
{
	size_t lo = 0, hi = r->steps.n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (r->steps.v[mid].start <= t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? (long)lo - 1 : -1;
}

/* Counts a stall of rank i at the row's collective, with the activities of
 * the step it arrived in and the one before (the work ran ahead of it).
 * The step's other collectives that the same delay holds add their part
 * of the time, not another stall. */
static void count(struct stall *s, const struct rank_rec *r, const struct rank_coll *c, double margin)
{
	long k = step_at(r, c->start);

	s->ns += margin;
	if (s->n && k == s->last_step)
		return;
	s->n++;
	if (k < 0)
		return;
	if (s->first_step < 0)
		s->first_step = k;
	s->last_step = k;
	for (int a = 1; a < ACT_N; a++)
		if ((r->steps.v[k].acts | (k ? r->steps.v[k - 1].acts : 0)) & (1u << a))
			s->acts[a]++;
}

static const char *what_it_did(const struct rank_rec *r, const struct stall *s)
{
	int best = 0;

	for (int a = 1; a < ACT_N; a++)
		if (s->acts[a] > (best ? s->acts[best] : 0))
			best = a;
	if (!best) /* no step marked: the activity of the whole run */
		for (int a = 1; a < ACT_N; a++)
			if (r->act_ns[a] > (best ? r->act_ns[best] : 0))
				best = a;
	return best ? activity_name((enum activity)best) : NULL;
}

void xr_one_rank_work(struct job *j)
{
	struct stall *st = calloc(j->nr ? j->nr : 1, sizeof(*st));
	double min = STALL_STEP_SHARE * j->step_ns > STALL_MIN_NS ? STALL_STEP_SHARE * j->step_ns : STALL_MIN_NS;
	size_t rows = 0, best = SIZE_MAX;

	if (!st) {
		j->nomem = 1;
		return;
	}
	for (size_t i = 0; i < j->nr; i++)
		st[i].first_step = st[i].last_step = -1, st[i].to = INT64_MIN;
	for (size_t row = 0; row < j->ncoll; row++) {
		int64_t last = INT64_MIN, second = INT64_MIN;
		size_t who = 0;

		if (!xr_row_used(j, row))
			continue;
		rows++;
		for (size_t i = 0; i < j->nr; i++) {
			const struct rank_coll *c = xr_coll(j, row, i);
			int64_t a = c ? job_rel(j, &j->ranks.v[i], c->start) : INT64_MIN;

			if (c)
				xr_last_two(a, i, &last, &second, &who);
		}
		if ((double)(last - second) >= min) {
			double m = xr_span_add(&st[who].to, second, last);

			if (m > 0)
				count(&st[who], &j->ranks.v[who], xr_coll(j, row, who), m);
		}
	}
	for (size_t i = 0; i < j->nr; i++)
		if (st[i].n >= 2 && (best == SIZE_MAX || st[i].ns > st[best].ns))
			best = i;
	if (best != SIZE_MAX && (double)st[best].n <= STALL_MAX_SHARE * (double)rows) {
		const struct rank_rec *r = &j->ranks.v[best];
		double per = st[best].ns / xr_steps(j);
		struct job_finding *f = xr_severity(j, per) == SEV_INFO ? NULL
					: job_finding_add(j, "X3.one-rank-work", "X3");
		const char *act = what_it_did(r, &st[best]);
		long every = st[best].n > 1 ? (st[best].last_step - st[best].first_step) / (long)(st[best].n - 1) : 0;
		char a[32], b[32], c[32], when[48] = "now and then";

		if (f) {
			if (every > 1)
				snprintf(when, sizeof(when), "about every %ld steps", every);
			f->rank = r->rank;
			snprintf(f->host, sizeof(f->host), "%s", r->host);
			xr_gain(j, f, per);
			snprintf(f->title, sizeof(f->title), "Work on rank %ld only%s%s%s: the other ranks wait %s for it, %s",
				 r->rank, act ? " (" : "", act ? act : "", act ? ")" : "",
				 fmt_ns(a, sizeof(a), st[best].ns / (double)st[best].n), when);
			snprintf(f->evidence, sizeof(f->evidence),
				 "In %zu steps rank %ld reached the collectives last by %s or more (on average "
				 "%s after the next-latest rank, over the %zu collectives matched on every rank inside the steps), "
				 "while the others waited inside them: %s per step over the run. %s",
				 st[best].n, r->rank, fmt_ns(b, sizeof(b), min),
				 fmt_ns(a, sizeof(a), st[best].ns / (double)st[best].n), rows,
				 fmt_ns(c, sizeof(c), per),
				 act ? "Its own training thread was in that activity in those steps (docs/RULES.md "
				       "section 7)." : "Its own report shows no activity in those steps: "
				       "look at what the code does on that rank alone (if rank == 0).");
			snprintf(f->fix, sizeof(f->fix),
				 "%s",
				 act && !strcmp(act, "checkpointing")
					 ? "Write the checkpoint from every rank at once (torch.distributed.checkpoint "
					   "saves each rank's shard in parallel), or hand it to a background thread "
					   "(DCP's async_save), or checkpoint less often."
				 : act && !strcmp(act, "evaluation")
					 ? "Evaluate on every rank (a DistributedSampler over the validation set and "
					   "an all_reduce of the metric) or less often, not on rank 0 while the others wait."
					 : "Move the work out of the rank-0-only branch: do it on every rank, less "
					   "often, or on a background thread, so that the next collective does not "
					   "wait for it.");
		}
	}
	free(st);
}
