/* Kernel families checked against the hardware's counters (docs/RULES.md,
 * "Kernel families"): a kernel's name says what it does for the libraries
 * gpuwhy knows (kclass.c), but a hand-written kernel (Triton's, a CUDA C
 * GEMM) is named after the user's function. One that is launched the way a
 * tiled matrix kernel is (many registers a thread for its accumulators,
 * shared memory for its operand tiles: load.c) and that GPM's counters show
 * keeping the FP32 pipes busy with the tensor cores idle, over the intervals
 * it held the GPU, is FP32 matrix work: C8's, and its replay's. One launched
 * otherwise whose intervals show DRAM busy with the tensor cores and the
 * FP32 pipes quiet is memory-bound work (a stencil, an elementwise update):
 * elementwise, its chains C11's (opstats.c follows them meanwhile).
 *
 * The steady pass feeds every operation of the main GPU and every GPM
 * sample; operations are binned by time (GPM samples come every 100 ms or
 * so, and not in order with the operations), and at the end each GPM
 * interval is read against the bins it spans. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define BIN_NS 5000000ull     /* 5 ms bins of kernel time */
#define BINS_MAX (1u << 17)   /* longer windows take wider bins */

int counters_begin(struct analysis *a, struct counters_pass *c)
{
	uint64_t win = a->t1 > a->t0 ? a->t1 - a->t0 : 0;

	memset(c, 0, sizeof(*c));
	if (!win)
		return 0;
	c->bin = BIN_NS;
	while (win / c->bin + 1 > BINS_MAX)
		c->bin *= 2;
	c->nbins = (size_t)(win / c->bin + 1);
	c->busy = calloc(c->nbins, sizeof(*c->busy));
	c->cand = calloc(c->nbins, sizeof(*c->cand));
	c->mcand = calloc(c->nbins, sizeof(*c->mcand));
	c->fp32mm = calloc(c->nbins, sizeof(*c->fp32mm));
	if (!c->busy || !c->cand || !c->mcand || !c->fp32mm) {
		counters_free(c);
		return -ENOMEM;
	}
	return 0;
}

void counters_op(const struct analysis *a, struct counters_pass *c, const struct gpu_op *o)
{
	if (!c->nbins || o->kind != OP_KERNEL || o->start < a->t0 || o->start >= a->t1)
		return;
	size_t b = (size_t)((o->start - a->t0) / c->bin);
	double d = (double)(o->end - o->start);
	int other = o->name_class == KC_OTHER, cand = other && trace_name_tiled(a->t, o->name);

	c->busy[b] += d;
	if (o->name_class == KC_MATMUL_FP32)
		c->fp32mm[b] += d;
	if (other && !cand) {
		c->mcand[b] += d;
		c->mcand_ns += d;
	}
	if (!cand)
		return;
	c->cand[b] += d;
	c->cand_ns += d;
	size_t k;

	for (k = 0; k < c->nnames && c->names[k] != o->name; k++)
		;
	if (k == c->nnames && k < COUNTED_NAMES) {
		c->names[k] = o->name;
		c->nnames++;
	}
	if (k < c->nnames)
		c->name_ns[k] += d;
}

void counters_gpm(const struct analysis *a, struct counters_pass *c, const struct gpm_samp *g)
{
	if (!c->nbins || g->gpu != a->main_dev || g->ts < a->t0 || g->ts > a->t1 ||
	    !FIELD_VALID(g, GPM_VALID_TENSOR) || !FIELD_VALID(g, GPM_VALID_FP32) || c->dropped)
		return;
	if (VEC_PUSH(c->gpm, *g) < 0)
		c->dropped = 1; /* nothing decided from part of them */
}

static int cmp_gpm(const void *x, const void *y)
{
	const struct gpm_samp *p = x, *q = y;

	return p->ts < q->ts ? -1 : p->ts > q->ts;
}

/* What the counters of an interval say: FP32 pipes busy with the tensor
 * cores idle (matrix work on FP32), or DRAM busy with both quiet (memory-bound
 * work). */
static int says_fp32(const struct gpm_samp *g)
{
	return g->fp32 >= COUNTED_FP32_PCT && g->tensor < COUNTED_TENSOR_PCT;
}

static int says_membound(const struct gpm_samp *g)
{
	return g->dram >= COUNTED_DRAM_PCT && g->fp32 < COUNTED_FP32_PCT && g->tensor < COUNTED_TENSOR_PCT;
}

/* The kernels of bins (their time per bin) in GPM interval i, the one that
 * ends at sample i: their time there (*held), where they held most of the
 * GPU's kernel time in it and the GPU was busy most of it; else 0. Each bin
 * counts by its overlap with the interval (the bins hold whole kernels by
 * their starts: about the interval, and a ratio of times with it). */
static int interval_held(const struct analysis *a, const struct counters_pass *c, const double *bins, size_t i,
			 double *held)
{
	const struct gpm_samp *g = &c->gpm.v[i];
	uint64_t s = c->gpm.v[i - 1].ts, e = g->ts;
	size_t b0 = (size_t)((s - a->t0) / c->bin), b1 = (size_t)((e - a->t0) / c->bin);
	double busy = 0, mine = 0;

	for (size_t b = b0; b <= b1 && b < c->nbins; b++) {
		uint64_t bs = a->t0 + (uint64_t)b * c->bin, be = bs + c->bin;
		uint64_t os = bs > s ? bs : s, oe = be < e ? be : e;
		double frac = oe > os ? (double)(oe - os) / (double)c->bin : 0;

		busy += c->busy[b] * frac;
		mine += bins[b] * frac;
	}
	*held = mine;
	return e > s && busy >= COUNTED_BUSY * (double)(e - s) && mine >= COUNTED_HELD * busy &&
	       g->sm_util >= 100 * COUNTED_BUSY;
}

/* Each GPM interval the candidates (their time per bin: cand) held: do its
 * counters say what says() looks for? Their time in such intervals against
 * their time in the others. */
static void read_intervals(const struct analysis *a, const struct counters_pass *c, const double *candb,
			   int (*says)(const struct gpm_samp *g), double *yes, double *no, double sum[3], unsigned *n)
{
	for (size_t i = 1; i < c->gpm.n; i++) {
		const struct gpm_samp *g = &c->gpm.v[i];
		double cand;

		if (!interval_held(a, c, candb, i, &cand))
			continue;
		if (says(g)) {
			*yes += cand;
			sum[0] += g->fp32;
			sum[1] += g->tensor;
			sum[2] += g->dram;
			(*n)++;
		} else {
			*no += cand;
		}
	}
}

/* Candidates (their time per bin cand, cand_ns in all) that are share of
 * the busy time or more and that the counters show as says() looks for,
 * most of their time and little against it: their time moves from the
 * family of no known kind to `to`, as far as that family holds it. 1 where
 * the counters said so (*moved, their intervals *n and counters' sums). */
static int move_counted(struct analysis *a, const struct counters_pass *c, const double *cand, double cand_ns,
			double share, int (*says)(const struct gpm_samp *g), enum kclass to, double *moved,
			double sum[3], unsigned *n)
{
	double yes = 0, no = 0;

	if (!(cand_ns >= share * (double)a->busy_ns))
		return 0;
	read_intervals(a, c, cand, says, &yes, &no, sum, n);
	if (!*n || yes < COUNTED_SEEN * cand_ns || no > COUNTED_AGAINST * yes)
		return 0;
	*moved = cand_ns < a->ops.class_ns[KC_OTHER] ? cand_ns : a->ops.class_ns[KC_OTHER];
	a->ops.class_ns[KC_OTHER] -= *moved;
	a->ops.class_ns[to] += *moved;
	return 1;
}

/* Memory-bound candidates the counters showed so become KC_ELEMENTWISE: in
 * the kernel time per family; their chains (opstats.c) join C11's. */
static void counters_mem_end(struct analysis *a, struct counters_pass *c)
{
	double moved = 0, sum[3] = { 0, 0, 0 };
	unsigned n = 0;

	if (!move_counted(a, c, c->mcand, c->mcand_ns, C11_ELEMENTWISE_SHARE, says_membound, KC_ELEMENTWISE,
			  &moved, sum, &n))
		return;
	a->mem_counted.ns = moved;
	a->mem_counted.intervals = n;
	a->mem_counted.dram = sum[2] / n;
	depgraph_counted_mem(a);
}

int counters_membound(const struct analysis *a)
{
	return a->mem_counted.ns > 0;
}

/* FP32 matrix kernels by name (cuBLAS's SIMT GEMMs, its GEMVs on floats):
 * over the GPM intervals they held (most of the kernel time, the GPU busy),
 * the FP32 pipes' active time against theirs. All of it theirs at most, so
 * a share under C8_FP32_PIPE_MIN says their math does not limit them (tiny
 * batched products, matrix-vector ones: latency or bytes do), and tensor
 * cores would not run them faster. */
static void counters_fp32_pipes(struct analysis *a, const struct counters_pass *c)
{
	double pipe = 0, held = 0;
	unsigned n = 0;

	for (size_t i = 1; i < c->gpm.n; i++) {
		double mm;

		if (!interval_held(a, c, c->fp32mm, i, &mm))
			continue;
		pipe += c->gpm.v[i].fp32 / 100 * (double)(c->gpm.v[i].ts - c->gpm.v[i - 1].ts);
		held += mm;
		n++;
	}
	if (n < C8_FP32_PIPE_INTERVALS || !(held > 0))
		return;
	a->fp32_pipes.intervals = n;
	a->fp32_pipes.share = pipe / held;
}

/* Candidates the counters showed as FP32 matrix work become KC_MATMUL_FP32:
 * in the kernel time per family, and in the replay's graph. */
void counters_end(struct analysis *a, struct counters_pass *c)
{
	double moved = 0, sum[3] = { 0, 0, 0 };
	unsigned n = 0;
	size_t top = 0;

	if (!c->nbins || c->dropped || c->gpm.n < 2)
		return;
	qsort(c->gpm.v, c->gpm.n, sizeof(*c->gpm.v), cmp_gpm);
	counters_fp32_pipes(a, c);
	counters_mem_end(a, c);
	if (!move_counted(a, c, c->cand, c->cand_ns, C8_FP32_SHARE, says_fp32, KC_MATMUL_FP32, &moved, sum, &n))
		return;
	for (size_t k = 1; k < c->nnames; k++)
		if (c->name_ns[k] > c->name_ns[top])
			top = k;
	a->fp32_counted.ns = moved;
	a->fp32_counted.intervals = n;
	a->fp32_counted.fp32 = sum[0] / n;
	a->fp32_counted.tensor = sum[1] / n;
	a->fp32_counted.dram = sum[2] / n;
	a->fp32_counted.name = c->nnames ? c->names[top] : 0;
	depgraph_counted_fp32(a);
}

void counters_free(struct counters_pass *c)
{
	free(c->busy);
	free(c->cand);
	free(c->mcand);
	free(c->fp32mm);
	free(c->gpm.v);
	c->busy = c->cand = c->mcand = c->fp32mm = NULL;
	c->gpm.v = NULL;
	c->nbins = 0;
}
