/* The reorder buffer (as perf's ordered-events.c): operations of one device
 * go in as read and come out in (start, arrival) order once a start
 * `window` ns later has gone in (timeline.c sets the window to the most an
 * operation of the device arrived late in the first reading).
 *
 * Most devices deliver a few interleaved sorted runs (one per CUPTI buffer
 * in flight): an arrival extends the run whose last start is the latest not
 * after its own, in O(1). An arrival that fits no run's end (a crafted file
 * in descending order, thousands of process streams over one span) goes
 * into a binary heap instead, in O(log n): whatever the order of the
 * records, the work stays O(n log n) (tests/unit/test_crafted.c counts it).
 * Release takes the earliest of the run heads and the heap's top. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static int entry_before(const struct ro_entry *x, const struct ro_entry *y)
{
	return x->op.start < y->op.start || (x->op.start == y->op.start && x->seq < y->seq);
}

static int run_grow(struct ro_run *r)
{
	if (r->head && r->head * 2 >= r->n) { /* compact before growing */
		memmove(r->v, r->v + r->head, (r->n - r->head) * sizeof(*r->v));
		r->n -= r->head;
		r->head = 0;
		if (r->n < r->cap)
			return 0;
	}
	size_t ncap = r->cap ? r->cap * 2 : 256;
	struct ro_entry *nv = realloc(r->v, ncap * sizeof(*nv));

	if (!nv)
		return -ENOMEM;
	r->v = nv;
	r->cap = ncap;
	return 0;
}

/* ---- the heap of arrivals that fit no run ------------------------------- */

static int heap_push(struct reorder *ro, const struct ro_entry *e)
{
	struct ro_heap *h = &ro->heap;
	size_t i;

	if (h->n == h->cap) {
		size_t ncap = h->cap ? h->cap * 2 : 256;
		struct ro_entry *nv = realloc(h->v, ncap * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		h->v = nv;
		h->cap = ncap;
	}
	for (i = h->n++; i > 0; i = (i - 1) / 2) {
		size_t up = (i - 1) / 2;

		if (!entry_before(e, &h->v[up]))
			break;
		h->v[i] = h->v[up];
		ro->sifts++;
	}
	h->v[i] = *e;
	return 0;
}

static void heap_pop(struct reorder *ro)
{
	struct ro_heap *h = &ro->heap;
	struct ro_entry last = h->v[--h->n];
	size_t i = 0;

	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= h->n)
			break;
		if (c + 1 < h->n && entry_before(&h->v[c + 1], &h->v[c]))
			c++;
		if (!entry_before(&h->v[c], &last))
			break;
		h->v[i] = h->v[c];
		i = c;
		ro->sifts++;
	}
	if (h->n)
		h->v[i] = last;
}

/* ---- in and out ------------------------------------------------------------ */

/* Releases, in order, every pending operation that starts at or before
 * `upto`. */
static void reorder_release(struct reorder *ro, uint64_t upto, op_fn fn, void *ctx)
{
	for (;;) {
		struct ro_run *best = NULL;
		const struct ro_entry *e = ro->heap.n ? &ro->heap.v[0] : NULL;

		for (unsigned i = 0; i < ro->nruns; i++) {
			struct ro_run *r = &ro->run[i];

			if (r->head < r->n && (!e || entry_before(&r->v[r->head], e))) {
				best = r;
				e = &r->v[r->head];
			}
		}
		if (!e || e->op.start > upto)
			return;
		struct gpu_op op = e->op;

		if (best) {
			best->head++;
			if (best->head == best->n)
				best->head = best->n = 0;
		} else {
			heap_pop(ro);
		}
		ro->last_out = op.start;
		ro->pending--;
		fn(ctx, &op);
	}
}

int reorder_push(struct reorder *ro, const struct gpu_op *op, op_fn fn, void *ctx)
{
	struct ro_entry e;
	struct ro_run *fit = NULL, *empty = NULL;

	if (!ro->pending && op->start >= ro->last_out && op->start >= ro->max_start &&
	    !ro->window) { /* in order, nothing waiting: straight through */
		ro->seq++;
		ro->max_start = ro->last_out = op->start;
		fn(ctx, op);
		return 0;
	}
	e.op = *op;
	e.seq = ro->seq++;
	if (op->start < ro->last_out)
		ro->violated = 1; /* later than the window: ordered only approximately */
	for (unsigned i = 0; i < ro->nruns; i++) {
		struct ro_run *r = &ro->run[i];

		if (r->head == r->n) {
			empty = empty ? empty : r;
			continue;
		}
		if (r->v[r->n - 1].op.start <= op->start &&
		    (!fit || r->v[r->n - 1].op.start > fit->v[fit->n - 1].op.start))
			fit = r;
	}
	if (!fit)
		fit = empty;
	if (!fit && ro->nruns < RO_RUNS)
		fit = &ro->run[ro->nruns++];
	if (fit) {
		if (fit->n == fit->cap && run_grow(fit) < 0)
			return -ENOMEM;
		fit->v[fit->n++] = e;
	} else { /* every run ends later */
		if (heap_push(ro, &e) < 0)
			return -ENOMEM;
		ro->inserts++;
	}
	if (++ro->pending > ro->peak)
		ro->peak = ro->pending;
	if (op->start > ro->max_start)
		ro->max_start = op->start;
	if (ro->max_start >= ro->window)
		reorder_release(ro, ro->max_start - ro->window, fn, ctx);
	return 0;
}

void reorder_flush(struct reorder *ro, op_fn fn, void *ctx)
{
	reorder_release(ro, UINT64_MAX, fn, ctx);
}

void reorder_free(struct reorder *ro)
{
	for (unsigned i = 0; i < RO_RUNS; i++)
		free(ro->run[i].v);
	free(ro->heap.v);
	memset(ro, 0, sizeof(*ro));
}
