/* A tiny test harness: CHECK() records a failure and goes on; each test
 * binary prints one line per check group and a final "N passed, N failed". */
#ifndef GPUWHY_T_H
#define GPUWHY_T_H

#include <stdio.h>

static int t_pass, t_fail;

#define CHECK(cond, ...)                                                    \
	do {                                                                \
		if (cond) {                                                 \
			t_pass++;                                           \
		} else {                                                    \
			t_fail++;                                           \
			printf("FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
			printf(__VA_ARGS__);                                \
			printf("\n");                                       \
		}                                                           \
	} while (0)

#define T_DONE()                                                 \
	do {                                                     \
		printf("%d passed, %d failed\n", t_pass, t_fail); \
		return t_fail ? 1 : 0;                           \
	} while (0)

#endif
