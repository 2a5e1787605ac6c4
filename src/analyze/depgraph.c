/* The steady window as a dependency graph (docs/RULES.md section 4): the
 * main GPU's operations with what each waited for, the training thread's
 * waits with the operation each waited for, and what its samples say it was
 * doing. Built while the steady pass reads the timeline; simulate.c replays
 * it.
 *
 * What the recording holds and what is modelled:
 * - an operation's start, end and stream are recorded; it waited for its
 *   stream (the operation before it there), for an operation of another
 *   stream when it started as that one ended (an event wait), or for the
 *   host, when it started later than both allowed;
 * - the host's issue time is recorded only with --launches: an operation
 *   the host was late for was issued a launch latency before it started;
 *   one that waited for its stream was issued earlier, at the host's own
 *   pace (its time outside waits per operation), and never inside a wait;
 * - a wait (a synchronizing call, a blocking copy, a full command queue)
 *   waited for the operation that ended last inside it, and returned as long
 *   after that operation's end as it did. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"

#define HOST_BOUND_NS 4000ull    /* started this much after its stream allowed: the host was late */
#define HOST_HELD_SHARE 0.9      /* the host's own time this share of the GPU's work or more: held back */
#define DEP_TOL_NS 3000ull       /* started this soon after another stream's operation ended */
#define LAUNCH_LAT_NS 2000ull    /* a launch call's return to its kernel's start on an idle GPU (assumed) */
#define WAIT_RETURN_NS 50000ull  /* a wait returns this soon after what it waited for */
#define WAIT_SCAN 512            /* operations looked back at for a wait's */
#define CLOCK_SKEW_NS 20000ull   /* a call may return this much before its copy's recorded end */
#define BLOCKING_MIN_CALLS 20    /* blocking device-side copies that measure a blocking launch */
#define BLOCKING_MIN_GAPS 100    /* gaps between two kernels that bound it */
#define BLOCKING_GAP_Q 0.05      /* ... their quantile taken: the shortest, bar outliers */
#define MIN_PACE_NS 1000.0       /* the host issues at most one operation per microsecond */
#define STREAM_SLOTS 64
#define DEP_SCAN 64              /* operations looked back at for another stream's end */

void depgraph_begin(struct analysis *a)
{
	struct depgraph *g = calloc(1, sizeof(*g));

	if (!g) {
		analysis_nomem(a, "building the replay's graph");
		return;
	}
	g->lat_ns = LAUNCH_LAT_NS;
	g->sms = main_gpu_sms(a);
	a->graph = g;
}

void depgraph_free(struct depgraph *g)
{
	if (!g)
		return;
	free(g->ops.v);
	free(g->waits.v);
	free(g->host.v);
	hmap_free(&g->trace_more);
	free(g);
}

static int is_pageable_copy(const struct gpu_op *o)
{
	return o->kind == OP_MEMCPY && ((o->copy_kind == COPY_HTOD && o->src_kind == MEM_PAGEABLE) ||
					(o->copy_kind == COPY_DTOH && o->dst_kind == MEM_PAGEABLE));
}

/* The share of one wave of the SMs a kernel's grid fills, x DG_WAVE (one
 * block per SM where its occupancy is unknown; 0: the SMs are unknown). */
static uint32_t wave_fill(const struct depgraph *g, const struct gpu_op *o)
{
	double w;

	if (!g->sms)
		return 0;
	w = (double)o->blocks * DG_WAVE / ((double)g->sms * (o->per_sm ? o->per_sm : 1));
	return w >= (double)UINT32_MAX ? UINT32_MAX : w < 1 ? 1 : (uint32_t)w;
}

uint32_t depgraph_op(struct analysis *a, const struct gpu_op *o)
{
	struct depgraph *g = a->graph;

	if (!g || g->full || o->dev != a->main_dev || o->start < a->t0 || o->start >= a->t1)
		return UINT32_MAX;
	if (g->ops.n >= DG_MAX_OPS) {
		g->full = 1;
		return UINT32_MAX;
	}
	struct dg_op d = {
		.start = o->start, .end = o->end, .stream = o->stream, .dep = UINT32_MAX, .kind = (uint8_t)o->kind,
		.size = o->kind == OP_KERNEL ? wave_fill(g, o) : o->bytes > UINT32_MAX ? UINT32_MAX : (uint32_t)o->bytes,
		.params = o->kind == OP_KERNEL && o->updates_params,
		.tiled = o->kind == OP_KERNEL && o->name_class == KC_OTHER && trace_name_tiled(a->t, o->name),
		.f64 = o->kind == OP_KERNEL && o->f64 && !kclass_is_matmul(o->name_class),
		.f32 = o->kind == OP_KERNEL && o->f32 && !kclass_is_matmul(o->name_class),
		.host = o->kind == OP_MEMCPY && (o->copy_kind == COPY_HTOD || o->copy_kind == COPY_DTOH),
		.cls = (uint8_t)o->name_class, .queued = o->queued,
		.untyped = o->kind == OP_KERNEL && o->untyped, .cause = IDLE_NCAUSES,
		.flags = (uint8_t)((is_pageable_copy(o) ? DG_PAGEABLE : 0) |
				   (o->kind == OP_MEMCPY && o->copy_kind == COPY_HTOD ? DG_HTOD : 0) |
				   (o->kind == OP_MEMCPY && o->copy_kind == COPY_HTOD && o->src_kind == MEM_PINNED &&
						    o->bytes >= BIG_PINNED_HTOD_BYTES
					    ? DG_PINNED_BIG : 0) |
				   (o->kind == OP_KERNEL && g->sms && o->blocks < g->sms ? DG_SMALL : 0) |
				   (o->kind == OP_MEMCPY && o->copy_kind == COPY_DTOH && o->bytes <= BATCH_VALUE_BYTES
					    ? DG_SMALL_COPY : 0)),
	};

	g->last_end = o->end > g->last_end ? o->end : g->last_end;
	if (VEC_PUSH(g->ops, d) < 0) {
		analysis_nomem(a, "building the replay's graph");
		g->full = 1;
		return UINT32_MAX;
	}
	return (uint32_t)(g->ops.n - 1);
}

void depgraph_gap(struct analysis *a, uint32_t op, int cause)
{
	struct depgraph *g = a->graph;

	if (!g || op >= g->ops.n)
		return;
	g->ops.v[op].cause = (uint8_t)cause;
}

void depgraph_trace(struct analysis *a, uint32_t op, uint64_t ns)
{
	struct depgraph *g = a->graph;

	if (g && op < g->ops.n && (double)ns > g->trace_ns && hmap_put(&g->trace_more, op, ns) < 0)
		analysis_nomem(a, "building the replay's graph");
}

void depgraph_counted_fp32(struct analysis *a)
{
	struct depgraph *g = a->graph;

	for (size_t i = 0; g && i < g->ops.n; i++)
		if (g->ops.v[i].tiled)
			g->ops.v[i].cls = KC_MATMUL_FP32;
}

void depgraph_counted_mem(struct analysis *a)
{
	struct depgraph *g = a->graph;

	for (size_t i = 0; g && i < g->ops.n; i++)
		if (g->ops.v[i].kind == OP_KERNEL && g->ops.v[i].cls == KC_OTHER && !g->ops.v[i].tiled)
			g->ops.v[i].cls = KC_ELEMENTWISE;
}

void depgraph_fused(struct analysis *a, uint32_t op)
{
	struct depgraph *g = a->graph;

	if (g && op < g->ops.n)
		g->ops.v[op].flags |= DG_FUSED;
}

void depgraph_attention(struct analysis *a, uint32_t op)
{
	struct depgraph *g = a->graph;

	if (g && op < g->ops.n)
		g->ops.v[op].attn = 1;
}

static int push_wait(struct analysis *a, uint64_t s, uint64_t e, int kind)
{
	struct dg_wait w = { s, e, UINT32_MAX, (uint8_t)kind, ACT_NONE, 0, 0 };

	if (e <= s || s < a->t0 || s >= a->t1)
		return 0;
	if (VEC_PUSH(a->graph->waits, w) < 0) {
		analysis_nomem(a, "building the replay's graph");
		a->graph->full = 1;
		return -1;
	}
	return 0;
}

void depgraph_queue_wait(struct analysis *a, const struct host_wait *q)
{
	if (a->graph && !a->graph->full && q->pid == a->main_pid)
		push_wait(a, q->start, q->end, DW_QUEUE);
}

void depgraph_host(struct analysis *a, uint64_t s, uint64_t e, int act, int cls, int asleep, int optim,
		   int other)
{
	struct depgraph *g = a->graph;

	if (!g || g->full || e <= s)
		return;
	if (g->host.n) {
		struct dg_host *h = &g->host.v[g->host.n - 1];

		if (h->act == act && h->cls == cls && h->asleep == asleep && h->optim == (optim != 0) &&
		    h->other == (other != 0) && s <= h->end + 1) {
			h->end = e > h->end ? e : h->end;
			return;
		}
	}
	struct dg_host h = { s, e, (uint8_t)act, (uint8_t)cls, (uint8_t)(asleep != 0), (uint8_t)(optim != 0),
			     (uint8_t)(other != 0), IDLE_NCAUSES, 0 };

	if (VEC_PUSH(g->host, h) < 0) {
		analysis_nomem(a, "building the replay's graph");
		g->full = 1;
	}
}

static int cmp_wait(const void *x, const void *y)
{
	const struct dg_wait *a = x, *b = y;

	return a->start < b->start ? -1 : a->start > b->start;
}

/* Waits in start order that overlap (a queue-full wait inside a copy, two
 * threads' calls): the later is cut to start where the earlier ends. */
static void cut_overlaps(struct depgraph *g)
{
	size_t n = 0;

	for (size_t i = 0; i < g->waits.n; i++) {
		struct dg_wait w = g->waits.v[i];

		if (n && w.start < g->waits.v[n - 1].end) {
			if (w.end <= g->waits.v[n - 1].end)
				continue;
			w.start = g->waits.v[n - 1].end;
		}
		g->waits.v[n++] = w;
	}
	g->waits.n = n;
}

/* The last operation with start <= t (ops are in start order), or -1. */
static long last_started(const struct depgraph *g, uint64_t t)
{
	size_t lo = 0, hi = g->ops.n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (g->ops.v[mid].start <= t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return (long)lo - 1;
}

/* The operation a wait waited for: the one that ended last inside it, if
 * the wait returned soon after. */
static uint32_t waited_for(const struct depgraph *g, const struct dg_wait *w)
{
	long i = last_started(g, w->end);
	uint32_t best = UINT32_MAX;
	uint64_t best_end = 0;

	for (long k = 0; i >= 0 && k < WAIT_SCAN; i--, k++) {
		const struct dg_op *o = &g->ops.v[i];

		if (o->end <= w->end + CLOCK_SKEW_NS && o->end > w->start && o->end >= best_end) {
			best = (uint32_t)i;
			best_end = o->end;
		}
	}
	/* a copy call waited for the host copy it made, however long after it
	 * returned: its own host work after the copy (a device-to-host copy
	 * into pageable memory returns 1.2 ms after its 262 MB copy ended,
	 * c6_hf_distill_logits_cpu) */
	if (best != UINT32_MAX && w->kind == DW_COPY && g->ops.v[best].kind == OP_MEMCPY && g->ops.v[best].host &&
	    g->ops.v[best].start >= w->start)
		return best;
	if (best != UINT32_MAX && w->end > best_end + WAIT_RETURN_NS)
		return UINT32_MAX;
	return best;
}

/* Where every launch blocked (CUDA_LAUNCH_BLOCKING=1), how long a blocking
 * launch holds the host beyond its kernel's run: the submission before the
 * kernel starts (which a launch that does not block leaves to the GPU's
 * queue) and waking the host after it ends. Launch calls are not traced by
 * default, so the job's own blocking calls that launch one device-side
 * operation measure it: copies between device buffers (no staging on the
 * host) whose call returned after its copy ended, from any thread of the
 * process (autograd's own thread launches the backward pass); the medians,
 * from the call's start to the copy's start and from its end to the call's
 * return, of at least BLOCKING_MIN_CALLS of them (else 0, 0: the kernel's
 * run alone is the wait). */
static void blocking_span(struct analysis *a, uint64_t *pre, uint64_t *post)
{
	const struct trace *t = a->t;
	const struct depgraph *g = a->graph;
	VEC(double) before = { 0 }, after = { 0 };

	*pre = *post = 0;
	for (size_t i = 0; i < t->calls.n; i++) {
		const struct host_call *c = &t->calls.v[i];

		if (c->pid != a->main_pid || c->cls != HC_MEMCPY || c->copy_dir || c->start <= g->ops.v[0].start)
			continue;
		/* its copy, by position (operations keep no correlation id): the
		 * first the GPU started after the call did; with every launch
		 * blocking, nothing else runs meanwhile */
		long k = last_started(g, c->start - 1) + 1;

		if ((size_t)k >= g->ops.n)
			continue;
		const struct dg_op *o = &g->ops.v[k];

		if (o->kind != OP_MEMCPY || o->host || o->start > c->end || o->end > c->end)
			continue;
		if (VEC_PUSH(before, (double)(o->start - c->start)) < 0 ||
		    VEC_PUSH(after, (double)(c->end - o->end)) < 0) {
			analysis_nomem(a, "measuring blocking launches");
			goto out;
		}
	}
	if (before.n >= BLOCKING_MIN_CALLS && after.n == before.n) {
		*pre = (uint64_t)quantile(before.v, before.n, 0.5);
		*post = (uint64_t)quantile(after.v, after.n, 0.5);
	}
out:
	free(before.v);
	free(after.v);
}

/* ... at most what the gaps between two kernels in a row hold: the shortest
 * of them are little else than one launch's hold (two launches with nothing
 * between them: a library's kernels, autograd's), and a copy's call can take
 * longer to submit than a kernel's launch. Their BLOCKING_GAP_Q quantile,
 * less the call a launch that does not block still costs (WAIT_CALL_NS, as
 * the replay charges a wait it removes); no bound (UINT64_MAX) with fewer
 * than BLOCKING_MIN_GAPS. */
static uint64_t blocking_bound(struct analysis *a, const struct depgraph *g)
{
	double *gap = NULL, q;
	size_t n = 0;

	for (size_t i = 1; i < g->ops.n; i++) {
		const struct dg_op *p = &g->ops.v[i - 1], *o = &g->ops.v[i];

		if (o->kind != OP_KERNEL || p->kind != OP_KERNEL || o->start <= p->end)
			continue;
		if (!gap && !(gap = malloc(g->ops.n * sizeof(*gap)))) {
			analysis_nomem(a, "measuring blocking launches");
			return 0;
		}
		gap[n++] = (double)(o->start - p->end);
	}
	if (n < BLOCKING_MIN_GAPS) {
		free(gap);
		return UINT64_MAX;
	}
	q = quantile(gap, n, BLOCKING_GAP_Q) - WAIT_CALL_NS;
	free(gap);
	return q > 0 ? (uint64_t)q : 0;
}

/* The training thread's synchronizing calls and copies, and, where every
 * launch blocked (CUDA_LAUNCH_BLOCKING=1), each operation's launch: its
 * kernel's run widened by the launch's hold on the host beyond it
 * (blocking_span, at most blocking_bound). */
static int collect_waits(struct analysis *a)
{
	const struct trace *t = a->t;
	struct depgraph *g = a->graph;
	uint64_t pre = 0, post = 0;

	for (size_t i = 0; i < t->calls.n; i++) {
		const struct host_call *c = &t->calls.v[i];

		if (c->pid != a->main_pid || (c->cls != HC_SYNC && c->cls != HC_MEMCPY))
			continue;
		if (push_wait(a, c->start, c->end, c->cls == HC_SYNC ? DW_SYNC : DW_COPY) < 0)
			return -1;
	}
	if (a->launch_blocking && g->ops.n) {
		uint64_t bound;

		blocking_span(a, &pre, &post);
		g->blocking_copies_ns = pre + post;
		bound = blocking_bound(a, g);
		if (pre + post > bound) {
			post = post < bound ? post : bound;
			pre = bound - post;
		} else if (!(pre + post) && bound != UINT64_MAX && (a->framework == FW_TORCH || a->framework == FW_JAX)) {
			/* no blocking copy measured it: where a runtime launches
			 * kernels back to back from its own code (autograd's
			 * engine, cuBLAS's and cuDNN's calls; XLA's executor
			 * alike, though no JAX job under blocking launches was
			 * recorded) the shortest gaps are a launch's hold, as
			 * every measured job's hold reached that bound; CuPy
			 * launches each kernel from Python, whose time is in
			 * every gap. Split
			 * evenly between the submission and the wake-up, which
			 * no measurement tells apart here */
			post = bound / 2;
			pre = bound - post;
		}
		g->blocking_ns = pre + post;
	}
	for (size_t i = 0; a->launch_blocking && i < g->ops.n; i++) {
		const struct dg_op *o = &g->ops.v[i];
		/* the window's first kernel's wait starts with the window */
		uint64_t s = o->start > a->t0 + pre ? o->start - pre : a->t0;

		if (o->kind == OP_KERNEL && push_wait(a, s, o->end + 1 + post, DW_LAUNCH) < 0)
			return -1;
	}
	if (g->waits.n) /* qsort of no array: undefined */
		qsort(g->waits.v, g->waits.n, sizeof(*g->waits.v), cmp_wait);
	/* a wait still going at the window's end waited for the window's work */
	for (size_t i = 0; i < g->waits.n; i++)
		if (g->waits.v[i].end > g->last_end && g->waits.v[i].start < g->last_end)
			g->waits.v[i].end = g->last_end;
	cut_overlaps(g);
	for (size_t i = 0; i < g->waits.n; i++) {
		struct dg_wait *w = &g->waits.v[i];

		w->op = waited_for(g, w);
		if (w->kind == DW_COPY && w->op != UINT32_MAX) {
			const struct dg_op *o = &g->ops.v[w->op];
			if (o->flags & DG_SMALL_COPY) /* reading a value, whatever the memory */
				w->kind = DW_COPY_SMALL;
			else if (o->kind == OP_MEMCPY && !(o->flags & DG_HTOD))
				w->kind = DW_COPY_DTOH;
			else if (o->flags & DG_PAGEABLE)
				w->kind = DW_COPY_PAGEABLE;
		}
	}
	return 0;
}

/* The activity of the training thread's samples at time ts (host intervals
 * come in time order; *cur only moves on). */
static uint8_t act_at(const struct depgraph *g, uint64_t ts, size_t *cur)
{
	while (*cur < g->host.n && g->host.v[*cur].end <= ts)
		(*cur)++;
	if (*cur < g->host.n && g->host.v[*cur].start <= ts)
		return g->host.v[*cur].act;
	return ACT_NONE;
}

/* Of the operations started before ops[i], the one that ended last at or
 * before t (on another stream than `stream`, unless that is UINT32_MAX). */
static uint32_t ended_before(const struct depgraph *g, size_t i, uint64_t t, uint32_t stream)
{
	uint32_t best = UINT32_MAX;
	uint64_t best_end = 0;

	for (size_t k = 0; k < DEP_SCAN && k < i; k++) {
		const struct dg_op *p = &g->ops.v[i - 1 - k];

		if (p->end <= t && p->end >= best_end && (stream == UINT32_MAX || p->stream != stream)) {
			best = (uint32_t)(i - 1 - k);
			best_end = p->end;
		}
	}
	return best;
}

/* What held each operation back in the recording, the host's pace, and
 * when the host issued each operation. */
/* What a fix of the cause of the GPU gap o ends takes out of the host's
 * time before o is at most that gap, not its stream's longer wait (a stream
 * used once a step while the others worked). *front: the latest end of the
 * operations before o, the GPU busy until then. */
static void late_within_gap(struct dg_op *o, uint64_t *front)
{
	if (o->cause != IDLE_NCAUSES && *front) {
		uint64_t gap = o->start > *front ? o->start - *front : 0;

		if (o->late > gap)
			o->late = (uint32_t)gap;
	}
	*front = o->end > *front ? o->end : *front;
}

static void issue_times(struct analysis *a)
{
	struct depgraph *g = a->graph;
	struct {
		uint32_t stream, last, prev; /* the two last operations on it */
		int used;
	} slot[STREAM_SLOTS];
	double waited = 0, late_other = 0, late_all = 0, gpu = 0;
	uint64_t front = 0;
	size_t wc = 0;

	memset(slot, 0, sizeof(slot));
	for (size_t i = 0; i < g->ops.n; i++) {
		struct dg_op *o = &g->ops.v[i];
		unsigned h = o->stream % STREAM_SLOTS, k;

		for (k = 0; k < STREAM_SLOTS && slot[h].used && slot[h].stream != o->stream; k++)
			h = (h + 1) % STREAM_SLOTS;
		uint64_t ready = 0;

		if (slot[h].used && slot[h].stream == o->stream) {
			const struct dg_op *p = &g->ops.v[slot[h].last];

			ready = p->end;
		}
		if (o->start > ready + HOST_BOUND_NS) {
			/* an event wait, or the SMs held by another stream's
			 * kernel: another stream's operation ended just before */
			uint32_t d = ended_before(g, i, o->start, o->stream);

			if (d != UINT32_MAX && g->ops.v[d].end + DEP_TOL_NS >= o->start && g->ops.v[d].end > ready) {
				ready = g->ops.v[d].end;
				o->dep = d;
			}
		}
		/* on one stream, CUPTI's times may overlap by a little; the first
		 * operation seen on a stream waited for nothing but the host */
		uint64_t late = ready && ready < o->start ? o->start - ready : 0;

		o->late = late < UINT32_MAX ? (uint32_t)late : UINT32_MAX;
		/* a graph's operation that waited in the queue after its launch
		 * call returned was not late for the host, whatever its gap (a
		 * graph's start after the one before it ends) */
		if ((!ready || o->late > HOST_BOUND_NS) && !o->queued)
			o->flags |= DG_HOST_BOUND;
		if ((o->flags & DG_HOST_BOUND) && o->cause != IDLE_NCAUSES && o->cause != IDLE_LAUNCH_OVERHEAD)
			late_other += (double)o->late;
		if ((o->flags & DG_HOST_BOUND) && ready)
			late_all += (double)o->late;
		late_within_gap(o, &front);
		gpu += (double)(o->end - o->start);
		if (k < STREAM_SLOTS) {
			slot[h].prev = slot[h].used ? slot[h].last : UINT32_MAX;
			slot[h].last = (uint32_t)i;
			slot[h].stream = o->stream;
			slot[h].used = 1;
		}
	}
	for (size_t i = 0; i < g->waits.n; i++)
		waited += (double)(g->waits.v[i].end - g->waits.v[i].start);
	/* the host's own time per operation: the window less its waits and the
	 * host work the gaps of other causes hold (loading, checkpoints...) */
	double own = (double)(a->t1 - a->t0) - waited - late_other;
	/* ... and at most the CPU time it used (a thread asleep in a call
	 * gpuwhy does not see was not issuing work); without its samples
	 * nothing says how far ahead it was where the GPU queued work: the
	 * replay takes it as keeping ahead (docs/RULES.md) */
	double cpu = training_cpu_ns(a, a->t0, a->t1);

	if (cpu >= 0 && cpu < own)
		own = cpu;
	else if (cpu < 0)
		own = 0;
	/* the GPU never waited for the host, and the host's time outside its
	 * waits matched the GPU's work: the GPU held it back somewhere gpuwhy
	 * does not see (a launch the driver held, spinning: 7 ms a launch at
	 * 100% CPU in c8_triton_ieee_surrogate), so that time says nothing of
	 * its own cost; it is taken as keeping ahead */
	if (late_all * 100 < GPU_PACED_PCT * (double)(a->t1 - a->t0) && own >= HOST_HELD_SHARE * gpu)
		own = 0;

	g->pace_ns = g->ops.n ? own / (double)g->ops.n : 0;
	if (g->pace_ns < MIN_PACE_NS)
		g->pace_ns = MIN_PACE_NS;
	uint64_t prev = 0;

	for (size_t i = 0; i < g->ops.n; i++) {
		struct dg_op *o = &g->ops.v[i];
		uint64_t pin = o->start > g->lat_ns ? o->start - g->lat_ns : 0, iss;

		if ((o->flags & DG_HOST_BOUND) || !prev)
			iss = pin;
		else
			iss = prev + (uint64_t)g->pace_ns < pin ? prev + (uint64_t)g->pace_ns : pin;
		if (iss < prev)
			iss = prev;
		/* never inside a wait: before it when it started before the wait
		 * could have let the host issue it, else after */
		while (wc < g->waits.n && g->waits.v[wc].end <= iss)
			wc++;
		if (wc < g->waits.n && g->waits.v[wc].start < iss) {
			const struct dg_wait *w = &g->waits.v[wc];

			if (o->start >= w->end + g->lat_ns) {
				iss = w->end;
			} else {
				/* issued before the wait, started inside it: what held it
				 * was on the GPU (the operation that ended last before) */
				/* ... unless the call issued it (a blocking copy's own copy) */
				int own = w->op == i || o->start <= w->start + g->lat_ns + HOST_BOUND_NS ||
					  (w->kind != DW_SYNC && w->kind != DW_QUEUE && w->kind != DW_LAUNCH &&
					   o->kind != OP_KERNEL);

				iss = w->start > prev ? w->start : prev;
				/* the call's own copy: the call worked on the host until
				 * it started (staging pageable memory) when its stream
				 * was free */
				if (own && (o->flags & DG_HOST_BOUND)) {
					uint32_t d = ended_before(g, i, o->start, UINT32_MAX);

					/* ... unless GPU work ended inside the call just
					 * before it: it waited for that */
					if (d != UINT32_MAX && g->ops.v[d].end > w->start) {
						o->flags &= (uint8_t)~DG_HOST_BOUND;
						o->dep = d;
					} else {
						o->flags |= DG_OWN;
					}
				}
				if (!own && (o->flags & DG_HOST_BOUND) && o->dep == UINT32_MAX) {
					uint32_t d = ended_before(g, i, o->start, UINT32_MAX);

					o->flags &= (uint8_t)~DG_HOST_BOUND;
					o->dep = d;
					if (d == UINT32_MAX) /* nothing before it in the window */
						o->flags |= DG_HOST_BOUND;
				}
			}
		}
		o->lead = o->start - iss < UINT32_MAX ? (uint32_t)(o->start - iss) : UINT32_MAX;
		iss = dg_iss(o);
		prev = iss;
	}
}

/* A value read without a synchronizing call gpuwhy sees (JAX's float()
 * waits on an event it polls): a small device-to-host copy that no wait
 * waited for, after which the GPU idled until the host issued more. The
 * host waited for it from its last issue before the copy ended. */
static int value_waits(struct analysis *a)
{
	struct depgraph *g = a->graph;
	size_t n = g->ops.n, added = 0;
	uint8_t *waited = calloc(n ? n : 1, 1);

	if (!waited) {
		analysis_nomem(a, "building the replay's graph");
		return -ENOMEM;
	}
	for (size_t i = 0; i < g->waits.n; i++)
		if (g->waits.v[i].op < n)
			waited[g->waits.v[i].op] = 1;
	for (size_t i = 0; i < n; i++) {
		const struct dg_op *o = &g->ops.v[i];
		uint64_t ws = dg_iss(o);
		size_t j = i + 1;

		if (!(o->flags & DG_SMALL_COPY) || waited[i])
			continue;
		for (; j < n && g->ops.v[j].start < o->end; j++)
			ws = dg_iss(&g->ops.v[j]) > ws ? dg_iss(&g->ops.v[j]) : ws;
		if (j >= n || !(g->ops.v[j].flags & DG_HOST_BOUND) || g->ops.v[j].cause == IDLE_NCAUSES ||
		    ws >= o->end)
			continue;
		struct dg_wait w = { ws + 1, o->end, (uint32_t)i, DW_COPY_SMALL, ACT_NONE, 0, 1 };

		if (VEC_PUSH(g->waits, w) < 0) {
			free(waited);
			analysis_nomem(a, "building the replay's graph");
			return -ENOMEM;
		}
		added++;
	}
	free(waited);
	if (added) { /* in start order again; a recorded wait it overlaps keeps its time */
		qsort(g->waits.v, g->waits.n, sizeof(*g->waits.v), cmp_wait);
		cut_overlaps(g);
	}
	return 0;
}

/* Values computed only to be read (a metric's reductions, a statistic per
 * tensor): between two value reads of the host (a small device-to-host copy
 * it waited for), operations of the read's stream that are all elementwise
 * or reductions (and the memsets that clear their outputs), and the second
 * read itself. The host issued them between its reads, so they feed what it
 * read next; the model's work (matrix products, convolutions, attention)
 * between two reads leaves the pair out, and so does a run too long to be
 * one value's (READ_WORK_MAX_OPS). The first read of a run is not marked:
 * what came before it may be the model's. */
#define READ_WORK_MAX_OPS 32
static int only_elementwise(const struct depgraph *g, uint32_t from, uint32_t to)
{
	uint32_t stream = g->ops.v[to].stream;

	for (uint32_t j = from + 1; j < to; j++) {
		const struct dg_op *o = &g->ops.v[j];

		if (o->stream != stream || (o->kind == OP_KERNEL ? o->cls != KC_ELEMENTWISE : o->kind != OP_MEMSET))
			return 0;
	}
	return 1;
}

/* A small copy between the host and pinned memory (or memory of unknown
 * kind): a row, a result, a request's part; in a JAX job not a scalar's, a
 * Python number its jitted calls send with each call (one jitted update,
 * not one copy, removes those). */
static int small_pinned_copy(const struct dg_op *o, int jax)
{
	return o->kind == OP_MEMCPY && o->host && o->size <= BATCH_VALUE_BYTES && !(o->flags & DG_PAGEABLE) &&
	       !(jax && o->size <= SCALAR_BYTES);
}

/* Runs of small copies the host issued one after another, one direction on
 * one stream, with no synchronization between (the copy calls' own time
 * aside): every copy of a run after its first is `merged` (a loop of
 * copy_() calls, one a row or a request; one copy of the rows gathered in a
 * pinned buffer does the same). .item() in a loop synchronizes after each
 * copy: no run. Waits are in start order, ops in the GPU's: an operation
 * of another stream that starts between two copies ends the run (fewer
 * merged, never more). */
static void mark_copy_runs(const struct analysis *a, struct depgraph *g)
{
	int polled = a->framework == FW_JAX;

	g->merged_n = 0;
	g->merged_late_ns = g->merged_busy_ns = g->merged_call_ns = 0;
	for (size_t i = 1; i < g->ops.n; i++) {
		struct dg_op *o = &g->ops.v[i];
		const struct dg_op *p = &g->ops.v[i - 1];
		int synced = 0;

		if (!small_pinned_copy(o, polled) || !small_pinned_copy(p, polled) || o->stream != p->stream ||
		    (o->flags & DG_HTOD) != (p->flags & DG_HTOD) || dg_iss(o) < dg_iss(p))
			continue;
		size_t lo = 0, hi = g->waits.n; /* the first wait from the first copy's issue on */

		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;

			if (g->waits.v[mid].start < dg_iss(p))
				lo = mid + 1;
			else
				hi = mid;
		}
		/* a synchronization between the two issues, or, in a JAX job, a
		 * value the host waited for with no call seen (value_waits: its
		 * polled reads; elsewhere such a wait is the copies' issuing) */
		for (size_t k = lo; k < g->waits.n && g->waits.v[k].start < dg_iss(o); k++)
			synced |= (g->waits.v[k].kind != DW_COPY_SMALL && g->waits.v[k].kind != DW_COPY) ||
				  (g->waits.v[k].value && polled);
		if (synced)
			continue;
		/* this copy's own call: the copy calls from its issue (a copy's
		 * issue is its call's start) to the next operation's */
		uint64_t until = i + 1 < g->ops.n ? dg_iss(&g->ops.v[i + 1]) : UINT64_MAX;

		for (size_t k = lo; k < g->waits.n && g->waits.v[k].start < until; k++)
			if (g->waits.v[k].start >= dg_iss(o) &&
			    (g->waits.v[k].kind == DW_COPY_SMALL || g->waits.v[k].kind == DW_COPY)) {
				g->waits.v[k].merged = 1;
				if (!g->waits.v[k].value) /* a call's, not a read seen without one */
					g->merged_call_ns += (double)(g->waits.v[k].end - g->waits.v[k].start);
			}
		o->merged = 1;
		g->merged_n++;
		g->merged_busy_ns += (double)(o->end - o->start);
		/* the GPU waited for the host issuing it: a launch gap's lateness */
		if ((o->flags & DG_HOST_BOUND) && o->cause == IDLE_LAUNCH_OVERHEAD)
			g->merged_late_ns += (double)o->late;
	}
}

static void mark_read_work(struct depgraph *g)
{
	uint32_t prev = UINT32_MAX;

	g->read_work_ns = 0;
	g->read_work_n = 0;
	for (size_t i = 0; i < g->waits.n; i++) {
		const struct dg_wait *w = &g->waits.v[i];
		uint32_t r = w->op;

		/* other waits in between (the copy's call waiting for the kernel
		 * before it, a sync after it) are the same read's, or leave
		 * only elementwise work between two reads */
		if (w->kind == DW_QUEUE || w->kind == DW_LAUNCH || r == prev || r >= g->ops.n ||
		    !(g->ops.v[r].flags & DG_SMALL_COPY))
			continue;
		/* the next copy of a run issued without waiting: not a value
		 * read, nothing computed for it */
		if (g->ops.v[r].merged) {
			prev = UINT32_MAX;
			continue;
		}
		if (prev != UINT32_MAX && r > prev && r - prev - 1 <= READ_WORK_MAX_OPS &&
		    only_elementwise(g, prev, r))
			for (uint32_t j = prev + 1; j <= r; j++) {
				g->ops.v[j].read_work = 1;
				g->read_work_ns += (double)(g->ops.v[j].end - g->ops.v[j].start);
				g->read_work_n++;
			}
		prev = r;
	}
}

static void mark_acts(struct depgraph *g)
{
	size_t cur = 0;

	for (size_t i = 0; i < g->waits.n; i++)
		g->waits.v[i].act = act_at(g, g->waits.v[i].start, &cur);
}

/* The host's time inside a GPU gap is the lateness that gap holds, all of
 * it, also where a wait on the idle GPU (empty_cache, a sync with nothing
 * queued) splits it from the operation that ends the gap: a fix that takes
 * the gap's cause away takes that time (simulate.c). The host's segments are
 * cut at the gaps' edges and the pieces inside one take its cause. */
struct gap_span {
	uint64_t s, e;
	uint8_t cause;
};

static int cut_host_at(struct depgraph *g, const struct gap_span *gv, size_t gn)
{
	struct dg_host *out;
	size_t n = 0, cap = g->host.n + 2 * gn, j = 0;

	if (!gn)
		return 0;
	out = malloc(cap * sizeof(*out));
	if (!out)
		return -ENOMEM;
	for (size_t i = 0; i < g->host.n; i++) {
		struct dg_host h = g->host.v[i];

		while (j < gn && gv[j].e <= h.start)
			j++;
		for (size_t k = j; k < gn && gv[k].s < h.end && h.start < h.end; k++) {
			if (gv[k].s > h.start) { /* before the gap */
				out[n] = h;
				out[n++].end = gv[k].s;
				h.start = gv[k].s;
			}
			out[n] = h;
			out[n].end = gv[k].e < h.end ? gv[k].e : h.end;
			out[n++].gap = gv[k].cause;
			h.start = out[n - 1].end;
		}
		if (h.start < h.end)
			out[n++] = h;
	}
	free(g->host.v);
	g->host.v = out;
	g->host.n = n;
	g->host.cap = cap;
	return 0;
}

static int mark_gap_hosts(struct analysis *a)
{
	struct depgraph *g = a->graph;
	struct gap_span *gv = malloc(g->ops.n * sizeof(*gv));
	size_t gn = 0;
	uint64_t prev_end = 0;
	int ret;

	if (!gv)
		return -ENOMEM;
	for (size_t i = 0; i < g->ops.n; i++) {
		const struct dg_op *o = &g->ops.v[i];

		if (prev_end && o->start > prev_end && o->cause < IDLE_NCAUSES)
			gv[gn++] = (struct gap_span){ prev_end, o->start, o->cause };
		prev_end = o->end > prev_end ? o->end : prev_end;
	}
	ret = cut_host_at(g, gv, gn);
	free(gv);
	return ret;
}

/* By start: host segments, disjoint. */
static int cmp_host(const void *x, const void *y)
{
	const struct dg_host *a = x, *b = y;

	return a->start < b->start ? -1 : a->start > b->start;
}

/* The training thread's allocation calls (cudaMalloc, cudaHostAlloc...) as
 * host segments of their own (dg_host.alloc), cut from the samples' holds
 * they lie in: where memory is freed every step (empty_cache, a caching
 * allocator that cannot hold the step) it is allocated again, host time a
 * fix that stops the frees takes out (C9's: rules/c09_sync_stall.c decides
 * whether the frees come every step). */
static int mark_alloc_hosts(struct analysis *a)
{
	struct depgraph *g = a->graph;
	const struct trace *t = a->t;
	struct dg_host *al = NULL, *out = NULL;
	size_t an = 0, acap = 0, n = 0, j = 0;
	int ret = 0;

	for (size_t i = 0; i < t->calls.n; i++) {
		const struct host_call *c = &t->calls.v[i];
		uint64_t s, e;

		if (c->pid != a->main_pid || c->tid != a->main_tid || c->end <= a->t0 || c->start >= a->t1)
			continue;
		if (c->cls != HC_ALLOC || !traced(a, c->start, c->end))
			continue;
		s = c->start > a->t0 ? c->start : a->t0;
		e = c->end < a->t1 ? c->end : a->t1;
		if (e <= s)
			continue;
		if (an == acap) {
			size_t nc = acap ? 2 * acap : 64;
			struct dg_host *v = realloc(al, nc * sizeof(*al));

			if (!v) {
				ret = -ENOMEM;
				goto out;
			}
			al = v;
			acap = nc;
		}
		al[an++] = (struct dg_host){ .start = s, .end = e, .act = ACT_NONE, .gap = IDLE_NCAUSES,
					     .alloc = DG_ALLOC_UNHELD };
	}
	if (!an)
		goto out;
	qsort(al, an, sizeof(*al), cmp_host);
	/* each hold cut at the calls inside it; a call's parts outside every
	 * hold become segments of their own */
	if (!(out = malloc((2 * g->host.n + 3 * an + 1) * sizeof(*out)))) {
		ret = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < g->host.n; i++) {
		struct dg_host h = g->host.v[i];

		for (; j < an && al[j].start < h.end; j++) {
			struct dg_host c = al[j];

			if (c.end <= h.start) { /* wholly before the hold */
				out[n++] = c;
				continue;
			}
			if (c.start < h.start) { /* its part before the hold */
				out[n] = c;
				out[n++].end = h.start;
				c.start = h.start;
			}
			if (c.start > h.start) { /* the hold before it */
				out[n] = h;
				out[n++].end = c.start;
			}
			out[n] = h;
			out[n].start = c.start;
			out[n].end = c.end < h.end ? c.end : h.end;
			out[n++].alloc = DG_ALLOC_HELD;
			h.start = out[n - 1].end;
			if (c.end > h.end) { /* it runs past the hold: the rest with the next */
				al[j].start = h.end;
				break;
			}
		}
		if (h.start < h.end)
			out[n++] = h;
	}
	for (; j < an; j++)
		out[n++] = al[j];
	free(g->host.v);
	g->host.v = out;
	g->host.n = n;
	g->host.cap = g->host.n;
	out = NULL;
out:
	free(al);
	free(out);
	return ret;
}

int replay_available(const struct analysis *a)
{
	const struct depgraph *g = a->graph;

	return g && !g->full && g->ops.n && g->recorded_ns > 0 && !a->too_little;
}

double replay_cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

void depgraph_finish(struct analysis *a)
{
	struct depgraph *g = a->graph;
	struct sim_fix none;
	struct sim_result r;
	double t0 = replay_cpu_now();

	if (!g || g->full || !g->ops.n)
		return;
	if (collect_waits(a) < 0)
		return;
	issue_times(a);
	if (value_waits(a) < 0)
		return;
	mark_acts(g);
	mark_copy_runs(a, g);
	mark_read_work(g);
	if (mark_alloc_hosts(a) < 0 || mark_gap_hosts(a) < 0) {
		analysis_nomem(a, "building the replay's graph");
		g->full = 1;
		return;
	}
	g->recorded_ns = g->last_end > a->t0 ? (double)(g->last_end - a->t0) : 0;
	memset(&none, 0, sizeof(none));
	none.keep_trace = 1; /* the recording as it ran */
	none.keep_compile = 1;
	if (simulate(a, &none, &r) < 0) {
		analysis_nomem(a, "replaying the steady window");
		g->full = 1;
		return;
	}
	g->replayed_ns = r.T;
	g->build_cpu_ns = replay_cpu_now() - t0;
	g->err = g->recorded_ns > 0 ? (r.T > g->recorded_ns ? r.T - g->recorded_ns : g->recorded_ns - r.T) /
					      g->recorded_ns
				    : 0;
}
