/* A toy rule, the whole of what adding a rule takes: this one file. It
 * claims every launch gap and settles before C5, so that a test sees it in
 * the table, run, and drawing on the launch gaps ahead of C4
 * (tests/unit/test_rules_table.c compiles it in). */
#include "../../src/analyze/rules/rule.h"

RULE(toy, "C99.toy", "C99", NEED_TIMELINE, 5, ADV_C4_LAUNCH);

static void toy_eval(struct analysis *a, struct finding *f)
{
	double idle = launch_idle_untraced(a);

	if (idle <= 0)
		return;
	finding_set_gain(a, f, &(struct gain){ .idle_causes = IDLE_BIT(IDLE_LAUNCH_OVERHEAD), .idle_ns = idle });
	snprintf(f->title, sizeof(f->title), "Toy: launch gaps, %.0f%% of the run", pct(a, idle));
	snprintf(f->evidence, sizeof(f->evidence), "every launch gap");
	SET_FIX(a, f, rule_toy.advice);
}
