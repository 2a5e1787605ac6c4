/* The repeating unit of a run (docs/RULES.md, section 2): given the main
 * process's operations on the main GPU in time order, each a token (name and
 * stream), finds the token that starts every step, or says that none does
 * with confidence.
 *
 * Candidates are tokens whose occurrences are regularly spaced over most of
 * the sequence; a candidate is valid when the stretches between its
 * occurrences (its steps) hold about the same multiset of operations: at
 * least 80% of them within 10% (L1 distance / size) of the modal step, the
 * per-token median. The rest may differ (a validation pass every N steps).
 *
 * The step is the longest valid unit, less two kinds of false units:
 *  - a unit of several steps, marked by a periodic extra's own operation (a
 *    checkpoint's copy every 20 steps, a validation pass's metric): a finer
 *    valid unit then holds nearly every kind of operation of the longer one,
 *    and what the longer unit adds is either small or makes its finer step
 *    long in time (the stall C14 looks for), so the finer unit wins;
 *  - a sub-block (a transformer layer, a micro-step): it is valid too, but
 *    is finer than the step, and holds only a part of the step's kinds of
 *    operations (not the backward pass's or the optimizer's), so it loses.
 * Inside the chosen unit, the step starts at the operation that follows the
 * longest idle gap (the host preparing the next batch). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define SP_MIN_OCCURRENCES 3   /* two whole steps at least */
#define SP_MATCH_L1 0.10       /* a step matches the modal one within 10% of its size */
#define SP_MIN_SHARE 0.80      /* of the steps that must match (or hold it and more) */
#define SP_MIN_EXACT 0.50      /* of the steps that must match outright ... */
#define SP_MIN_MASS 0.33       /* ... holding a third of the operations */
#define SP_VARYING_SHARE 0.95  /* or: nearly every step holds the modal one ... */
#define SP_VARYING_EXTRA 1.0   /* ... plus less than one modal step's size more, on average */
#define SP_HIGH_SHARE 0.90     /* ... for high confidence */
#define SP_HIGH_STEPS 8        /* steps for high confidence */
#define SP_HIGH_COVERAGE 0.80  /* share of the sequence from the first boundary on, up to the last */
#define SP_MIN_COVERAGE 0.60   /* below: a burst, not the run's unit */
#define SP_SPACING_TOL 0.10    /* spacings within 10% of the median spacing ... */
#define SP_SPACING_SHARE 0.50  /* ... for at least half of them */
#define SP_FINER 1.8           /* a finer unit has at least 1.8x as many steps */
#define SP_SUBUNIT_KINDS 0.80  /* a finer unit holding >= 80% of the kinds explains a longer one */
#define SP_LONG_STEP 3.0       /* ... when its finer steps holding the extra run 3x the median */
#define SP_TINY_EXTRA 0.01     /* ... or the extra is <= 1% of the operations ... */
#define SP_RICH_KINDS 8        /* ... added to a finer unit of >= 8 kinds of operation */
#define SP_ALTERNATE 0.80      /* steps that match and hold more take turns this often: halves */
#define SP_MAX_CHECKS 64       /* full validations per decision (each one pass over the sequence) */
#define SP_ONCE_SHARE 0.90     /* a boundary token occurs once in >= 90% of the steps ... */
#define SP_SAME_UNIT 1.1       /* ... and about as often as the unit's first boundary */

struct sp {
	const uint32_t *tok;
	const uint64_t *start;
	const double *gap;
	size_t n;
	uint32_t ntok;
	uint32_t *cnt, *off, *pos; /* each token's occurrences, in order */
	double *gapsum;            /* idle time before each token's occurrences */
	uint32_t *mark, *c, *touched, *pc, *poff, *vals;
	struct sp_pair { uint32_t t, c; } *pairs;
};

/* One candidate's steps, measured. */
struct sp_cut {
	uint32_t b;          /* boundary token */
	unsigned stride;     /* every stride-th occurrence of it starts a step */
	size_t nseg;         /* steps: stretches between consecutive occurrences */
	size_t span;         /* operations from the first occurrence to the last */
	size_t matched;      /* ... within SP_MATCH_L1 of the modal step */
	size_t extra;        /* ... holding it and more (a validation pass, a checkpoint) */
	size_t matched_ops;  /* operations in the steps that match */
	size_t extra_ops;    /* operations in the steps that hold it and more */
	uint32_t *med;       /* per token: its median count per step (the modal step) */
	uint32_t *ones;      /* per token: steps holding it exactly once */
	uint64_t msize;      /* operations in the modal step */
	uint32_t kinds;      /* tokens in the modal step */
	uint8_t *core;       /* per token: held by more than half of the steps */
	uint32_t core_kinds; /* tokens held so */
	double *dur;         /* each step's duration (ns) */
	uint32_t *bpos;      /* the nseg + 1 boundaries' positions in the sequence */
	uint8_t *match;      /* per step: 1 matches, 2 holds it and more, 0 neither */
};

static void cut_free(struct sp_cut *c)
{
	free(c->med);
	free(c->ones);
	free(c->core);
	free(c->dur);
	free(c->match);
	free(c->bpos);
	memset(c, 0, sizeof(*c));
}

/* Counts the tokens of step s ([p, q) of the sequence) into sp->c, listing
 * them in sp->touched; returns how many. gen marks them as this step's. */
static size_t count_step(struct sp *sp, size_t p, size_t q, uint32_t gen)
{
	size_t nt = 0;

	for (size_t i = p; i < q; i++) {
		uint32_t t = sp->tok[i];

		if (sp->mark[t] != gen) {
			sp->mark[t] = gen;
			sp->c[t] = 0;
			sp->touched[nt++] = t;
		}
		sp->c[t]++;
	}
	return nt;
}

/* Measures the steps that token b cuts: the modal step (per-token median
 * counts) and how many steps hold it within SP_MATCH_L1. 0 or -ENOMEM. */
static int cut_eval(struct sp *sp, uint32_t b, unsigned stride, struct sp_cut *c)
{
	const uint32_t *o = sp->pos + sp->off[b];
	size_t nseg = (sp->cnt[b] - 1) / stride, np = 0;
	uint32_t gen = 0, *p;

	cut_free(c);
	c->b = b;
	c->stride = stride;
	c->nseg = nseg;
	c->bpos = malloc((nseg + 1) * sizeof(*c->bpos));
	if (!c->bpos)
		return -ENOMEM;
	for (size_t s = 0; s <= nseg; s++)
		c->bpos[s] = o[s * stride];
	p = c->bpos;
	c->span = p[nseg] - p[0];
	c->med = calloc(sp->ntok, sizeof(*c->med));
	c->ones = calloc(sp->ntok, sizeof(*c->ones));
	c->dur = malloc(nseg * sizeof(*c->dur));
	c->match = calloc(nseg, 1);
	c->core = calloc(sp->ntok, 1);
	if (!c->med || !c->ones || !c->core || !c->dur || !c->match)
		return -ENOMEM;
	memset(sp->mark, 0, sp->ntok * sizeof(*sp->mark));
	for (size_t s = 0; s < nseg; s++) {
		size_t nt = count_step(sp, p[s], p[s + 1], ++gen);

		for (size_t k = 0; k < nt; k++) {
			uint32_t t = sp->touched[k];

			sp->pairs[np++] = (struct sp_pair){ t, sp->c[t] };
			c->ones[t] += sp->c[t] == 1;
		}
		c->dur[s] = (double)(sp->start[p[s + 1]] - sp->start[p[s]]);
	}
	/* the per-token median over the steps, zeros included: the pairs
	 * grouped by token (counting sort), then a selection within each group */
	memset(sp->pc, 0, sp->ntok * sizeof(*sp->pc));
	for (size_t i = 0; i < np; i++)
		sp->pc[sp->pairs[i].t]++;
	for (uint32_t t = 0, o = 0; t < sp->ntok; t++) {
		sp->poff[t] = o;
		o += sp->pc[t];
	}
	for (size_t i = 0; i < np; i++)
		sp->vals[sp->poff[sp->pairs[i].t]++] = sp->pairs[i].c;
	c->msize = 0;
	c->kinds = c->core_kinds = 0;
	for (uint32_t t = 0, o = 0; t < sp->ntok; t++) {
		size_t zeros = nseg - sp->pc[t], k = nseg / 2;

		if (sp->pc[t] && k >= zeros)
			c->med[t] = select_u32(sp->vals + o, sp->pc[t], k - zeros);
		o += sp->pc[t];
		c->msize += c->med[t];
		c->kinds += c->med[t] > 0;
		/* with an even number of steps the median may take a token held
		 * by only half of them (by one of two: start-up in the first) */
		c->core[t] = 2 * (size_t)sp->pc[t] > nseg;
		c->core_kinds += c->core[t];
	}
	c->matched = c->extra = c->matched_ops = c->extra_ops = 0;
	memset(sp->mark, 0, sp->ntok * sizeof(*sp->mark));
	gen = 0;
	for (size_t s = 0; s < nseg && c->msize; s++) {
		size_t nt = count_step(sp, p[s], p[s + 1], ++gen);
		uint64_t missing = 0, surplus = 0, med_touched = 0;

		for (size_t k = 0; k < nt; k++) {
			uint32_t t = sp->touched[k];

			if (sp->c[t] > c->med[t])
				surplus += sp->c[t] - c->med[t];
			else
				missing += c->med[t] - sp->c[t];
			med_touched += c->med[t];
		}
		missing += c->msize - med_touched;
		if ((double)(missing + surplus) <= SP_MATCH_L1 * (double)c->msize)
			c->match[s] = 1;
		else if ((double)missing <= SP_MATCH_L1 * (double)c->msize)
			c->match[s] = 2; /* the modal step and more: a periodic extra */
		c->matched += c->match[s] == 1;
		if (c->match[s] == 1)
			c->matched_ops += p[s + 1] - p[s];
		c->extra += c->match[s] == 2;
		if (c->match[s] == 2)
			c->extra_ops += p[s + 1] - p[s];
	}
	return 0;
}

/* Steps that match the modal one, or hold it and a periodic extra. */
static double share(const struct sp_cut *c)
{
	return c->nseg ? (double)(c->matched + c->extra) / (double)c->nseg : 0;
}

/* Most steps match (or hold the modal step and more), at least half match
 * outright, and those hold a third of the operations: the modal step is the
 * run's step, not a fragment (one kernel of a validation pass, which the
 * training steps between two passes would "hold and more"). */
/* Steps that match and steps that hold the modal one and more, taking
 * turns (at least SP_ALTERNATE of consecutive pairs differ): a loop whose
 * iteration has each kind of operation twice, cut in halves, one half
 * holding the other; no periodic extra comes every other step. */
static int alternates(const struct sp_cut *c)
{
	size_t turns = 0;

	if (c->nseg < 2 || c->extra < c->nseg / 4)
		return 0;
	for (size_t s = 0; s + 1 < c->nseg; s++)
		turns += c->match[s] && c->match[s + 1] && c->match[s] != c->match[s + 1];
	return (double)turns >= SP_ALTERNATE * (double)(c->nseg - 1);
}

/* The operations of the steps before the first that matches, each holding
 * the modal step and more, at most the first tenth (one at least, and
 * WARMUP_MAX_STEPS at most; steps.c's warm-up, which weighs steps already
 * found by their length, looks at WARMUP_MIN_STEPS at least): warm-up (cuDNN's
 * autotuning of every convolution, a compiler's first runs) inside the
 * loop's first iterations; the run's step is weighed against what follows
 * them. */
static size_t warmup_ops(const struct sp_cut *c)
{
	size_t s = 0, lim = c->nseg / 10;

	lim = lim < 1 ? 1 : lim > WARMUP_MAX_STEPS ? WARMUP_MAX_STEPS : lim;
	while (s < c->nseg && s < lim && c->match[s] == 2)
		s++;
	return s < c->nseg && c->match[s] == 1 ? c->bpos[s] - c->bpos[0] : 0;
}

/* Steps whose work varies: nearly every one holds the modal step plus
 * extra work, few hold it exactly, and the extra is less than a modal step
 * on average (a server's batches of varying size, each with the shape's own
 * kernels). A fragment of the step (one kernel of a validation pass) is
 * held by the steps between two passes with many times its size more, and a
 * unit of two iterations would hold the modal one twice: neither is this. */
static int varying(const struct sp_cut *c)
{
	return c->nseg >= SP_HIGH_STEPS && c->extra && c->msize &&
	       (double)(c->matched + c->extra) >= SP_VARYING_SHARE * (double)c->nseg &&
	       (double)c->matched < SP_MIN_EXACT * (double)c->nseg &&
	       (double)c->extra_ops <= (1 + SP_VARYING_EXTRA) * (double)c->msize * (double)c->extra;
}

static int cut_valid(const struct sp_cut *c)
{
	int vary = varying(c);

	return c->nseg >= SP_MIN_OCCURRENCES - 1 && c->msize && share(c) >= SP_MIN_SHARE && !alternates(c) &&
	       ((double)c->matched >= SP_MIN_EXACT * (double)c->nseg || vary) &&
	       (double)(c->matched_ops + (vary ? c->extra_ops : 0)) >= SP_MIN_MASS * (double)(c->span - warmup_ops(c));
}

/* Regularly spaced over most of the sequence: a quick test before the full
 * one. */
static int spaced(const struct sp *sp, uint32_t t, unsigned stride, double *sp_buf)
{
	const uint32_t *p = sp->pos + sp->off[t];
	size_t k = sp->cnt[t], near = 0, m;

	if (k / stride < SP_MIN_OCCURRENCES || (double)(p[k - 1] - p[0]) < SP_MIN_COVERAGE * (double)sp->n)
		return 0;
	m = k - stride; /* spacings between an occurrence and the stride-th after it */
	for (size_t i = 0; i < m; i++)
		sp_buf[i] = (double)(p[i + stride] - p[i]);
	double med = quantile(sp_buf, m, 0.5);

	for (size_t i = 0; i < m; i++) {
		double d = (double)(p[i + stride] - p[i]);

		near += d >= (1 - SP_SPACING_TOL) * med && d <= (1 + SP_SPACING_TOL) * med;
	}
	return (double)near >= SP_SPACING_SHARE * (double)m;
}

/* Whether the finer valid unit f explains the longer unit l as f's steps
 * plus a periodic extra (see the top of the file). */
static int finer_explains(const struct sp *sp, const struct sp_cut *l, const struct sp_cut *f,
			  double *buf)
{
	uint32_t both = 0;

	/* the longer unit's kinds that recur, in most of its steps: with two
	 * steps, start-up work before the loop in the first (data set-up,
	 * initialisation) is no kind of work its steps repeat */
	for (uint32_t t = 0; t < sp->ntok; t++)
		both += l->core[t] && f->med[t];
	if (!l->core_kinds || (double)both < SP_SUBUNIT_KINDS * (double)l->core_kinds)
		return 0; /* f is a sub-block: the longer unit has other kinds of work */
	/* the longer unit's operations beyond the whole finer steps it holds
	 * (per unit: counting units over the run would add a whole longer unit
	 * of error when there are only a few of them, as with a loss read
	 * every 100 steps of a 3-second recording) */
	double k = f->msize ? round((double)l->msize / (double)f->msize) : 0;
	/* modal sizes are per-token medians: k finer steps may come to a few
	 * operations more than the longer unit's, so the difference counts
	 * either way */
	double extra = l->msize ? fabs((double)l->msize - k * (double)f->msize) / (double)l->msize : 1;

	if (k >= 1 && extra <= SP_TINY_EXTRA && f->kinds >= SP_RICH_KINDS)
		return 1; /* a log line or a metric every N steps */
	/* otherwise the extra is periodic work only if the finer steps holding
	 * the longer unit's boundary run long: a loop's tail (one copy after
	 * 100 iterations of three kernels) does not */
	const uint32_t *fp = f->bpos, *lp = l->bpos;
	size_t nl = 0, j = 0;

	for (size_t i = 0; i <= l->nseg; i++) {
		while (j + 1 <= f->nseg && fp[j + 1] <= lp[i])
			j++;
		if (fp[j] <= lp[i] && j < f->nseg)
			buf[nl++] = f->dur[j];
	}
	if (!nl)
		return 0;
	double extra_med = quantile(buf, nl, 0.5);

	memcpy(buf, f->dur, f->nseg * sizeof(*buf));
	return extra_med >= SP_LONG_STEP * quantile(buf, f->nseg, 0.5);
}

struct sp_cand {
	uint32_t t, cnt; /* cnt: the steps it would cut, about its occurrences / stride */
	unsigned stride;
	double gap; /* mean idle time before it */
};

static int cmp_cand(const void *x, const void *y)
{
	const struct sp_cand *a = x, *b = y;

	if (a->cnt != b->cnt)
		return a->cnt < b->cnt ? -1 : 1;
	if (a->gap != b->gap)
		return a->gap > b->gap ? -1 : 1;
	if (a->t != b->t)
		return a->t < b->t ? -1 : 1;
	return a->stride < b->stride ? -1 : a->stride > b->stride;
}

static void confidence(const struct sp *sp, const struct sp_cut *c, struct step_period *out)
{
	const uint32_t *p = c->bpos;
	/* of the operations from the unit's first occurrence on: what comes
	 * before it is start-up (a JIT compiler's thousands of set-up
	 * operations), which says nothing about whether the unit is the run's
	 * loop; a burst is followed by much other work, and fails here */
	double cov = (double)(p[c->nseg] - p[0]) / (double)(sp->n - p[0]), sh = share(c);

	out->tok = c->b;
	out->stride = c->stride;
	out->nseg = c->nseg;
	out->ops = (uint32_t)c->msize;
	out->share = sh;
	out->coverage = cov;
	if (sh >= SP_HIGH_SHARE && c->nseg >= SP_HIGH_STEPS && cov >= SP_HIGH_COVERAGE)
		out->confidence = CONF_HIGH;
	else if (sh >= SP_MIN_SHARE && cov >= SP_MIN_COVERAGE)
		out->confidence = CONF_MEDIUM;
	else
		out->confidence = CONF_LOW;
	snprintf(out->why, sizeof(out->why),
		 "a repeating unit of %llu operation%s: %zu of its %zu occurrences hold the same "
		 "operations (within %.0f%%), %zu more hold them plus extra work; it spans %.0f%% of the %zu "
		 "operations from its first occurrence on (%zu before it)",
		 (unsigned long long)c->msize, c->msize == 1 ? "" : "s", c->matched, c->nseg,
		 SP_MATCH_L1 * 100, c->extra, cov * 100,
		 sp->n - p[0], (size_t)p[0]);
	out->varying = varying(c);
	if (out->varying) {
		size_t len = strlen(out->why);

		snprintf(out->why + len, sizeof(out->why) - len,
			 "; its steps vary: nearly all hold the unit plus extra work that differs from step "
			 "to step, less than the unit on average (batches of different sizes)");
	}
	if (c->stride > 1) {
		size_t len = strlen(out->why);

		snprintf(out->why + len, sizeof(out->why) - len,
			 "; every kind of operation occurs at least twice in it, so it starts at every "
			 "second occurrence of its first one");
	}
}

/* The longest valid unit among the candidates (longest first), then finer
 * ones while they explain it: into *cur (*have set), the best invalid one
 * into *bad. 0 or -ENOMEM. */
static int search(struct sp *sp, const struct sp_cand *cs, size_t ncs, struct sp_cut *cur,
		  struct sp_cut *cand, struct sp_cut *bad, double *buf, int *have)
{
	size_t checks = 0;

	*have = 0;
	for (size_t i = 0; i < ncs && checks < SP_MAX_CHECKS; i++) {
		if (*have && (double)cs[i].cnt < SP_FINER * (double)cur->nseg)
			continue; /* the same unit (or nearly): its boundary is chosen below */
		checks++;
		if (cut_eval(sp, cs[i].t, cs[i].stride, cand) < 0)
			return -ENOMEM;
		if (!cut_valid(cand)) {
			if (!bad->nseg || share(cand) > share(bad)) {
				struct sp_cut x = *bad;

				*bad = *cand;
				*cand = x;
			}
			continue;
		}
		if (*have && varying(cand))
			continue; /* steps that vary are taken only where no steady one is */
		if (*have && !finer_explains(sp, cur, cand, buf))
			break; /* a sub-block of the step */
		struct sp_cut x = *cur;

		*cur = *cand;
		*cand = x;
		*have = 1;
	}
	return 0;
}

/* Why the closest candidate b is no unit: the test it failed, not only
 * the share (a fragment of the step can hold its operations in every step
 * and still be no step). */
static void why_not(const struct sp_cut *b, struct step_period *out)
{
	double exact = (double)b->matched / (double)b->nseg;
	size_t weighed = b->span - warmup_ops(b);
	double mass = weighed ? (double)b->matched_ops / (double)weighed : 0;

	if (b->nseg < SP_MIN_OCCURRENCES - 1)
		snprintf(out->why, sizeof(out->why),
			 "no repeating unit: the closest, of %llu operations, occurs %zu times "
			 "(at least %d are needed)",
			 (unsigned long long)b->msize, b->nseg + 1, SP_MIN_OCCURRENCES);
	else if (share(b) >= SP_MIN_SHARE && exact < SP_MIN_EXACT) {
		/* held by nearly all, matched by few: the steps differ in their
		 * extra work (a server's batches of varying size) */
		char few[32] = "none";

		if (b->matched)
			snprintf(few, sizeof(few), "only %.0f%%", exact * 100);
		snprintf(out->why, sizeof(out->why),
			 "no repeating unit: the closest, of %llu operation%s, is held by %.0f%% of its %zu "
			 "steps but matched exactly by %s: %s hold it plus extra work that differs from step "
			 "to step",
			 (unsigned long long)b->msize, b->msize == 1 ? "" : "s", share(b) * 100, b->nseg, few,
			 b->matched ? "the others" : "all");
	} else if (share(b) < SP_MIN_SHARE || exact < SP_MIN_EXACT)
		snprintf(out->why, sizeof(out->why),
			 "no repeating unit: the closest, of %llu operations, holds the same operations "
			 "in only %.0f%% of its %zu steps (%.0f%% exactly)",
			 (unsigned long long)b->msize, share(b) * 100, b->nseg, exact * 100);
	else
		snprintf(out->why, sizeof(out->why),
			 "no repeating unit: the closest, of %llu operation%s, recurs in %.0f%% of its "
			 "%zu steps but covers only %.0f%% of the operations: a fragment of the step, "
			 "not the step", (unsigned long long)b->msize, b->msize == 1 ? "" : "s",
			 share(b) * 100, b->nseg, mass * 100);
}

int step_period_find(const uint32_t *tok, const uint64_t *start, const double *gap, size_t n,
		     uint32_t ntok, const uint8_t *inner, unsigned max_stride, struct step_period *out)
{
	struct sp sp = { .tok = tok, .start = start, .gap = gap, .n = n, .ntok = ntok };
	struct sp_cut cur = { 0 }, cand = { 0 }, best_bad = { 0 };
	struct sp_cand *cs = NULL;
	double *buf = NULL;
	size_t ncs = 0;
	int have = 0, ret = -ENOMEM;

	memset(out, 0, sizeof(*out));
	out->tok = UINT32_MAX;
	out->confidence = CONF_LOW;
	if (n < 2 * SP_MIN_OCCURRENCES || !ntok) {
		snprintf(out->why, sizeof(out->why), "too few operations (%zu)", n);
		return 0;
	}
	sp.cnt = calloc(ntok, sizeof(*sp.cnt));
	sp.off = calloc(ntok + 1, sizeof(*sp.off));
	sp.pos = malloc(n * sizeof(*sp.pos));
	sp.gapsum = calloc(ntok, sizeof(*sp.gapsum));
	sp.mark = calloc(ntok, sizeof(*sp.mark));
	sp.c = calloc(ntok, sizeof(*sp.c));
	sp.touched = malloc(ntok * sizeof(*sp.touched));
	sp.pc = calloc(ntok, sizeof(*sp.pc));
	sp.poff = calloc(ntok, sizeof(*sp.poff));
	sp.vals = malloc(n * sizeof(*sp.vals));
	sp.pairs = malloc(n * sizeof(*sp.pairs));
	buf = malloc(n * sizeof(*buf));
	cs = malloc(ntok * sizeof(*cs));
	if (!sp.cnt || !sp.off || !sp.pos || !sp.gapsum || !sp.mark || !sp.c || !sp.touched || !sp.pc ||
	    !sp.poff || !sp.vals || !sp.pairs || !buf || !cs)
		goto out;
	for (size_t i = 0; i < n; i++) {
		sp.cnt[tok[i]]++;
		sp.gapsum[tok[i]] += gap[i];
	}
	for (uint32_t t = 0; t < ntok; t++)
		sp.off[t + 1] = sp.off[t] + sp.cnt[t];
	memcpy(sp.c, sp.off, ntok * sizeof(*sp.c)); /* fill cursors */
	for (size_t i = 0; i < n; i++)
		sp.pos[sp.c[tok[i]]++] = (uint32_t)i;
	for (uint32_t t = 0; t < ntok; t++)
		if (!(inner && inner[t]) && spaced(&sp, t, 1, buf))
			cs[ncs++] = (struct sp_cand){ t, sp.cnt[t], 1, sp.gapsum[t] / sp.cnt[t] };
	qsort(cs, ncs, sizeof(*cs), cmp_cand);
	if (search(&sp, cs, ncs, &cur, &cand, &best_bad, buf, &have) < 0)
		goto out;
	/* Where every kind of operation occurs twice in the loop (a solver's
	 * iteration with two dot products and two reads), no token starts each
	 * iteration, and the unit found is a longer one of few steps (a whole
	 * solve) or none: every second occurrence of a token may. It is taken
	 * where it has many times more steps and explains the longer unit as
	 * its steps and a sliver more (finer_explains). */
	if (max_stride >= 2 && (!have || cur.nseg < SP_HIGH_STEPS)) {
		struct sp_cut cur2 = { 0 }, bad2 = { 0 };
		size_t n2 = 0;
		int have2 = 0, err = 0;

		for (uint32_t t = 0; t < ntok; t++)
			if (!(inner && inner[t]) && spaced(&sp, t, 2, buf))
				cs[n2++] = (struct sp_cand){ t, sp.cnt[t] / 2, 2, sp.gapsum[t] / sp.cnt[t] };
		qsort(cs, n2, sizeof(*cs), cmp_cand);
		err = search(&sp, cs, n2, &cur2, &cand, &bad2, buf, &have2);
		if (!err && have2 && (!have || ((double)cur2.nseg >= SP_FINER * (double)cur.nseg &&
						 finer_explains(&sp, &cur, &cur2, buf)))) {
			struct sp_cut x = cur;

			cur = cur2;
			cur2 = x;
			have = 1;
		}
		cut_free(&cur2);
		cut_free(&bad2);
		if (err < 0)
			goto out;
	}
	if (have) {
		/* where the step starts: among the tokens once in nearly every step,
		 * the one after the longest idle gap */
		uint32_t bnd = cur.b;
		/* a token once in each step beats every second occurrence of one */
		double bgap = cur.stride > 1 ? -1 : sp.gapsum[bnd] / sp.cnt[bnd];

		for (uint32_t t = 0; t < ntok; t++)
			if (t != bnd && !(inner && inner[t]) && cur.ones[t] >= SP_ONCE_SHARE * (double)cur.nseg &&
			    sp.cnt[t] <= SP_SAME_UNIT * (double)(cur.nseg + 1) && sp.gapsum[t] / sp.cnt[t] > bgap) {
				bnd = t;
				bgap = sp.gapsum[t] / sp.cnt[t];
			}
		if (bnd != cur.b) {
			if (cut_eval(&sp, bnd, 1, &cand) < 0)
				goto out;
			if (cut_valid(&cand) && (double)cand.nseg >= (double)cur.nseg / SP_SAME_UNIT) {
				struct sp_cut x = cur;

				cur = cand;
				cand = x;
			}
		}
		confidence(&sp, &cur, out);
	} else if (best_bad.nseg) {
		why_not(&best_bad, out);
	} else {
		snprintf(out->why, sizeof(out->why),
			 "no repeating unit: no operation recurs at a regular spacing");
	}
	ret = 0;
out:
	if (ret < 0)
		snprintf(out->why, sizeof(out->why), "out of memory while looking for steps");
	cut_free(&cur);
	cut_free(&cand);
	cut_free(&best_bad);
	free(sp.cnt);
	free(sp.off);
	free(sp.pos);
	free(sp.gapsum);
	free(sp.mark);
	free(sp.c);
	free(sp.touched);
	free(sp.pc);
	free(sp.poff);
	free(sp.vals);
	free(sp.pairs);
	free(buf);
	free(cs);
	return ret;
}
