/* Communication not overlapped with compute: of the main process's
 * collective kernels (NCCL) on the main GPU in the steady window, the time
 * when none of its other operations ran beside them. DDP overlaps the
 * gradients' all-reduce with the backward pass; what is left exposed
 * lengthens the step by itself (the job report's X6).
 *
 * The steady pass hands the operations over in start order: the two unions
 * (collectives, everything else) are built as they come, and each finished
 * interval of the second is intersected with the collectives that overlap
 * it. Once an interval of the other operations is finished, no later
 * operation starts inside it, so its overlap with the collectives is final.
 * The collectives wait in a short queue until nothing can cover them any
 * more. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static uint64_t overlap(uint64_t s0, uint64_t e0, uint64_t s1, uint64_t e1)
{
	uint64_t s = s0 > s1 ? s0 : s1, e = e0 < e1 ? e0 : e1;

	return e > s ? e - s : 0;
}

/* The finished interval [s, e) of the other operations against the
 * collectives: the queued ones and the one being built. */
static void other_done(struct comm_exposure *x, uint64_t s, uint64_t e)
{
	size_t keep = 0;

	for (size_t i = 0; i < x->queue.n; i++) {
		struct time_span c = x->queue.v[i];

		x->covered_ns += (double)overlap(c.start, c.end, s, e);
		if (c.end > e) /* it may meet the next intervals too */
			x->queue.v[keep++] = c;
	}
	x->queue.n = keep;
	if (x->has_comm)
		x->covered_ns += (double)overlap(x->comm.start, x->comm.end, s, e);
}

void exposed_add(struct analysis *a, struct comm_exposure *x, const struct gpu_op *o)
{
	uint64_t s = o->start > a->t0 ? o->start : a->t0, e = o->end < a->t1 ? o->end : a->t1;

	if (o->pid != a->main_pid || o->dev != a->main_dev || e <= s)
		return;
	if (o->kind == OP_KERNEL && o->name_class == KC_COMM) {
		if (x->has_comm && s <= x->comm.end) {
			if (e > x->comm.end) {
				x->comm_ns += (double)(e - x->comm.end);
				x->comm.end = e;
			}
			return;
		}
		if (x->has_comm && VEC_PUSH(x->queue, x->comm) < 0) {
			analysis_nomem(a, "measuring the communication left exposed");
			return;
		}
		x->comm = (struct time_span){ s, e };
		x->comm_ns += (double)(e - s);
		x->has_comm = 1;
		return;
	}
	if (x->has_other && s <= x->other.end) {
		if (e > x->other.end)
			x->other.end = e;
		return;
	}
	if (x->has_other)
		other_done(x, x->other.start, x->other.end);
	x->other = (struct time_span){ s, e };
	x->has_other = 1;
}

void exposed_end(struct analysis *a, struct comm_exposure *x)
{
	if (x->has_other)
		other_done(x, x->other.start, x->other.end);
	a->comm_exposed_ns = x->comm_ns > x->covered_ns ? x->comm_ns - x->covered_ns : 0;
	free(x->queue.v);
	memset(x, 0, sizeof(*x));
}
