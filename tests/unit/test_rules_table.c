/* The rule table made from the rules' RULE() entries (rules/rule.h): every
 * rule in it once, in cause order, each with a settle rank of its own and a
 * fix; and a rule added as one file (tests/rules/c99_toy.c, compiled into
 * this binary alone) is listed, run and settled by its declared rank. */
#include <glob.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../rules/c99_toy.c"
#include "t.h"

static const struct finding *by_cause(const struct analysis *a, const char *cause)
{
	for (size_t i = 0; i < a->findings.n; i++)
		if (!strcmp(a->findings.v[i].cause, cause))
			return &a->findings.v[i];
	return NULL;
}

static void table(void)
{
	const struct rule *r[RULES_MAX];
	size_t n = rules_list(r, RULES_MAX), files = 0;
	glob_t g;

	/* every rule file is in the table: one RULE() each, and the toy */
	if (glob("src/analyze/rules/c[0-9]*_*.c", 0, NULL, &g) == 0) {
		files = g.gl_pathc;
		globfree(&g);
	}
	CHECK(files >= 16 && n == files + 1, "%zu rules for %zu rule files and the toy", n, files);
	CHECK(n && !strcmp(r[0]->cause, "C1") && !strcmp(r[n - 1]->id, "C99.toy"),
	      "in cause order: first %s, last %s", n ? r[0]->id : "-", n ? r[n - 1]->id : "-");
	for (size_t i = 0; i < n; i++) {
		CHECK(r[i]->settle > 0, "%s: settle rank %u", r[i]->id, r[i]->settle);
		CHECK(advice(r[i]->advice, FW_UNKNOWN)[0], "%s: its fix has no framework-neutral text", r[i]->id);
		CHECK(!strncmp(r[i]->id, r[i]->cause, strlen(r[i]->cause)) &&
			      r[i]->id[strlen(r[i]->cause)] == '.',
		      "%s: the id starts with its cause %s", r[i]->id, r[i]->cause);
		for (size_t k = 0; k < i; k++) {
			CHECK(strcmp(r[i]->id, r[k]->id) && strcmp(r[i]->cause, r[k]->cause),
			      "%s and %s share an id or cause", r[i]->id, r[k]->id);
			CHECK(r[i]->settle == SETTLE_NO_IDLE || r[i]->settle != r[k]->settle,
			      "%s and %s share settle rank %u: the order between them would be the table's",
			      r[i]->id, r[k]->id, r[i]->settle);
		}
	}
	for (int e = 0; e < ADV_N; e++)
		CHECK(advice((enum advice)e, FW_UNKNOWN)[0], "advice %d has no framework-neutral text", e);
}

/* On the launch-bound recording the toy settles first, so it takes every
 * launch gap and C4 keeps none; its finding passes the invariants, and
 * fails them once its rank says it claims no idle. */
static void toy_runs(void)
{
	struct trace t;
	struct analysis a;
	char err[512], why[512];

	if (trace_load(&t, "tests/fixtures/c4_launch_bound.gwr", err, sizeof(err)) < 0) {
		CHECK(0, "load: %s", err);
		trace_free(&t);
		return;
	}
	CHECK(analyze(&t, &a, 0) == 0, "analyze");
	const struct finding *toy = by_cause(&a, "C99"), *c4 = by_cause(&a, "C4");

	CHECK(toy && toy->assessed && toy->title[0], "the toy rule ran and found");
	CHECK(toy && fabs(toy->idle_take[IDLE_LAUNCH_OVERHEAD] - gain_pool(&a, IDLE_LAUNCH_OVERHEAD)) < 1,
	      "the toy took all %.0f ns of launch gaps (took %.0f)", gain_pool(&a, IDLE_LAUNCH_OVERHEAD),
	      toy ? toy->idle_take[IDLE_LAUNCH_OVERHEAD] : -1);
	CHECK(c4 && c4->assessed && c4->idle_take[IDLE_LAUNCH_OVERHEAD] < 1,
	      "C4 settles after it and keeps nothing (%.0f ns)", c4 ? c4->idle_take[IDLE_LAUNCH_OVERHEAD] : -1);
	/* a bounded gain says where its idle went; C4's is replayed (its own
	 * fix applied to the whole window), so its evidence does not */
	CHECK(c4 && (c4->replayed ? !strstr(c4->evidence, "counted in the gain of")
				  : strstr(c4->evidence, "counted in the gain of C99") != NULL),
	      "C4's evidence names the toy only where its gain is bounded: %s", c4 ? c4->evidence : "-");
	CHECK(analysis_check_invariants(&a, why, sizeof(why)) == 0, "invariants: %s", why);
	for (size_t i = 0; i < a.findings.n; i++)
		if (!strcmp(a.findings.v[i].cause, "C99"))
			a.findings.v[i].settle = SETTLE_NO_IDLE;
	CHECK(analysis_check_invariants(&a, why, sizeof(why)) < 0 && strstr(why, "settle rank"),
	      "a finding that claims idle without a settle rank fails the invariants: '%s'", why);
	analysis_free(&a);
	trace_free(&t);
}

int main(void)
{
	table();
	toy_runs();
	T_DONE();
}
