/* What every rule file needs. A rule fills *f (title non-empty) to report a
 * finding, sets f->assessed = 0 with f->why to say it could not judge, or
 * leaves f->title empty when there is nothing to say. */
#ifndef GPUWHY_RULE_H
#define GPUWHY_RULE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../util/util.h"
#include "../analyze.h"
#include "../internal.h"

/* What a rule needs to judge at all (checked once, by run_rules(): without
 * it the rule is "not assessed" and says why). */
enum rule_needs {
	NEED_TIMELINE = 1, /* the GPU timeline (CUPTI) */
	NEED_PROC = 2,     /* /proc samples of the job's threads */
	NEED_STEPS = 4,    /* detected steps (not time windows) */
};

/* The fixes, in the framework's own words (advice.c). */
enum advice {
	ADV_C1_MAIN_THREAD, ADV_C1_WORKERS, ADV_C1_HOST_WORK, ADV_C1_RESTART, ADV_C1_PIPE, ADV_C2_STORAGE, ADV_C3_BATCH, ADV_C4_LAUNCH,
	ADV_C5_BLOCKING, ADV_C6_PAGEABLE, ADV_C7_OVERSUB, ADV_C8_PRECISION, ADV_C8_FROM_TF32, ADV_C9_SYNC,
	ADV_C9_POST,
	ADV_C10_SERIAL, ADV_C11_FUSION, ADV_C12_PLACEMENT, ADV_C12_COPIES, ADV_C13_POWER, ADV_C14_PERIODIC,
	ADV_C14_WRITES, ADV_C14_OUTPUTS, ADV_C14_SNAPSHOT, ADV_C14_STATS, ADV_C14_EVAL, ADV_C15_COMM, ADV_C15_HOST, ADV_C16_WAIT,
	ADV_STARTUP_CACHE, ADV_N
};

struct rule {
	const char *id;    /* "C9.sync-stall" */
	const char *cause; /* "C9": the table's order is the cause's number */
	void (*eval)(struct analysis *a, struct finding *f); /* leaves f->title empty: no finding */
	unsigned needs;    /* enum rule_needs */
	unsigned settle;   /* settle rank, > 0 */
	enum advice advice; /* its fix (a rule with several picks among them: SET_FIX) */
};

/* A rule, declared once in its own file: id, cause, what it needs, settle
 * rank and fix. The entry goes into the gw_rules section, which the linker
 * gathers into one array: the table (rules.c) is every rule linked in, so
 * adding a rule is adding its file. */
#define RULE(name, rid, cause_id, need, rank, adv)                                                  \
	static void name##_eval(struct analysis *a, struct finding *f);                             \
	_Static_assert((rank) > 0, "RULE(" #name "): declare a settle rank (SETTLE_NO_IDLE: no idle part)"); \
	static const struct rule rule_##name = { .id = rid, .cause = cause_id, .eval = name##_eval,    \
						 .needs = need, .settle = rank, .advice = adv };          \
	static const struct rule *const rule_entry_##name                                           \
		__attribute__((used, section("gw_rules"), aligned(sizeof(void *)))) = &rule_##name

/* Every rule linked in, ordered by cause number then id, into out[0..cap):
 * returns how many there are. */
size_t rules_list(const struct rule **out, size_t cap);
#define RULES_MAX 64

/* Share of the steady window, in percent. */
static inline double pct(const struct analysis *a, double ns)
{
	return a->steady_ns ? 100.0 * ns / (double)a->steady_ns : 0;
}

/* The text for the framework, else the framework-neutral one; never NULL. */
const char *advice(enum advice what, enum framework fw);
/* The start-up finding, after the rules (startup.c). */
void startup_finding(struct analysis *a);
/* f->fix = advice(what, the analysis' framework). */
#define SET_FIX(a, f, what) snprintf((f)->fix, sizeof((f)->fix), "%s", advice((what), (a)->framework))
#define ADDF(buf, ...)                                                                  \
	do {                                                                            \
		size_t l_ = strlen(buf);                                                \
		snprintf((buf) + l_, sizeof(buf) > l_ ? sizeof(buf) - l_ : 0, __VA_ARGS__); \
	} while (0)

#endif
