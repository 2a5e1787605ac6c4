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

#define RULE(name, rid, cause_id)                                      \
	static void name##_eval(struct analysis *a, struct finding *f); \
	const struct rule rule_##name = { rid, cause_id, name##_eval }

/* Share of the steady window, in percent. */
static inline double pct(const struct analysis *a, double ns)
{
	return a->steady_ns ? 100.0 * ns / (double)a->steady_ns : 0;
}

/* 1 when the target looks like PyTorch (its kernels come from ATen). */
int target_is_pytorch(const struct analysis *a);
/* Practical host<->device bandwidth of the main GPU's PCIe link at its maximum
 * generation and width, GB/s (about 80% of raw), 0 if unknown. */
double main_gpu_link_gbs(const struct analysis *a);
/* Compute capability major of the main GPU, 0 if unknown. */
unsigned main_gpu_cc(const struct analysis *a);
#define ADDF(buf, ...)                                                                  \
	do {                                                                            \
		size_t l_ = strlen(buf);                                                \
		snprintf((buf) + l_, sizeof(buf) > l_ ? sizeof(buf) - l_ : 0, __VA_ARGS__); \
	} while (0)

#endif
