/* Shared between the analysis passes (not for renderers). */
#ifndef GPUWHY_ANALYZE_INTERNAL_H
#define GPUWHY_ANALYZE_INTERNAL_H

#include "../format/format.h"
#include "analyze.h"


void detect_steps(struct analysis *a);   /* steps.c */
void attribute_idle(struct analysis *a); /* attribute.c */
void run_rules(struct analysis *a);      /* rules/rules.c */
void gather_op_stats(struct analysis *a); /* opstats.c */
/* Median kernel duration in ns from the histogram (0 without kernels). */
double median_kernel_ns(const struct op_stats *s);
/* SM count of the main GPU, 0 if unknown (rules/rules.c). */
unsigned main_gpu_sms(const struct analysis *a);
/* Index of the step holding time t, or UINT32_MAX (attribute.c). For times
 * visited in order: *cursor (0 at first) only moves on. */
uint32_t step_at(const struct analysis *a, uint64_t t, size_t *cursor);
/* CPU cores used over [t0, t1] by the main process and by the rest of the
 * tree except other GPU processes (analyze.c), in one pass over the threads. */
void cpu_cores_split(const struct analysis *a, uint64_t t0, uint64_t t1, double *main,
		     double *workers);
/* Threads runnable at some point in [w0, w1] (analyze.c). */
unsigned runnable_threads(const struct analysis *a, uint64_t w0, uint64_t w1);
/* 1 if a time of the sorted list v[0..n) falls in [w0, w1]. */
int any_time_in(const uint64_t *v, size_t n, uint64_t w0, uint64_t w1);
/* 1 if [t0, t1] lies inside one traced window (always, without duty cycling). */
int traced(const struct analysis *a, uint64_t t0, uint64_t t1);
/* End of the traced window holding t (UINT64_MAX without duty cycling), 0 if none. */
uint64_t traced_until(const struct analysis *a, uint64_t t);
/* q-quantile of x[0..n) (sorts x). */
double quantile(double *x, size_t n, double q);

#endif
