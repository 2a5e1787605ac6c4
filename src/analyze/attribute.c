/* Idle attribution: every idle interval of the main GPU inside the steady
 * window gets exactly one cause, by the first rule that matches (the order
 * and thresholds are documented and justified in docs/RULES.md). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define SHORT_GAP_NS 30000ull        /* HTA's "kernel wait": launch overhead */
/* What tracing adds on the host to each kernel launch: 1.4-6.7 us, median
 * about 3 us, recorded against uninstrumented runs on the H200 machine
 * (bench/RESULTS.md, "tracing cost per kernel"). Where the GPU waited on
 * launches, that much of each gap is gpuwhy's own doing. */
#define TRACE_COST_PER_LAUNCH_NS 3000ull
/* With `--launches` each launch also runs a callback pair: about 1.5 us more
 * on the same machine (shared/reference/nvml-cupti.md, "callbacks on 8
 * runtime API ids" against the activity kinds alone). */
#define LAUNCH_CALLBACK_COST_NS 1500ull
#define PAGEABLE_GAP_NS 1000000ull     /* staging gaps next to a pageable copy */
#define SYNC_SLACK_NS 20000ull       /* a sync returning this close to the gap's start */
#define SMALL_COPY_BYTES (64u << 10) /* nsys: copies this small are sync points, not transfers */
#define HOST_WINDOW_NS 40000000ull   /* /proc is sampled every 20 ms: look at >= 2 samples */
#define INPUT_GAP_NS 1000000ull       /* input preparation between steps: >= 1 ms */
#define BUSY_CORES 0.5               /* "busy": at least half a core of CPU time */

static int is_pageable_transfer(const struct gpu_op *o)
{
	if (o->kind != OP_MEMCPY)
		return 0;
	if (o->copy_kind == COPY_HTOD)
		return o->src_kind == MEM_PAGEABLE;
	if (o->copy_kind == COPY_DTOH)
		return o->dst_kind == MEM_PAGEABLE && o->bytes > SMALL_COPY_BYTES;
	return 0;
}

static int is_sync_copy(const struct gpu_op *o)
{
	return o->kind == OP_MEMCPY && o->copy_kind == COPY_DTOH &&
	       (!o->async || o->bytes <= SMALL_COPY_BYTES || o->dst_kind == MEM_PAGEABLE);
}

/* A host synchronization of the main process that returned near the gap's start. */
static int sync_returned_at(const struct analysis *a, uint64_t ga, uint64_t gb)
{
	const struct trace *t = a->t;
	size_t lo = 0, hi = t->calls.n;

	while (lo < hi) { /* calls are sorted by end: first with end >= ga - slack */
		size_t mid = (lo + hi) / 2;

		if (t->calls.v[mid].end + SYNC_SLACK_NS < ga)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo; i < t->calls.n && t->calls.v[i].end < gb; i++) {
		const struct host_call *c = &t->calls.v[i];

		if (c->pid == a->main_pid && c->cls == HC_SYNC && c->start < ga)
			return 1;
	}
	/* without host-call records (CUPTI held by another tool): activity sync records */
	if (!t->calls.n)
		for (size_t i = 0; i < t->syncs.n; i++)
			if (t->syncs.v[i].pid == a->main_pid && t->syncs.v[i].end + SYNC_SLACK_NS >= ga &&
			    t->syncs.v[i].end < gb && t->syncs.v[i].start < ga)
				return 1;
	return 0;
}

/* Any thread of the process tree in uninterruptible sleep, or storage reads, in [w0, w1]. */
static int io_in_window(const struct analysis *a, uint64_t w0, uint64_t w1)
{
	return any_time_in(a->dstate_ts.v, a->dstate_ts.n, w0, w1) ||
	       any_time_in(a->read_ts.v, a->read_ts.n, w0, w1);
}

static enum idle_cause classify(const struct analysis *a, const struct gpu_op *prev,
				const struct gpu_op *next, uint64_t ga, uint64_t gb)
{
	uint64_t len = gb - ga, w0, w1, pad;

	int pageable = (prev && is_pageable_transfer(prev)) || (next && is_pageable_transfer(next));

	if (a->launch_blocking)
		return IDLE_LAUNCH_BLOCKING;
	if ((prev && is_sync_copy(prev) && !is_pageable_transfer(prev)) || sync_returned_at(a, ga, gb))
		return IDLE_SYNC;
	/* The driver stages pageable copies through a pinned buffer: short gaps
	 * next to them are that staging. Long ones are whatever the host did
	 * before the copy (reading the file, preparing the batch): look at it. */
	if (pageable && len < PAGEABLE_GAP_NS)
		return IDLE_PAGEABLE;
	if (len < SHORT_GAP_NS)
		return IDLE_LAUNCH_OVERHEAD;
	pad = len < HOST_WINDOW_NS ? (HOST_WINDOW_NS - len) / 2 : 0;
	w0 = ga > pad ? ga - pad : 0;
	w1 = gb + pad;
	if (!a->t->tsamples.n)
		return pageable ? IDLE_PAGEABLE : IDLE_UNKNOWN;
	if (io_in_window(a, w0, w1))
		return IDLE_IO;
	double main, workers;

	cpu_cores_split(a, w0, w1, &main, &workers);
	if (a->cpus_allowed && workers + main >= BUSY_CORES &&
	    runnable_threads(a, w0, w1) * 4 > a->cpus_allowed * 5)
		return IDLE_OVERSUB;
	if (workers >= BUSY_CORES && workers >= main)
		return IDLE_DATA_WAIT;
	if (main >= BUSY_CORES)
		return IDLE_HOST_COMPUTE;
	return pageable ? IDLE_PAGEABLE : IDLE_UNKNOWN;
}

uint32_t step_of(const struct analysis *a, uint64_t t)
{
	size_t lo = 0, hi = a->steps.n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (a->steps.v[mid].end <= t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < a->steps.n && a->steps.v[lo].start <= t ? (uint32_t)lo : UINT32_MAX;
}

/* Steps that run long (> 1.5x median) and recur at a regular spacing: the
 * spacing d and phase r that explain the most long steps, with >= 70% of the
 * steps at positions r, r+d, r+2d... long, and at least 3 of them. Other long
 * steps (noise, garbage collection) do not break the pattern. */
static void mark_periodic(struct analysis *a)
{
	size_t n = a->steps.n, best_hits = 0, best_d = 0, best_r = 0;
	uint8_t *is_long = n ? calloc(n, 1) : NULL;

	if (!is_long || n < 6)
		goto out;
	for (size_t i = 0; i < n; i++)
		is_long[i] = (double)(a->steps.v[i].end - a->steps.v[i].start) > 1.5 * a->step_median_ns;
	for (size_t d = 2; d <= 100 && d * 3 <= n; d++) {
		for (size_t r = 0; r < d; r++) {
			size_t hits = 0, total = 0;

			for (size_t i = r; i < n; i += d) {
				hits += is_long[i];
				total++;
			}
			if (hits >= 3 && hits * 10 >= total * 7 && hits > best_hits) {
				best_hits = hits;
				best_d = d;
				best_r = r;
			}
		}
	}
	for (size_t i = best_r; best_d && i < n; i += best_d)
		a->steps.v[i].periodic = is_long[i];
out:
	free(is_long);
}

/* The idle of one cause in one step: what the report and the rules read
 * (individual gaps are kept only for --trace). */
struct cause_sum {
	uint64_t ns, cost; /* cost: gpuwhy's own estimated share, for launch gaps */
	uint32_t n, at_start;
};

/* Per step: the gaps by their first-pass cause, and the two host-compute
 * gaps that the second pass may keep as input preparation. */
struct step_acc {
	struct cause_sum by[IDLE_NCAUSES];
	uint64_t hc_start_len;  /* the host-compute gap that ends at the next step's start */
	uint64_t hc_long_len;   /* the step's longest host-compute gap (the first, on ties) */
	uint64_t hc_long_start; /* ... identified by its start */
	uint8_t has_hc_start, has_hc_long, hc_long_at_start;
};

static void add_gap(struct cause_sum *c, uint64_t len, int at_start, uint64_t per_launch)
{
	c->ns += len;
	c->cost += len < per_launch ? len : per_launch;
	c->n++;
	c->at_start += at_start != 0;
}

static void move_cause(struct cause_sum *by, int from, int to)
{
	by[to].ns += by[from].ns;
	by[to].cost += by[from].cost;
	by[to].n += by[from].n;
	by[to].at_start += by[from].at_start;
	by[from] = (struct cause_sum){ 0 };
}

/* Second pass, decided per step: CPU work on the training thread inside a
 * step is the framework issuing work (Python, launch overhead), except for
 * the gap right before the next step or the step's longest one, if it lasts
 * >= 1 ms and >= 1/4 of the step: that is input preparation (C1). */
static int input_preparation(const struct analysis *a, uint32_t step, uint64_t len, int candidate)
{
	const struct step *s = &a->steps.v[step];

	return candidate && len >= INPUT_GAP_NS && len * 4 >= s->end - s->start;
}

/* The host-compute gaps of a step that stay so; the rest become launch overhead. */
static void refine_host_compute(const struct analysis *a, uint32_t step, struct step_acc *acc,
				uint64_t per_launch)
{
	struct cause_sum keep = { 0 };

	if (acc->has_hc_start && input_preparation(a, step, acc->hc_start_len, 1))
		add_gap(&keep, acc->hc_start_len, 1, per_launch);
	if (acc->has_hc_long && !acc->hc_long_at_start &&
	    input_preparation(a, step, acc->hc_long_len, 1))
		add_gap(&keep, acc->hc_long_len, 0, per_launch);
	struct cause_sum *hc = &acc->by[IDLE_HOST_COMPUTE], *lo = &acc->by[IDLE_LAUNCH_OVERHEAD];

	lo->ns += hc->ns - keep.ns;
	lo->cost += hc->cost - keep.cost;
	lo->n += hc->n - keep.n;
	lo->at_start += hc->at_start - keep.at_start;
	*hc = keep;
}

/* Idle inside periodic long steps belongs to the periodic stall, unless
 * storage, oversubscription or the loaders explain it. */
static int periodic_overrides(int cause)
{
	return cause != IDLE_IO && cause != IDLE_OVERSUB && cause != IDLE_DATA_WAIT &&
	       cause != IDLE_PERIODIC;
}

/* Final causes of the kept gaps (--trace), by the same per-step decisions. */
static void finish_kept_gaps(struct analysis *a, const struct step_acc *acc)
{
	for (size_t i = 0; i < a->gaps.n; i++) {
		struct gap *g = &a->gaps.v[i];

		if (g->step == UINT32_MAX)
			continue;
		const struct step_acc *s = &acc[g->step];

		if (g->cause == IDLE_HOST_COMPUTE &&
		    !input_preparation(a, g->step, g->end - g->start,
				       g->at_step_start || (s->has_hc_long && s->hc_long_start == g->start)))
			g->cause = IDLE_LAUNCH_OVERHEAD;
		if (a->steps.v[g->step].periodic && periodic_overrides(g->cause))
			g->cause = IDLE_PERIODIC;
	}
}

void attribute_idle(struct analysis *a)
{
	struct trace *t = a->t;
	uint64_t cur_end = 0;
	const struct gpu_op *prev = NULL;
	size_t si = 0; /* gaps come in time order: the step cursor only moves on */
	const char *launches = trace_meta(t, "record.launch_calls");
	uint64_t per_launch = TRACE_COST_PER_LAUNCH_NS +
			      (launches && !strcmp(launches, "traced") ? LAUNCH_CALLBACK_COST_NS : 0);
	/* one slot per step, and a last one for gaps outside every step */
	size_t nacc = a->steps.n + 1;
	struct step_acc *acc = calloc(nacc, sizeof(*acc));

	if (!acc) {
		analysis_warn(a, "out of memory: idle time was not attributed");
		return;
	}
	for (size_t i = 0; i < t->ops.n; i++) {
		const struct gpu_op *o = &t->ops.v[i];

		if (o->dev != a->main_dev)
			continue;
		if (o->start >= a->t1)
			break;
		if (prev && o->start > cur_end && cur_end >= a->t0 && traced_until(a, cur_end)) {
			uint64_t until = traced_until(a, cur_end);
			struct gap g = { cur_end, o->start < until ? o->start : until, 0, 0, 0 };

			while (si < a->steps.n && a->steps.v[si].end <= g.start)
				si++;
			g.step = si < a->steps.n && a->steps.v[si].start <= g.start ? (uint32_t)si
										      : UINT32_MAX;
			g.at_step_start = g.step != UINT32_MAX && g.step + 1 < a->steps.n &&
					  a->steps.v[g.step + 1].start == g.end;
			g.cause = (uint8_t)classify(a, prev, o, g.start, g.end);

			uint64_t len = g.end - g.start;
			struct step_acc *s = &acc[g.step == UINT32_MAX ? nacc - 1 : g.step];

			add_gap(&s->by[g.cause], len, g.at_step_start, per_launch);
			if (g.cause == IDLE_HOST_COMPUTE && g.step != UINT32_MAX) {
				if (g.at_step_start) {
					s->has_hc_start = 1;
					s->hc_start_len = len;
				}
				if (!s->has_hc_long || len > s->hc_long_len) {
					s->has_hc_long = 1;
					s->hc_long_len = len;
					s->hc_long_start = g.start;
					s->hc_long_at_start = g.at_step_start;
				}
			}
			if (a->keep_gaps)
				VEC_PUSH(a->gaps, g);
		}
		if (!prev || o->end > cur_end) {
			cur_end = o->end;
			prev = o;
		}
	}
	for (uint32_t s = 0; s < a->steps.n; s++)
		refine_host_compute(a, s, &acc[s], per_launch);
	mark_periodic(a);
	for (size_t s = 0; s < nacc; s++) {
		struct cause_sum *by = acc[s].by;
		uint64_t idle = 0;

		if (s < a->steps.n && a->steps.v[s].periodic)
			for (int c = 0; c < IDLE_NCAUSES; c++)
				if (periodic_overrides(c))
					move_cause(by, c, IDLE_PERIODIC);
		for (int c = 0; c < IDLE_NCAUSES; c++) {
			a->idle_by_cause[c] += by[c].ns;
			a->gaps_by_cause[c] += by[c].n;
			a->gaps_at_step_start[c] += by[c].at_start;
			idle += by[c].ns;
		}
		a->trace_cost_ns += by[IDLE_LAUNCH_OVERHEAD].cost;
		a->idle_ns += idle;
		if (s < a->steps.n)
			a->steps.v[s].idle_ns = idle;
	}
	if (a->keep_gaps)
		finish_kept_gaps(a, acc);
	free(acc);
	a->busy_ns = a->steady_ns > a->idle_ns ? a->steady_ns - a->idle_ns : 0;
	for (size_t i = 0; i < a->steps.n; i++) {
		struct step *s = &a->steps.v[i];
		uint64_t d = s->end - s->start;

		s->busy_ns = d > s->idle_ns ? d - s->idle_ns : 0;
	}
	for (int c = 0; c < IDLE_NCAUSES; c++)
		a->dev[a->main_dev].idle_by_cause[c] = a->idle_by_cause[c];
}
