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

/* In a sanitizer build (GW_SANITIZED=1, tests/run-tests.sh) the unit tests
 * read the suite's own recordings only, not the corpus's (dir ends in
 * "corpus"): the golden suite's report of every corpus job runs the same
 * analysis, its replay and its invariant check under the same sanitizers,
 * and the numbers these tests assert do not depend on the build, which the
 * plain build checks on every recording. */
static inline int real_dir_sanitized(const char *dir)
{
	const char *san = getenv("GW_SANITIZED");
	size_t l = strlen(dir);

	return san && !strcmp(san, "1") && l >= 6 && !strcmp(dir + l - 6, "corpus");
}

#endif
