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
	p->names_n = a->t->names.n; /* its size: names read later are not in it */
	p->seen = calloc(p->names_n / 8 + 1, 1);
	if (!p->seen)
		analysis_nomem(a, "counting the kernel names");
	free(a->name_totals);
	a->name_totals = calloc(a->t->names.n + 1, sizeof(*a->name_totals));
	a->name_totals_n = a->name_totals ? a->t->names.n : 0;
	p->ew.step = p->mem.step = UINT32_MAX;
	p->graph_op = UINT32_MAX;
	p->attn_kind = calloc(p->names_n + 1, 1);
	if (!p->attn_kind)
		analysis_nomem(a, "counting the kernel names");
	for (size_t i = 0; a->t->py_samples && i < a->t->calls.n; i++) {
		const struct host_call *c = &a->t->calls.v[i];

		if (c->pid == a->main_pid && c->tid == a->main_tid && c->cls == HC_MEMCPY && c->py_stack &&
		    (sites_node_class(a, c->py_stack) == SC_SERIALIZE || activities_copy_holder_on(a, c->py_stack)) &&
		    VEC_PUSH(p->ckpt_calls, (uint32_t)i) < 0)
			analysis_nomem(a, "finding the checkpoint's copies");
	}
}

/* A chain of back-to-back elementwise kernels fused into one makes one pass
 * over each tensor shape it touches: it costs about one kernel of each grid
 * in it (the mean of that grid's), where it ran them all. A grid of kernels
 * that only move elements (a roll, a cat) costs nothing more where the chain
 * computes too: the fused kernel reads through the shift. A chain of moves
 * alone still writes each of its outputs: one kernel of each grid. */
static void end_chain(struct chain_run *r, struct chain_sums *sum)
{
	if (r->len >= 2) {
		double fused = 0, moves = 0;

		for (unsigned g = 0; g < r->grids; g++) {
			double one = r->grid_ns[g] / r->grid_kernels[g];

			if (r->grid_moves[g] < r->grid_kernels[g])
				fused += one;
			else
				moves += one;
		}
		if (!(fused > 0))
			fused = moves;
		sum->saved += r->time - fused + r->gaps;
		sum->gaps += r->gaps;
		sum->n++;
		sum->kernels += r->len;
		sum->ns += r->time;
	}
	r->len = r->grids = r->nnames = 0;
	r->time = r->gaps = 0;
}

/* Whether the chain may take kernel name n once more: where each kernel runs
 * once in a chain, a name it holds again is the loop's next iteration (a
 * time step of a stencil depends on the whole of the last one), and it holds
 * CHAIN_NAMES at most. */
static int chain_takes_name(struct chain_run *r, uint32_t n)
{
	for (unsigned i = 0; i < r->nnames; i++)
		if (r->names[i] == n)
			return 0;
	if (r->nnames == CHAIN_NAMES)
		return 0;
	r->names[r->nnames++] = n;
	return 1;
}

/* The grid's slot in the chain being followed, or CHAIN_GRIDS when it has
 * as many grids as it may hold and this is another. */
static unsigned chain_grid(struct chain_run *r, uint32_t blocks)
{
	for (unsigned g = 0; g < r->grids; g++)
		if (r->grid_blocks[g] == blocks)
			return g;
	if (r->grids == CHAIN_GRIDS)
		return CHAIN_GRIDS;
	r->grid_blocks[r->grids] = blocks;
	r->grid_ns[r->grids] = 0;
	r->grid_kernels[r->grids] = r->grid_moves[r->grids] = 0;
	return r->grids++;
}

/* Kernels of a kind (member) one after another on one stream within a step
 * make a chain, whatever their grids (a shift, a broadcast or a reduction
 * between elementwise kernels fuses too: XLA and Inductor fuse across
 * shapes); any other kernel or copy, another stream or step, or a chain of
 * CHAIN_GRIDS grids ends it. A small host-to-device copy does not: a scalar
 * operand of an eager op (JAX copies each Python number it is given), which
 * a fused kernel takes as an argument. With once, each kernel name runs once
 * in a chain (chain_takes_name). Returns 1 where o joined the chain (or is
 * such a copy inside it). */
static int follow_chain(struct chain_run *r, struct chain_sums *sum, const struct gpu_op *o, int member,
			uint32_t st, int once)
{
	unsigned g = CHAIN_GRIDS;
	int fused = 0;

	if (o->kind == OP_MEMCPY && o->copy_kind == COPY_HTOD && o->bytes <= SMALL_COPY_BYTES)
		return r->len > 0;
	if (member && r->len && o->stream == r->stream && st == r->step && (!once || chain_takes_name(r, o->name)))
		g = chain_grid(r, o->blocks);
	if (g < CHAIN_GRIDS) {
		fused = 1;
		/* the launch gaps inside the chain go away with it */
		r->gaps += o->start > r->prev_end ? (double)(o->start - r->prev_end) : 0;
	} else {
		end_chain(r, sum);
		if (!member)
			return 0;
		r->stream = o->stream;
		r->step = st;
		if (once)
			chain_takes_name(r, o->name);
		g = chain_grid(r, o->blocks);
	}
	double d = (double)(o->end - o->start);

	r->len++;
	r->time += d;
	r->grid_ns[g] += d;
	r->grid_kernels[g]++;
	r->grid_moves[g] += o->moves_only;
	r->prev_end = o->end;
	return fused;
}

/* Counts the kernels inside a loop: a body of p kernels (p up to
 * LOOP_MAX_BODY), the same names with the same grids, run LOOP_MIN_COPIES
 * times or more in a row within a step (identical steps are not a loop).
 * loop_run[p] counts the kernels in a row that equal the one p before; once
 * it spans LOOP_MIN_COPIES - 1 bodies, the run from its first body to this
 * kernel is a loop. Runs end here, so their union is counted from the
 * earliest start on, past what was counted already. */
static void find_loops(struct op_stats *s, struct op_stats_pass *p, const struct gpu_op *o, uint32_t step)
{
	if (step != p->loop_step) {
		p->loop_step = step;
		p->loop_seen = p->loop_covered = 0;
		memset(p->loop_run, 0, sizeof(p->loop_run));
	}
	uint64_t key = (uint64_t)o->name << 32 | o->blocks, i = p->loop_seen++;
	/* the last LOOP_MAX_BODY keys lie twice in a row, so that the one len
	 * before this kernel is at back[-len] without a wrap */
	const uint64_t *back = p->loop_keys + i % LOOP_MAX_BODY + LOOP_MAX_BODY;
	uint64_t lens = i < LOOP_MAX_BODY ? i : LOOP_MAX_BODY, first = UINT64_MAX;
	int hit = 0;

	for (uint64_t len = 1; len <= lens; len++) {
		uint64_t run = (p->loop_run[len] + 1) & -(uint64_t)(back[-(int64_t)len] == key);

		p->loop_run[len] = run;
		hit |= run >= (LOOP_MIN_COPIES - 1) * len;
	}
	for (uint64_t len = 1; hit && len <= lens; len++) {
		uint64_t run = p->loop_run[len];

		if (run >= (LOOP_MIN_COPIES - 1) * len && i + 1 - run - len < first)
			first = i + 1 - run - len; /* the earliest kernel of a loop ending here */
	}
	p->loop_keys[i % LOOP_MAX_BODY] = p->loop_keys[i % LOOP_MAX_BODY + LOOP_MAX_BODY] = key;
	if (first == UINT64_MAX)
		return;
	s->looped_kernels += i + 1 - (first > p->loop_covered ? first : p->loop_covered);
	p->loop_covered = i + 1;
}

/* What a kernel's name says for the attention finder (cached per name). */
static int attn_kind_of(const struct analysis *a, struct op_stats_pass *p, uint32_t name)
{
	if (!p->attn_kind || name >= p->names_n)
		return 1;
	if (!p->attn_kind[name]) {
		const char *n = a->t->names.v[name];

		p->attn_kind[name] = strstr(n, "oftmax") || strstr(n, "oftMax") ? 2 : strstr(n, "ropout") ? 3 : 1;
	}
	return p->attn_kind[name];
}

/* Attention computed unfused (eager attention: q @ k^T, scaled, masked,
 * softmax, dropout, then @ v): between two matrix kernels on one stream (a
 * step's boundary may fall inside), at most ATTN_MAX_BETWEEN elementwise,
 * softmax or dropout kernels with a softmax among them. Each passes over the score matrix
 * (batch x heads x length^2), which a fused attention never writes. Other
 * streams' kernels do not break it; another kind of kernel on its stream
 * does. */
static void find_attention(struct analysis *a, struct op_stats_pass *p, const struct gpu_op *o)
{
	struct op_stats *s = &a->ops;
	int kind;

	if (kclass_is_matmul(o->name_class)) {
		if (p->attn_open && p->attn_softmax && p->attn_n && o->stream == p->attn_stream) {
			s->attn_cores++;
			s->attn_kernels += p->attn_n;
			s->attn_ns += p->attn_time;
			s->attn_ew_ns += p->attn_ew;
			s->attn_chain_saved_ns += s->chain.saved - p->attn_snap;
			memcpy(p->attn_done, p->attn_ops, p->attn_n * sizeof(*p->attn_ops));
			p->attn_done_n = p->attn_n;
		}
		p->attn_open = 1;
		p->attn_softmax = p->attn_n = 0;
		p->attn_time = p->attn_ew = 0;
		p->attn_stream = o->stream;
		p->attn_snap = s->chain.saved;
		return;
	}
	if (!p->attn_open || o->stream != p->attn_stream)
		return;
	kind = attn_kind_of(a, p, o->name);
	if (p->attn_n == ATTN_MAX_BETWEEN || (o->name_class != KC_ELEMENTWISE && kind == 1)) {
		p->attn_open = 0;
		return;
	}
	p->attn_softmax |= kind == 2;
	p->attn_ops[p->attn_n++] = p->graph_op;
	p->attn_time += (double)(o->end - o->start);
	if (o->name_class == KC_ELEMENTWISE)
		p->attn_ew += (double)(o->end - o->start);
}

void op_stats_add(struct analysis *a, struct op_stats_pass *p, const struct gpu_op *o)
{
	struct op_stats *s = &a->ops;
	int is_ew = o->kind == OP_KERNEL && o->name_class == KC_ELEMENTWISE;
	uint32_t st = o->kind == OP_KERNEL ? step_at(a, o->start, &p->step_cursor) : UINT32_MAX;

	p->fused = follow_chain(&p->ew, &s->chain, o, is_ew, st, 0);
	/* kernels of no known family, not tiled: memory-bound work where the
	 * GPU's counters say so (counters.c), their chains fused as these */
	p->mem_fused = follow_chain(&p->mem, &p->mem_sums, o,
				    o->kind == OP_KERNEL && o->name_class == KC_OTHER && !trace_name_tiled(a->t, o->name),
				    st, 1);
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
	find_loops(s, p, o, st);
	find_attention(a, p, o);
	s->short_kernels += d < SHORT_KERNEL_NS;
	s->dur_hist[dur_bin(d)]++;
	s->class_ns[o->name_class] += (double)d;
	if (o->name_class == KC_ELEMENTWISE && o->updates_params)
		s->foreach_ns += (double)d;
	if (o->f64 && !kclass_is_matmul(o->name_class))
		s->f64_ns[o->name_class == KC_ELEMENTWISE] += (double)d;
	if (kclass_is_matmul(o->name_class)) {
		s->matmul_kernels++;
		s->matmul_fill_ns += (double)d * (fill < 1 ? fill : 1);
		s->matmul_dur_hist[dur_bin(d)]++;
		if (fill < 1) {
			s->matmul_narrow_ns += (double)d;
			s->matmul_narrow_short_ns += d < SMALL_MATMUL_NS ? (double)d : 0;
		}
	}
	if (p->sms > 0 && fill < 1) {
		s->small_ns += (double)d;
		s->small_fill_ns += (double)d * fill;
	}
	if (o->name < a->name_totals_n) {
		a->name_totals[o->name].ns += d;
		a->name_totals[o->name].count++;
	}
	if (p->seen && o->name < p->names_n && !(p->seen[o->name / 8] & (1u << (o->name % 8)))) {
		p->seen[o->name / 8] |= (uint8_t)(1u << (o->name % 8));
		s->distinct_names++;
	}
}

void op_stats_add_mem_chains(struct analysis *a, const struct op_stats_pass *p)
{
	struct chain_sums *c = &a->ops.chain;

	c->saved += p->mem_sums.saved;
	c->gaps += p->mem_sums.gaps;
	c->n += p->mem_sums.n;
	c->kernels += p->mem_sums.kernels;
	c->ns += p->mem_sums.ns;
}

void op_stats_end(struct analysis *a, struct op_stats_pass *p)
{
	struct op_stats *s = &a->ops;
	double sum = s->copy_ns;

	end_chain(&p->ew, &s->chain);
	end_chain(&p->mem, &p->mem_sums);
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
		s->matmul_narrow_ns *= k;
		s->matmul_narrow_short_ns *= k;
	}
	free(p->seen);
	p->seen = NULL;
	free(p->attn_kind);
	p->attn_kind = NULL;
	free(p->ckpt_calls.v);
	memset(&p->ckpt_calls, 0, sizeof(p->ckpt_calls));
}
