/* The report's invariants, checked on the finished analysis: the figures a
 * reader adds up must add up. `gpuwhy report` runs this on every recording
 * and warns when one fails; the unit tests run it on every real recording
 * and on thousands of synthetic timelines (tests/unit/test_invariants.c).
 * The checks recompute what they can from the aggregates rather than trust
 * the code that produced the figures (gain.c). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

struct inv {
	char *why;
	size_t len;
	int failed;
};

static int fail(struct inv *v, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(struct inv *v, const char *fmt, ...)
{
	va_list ap;

	if (!v->failed++) { /* the first failure says it; the others are counted */
		va_start(ap, fmt);
		vsnprintf(v->why, v->len, fmt, ap);
		va_end(ap);
	}
	return -1;
}

/* x <= y, up to rounding (sums of doubles of up to ~1e13 ns). */
static int le(double x, double y)
{
	return x <= y + 1e-6 * (fabs(y) > 1 ? fabs(y) : 1) + 1;
}

static int eq(double x, double y)
{
	return le(x, y) && le(y, x);
}

static int finite_nonneg(double x)
{
	return isfinite(x) && x >= 0;
}

static double ms(double ns)
{
	return ns / 1e6;
}

/* Busy, idle and their split. */
static void check_time(const struct analysis *a, struct inv *v)
{
	uint64_t sum = 0;

	for (int c = 0; c < IDLE_NCAUSES; c++)
		sum += a->idle_by_cause[c];
	if (sum != a->idle_ns)
		fail(v, "the idle split sums to %.3f ms, not the idle time %.3f ms", ms((double)sum),
		     ms((double)a->idle_ns));
	if (a->steady_ns && a->busy_ns + a->idle_ns != a->steady_ns)
		fail(v, "busy %.3f ms + idle %.3f ms != steady window %.3f ms", ms((double)a->busy_ns),
		     ms((double)a->idle_ns), ms((double)a->steady_ns));
	if (a->trace_cost_ns > a->idle_by_cause[IDLE_LAUNCH_OVERHEAD])
		fail(v, "gpuwhy's tracing cost %.3f ms exceeds the launch gaps it is part of (%.3f ms)",
		     ms((double)a->trace_cost_ns), ms((double)a->idle_by_cause[IDLE_LAUNCH_OVERHEAD]));
	for (size_t i = 0; i < a->steps.n; i++) {
		const struct step *s = &a->steps.v[i];

		if (s->end < s->start || s->busy_ns + s->idle_ns != s->end - s->start ||
		    (i && s->start < a->steps.v[i - 1].end))
			fail(v, "step %zu: [%llu, %llu) busy %llu idle %llu does not add up or overlaps the "
				"one before", i, (unsigned long long)s->start, (unsigned long long)s->end,
			     (unsigned long long)s->busy_ns, (unsigned long long)s->idle_ns);
	}
	if (a->steps.n && (a->step_median_ns < a->step_min_ns || a->step_median_ns > a->step_max_ns ||
			   a->step_p95_ns < a->step_median_ns || a->step_p95_ns > a->step_max_ns))
		fail(v, "step statistics out of order: min %.3f median %.3f p95 %.3f max %.3f ms",
		     ms(a->step_min_ns), ms(a->step_median_ns), ms(a->step_p95_ns), ms(a->step_max_ns));
}

/* One finding's figures against its own bounds. */
static void check_finding(const struct analysis *a, const struct finding *f, struct inv *v)
{
	double T = steady_untraced_ns(a), take = 0, lim = gain_limit_batch(a, finding_batch(f));
	const char *id = f->rule_id;

	if (!finite_nonneg(f->saved_ns) || !finite_nonneg(f->idle_ns) || !finite_nonneg(f->busy_ns) ||
	    !isfinite(f->speedup) || !finite_nonneg(f->per_step_ns)) {
		fail(v, "%s: a gain figure is negative or not finite (saved %g, idle %g, busy %g, "
			"speed-up %g, per step %g)", id, f->saved_ns, f->idle_ns, f->busy_ns, f->speedup,
		     f->per_step_ns);
		return;
	}
	if (f->claim.idle_causes && f->claim.idle_ns > 0 && f->settle >= SETTLE_NO_IDLE)
		fail(v, "%s: claims idle time but its rule declares no settle rank (rules/rule.h)", id);
	if (!eq(f->saved_ns, f->idle_ns + f->busy_ns))
		fail(v, "%s: saved %.3f ms is not its idle part %.3f + busy part %.3f", id, ms(f->saved_ns),
		     ms(f->idle_ns), ms(f->busy_ns));
	for (int c = 0; c < IDLE_NCAUSES; c++) {
		if (f->idle_take[c] < 0 || (f->idle_take[c] > 0 && !(f->claim.idle_causes & IDLE_BIT(c))))
			fail(v, "%s: draws %.3f ms on %s, a cause it did not declare", id, ms(f->idle_take[c]),
			     idle_cause_id((enum idle_cause)c));
		if (!le(f->idle_take[c], gain_pool(a, (enum idle_cause)c)))
			fail(v, "%s: draws %.3f ms on %s, which has %.3f ms", id, ms(f->idle_take[c]),
			     idle_cause_id((enum idle_cause)c), ms(gain_pool(a, (enum idle_cause)c)));
		take += f->idle_take[c];
	}
	if (f->replayed) {
		/* the replay's parts: within the run's idle and busy time, and
		 * the range around the speed-up */
		if (!le(f->idle_ns, (double)a->idle_ns) || !le(f->busy_ns, (double)a->busy_ns))
			fail(v, "%s: replayed parts idle %.3f, busy %.3f ms exceed the run's %.3f and %.3f ms",
			     id, ms(f->idle_ns), ms(f->busy_ns), ms((double)a->idle_ns), ms((double)a->busy_ns));
		if (!(f->speedup_lo <= f->speedup + 1e-9) || !(f->speedup <= f->speedup_hi + 1e-9) ||
		    !(f->speedup_lo >= 1))
			fail(v, "%s: speed-up %.4f outside its range %.4f-%.4f", id, f->speedup, f->speedup_lo,
			     f->speedup_hi);
	} else {
		if (!eq(take, f->idle_ns))
			fail(v, "%s: idle part %.3f ms, but %.3f ms drawn cause by cause", id, ms(f->idle_ns),
			     ms(take));
		if (!le(f->idle_ns, f->claim.idle_ns > 0 ? f->claim.idle_ns : 0) ||
		    !le(f->busy_ns, f->claim.busy_ns > 0 ? f->claim.busy_ns : 0))
			fail(v, "%s: granted more than it claimed (idle %.3f of %.3f, busy %.3f of %.3f ms)", id,
			     ms(f->idle_ns), ms(f->claim.idle_ns), ms(f->busy_ns), ms(f->claim.busy_ns));
		if (!le(f->busy_ns, f->claim.busy_of_ns) || !le(f->busy_ns, (double)a->busy_ns))
			fail(v, "%s: busy part %.3f ms exceeds the time of the operations it names (%.3f ms) "
				"or the busy time (%.3f ms)", id, ms(f->busy_ns), ms(f->claim.busy_of_ns),
			     ms((double)a->busy_ns));
	}
	if (!le(f->saved_ns, lim) || !le(f->saved_ns, T))
		fail(v, "%s: saves %.3f ms of a %.3f ms window (cap %.3f)", id, ms(f->saved_ns), ms(T), ms(lim));
	if (f->capped && !eq(f->saved_ns, lim))
		fail(v, "%s: capped, but saves %.3f ms and the cap is %.3f ms", id, ms(f->saved_ns), ms(lim));
	if (has_steps(a)) {
		if (!eq(f->per_step_ns * (double)has_steps(a), f->saved_ns))
			fail(v, "%s: %.3f ms per step x %zu steps != %.3f ms saved", id, ms(f->per_step_ns),
			     has_steps(a), ms(f->saved_ns));
		if (!le(f->per_step_ns * (double)has_steps(a), T))
			fail(v, "%s: saves %.3f ms per step, more than a mean step (%.3f ms)", id,
			     ms(f->per_step_ns), ms(T / (double)has_steps(a)));
	} else if (f->per_step_ns != 0) {
		fail(v, "%s: a per-step saving without steps", id);
	}
	double want = T > 0 && T > f->saved_ns ? T / (T - f->saved_ns) : 1.0;

	if (fabs(f->speedup - want) > 1e-9 * want)
		fail(v, "%s: speed-up %.6f, but T / (T - S) = %.6f", id, f->speedup, want);
	if (f->speedup < 1 || (f->saved_ns > 0 && T > 0 && f->speedup <= 1))
		fail(v, "%s: saves %.3f ms with a speed-up of %.6f", id, ms(f->saved_ns), f->speedup);
	double share = T > 0 ? severity_saved_ns(f) / T : 0;
	enum severity sev = severity_of_share(share);

	if (f->replayed && !(f->least_saved_ns >= 0 && le(f->least_saved_ns, f->saved_ns)))
		fail(v, "%s: saves %.3f ms at least, more than its %.3f ms", id, ms(f->least_saved_ns),
		     ms(f->saved_ns));

	if (sev < f->min_severity)
		sev = f->min_severity;
	if (a->too_little)
		sev = SEV_INFO;
	if (f->severity != sev)
		fail(v, "%s: severity %d for a least saving of %.1f%% of the run (want %d)", id, f->severity,
		     100 * share, sev);
}

/* The combined replay: every fix at once in one replay saves at least what
 * the best of them saves alone (a replay only gets shorter as work and
 * waits are taken out), within the cap. */
static void check_combined_replayed(const struct analysis *a, struct inv *v, const struct finding *const *fs,
				    size_t n)
{
	double T = steady_untraced_ns(a), lim = gain_limit_batch(a, a->combined_batch), c = a->combined_saved_ns,
	       best = 0;

	for (size_t k = 0; k < n; k++)
		if (fs[k]->replayed && fs[k]->saved_ns > best)
			best = fs[k]->saved_ns;
	if (!finite_nonneg(c) || !le(c, lim) || !le(best, c))
		fail(v, "combined replay saves %.3f ms: below its best finding's %.3f ms or above the cap "
			"%.3f ms", ms(c), ms(best), ms(lim));
	if (a->combined_capped && !eq(c, lim))
		fail(v, "combined replay capped, but saves %.3f ms of a cap of %.3f ms", ms(c), ms(lim));
	double sp = T > c ? T / (T - c) : 0;

	if (c > 0 && fabs(a->combined_speedup - sp) > 1e-9 * sp)
		fail(v, "combined speed-up %.6f, but T / (T - S) = %.6f", a->combined_speedup, sp);
	if (c > 0 && (!(a->combined_lo <= a->combined_speedup + 1e-9) ||
		      !(a->combined_speedup <= a->combined_hi + 1e-9)))
		fail(v, "combined speed-up %.4f outside its range %.4f-%.4f", a->combined_speedup,
		     a->combined_lo, a->combined_hi);
}

/* Findings together: shared idle drawn once; findings that share nothing add
 * up to at most the run; the combined estimate. */
static void check_together(const struct analysis *a, struct inv *v)
{
	double T = steady_untraced_ns(a), drawn[IDLE_NCAUSES] = { 0 }, idle = 0, busy = 0;
	const struct finding *fs[64], *nz[16];
	size_t n = 0, nnz = 0;

	for (size_t i = 0; i < a->findings.n; i++) {
		const struct finding *f = &a->findings.v[i];

		if (!f->assessed)
			continue;
		for (int c = 0; c < IDLE_NCAUSES; c++)
			drawn[c] += f->idle_take[c];
		if (f->saved_ns > 0 && nnz < 16 && !f->replayed) /* replays overlap: each is the whole job */
			nz[nnz++] = f;
		if (f->severity >= SEV_WARN && n < 64) {
			fs[n++] = f;
			idle += f->idle_ns;
			busy += f->busy_ns;
		}
	}
	double all_idle = 0;

	for (int c = 0; c < IDLE_NCAUSES; c++) {
		if (!le(drawn[c], gain_pool(a, (enum idle_cause)c)))
			fail(v, "the findings draw %.3f ms on %s, which has %.3f ms", ms(drawn[c]),
			     idle_cause_id((enum idle_cause)c), ms(gain_pool(a, (enum idle_cause)c)));
		all_idle += drawn[c];
	}
	if (!le(all_idle, (double)a->idle_ns))
		fail(v, "the findings' idle parts sum to %.3f ms of %.3f ms idle", ms(all_idle),
		     ms((double)a->idle_ns));
	/* every set of findings that share no family of operations: their
	 * savings add up, and must fit in the run (per step: in a mean step) */
	for (unsigned m = 1; m < (1u << nnz); m++) {
		unsigned fam = 0;
		double sum = 0;
		int disjoint = 1;

		for (size_t k = 0; k < nnz && disjoint; k++)
			if (m & (1u << k)) {
				unsigned b = nz[k]->busy_ns > 0 ? nz[k]->claim.busy_set : 0;

				disjoint = !(fam & b);
				fam |= b;
				sum += nz[k]->saved_ns;
			}
		if (disjoint && !le(sum, T))
			fail(v, "findings that overlap in nothing save %.3f ms together, of a %.3f ms run%s",
			     ms(sum), ms(T), has_steps(a) ? " (more than a step per step)" : "");
	}
	double lim = gain_limit(a), c = a->combined_saved_ns, sum = idle + busy;

	if (a->combined_replayed) {
		check_combined_replayed(a, v, fs, n);
		return;
	}
	/* combined: the idle parts plus the busy parts composed, capped */

	if (!finite_nonneg(c) || !le(c, sum) || !le(c, lim))
		fail(v, "combined saving %.3f ms exceeds the sum of its parts %.3f ms or the cap %.3f ms",
		     ms(c), ms(sum), ms(lim));
	if (n && sum > 0 && T > 0) {
		double b = gain_combine_busy(a, fs, n), want = idle + b;
		double maxb = 0;
		unsigned fam = 0;
		int disjoint = 1;

		for (size_t k = 0; k < n; k++) {
			unsigned s = fs[k]->busy_ns > 0 ? fs[k]->claim.busy_set : 0;

			disjoint &= !(fam & s);
			fam |= s;
			maxb = fs[k]->busy_ns > maxb ? fs[k]->busy_ns : maxb;
		}
		if (!le(maxb, b) || !le(b, busy) || (disjoint && !eq(b, busy)))
			fail(v, "busy parts composed to %.3f ms: below the largest (%.3f) or above their sum "
				"(%.3f)%s", ms(b), ms(maxb), ms(busy), disjoint ? ", which they equal when disjoint" : "");
		want = want < lim ? want : lim;
		if (!eq(c, want))
			fail(v, "combined saving %.3f ms, but the non-overlapping parts give %.3f ms", ms(c),
			     ms(want));
		if (a->combined_capped != (idle + b > lim))
			fail(v, "combined estimate %s capped, but its parts are %.3f ms of a cap of %.3f ms",
			     a->combined_capped ? "" : "not", ms(idle + b), ms(lim));
		double sp = T > c ? T / (T - c) : 0;

		if (c > 0 && fabs(a->combined_speedup - sp) > 1e-9 * sp)
			fail(v, "combined speed-up %.6f, but T / (T - S) = %.6f", a->combined_speedup, sp);
	}
}

int analysis_check_invariants(const struct analysis *a, char *why, size_t len)
{
	struct inv v = { why, len, 0 };

	if (len)
		why[0] = 0;
	check_time(a, &v);
	for (size_t i = 0; i < a->findings.n; i++)
		if (a->findings.v[i].assessed)
			check_finding(a, &a->findings.v[i], &v);
	check_together(a, &v);
	if (v.failed > 1) {
		size_t l = strlen(why);

		snprintf(why + l, len > l ? len - l : 0, " (and %d more)", v.failed - 1);
	}
	return v.failed ? -1 : 0;
}
