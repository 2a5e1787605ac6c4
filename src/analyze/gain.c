/* Gains: what each finding's saving is made of, bounded in one place
 * (docs/RULES.md section 4). A rule declares an idle part (the idle causes
 * it draws on) and a busy part (the operations it shortens); the bounds here
 * keep every figure of the report within what the timeline holds:
 *   idle part <= the idle of its causes (launch gaps without gpuwhy's cost),
 *   and causes shared by several findings are drawn on once, in a fixed order;
 *   busy part <= the time of the operations it names, and <= their share of
 *   the GPU's busy time;
 *   the whole <= 95% of T (then `capped`), so per step <= a mean step.
 * The combined estimate adds the idle parts (disjoint by construction) and
 * composes the busy parts family by family. */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../util/util.h"
#include "internal.h"

static double clamp0(double x)
{
	return x > 0 && isfinite(x) ? x : 0;
}

double gain_pool(const struct analysis *a, enum idle_cause c)
{
	/* launch gaps: without gpuwhy's own share (the only cause that has one) */
	return c == IDLE_LAUNCH_OVERHEAD ? launch_idle_untraced(a) : (double)a->idle_by_cause[c];
}

/* The cap. Per step it keeps a saving under the mean step (T / steps), not
 * under the median one: where some steps run long (C14) the mean is above
 * the median, and savings that come out of the long steps add up to more
 * than a median step (docs/RULES.md). */
double gain_limit(const struct analysis *a)
{
	return CAP_SHARE * steady_untraced_ns(a);
}

/* A batch fix's gain is per sample: a batch k times larger does k steps'
 * samples at once. No fix takes a run to zero time, and the batch divides
 * what is left by at most k: S <= T (1 - (1 - CAP_SHARE) / k). */
double gain_limit_batch(const struct analysis *a, double k)
{
	return k > 1 ? steady_untraced_ns(a) * (1 - (1 - CAP_SHARE) / k) : gain_limit(a);
}

/* Time of each family of operations (enum busy_set, bit order), as a share
 * of the GPU's busy time: operations on several streams overlap, and a busy
 * part can only shorten the run by wall time the GPU was busy. */
void gain_busy_shares(const struct analysis *a, double share[BUSY_FAMILIES])
{
	const struct op_stats *s = &a->ops;
	double sum = 0;

	share[0] = matmul_ns(s->class_ns);
	share[1] = s->class_ns[KC_ELEMENTWISE];
	share[2] = s->class_ns[KC_OTHER] + s->class_ns[KC_RNN];
	share[3] = s->class_ns[KC_COMM];
	share[4] = s->copy_ns;
	for (int i = 0; i < BUSY_FAMILIES; i++)
		sum += share[i];
	for (int i = 0; i < BUSY_FAMILIES && sum > (double)a->busy_ns; i++)
		share[i] *= (double)a->busy_ns / sum;
}

double gain_busy_bound(const struct analysis *a, const struct gain *g)
{
	double share[BUSY_FAMILIES], of = 0, b = clamp0(g->busy_of_ns);

	gain_busy_shares(a, share);
	for (int i = 0; i < BUSY_FAMILIES; i++)
		if (g->busy_set & (1u << i))
			of += share[i];
	if (of < b)
		b = of;
	return b < (double)a->busy_ns ? b : (double)a->busy_ns;
}

double severity_saved_ns(const struct finding *f)
{
	return f->replayed ? f->least_saved_ns : f->saved_ns;
}

enum severity gain_severity(const struct analysis *a, const struct finding *f)
{
	double T = steady_untraced_ns(a), share = T > 0 ? severity_saved_ns(f) / T : 0;
	enum severity s = severity_of_share(share); /* thresholds.h */

	if (a->too_little) /* what was seen, not a diagnosis */
		return SEV_INFO;
	return s > f->min_severity ? s : f->min_severity;
}

/* Bounds f's claim against the idle left in pool[] (taking it from there) and
 * the busy time, and fills in the figures. */
static void bound(const struct analysis *a, struct finding *f, double pool[IDLE_NCAUSES])
{
	const struct gain *g = &f->claim;
	double T = steady_untraced_ns(a), want = clamp0(g->idle_ns), idle = 0, busy, lim, saved;

	memset(f->idle_take, 0, sizeof(f->idle_take));
	for (int c = 0; c < IDLE_NCAUSES && want > idle; c++) /* the causes in enum order */
		if (g->idle_causes & IDLE_BIT(c)) {
			double take = want - idle < pool[c] ? want - idle : pool[c];

			f->idle_take[c] = clamp0(take);
			idle += f->idle_take[c];
		}
	/* the idle it explains leaves the pool, even where the cap below shows
	 * less of it: the cap is a floor on what it saves, not a share for others */
	for (int c = 0; c < IDLE_NCAUSES; c++)
		pool[c] -= f->idle_take[c];
	busy = clamp0(g->busy_ns);
	if (busy > gain_busy_bound(a, g))
		busy = gain_busy_bound(a, g);
	saved = idle + busy;
	lim = gain_limit(a);
	f->capped = 0;
	if (lim <= 0) { /* no steady window: nothing to save */
		memset(f->idle_take, 0, sizeof(f->idle_take));
		idle = busy = saved = 0;
	} else if (saved > lim) { /* both parts scaled: they still sum to saved_ns */
		double k = lim / saved;

		idle = 0;
		for (int c = 0; c < IDLE_NCAUSES; c++) {
			f->idle_take[c] *= k;
			idle += f->idle_take[c];
		}
		busy *= k;
		saved = idle + busy;
		f->capped = 1;
	}
	f->idle_ns = idle;
	f->busy_ns = busy;
	f->saved_ns = saved;
	f->speedup = T > 0 && T > saved ? T / (T - saved) : 1.0;
	f->per_step_ns = has_steps(a) ? saved / (double)has_steps(a) : 0;
	f->severity = gain_severity(a, f);
}

static void full_pools(const struct analysis *a, double pool[IDLE_NCAUSES])
{
	for (int c = 0; c < IDLE_NCAUSES; c++)
		pool[c] = gain_pool(a, (enum idle_cause)c);
}

void finding_set_gain(const struct analysis *a, struct finding *f, const struct gain *g)
{
	double pool[IDLE_NCAUSES];

	f->claim = *g;
	full_pools(a, pool); /* alone, for now: run_rules() settles them together */
	bound(a, f, pool);
}

/* The order in which findings draw on the idle time of shared causes: each
 * rule's declared settle rank (internal.h: SETTLE_NO_IDLE). The smallest
 * rank above `after` among the findings, UINT_MAX when none is left. */
static unsigned next_settle(const struct analysis *a, unsigned after)
{
	unsigned r = UINT_MAX;

	for (size_t i = 0; i < a->findings.n; i++)
		if (a->findings.v[i].settle > after && a->findings.v[i].settle < r)
			r = a->findings.v[i].settle;
	return r;
}

/* The finding's evidence says where the idle it could not draw went. */
static void note_shared(struct finding *f, const char *const by[IDLE_NCAUSES])
{
	const char *other = NULL;

	if (f->idle_ns >= 0.99 * f->claim.idle_ns)
		return;
	for (int c = 0; c < IDLE_NCAUSES && !other; c++)
		if ((f->claim.idle_causes & IDLE_BIT(c)) && by[c] && strcmp(by[c], f->cause))
			other = by[c];
	if (other) {
		size_t l = strlen(f->evidence);
		char b[32];

		f->shared_note = (uint16_t)l; /* a replayed gain drops it: its gain is its own */
		snprintf(f->evidence + l, sizeof(f->evidence) - l,
			 " %s of that idle time is counted in the gain of %s, which explains it.",
			 fmt_ns(b, sizeof(b), f->claim.idle_ns - f->idle_ns), other);
	}
}

void settle_gains(struct analysis *a)
{
	double pool[IDLE_NCAUSES];
	const char *by[IDLE_NCAUSES] = { 0 }; /* the first finding to draw on each cause */

	full_pools(a, pool);
	for (unsigned r = next_settle(a, 0); r != UINT_MAX; r = next_settle(a, r))
		for (size_t i = 0; i < a->findings.n; i++) {
			struct finding *f = &a->findings.v[i];

			if (!f->assessed || !f->title[0] || f->settle != r)
				continue;
			bound(a, f, pool);
			note_shared(f, by);
			for (int c = 0; c < IDLE_NCAUSES; c++)
				if (f->idle_take[c] > 0 && !by[c])
					by[c] = f->cause;
		}
}

/* Busy parts fixed together: each shortens its families by the fraction it
 * takes of them, so that parts on disjoint families add and parts on the same
 * operations compose (C8's bf16 and C3's fuller grids on one GEMM). */
double gain_combine_busy(const struct analysis *a, const struct finding *const *fs, size_t n)
{
	double share[BUSY_FAMILIES], keep[BUSY_FAMILIES], busy = 0;

	gain_busy_shares(a, share);
	for (int i = 0; i < BUSY_FAMILIES; i++)
		keep[i] = 1;
	for (size_t k = 0; k < n; k++) {
		double of = 0, frac;

		if (fs[k]->busy_ns <= 0)
			continue;
		for (int i = 0; i < BUSY_FAMILIES; i++)
			if (fs[k]->claim.busy_set & (1u << i))
				of += share[i];
		frac = of > 0 ? fs[k]->busy_ns / of : 0;
		frac = frac < 1 ? frac : 1;
		for (int i = 0; i < BUSY_FAMILIES; i++)
			if (fs[k]->claim.busy_set & (1u << i))
				keep[i] *= 1 - frac;
	}
	for (int i = 0; i < BUSY_FAMILIES; i++)
		busy += share[i] * (1 - keep[i]);
	return busy;
}

/* What fixing every warning-or-above finding would save together: their idle
 * parts (each idle interval has one cause, and a shared cause was drawn on
 * once) plus their busy parts composed, bounded like a finding's. */
void combine_gains(struct analysis *a)
{
	const struct finding *fs[64];
	double idle = 0, sum, T = steady_untraced_ns(a), lim = gain_limit(a);
	size_t n = 0;

	a->combined_saved_ns = a->combined_speedup = 0;
	a->combined_capped = 0;
	for (size_t i = 0; i < a->findings.n && n < 64; i++) {
		struct finding *f = &a->findings.v[i];

		f->in_combined = 0;
		if (!f->assessed || f->severity < SEV_WARN)
			continue;
		f->in_combined = 1;
		fs[n++] = f;
		idle += f->idle_ns;
	}
	sum = idle + gain_combine_busy(a, fs, n);
	if (T <= 0 || sum <= 0)
		return;
	if (sum > lim) {
		sum = lim;
		a->combined_capped = 1;
	}
	a->combined_saved_ns = sum;
	a->combined_speedup = T / (T - sum);
}
