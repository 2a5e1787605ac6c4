/* The rule table, and the pass that runs it and ranks the findings. */
#include <stdlib.h>

#include "rule.h"

extern const struct rule rule_data_loading, rule_storage, rule_small_batch, rule_launch_bound,
	rule_launch_blocking, rule_pageable, rule_oversubscription, rule_fp32_matmul,
	rule_sync_stall, rule_serial_rnn, rule_memory_bound, rule_pcie_numa, rule_throttle,
	rule_periodic, rule_comm, rule_host_wait;

const struct rule *const all_rules[] = {
	&rule_data_loading, &rule_storage, &rule_small_batch, &rule_launch_bound,
	&rule_launch_blocking, &rule_pageable, &rule_oversubscription, &rule_fp32_matmul,
	&rule_sync_stall, &rule_serial_rnn, &rule_memory_bound, &rule_pcie_numa,
	&rule_throttle, &rule_periodic, &rule_comm, &rule_host_wait,
};
const size_t n_rules = sizeof(all_rules) / sizeof(all_rules[0]);

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

void run_rules(struct analysis *a)
{
	for (size_t i = 0; i < n_rules; i++) {
		struct finding f;

		memset(&f, 0, sizeof(f));
		f.rule_id = all_rules[i]->id;
		f.cause = all_rules[i]->cause;
		f.assessed = 1;
		f.speedup = 1.0;
		f.confidence = CONF_MEDIUM;
		const char *why = unmet(a, all_rules[i]->needs);

		if (why) {
			f.assessed = 0;
			snprintf(f.why, sizeof(f.why), "%s", why);
		} else {
			all_rules[i]->eval(a, &f);
		}
		if ((f.title[0] || !f.assessed) && VEC_PUSH(a->findings, f) < 0)
			analysis_nomem(a, "keeping the findings");
	}
	settle_gains(a);
	if (a->findings.n)
		qsort(a->findings.v, a->findings.n, sizeof(*a->findings.v), cmp_finding);
	combine_gains(a);
}
