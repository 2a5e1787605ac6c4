/* The rule table, and the pass that runs it and ranks the findings. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rule.h"

/* The RULE() entries of every rule file linked in, gathered by the linker
 * (rule.h). */
extern const struct rule *const __start_gw_rules[], *const __stop_gw_rules[];

static int cmp_rule(const void *x, const void *y)
{
	const struct rule *a = *(const struct rule *const *)x, *b = *(const struct rule *const *)y;
	long na = strtol(a->cause + 1, NULL, 10), nb = strtol(b->cause + 1, NULL, 10);

	if (na != nb)
		return na < nb ? -1 : 1;
	return strcmp(a->id, b->id);
}

size_t rules_list(const struct rule **out, size_t cap)
{
	size_t n = 0;

	for (const struct rule *const *r = __start_gw_rules; r < __stop_gw_rules; r++)
		if (*r && n < cap)
			out[n++] = *r;
	qsort(out, n, sizeof(*out), cmp_rule);
	return n;
}

static int cmp_finding(const void *x, const void *y)
{
	const struct finding *a = x, *b = y;

	if (a->assessed != b->assessed)
		return a->assessed ? -1 : 1;
	if (a->severity != b->severity)
		return a->severity > b->severity ? -1 : 1;
	return a->saved_ns > b->saved_ns ? -1 : a->saved_ns < b->saved_ns;
}

/* Why a rule cannot judge this recording, or NULL when it has what it needs. */
static const char *unmet(const struct analysis *a, unsigned needs)
{
	if (!((needs & NEED_TIMELINE) && !a->t->nops) && !((needs & NEED_PROC) && !a->t->nsamples) &&
	    !((needs & NEED_STEPS) && !has_steps(a)))
		return NULL;
	if (needs & NEED_STEPS)
		return "needs the GPU timeline with detected steps";
	if ((needs & NEED_PROC) && (needs & NEED_TIMELINE))
		return "needs the GPU timeline and /proc samples";
	return needs & NEED_PROC ? "needs /proc samples" : "needs the GPU timeline";
}

/* A finding at warning or above whose cause keeps another's fix from
 * working moves just before the first such finding it follows, and that
 * one's evidence says so (docs/RULES.md section 4). */
static void rank_blockers(struct analysis *a)
{
	for (size_t i = 0; i < a->findings.n; i++) {
		struct finding *f = &a->findings.v[i];
		size_t first = SIZE_MAX;

		if (!f->assessed || !f->blocks[0] || a->too_little)
			continue;
		for (size_t k = 0; k < a->findings.n; k++) {
			struct finding *g = &a->findings.v[k];

			if (k == i || !g->assessed || !finding_blocks(f, g->cause) || g->severity < SEV_WARN)
				continue;
			/* what it blocks matters: at least a warning itself */
			if (f->severity < SEV_WARN)
				f->severity = f->min_severity = SEV_WARN;
			ADDF(g->evidence, " %s (%s) keeps this fix from working: fix it first.", f->title,
			     f->cause);
			if (k < i && first == SIZE_MAX)
				first = k;
		}
		if (first != SIZE_MAX) {
			struct finding tmp = *f;

			memmove(&a->findings.v[first + 1], &a->findings.v[first], (i - first) * sizeof(tmp));
			a->findings.v[first] = tmp;
		}
	}
}

/* C1's claim drawn mostly from the gaps after synchronizations (the next
 * input prepared after each read: c01_data_loading.c's after_sync): the reads set
 * those gaps, which C9's fix overlaps. */
static int after_reads(const struct analysis *a, const struct finding *f)
{
	double own = (double)a->idle_by_cause[IDLE_DATA_WAIT] + (double)a->idle_by_cause[IDLE_HOST_COMPUTE];

	return (f->claim.idle_causes & IDLE_BIT(IDLE_SYNC)) &&
	       f->claim.idle_ns - own >= 0.5 * f->claim.idle_ns;
}

/* The training thread's own input code read from storage (its lines that
 * waited on the disk, its file loads: sites.c): storage is why its input
 * takes that long. */
static int reads_storage(const struct analysis *a, const struct finding *f)
{
	(void)f;
	return a->read_site_io_ns + a->load_io_ns > 0;
}

/* Findings that say why a symptom's gaps are there, before it when their
 * replayed gains are alike (within 10%): the cause before its symptom. Why
 * the host launches so many small kernels (a batch too small, a loop of
 * small kernels, elementwise chains) before the launch gaps (C4); the reads
 * (C9) before the CPU work after them that C1 claims; storage (C2) before
 * the input work on the training thread (C1) that read from it. A loop of small
 * kernels (C10) at warning or above before a batch too small (C3) whatever
 * their gains and levels: the loop steps through time one small operation
 * at a time at any batch, and a batch's gain is per sample, a change of the
 * training recipe (C3's level comes from that per-sample gain). */
static void explanations_first(struct analysis *a)
{
	static const struct {
		const char *symptom, *why[3];
		int (*applies)(const struct analysis *a, const struct finding *f); /* NULL: always */
		int any_gain; /* whatever the two gains */
	} ex[] = { { "C4", { "C3", "C10", "C11" }, NULL, 0 },
		   { "C1", { "C9", NULL, NULL }, after_reads, 0 },
		   { "C1", { "C2", NULL, NULL }, reads_storage, 0 },
		   { "C3", { "C10", NULL, NULL }, NULL, 1 } };

	for (size_t i = 0; i < a->findings.n; i++) {
		struct finding *sym = &a->findings.v[i];
		size_t best = SIZE_MAX;

		if (!sym->assessed || !sym->replayed)
			continue;
		for (size_t e = 0; e < sizeof(ex) / sizeof(ex[0]) && best == SIZE_MAX; e++) {
			if (strcmp(sym->cause, ex[e].symptom) || (ex[e].applies && !ex[e].applies(a, sym)))
				continue;
			for (size_t k = i + 1; k < a->findings.n && best == SIZE_MAX; k++) {
				const struct finding *g = &a->findings.v[k];

				for (size_t w = 0; w < 3 && ex[e].why[w]; w++)
					if (g->assessed && g->replayed && !strcmp(g->cause, ex[e].why[w]) &&
					    (ex[e].any_gain ? g->severity >= SEV_WARN : g->severity == sym->severity) &&
					    (ex[e].any_gain || g->saved_ns >= 0.9 * sym->saved_ns))
						best = k;
			}
		}
		if (best != SIZE_MAX) {
			struct finding tmp = a->findings.v[best];

			memmove(&a->findings.v[i + 1], &a->findings.v[i], (best - i) * sizeof(tmp));
			a->findings.v[i] = tmp;
			i++; /* the symptom moved to i + 1 */
		}
	}
}

void run_rules(struct analysis *a)
{
	const struct rule *rules[RULES_MAX];
	size_t n = rules_list(rules, RULES_MAX);

	for (size_t i = 0; i < n; i++) {
		struct finding f;

		memset(&f, 0, sizeof(f));
		f.rule_id = rules[i]->id;
		f.cause = rules[i]->cause;
		f.settle = rules[i]->settle;
		f.assessed = 1;
		f.speedup = 1.0;
		f.confidence = CONF_MEDIUM;
		const char *why = unmet(a, rules[i]->needs);

		if (why) {
			f.assessed = 0;
			snprintf(f.why, sizeof(f.why), "%s", why);
		} else {
			rules[i]->eval(a, &f);
		}
		if ((f.title[0] || !f.assessed) && VEC_PUSH(a->findings, f) < 0)
			analysis_nomem(a, "keeping the findings");
	}
	settle_gains(a);
	replay_gains(a);
	if (a->findings.n)
		qsort(a->findings.v, a->findings.n, sizeof(*a->findings.v), cmp_finding);
	/* twice: a move made for one symptom (C3 before C4) can put another
	 * symptom (C3) before the finding that explains it (C10) */
	explanations_first(a);
	explanations_first(a);
	rank_blockers(a);
	replay_unblocked(a);
	/* too little to diagnose: what was seen, with no confidence in its gain */
	for (size_t i = 0; a->too_little && i < a->findings.n; i++)
		a->findings.v[i].confidence = CONF_LOW;
	if (a->replay_used)
		replay_combined(a); /* one replay with every fix */
	else
		combine_gains(a);
	startup_finding(a);
}
