/* One pass over the main GPU's operations in the steady window, gathering
 * what the rules need (time per kernel family, SM fill, copy totals, kernel
 * durations as a histogram), so that no rule walks every operation again and
 * memory stays fixed: one bit per kernel name is the only thing that grows. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define SHORT_KERNEL_NS 10000ull
#define BIG_COPY_BYTES (1u << 20)
#define BIG_PINNED_HTOD_BYTES (8u << 20)
#define SMALL_DTOH_BYTES 65536u

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

double median_kernel_ns(const struct op_stats *s)
{
	uint64_t half = (s->kernels + 1) / 2, seen = 0;

	for (unsigned b = 0; s->kernels && b < DUR_BINS; b++) {
		seen += s->dur_hist[b];
		if (seen >= half)
			return bin_mid_ns(b);
	}
	return 0;
}

static void add_copy(struct op_stats *s, const struct gpu_op *o)
{
	double ns = (double)(o->end - o->start);

	if (o->copy_kind == COPY_DTOH && o->bytes <= SMALL_DTOH_BYTES)
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

void gather_op_stats(struct analysis *a)
{
	const struct trace *t = a->t;
	struct op_stats *s = &a->ops;
	double sms = (double)main_gpu_sms(a);
	uint8_t *seen = calloc(t->names.n / 8 + 1, 1);

	memset(s, 0, sizeof(*s));
	for (size_t i = 0; i < t->ops.n; i++) {
		const struct gpu_op *o = &t->ops.v[i];

		if (o->start >= a->t1)
			break; /* ops are sorted by start */
		if (o->dev != a->main_dev || o->start < a->t0 || o->end > a->t1)
			continue;
		if (o->kind == OP_MEMCPY) {
			add_copy(s, o);
			continue;
		}
		if (o->kind != OP_KERNEL)
			continue;
		uint64_t d = o->end - o->start;
		double fill = sms > 0 ? (double)o->blocks / sms : 1;

		s->kernels++;
		s->short_kernels += d < SHORT_KERNEL_NS;
		s->dur_hist[dur_bin(d)]++;
		if (o->name_class < KC_NCLASSES)
			s->class_ns[o->name_class] += (double)d;
		if (o->name_class == KC_MATMUL_TC || o->name_class == KC_MATMUL_FP32) {
			s->matmul_kernels++;
			s->matmul_fill_ns += (double)d * (fill < 1 ? fill : 1);
		}
		if (sms > 0 && fill < 1) {
			s->small_ns += (double)d;
			s->small_fill_ns += (double)d * fill;
		}
		if (seen && !(seen[o->name / 8] & (1u << (o->name % 8)))) {
			seen[o->name / 8] |= (uint8_t)(1u << (o->name % 8));
			s->distinct_names++;
		}
	}
	free(seen);
}
