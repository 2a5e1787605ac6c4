/* REAL recordings committed under tests/fixtures, for the unit tests that
 * check the analysis of one: loaded and analysed, and the finding of a
 * cause looked up. */
#ifndef GPUWHY_TEST_REAL_H
#define GPUWHY_TEST_REAL_H

#include <stdlib.h>
#include <string.h>

#include "analyze/analyze.h"
#include "t.h"

/* Loads and analyses file into t and a: 0, or -1 (checked, said why). On 0
 * the caller frees both. */
static inline int analyze_real(const char *file, struct trace *t, struct analysis *a)
{
	char err[256];

	if (trace_load(t, file, err, sizeof(err)) < 0) {
		CHECK(0, "load %s: %s", file, err);
		return -1;
	}
	if (analyze(t, a, 0) != 0) {
		CHECK(0, "analyze %s", file);
		trace_free(t);
		return -1;
	}
	return 0;
}

/* The assessed finding of cause in a, or NULL. */
static inline const struct finding *real_finding(const struct analysis *a, const char *cause)
{
	for (size_t i = 0; i < a->findings.n; i++)
		if (a->findings.v[i].assessed && !strcmp(a->findings.v[i].cause, cause))
			return &a->findings.v[i];
	return NULL;
}

/* A job's further recording (NAME.r2.gwr, NAME.r3.gwr, NAME.6s.gwr) in a
 * sanitizer build (GW_SANITIZED=1, tests/run-tests.sh): it runs the code
 * paths of the job's first recording again, which the sanitizers already
 * watch; the plain build checks every recording. */
static inline int real_further_sanitized(const char *name)
{
	const char *san = getenv("GW_SANITIZED");
	size_t l = strlen(name);

	if (!san || strcmp(san, "1") || l < 8 || strcmp(name + l - 4, ".gwr"))
		return 0;
	return (name[l - 7] == '.' && name[l - 6] == 'r' && name[l - 5] >= '0' && name[l - 5] <= '9') ||
	       !strcmp(name + l - 7, ".6s.gwr");
}

#endif
