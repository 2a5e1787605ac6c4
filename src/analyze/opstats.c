/* Fed the main GPU's operations in the steady window, in time order (the
 * steady pass in analyze.c), gathers what the rules need: time per kernel
 * family, SM fill, copy totals, kernel durations as a histogram, chains of
 * elementwise kernels (C11). No rule walks every operation again, and memory
 * stays fixed: one bit per kernel name is the only thing that grows. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define BIG_COPY_BYTES (1u << 20)

/* Bin of a duration: the position of its highest bit and the next four bits. */
static unsigned dur_bin(uint64_t ns)
{
	unsigned msb;

	if (ns < 16)
		return (unsigned)ns;
	msb = 63u - (unsigned)__builtin_clzll(ns);
	unsigned bin = (msb << 4) | (unsigned)((ns >> (msb - 4)) & 15u);

	return bin < DUR_BINS ? bin : DUR_BINS - 1;
}

/* The middle of a bin's range of durations. */
static double bin_mid_ns(unsigned bin)
{
	unsigned msb = bin >> 4;

	if (bin < 16)
		return (double)bin; /* durations under 16 ns have a bin each */
	double lo = (double)(1ull << msb) + (double)(bin & 15u) * (double)(1ull << (msb - 4));

	return lo + (double)(1ull << (msb - 4)) / 2;
}

static double hist_median_ns(const uint32_t *hist, uint64_t n)
{
	uint64_t half = (n + 1) / 2, seen = 0;

	for (unsigned b = 0; n && b < DUR_BINS; b++) {
		seen += hist[b];
		if (seen >= half)
			return bin_mid_ns(b);
	}
	return 0;
}

double median_kernel_ns(const struct op_stats *s)
{
	return hist_median_ns(s->dur_hist, s->kernels);
}

double median_matmul_ns(const struct op_stats *s)
{
	return hist_median_ns(s->matmul_dur_hist, s->matmul_kernels);
}

/* 1 if the copy was made by a copy call under checkpoint serialization, or
 * in the function found checkpointing by its copies (activities.c):
 * it starts inside one (calls of one thread do not overlap, so sorted by
 * end they are sorted by start too; copies come in time order). */
static int ckpt_copy(const struct analysis *a, struct op_stats_pass *p, const struct gpu_op *o)
{
	const struct host_call *c;

	while (p->ckpt_cursor < p->ckpt_calls.n &&
	       a->t->calls.v[p->ckpt_calls.v[p->ckpt_cursor]].end < o->start)
		p->ckpt_cursor++;
	if (p->ckpt_cursor >= p->ckpt_calls.n)
		return 0;
	c = &a->t->calls.v[p->ckpt_calls.v[p->ckpt_cursor]];
	return o->pid == c->pid && o->start >= c->start && o->start <= c->end;
}

static void add_copy(struct analysis *a, struct op_stats_pass *p, const struct gpu_op *o)
{
	struct op_stats *s = &a->ops;
	double ns = (double)(o->end - o->start);

	if (p->ckpt_calls.n && ckpt_copy(a, p, o)) {
		s->ckpt_copies++;
		s->ckpt_copy_ns += ns;
		s->ckpt_copy_bytes += (double)o->bytes;
		return;
	}

	if (o->copy_kind == COPY_DTOH && o->bytes <= SMALL_COPY_BYTES)
		s->small_dtoh++;
	if (o->copy_kind == COPY_HTOD && o->src_kind == MEM_PINNED && o->bytes >= BIG_PINNED_HTOD_BYTES) {
		s->big_pinned_htod_bytes += (double)o->bytes;
		s->big_pinned_htod_ns += ns;
	}
	if ((o->copy_kind != COPY_HTOD && o->copy_kind != COPY_DTOH) || o->bytes < BIG_COPY_BYTES)
		return; /* small copies are latency, not bandwidth */
	int host_kind = o->copy_kind == COPY_HTOD ? o->src_kind : o->dst_kind;

	if (host_kind == MEM_PAGEABLE) {
		s->pageable_copies++;
		s->pageable_bytes += (double)o->bytes;
		s->pageable_ns += ns;
	} else if (host_kind == MEM_PINNED) {
		s->pinned_bytes += (double)o->bytes;
		s->pinned_ns += ns;
	}
}

void op_stats_begin(struct analysis *a, struct op_stats_pass *p)
{
	memset(&a->ops, 0, sizeof(a->ops));
	memset(p, 0, sizeof(*p));
	p->sms = (double)main_gpu_sms(a);
	p->seen = calloc(a->t->names.n / 8 + 1, 1);
	if (!p->seen)
		analysis_nomem(a, "counting the kernel names");
	free(a->name_totals);
	a->name_totals = calloc(a->t->names.n + 1, sizeof(*a->name_totals));
	a->name_totals_n = a->name_totals ? a->t->names.n : 0;
	p->run_step = UINT32_MAX;
	for (size_t i = 0; a->t->py_samples && i < a->t->calls.n; i++) {
		const struct host_call *c = &a->t->calls.v[i];

		if (c->pid == a->main_pid && c->tid == a->main_tid && c->cls == HC_MEMCPY && c->py_stack &&
		    (sites_node_class(a, c->py_stack) == SC_SERIALIZE || activities_copy_holder_on(a, c->py_stack)) &&
		    VEC_PUSH(p->ckpt_calls, (uint32_t)i) < 0)
			analysis_nomem(a, "finding the checkpoint's copies");
	}
}

/* A chain of k back-to-back elementwise kernels fused costs about one of them. */
static void end_chain(struct op_stats *s, struct op_stats_pass *p)
{
	if (p->run_len >= 2) {
		s->chain_saved_ns += p->run_time * (1 - 1.0 / p->run_len) + p->run_gaps;
		s->chain_gap_ns += p->run_gaps;
		s->chains++;
		s->chain_kernels += p->run_len;
		s->chain_ns += p->run_time;
	}
}

void op_stats_add(struct analysis *a, struct op_stats_pass *p, const struct gpu_op *o)
{
	struct op_stats *s = &a->ops;
	int is_ew = o->kind == OP_KERNEL && o->name_class == KC_ELEMENTWISE;
	uint32_t st = is_ew ? step_at(a, o->start, &p->step_cursor) : UINT32_MAX;

	/* elementwise chains: same stream, same grid (the same tensor shape), same step */
	if (is_ew && p->run_len && o->stream == p->run_stream && o->blocks == p->run_blocks &&
	    st == p->run_step) {
		p->run_len++;
		p->run_time += (double)(o->end - o->start);
		/* the launch gaps inside the chain go away with it */
		p->run_gaps += o->start > p->prev_end ? (double)(o->start - p->prev_end) : 0;
		p->prev_end = o->end;
	} else {
		end_chain(s, p);
		p->run_len = (unsigned)is_ew;
		p->run_time = is_ew ? (double)(o->end - o->start) : 0;
		p->run_gaps = 0;
		p->prev_end = o->end;
		p->run_stream = o->stream;
		p->run_blocks = is_ew ? o->blocks : 0;
		p->run_step = st;
	}
	if (o->kind != OP_KERNEL)
		s->copy_ns += (double)(o->end - o->start);
	if (o->kind == OP_MEMCPY) {
		add_copy(a, p, o);
		return;
	}
	if (o->kind != OP_KERNEL)
		return;
	uint64_t d = o->end - o->start;
	double fill = p->sms > 0 ? (double)o->blocks / p->sms : 1;

	s->kernels++;
	s->short_kernels += d < SHORT_KERNEL_NS;
	s->dur_hist[dur_bin(d)]++;
	s->class_ns[o->name_class] += (double)d;
	if (o->name_class == KC_MATMUL_TC || o->name_class == KC_MATMUL_FP32) {
		s->matmul_kernels++;
		s->matmul_fill_ns += (double)d * (fill < 1 ? fill : 1);
		s->matmul_dur_hist[dur_bin(d)]++;
		s->matmul_short_ns += d < SMALL_MATMUL_NS ? (double)d : 0;
	}
	if (p->sms > 0 && fill < 1) {
		s->small_ns += (double)d;
		s->small_fill_ns += (double)d * fill;
	}
	if (o->name < a->name_totals_n) {
		a->name_totals[o->name].ns += d;
		a->name_totals[o->name].count++;
	}
	if (p->seen && !(p->seen[o->name / 8] & (1u << (o->name % 8)))) {
		p->seen[o->name / 8] |= (uint8_t)(1u << (o->name % 8));
		s->distinct_names++;
	}
}

void op_stats_end(struct analysis *a, struct op_stats_pass *p)
{
	struct op_stats *s = &a->ops;
	double sum = s->copy_ns;

	end_chain(s, p);
	/* Operations on several streams overlap: their times add up to more
	 * than the busy time (the union of the intervals). Each family's time
	 * becomes its share of the busy time, so that shares of the GPU's time
	 * add up to at most 100%. */
	for (int c = 0; c < KC_NCLASSES; c++)
		sum += s->class_ns[c];
	if (sum > (double)a->busy_ns) {
		double k = (double)a->busy_ns / sum;

		for (int c = 0; c < KC_NCLASSES; c++)
			s->class_ns[c] *= k;
		s->copy_ns *= k;
		s->matmul_fill_ns *= k;
		s->small_ns *= k;
		s->small_fill_ns *= k;
		s->matmul_short_ns *= k;
	}
	free(p->seen);
	p->seen = NULL;
	free(p->ckpt_calls.v);
	memset(&p->ckpt_calls, 0, sizeof(p->ckpt_calls));
}
