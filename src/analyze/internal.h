/* Shared between the analysis passes (not for renderers). */
#ifndef GPUWHY_ANALYZE_INTERNAL_H
#define GPUWHY_ANALYZE_INTERNAL_H

#include "../format/format.h"
#include "analyze.h"


void detect_steps(struct analysis *a);   /* steps.c */
/* Idle attribution (attribute.c), fed the main GPU's operations in time
 * order up to the end of the steady window. */
struct cause_sum { /* idle time of one cause; individual gaps only for --trace */
	uint64_t ns, cost; /* cost: gpuwhy's own estimated share, for launch gaps */
	uint32_t n, at_start;
};
struct attr_pass {
	struct cause_sum tot[IDLE_NCAUSES];
	struct step_hc *hc; /* per step: its host-compute gaps, until the step's end */
	uint64_t cur_end, per_launch;
	const struct gpu_op *prev;
	size_t step_cursor, call_cursor;
};
int attr_begin(struct analysis *a, struct attr_pass *p); /* 0, or -ENOMEM (warned) */
void attr_add(struct analysis *a, struct attr_pass *p, const struct gpu_op *o);
void attr_end(struct analysis *a, struct attr_pass *p);
void run_rules(struct analysis *a);      /* rules/rules.c */
/* The op statistics, fed the main GPU's operations of the steady window in
 * time order (opstats.c). */
struct op_stats_pass {
	double sms;
	uint8_t *seen; /* one bit per kernel name */
	size_t step_cursor;
	/* the elementwise chain being followed */
	unsigned run_len;
	double run_time, run_gaps;
	uint64_t prev_end;
	uint32_t run_stream, run_blocks, run_step;
};
void op_stats_begin(struct analysis *a, struct op_stats_pass *p);
void op_stats_add(struct analysis *a, struct op_stats_pass *p, const struct gpu_op *o);
void op_stats_end(struct analysis *a, struct op_stats_pass *p);
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
