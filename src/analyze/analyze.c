/* The analysis pipeline: timeline per device, steps, idle attribution, rules. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/resource.h>
#include <sys/stat.h>

#include "../util/util.h"
#include "analyze.h"
#include "internal.h"

struct op_key {
	uint64_t key; /* device above the start's offset from the earliest start */
	uint64_t idx;
};

#define RADIX_BITS 11
#define RADIX_SIZE (1u << RADIX_BITS)

/* Stable LSD radix sort of k[0..n) by key, using tmp[0..n); the result ends
 * in k. Only as many 11-bit digits as the largest key has. */
static int radix_sort_keys(struct op_key *k, struct op_key *tmp, size_t n, unsigned bits)
{
	size_t *count = malloc(RADIX_SIZE * sizeof(*count));

	if (!count)
		return -ENOMEM;
	for (unsigned shift = 0; shift < bits; shift += RADIX_BITS) {
		memset(count, 0, RADIX_SIZE * sizeof(*count));
		for (size_t i = 0; i < n; i++)
			count[(k[i].key >> shift) & (RADIX_SIZE - 1)]++;
		size_t sum = 0;

		for (size_t b = 0; b < RADIX_SIZE; b++) {
			size_t c = count[b];

			count[b] = sum;
			sum += c;
		}
		for (size_t i = 0; i < n; i++)
			tmp[count[(k[i].key >> shift) & (RADIX_SIZE - 1)]++] = k[i];
		memcpy(k, tmp, n * sizeof(*k));
	}
	free(count);
	return 0;
}

static int cmp_op_by_index(const void *x, const void *y, void *trace)
{
	const struct gpu_op *ops = ((const struct trace *)trace)->ops.v;
	const struct gpu_op *a = &ops[((const struct op_key *)x)->idx];
	const struct gpu_op *b = &ops[((const struct op_key *)y)->idx];

	if (a->dev != b->dev)
		return a->dev < b->dev ? -1 : 1;
	return a->start < b->start ? -1 : a->start > b->start;
}

/* Sorts the operations by (device, start). The timeline from several streams
 * is nearly ordered, but not quite: the keys (16 bytes) are radix-sorted and
 * the operations then permuted in place, cycle by cycle, so the peak is two
 * key arrays and no second copy of the operations. An already ordered
 * timeline (one process, one GPU) is left as is: the loader notes the order
 * as it appends, so that no pass is spent checking it. */
static int sort_ops(struct trace *t)
{
	size_t n = t->ops.n, i;
	struct op_key *k, *tmp;
	uint64_t first = UINT64_MAX, last = 0;
	unsigned maxdev = 0, bits;

	if (!t->ops_unordered) /* the loader noted whether the timeline came in order */
		return 0;
	for (i = 0; i < n; i++) {
		first = t->ops.v[i].start < first ? t->ops.v[i].start : first;
		last = t->ops.v[i].start > last ? t->ops.v[i].start : last;
		maxdev = t->ops.v[i].dev > maxdev ? t->ops.v[i].dev : maxdev;
	}
	unsigned span_bits = last > first ? 64u - (unsigned)__builtin_clzll(last - first) : 1;
	unsigned dev_bits = maxdev ? 32u - (unsigned)__builtin_clz(maxdev) : 0;

	bits = span_bits + dev_bits;
	k = malloc(n * sizeof(*k));
	tmp = malloc(n * sizeof(*tmp));
	if (!k || !tmp) {
		free(k);
		free(tmp);
		return -ENOMEM;
	}
	if (bits <= 64) {
		for (i = 0; i < n; i++)
			k[i] = (struct op_key){ (dev_bits ? (uint64_t)t->ops.v[i].dev << span_bits : 0) |
							(t->ops.v[i].start - first), i };
		if (radix_sort_keys(k, tmp, n, bits) < 0) {
			free(k);
			free(tmp);
			return -ENOMEM;
		}
	} else { /* starts years apart (a damaged file): compare instead */
		for (i = 0; i < n; i++)
			k[i] = (struct op_key){ i, i };
		qsort_r(k, n, sizeof(*k), cmp_op_by_index, t);
	}
	free(tmp);
	/* k[j].idx is the operation that belongs at j: follow each cycle once */
	for (i = 0; i < n; i++) {
		if (k[i].idx == i)
			continue;
		struct gpu_op hold = t->ops.v[i];
		size_t j = i;

		while (k[j].idx != i) {
			size_t from = (size_t)k[j].idx;

			t->ops.v[j] = t->ops.v[from];
			k[j].idx = j;
			j = from;
		}
		t->ops.v[j] = hold;
		k[j].idx = j;
	}
	free(k);
	t->ops_unordered = 0;
	return 0;
}

static int cmp_call(const void *x, const void *y)
{
	const struct host_call *a = x, *b = y;

	return a->end < b->end ? -1 : a->end > b->end;
}

static int cmp_sync(const void *x, const void *y)
{
	const struct sync_ev *a = x, *b = y;

	return a->end < b->end ? -1 : a->end > b->end;
}

/* The device and process doing most of the GPU work (summed operation time,
 * from the device summaries; the process with the most operations). */
static void pick_main(struct analysis *a, const struct pid_counts *pc)
{
	struct trace *t = a->t;

	a->main_dev = 0;
	for (uint32_t d = 0; d < GW_MAX_GPUS; d++) {
		uint64_t busy = a->dev[d].kernel_ns + a->dev[d].comm_ns + a->dev[d].copy_ns;
		const struct device_summary *m = &a->dev[a->main_dev];

		if (busy)
			a->ndev = d + 1;
		if (busy > m->kernel_ns + m->comm_ns + m->copy_ns)
			a->main_dev = d;
	}
	a->main_pid = 0;
	for (int k = 0, best = -1; k < pc->npids; k++)
		if (best < 0 || pc->n[k] > pc->n[best] ||
		    (pc->n[k] == pc->n[best] && pc->pid[k] < pc->pid[best])) {
			best = k;
			a->main_pid = pc->pid[k];
		}
	for (size_t i = 0; i < t->procs.n; i++)
		if (t->procs.v[i].is_target && !a->main_pid)
			a->main_pid = t->procs.v[i].pid;
	/* The training thread: the one that synchronizes most (.item(), prints),
	 * else the one that makes the most CUDA calls we traced. Not simply the
	 * most calls: without --launches another thread can make more (on the c9
	 * fixture 3,251 calls, nearly all memsets of the backward pass, against
	 * the training thread's 1,931). */
	a->main_tid = a->main_pid;
	const struct thread_calls *best = NULL;

	for (size_t i = 0; i < t->scan->nthreads; i++) {
		const struct thread_calls *c = &t->scan->threads[i];

		if (c->pid == a->main_pid &&
		    (!best || c->syncs > best->syncs ||
		     (c->syncs == best->syncs &&
		      (c->calls > best->calls || (c->calls == best->calls && c->tid < best->tid)))))
			best = c;
	}
	if (best)
		a->main_tid = best->tid;
}

/* Adds [s, e) to a union of intervals visited in order of start: busy
 * grows by the part after *cur_end. */
static void add_busy(uint64_t *busy, uint64_t *cur_end, uint64_t s, uint64_t e)
{
	if (s < *cur_end)
		s = *cur_end;
	if (e > s) {
		*busy += e - s;
		*cur_end = e;
	}
}

static int cmp_copy_mem(const void *x, const void *y)
{
	const struct copy_mem *a = x, *b = y;

	if (a->pid != b->pid)
		return a->pid < b->pid ? -1 : 1;
	return a->corr < b->corr ? -1 : a->corr > b->corr;
}

/* Each copy call gets its copy's direction and host memory (pageable or
 * pinned decides what a gap spent inside the call is: attribute.c). The
 * memory kinds are then freed: a few per step. */
static void join_copy_calls(struct trace *t)
{
	if (!t->copy_mems.n)
		return;
	qsort(t->copy_mems.v, t->copy_mems.n, sizeof(*t->copy_mems.v), cmp_copy_mem);
	for (size_t i = 0; i < t->calls.n; i++) {
		struct host_call *c = &t->calls.v[i];
		struct copy_mem key = { c->pid, c->corr, 0, 0 };
		const struct copy_mem *m;

		if (c->cls != HC_MEMCPY || !c->corr)
			continue;
		m = bsearch(&key, t->copy_mems.v, t->copy_mems.n, sizeof(key), cmp_copy_mem);
		if (m) {
			c->copy_dir = m->dir;
			c->copy_host = m->host;
		}
	}
	free(t->copy_mems.v);
	t->copy_mems.v = NULL;
	t->copy_mems.n = t->copy_mems.cap = 0;
}

static void sort_timelines(struct analysis *a)
{
	struct trace *t = a->t;

	if (t->keep_ops && sort_ops(t) < 0) /* for the timeline export */
		analysis_nomem(a, "sorting the GPU timeline");
	join_copy_calls(t);
	if (t->calls.n)
		qsort(t->calls.v, t->calls.n, sizeof(*t->calls.v), cmp_call);
	if (t->syncs.n) /* by end, as the calls: attribution searches them (attribute.c) */
		qsort(t->syncs.v, t->syncs.n, sizeof(*t->syncs.v), cmp_sync);
}

/* The totals the reading pass summed (timeline.c): device summaries and the
 * last end of any operation. Busy and idle come with the steady pass. */
static void take_totals(struct analysis *a)
{
	const struct op_scan *s = a->t->scan;

	memcpy(a->dev, s->dev, sizeof(a->dev));
	a->ops_end = s->ops_end;
}

/* The pass over the operations once the steps are known (the recording is
 * read again, each device's operations in time order): each GPU's busy time,
 * over its whole timeline and inside the main GPU's steady window (so that
 * the ranks of a multi-GPU job compare on the same footing), the idle
 * attribution, and the op statistics the rules read. */
/* The main GPU's kernels in the start-up by name, and whether each name
 * runs again after it: those that never do were tried once (autotuning's
 * candidates) or set something up. Names are dense ids into trace.names. */
struct startup_kernels {
	double *ns;
	uint32_t *count;
	uint8_t *later;
	size_t n;
};

static void startup_kernels_begin(struct analysis *a, struct startup_kernels *k)
{
	memset(k, 0, sizeof(*k));
	if (!has_steps(a) || !a->startup_ns || !a->t->names.n)
		return;
	k->n = a->t->names.n;
	k->ns = calloc(k->n, sizeof(*k->ns));
	k->count = calloc(k->n, sizeof(*k->count));
	k->later = calloc(k->n, sizeof(*k->later));
	if (!k->ns || !k->count || !k->later) {
		analysis_nomem(a, "summarizing the start-up's kernels");
		k->n = 0;
	}
}

static void startup_kernels_add(const struct analysis *a, struct startup_kernels *k, const struct gpu_op *o)
{
	if (o->kind != OP_KERNEL || o->name >= k->n)
		return;
	if (o->start < a->t0) {
		k->ns[o->name] += (double)(o->end - o->start);
		k->count[o->name]++;
	} else {
		k->later[o->name] = 1;
	}
}

static void startup_kernels_end(struct analysis *a, struct startup_kernels *k)
{
	struct startup_parts *p = &a->startup;

	for (size_t i = 0; i < k->n; i++)
		if (k->count[i] && !k->later[i]) {
			p->once_ns += k->ns[i];
			p->once_kernels += k->count[i];
			p->once_names++;
		}
	free(k->ns);
	free(k->count);
	free(k->later);
}

struct steady_pass {
	struct analysis *a;
	struct attr_pass ap;
	struct op_stats_pass sp;
	struct comm_exposure ex;
	struct startup_kernels sk;
	struct counters_pass cn;
	struct launch_pass *lp; /* C8's kernels placed at their launching lines */
	int attr;
	size_t step_cursor; /* main GPU: the step of its operations (step.nops) */
	uint64_t busy[GW_MAX_GPUS], cur_end[GW_MAX_GPUS], steady_end[GW_MAX_GPUS];
};

static void steady_add(void *ctx, const struct gpu_op *o)
{
	struct steady_pass *p = ctx;
	struct analysis *a = p->a;
	uint64_t s = o->start > a->t0 ? o->start : a->t0, e = o->end < a->t1 ? o->end : a->t1;

	add_busy(&p->busy[o->dev], &p->cur_end[o->dev], o->start, o->end);
	add_busy(&a->dev[o->dev].steady_busy_ns, &p->steady_end[o->dev], s, e);
	if (o->dev != a->main_dev)
		return;
	if (p->sk.n)
		startup_kernels_add(a, &p->sk, o);
	uint32_t st = step_at(a, o->start, &p->step_cursor);

	if (st != UINT32_MAX)
		a->steps.v[st].nops++;
	uint32_t graph_op = UINT32_MAX;

	if (p->attr && o->start < a->t1) {
		graph_op = p->ap.graph_op = depgraph_op(a, o);
		attr_add(a, &p->ap, o);
	}
	counters_op(a, &p->cn, o);
	if (o->start >= a->t0 && o->end <= a->t1) {
		p->sp.graph_op = graph_op;
		op_stats_add(a, &p->sp, o);
		if (p->sp.fused)
			depgraph_fused(a, graph_op);
		for (unsigned k = 0; k < p->sp.attn_done_n; k++) /* an attention core's inner kernels */
			depgraph_attention(a, p->sp.attn_done[k]);
		p->sp.attn_done_n = 0;
		if (p->sp.mem_fused && graph_op != UINT32_MAX && VEC_PUSH(p->sp.mem_ops, graph_op) < 0)
			analysis_nomem(a, "following chains of kernels");
	}
	exposed_add(a, &p->ex, o);
}

static void steady_issued(void *ctx, const struct gpu_op *o, uint32_t corr)
{
	struct steady_pass *p = ctx;

	sites_launched(p->a, p->lp, o, corr);
}

/* The main process blocked on a full GPU command queue inside the steady
 * window: the GPU, not the host, set the pace then. */
static void steady_wait(void *ctx, const struct host_wait *q)
{
	struct analysis *a = ((struct steady_pass *)ctx)->a;
	uint64_t s = q->start > a->t0 ? q->start : a->t0, e = q->end < a->t1 ? q->end : a->t1;

	if (q->pid == a->main_pid && e > s)
		a->queue_full_ns += e - s;
	depgraph_queue_wait(a, q);
}

/* GPM samples of the main GPU in the steady window, for C8 and C11. */
static void steady_gpm(void *ctx, const struct gpm_samp *g)
{
	struct steady_pass *p = ctx;
	struct analysis *a = p->a;

	counters_gpm(a, &p->cn, g);
	if (a->t->keep_samples && VEC_PUSH(a->t->gpm_samples, *g) < 0)
		analysis_nomem(a, "keeping the GPM samples for the HTML report");
	if (g->gpu != a->main_dev || g->ts < a->t0 || g->ts > a->t1)
		return;
	if (FIELD_VALID(g, GPM_VALID_TENSOR)) {
		a->gpm_tensor += g->tensor;
		a->gpm_tensor_n++;
	}
	if (FIELD_VALID(g, GPM_VALID_DRAM) && g->sm_util > 5) { /* only while the GPU works */
		a->gpm_dram += g->dram;
		a->gpm_dram_n++;
	}
}

static void steady_pass(struct analysis *a)
{
	struct steady_pass *p = calloc(1, sizeof(*p));
	struct op_sinks k = { steady_add, steady_wait, steady_gpm, p, steady_issued };
	char err[512];

	int ret;

	if (!p) {
		analysis_nomem(a, "attributing idle time");
		return;
	}
	p->a = a;
	depgraph_begin(a);
	p->attr = attr_begin(a, &p->ap) == 0;
	if (p->attr) /* after the sites' pass began: its loop path names call lines */
		p->lp = sites_launches_begin(a);
	op_stats_begin(a, &p->sp);
	startup_kernels_begin(a, &p->sk);
	if (counters_begin(a, &p->cn) < 0)
		analysis_nomem(a, "reading the GPU's counters against its kernels");
	ret = timeline_replay(a->t, UINT32_MAX, &k, err, sizeof(err));
	if (ret == -ENOMEM)
		analysis_nomem(a, "reading the GPU timeline again");
	else if (ret < 0)
		analysis_warn(a, "could not read the recording's GPU timeline again (%s): the "
				 "attribution is incomplete", err);
	sites_launches_end(p->lp);
	if (p->attr)
		attr_end(a, &p->ap);
	op_stats_end(a, &p->sp);
	counters_end(a, &p->cn); /* after the families' times, before the replay */
	counters_free(&p->cn);
	if (counters_membound(a)) { /* memory-bound kernels: their chains are C11's too */
		op_stats_add_mem_chains(a, &p->sp);
		for (size_t k = 0; k < p->sp.mem_ops.n; k++)
			depgraph_fused(a, p->sp.mem_ops.v[k]);
	}
	free(p->sp.mem_ops.v);
	memset(&p->sp.mem_ops, 0, sizeof(p->sp.mem_ops));
	startup_kernels_end(a, &p->sk);
	exposed_end(a, &p->ex);
	if (p->attr)
		depgraph_finish(a);
	for (unsigned d = 0; d < GW_MAX_GPUS; d++) {
		struct device_summary *s = &a->dev[d];

		uint64_t sum = s->kernel_ns + s->copy_ns + s->comm_ns;

		s->busy_ns = p->busy[d];
		s->idle_ns = s->window_ns > p->busy[d] ? s->window_ns - p->busy[d] : 0;
		if (sum > s->busy_ns) { /* overlapping streams: shares of the busy time */
			double k = (double)s->busy_ns / (double)sum;

			s->kernel_ns = (uint64_t)((double)s->kernel_ns * k);
			s->copy_ns = (uint64_t)((double)s->copy_ns * k);
			s->comm_ns = (uint64_t)((double)s->comm_ns * k);
		}
	}
	free(p);
}

/* --ring keeps the newest data only: say how much of the run the GPU
 * timeline covers, so nobody reads it as the whole job. */
static void note_ring(struct analysis *a)
{
	const char *budget = trace_meta(a->t, "record.ring_bytes");
	uint64_t run0 = 0, run1 = 0;

	if (!budget)
		return;
	for (size_t i = 0; i < a->t->procs.n; i++)
		if (a->t->procs.v[i].is_target) {
			run0 = a->t->procs.v[i].first_ts;
			run1 = a->t->procs.v[i].exit_ts;
			break;
		}
	if (run0 && run1 > a->last_op && a->first_op > run0)
		analysis_warn(a, "recorded with --ring (budget %.0f MiB): older data were discarded; "
				 "the GPU timeline covers the last %.1f s of a %.1f s run",
			      strtod(budget, NULL) / 1048576.0, (double)(run1 - a->first_op) / 1e9,
			      (double)(run1 - run0) / 1e9);
	else
		analysis_warn(a, "recorded with --ring (budget %.0f MiB): only the newest data were "
				 "kept, so this report may not cover the whole run",
			      strtod(budget, NULL) / 1048576.0);
}

/* The GPU kept working (NVML utilization) well after the last recorded
 * operation, with no early stop or duty cycle to explain it: another tool
 * (torch.profiler, Nsight) probably took CUPTI's activity buffers over. */
static void check_lost_tail(struct analysis *a)
{
	const struct trace *t = a->t;
	uint64_t last_op = 0, last_busy = 0;

	/* a recording cut short or damaged lost its tail for that reason */
	if (trace_meta(t, "record.stopped_early") || trace_meta(t, "record.duty_period_ms") ||
	    a->windows.n || t->verdict.kind != GW_VERDICT_OK)
		return;
	last_op = a->ops_end;
	last_busy = t->last_busy_ts;
	/* (timeline.c leaves out busy samples whose memory fell under half its
	 * peak: a context torn down at the job's exit) */
	/* NVML utilization averages over up to a second: allow 2 s */
	if (last_op && last_busy > last_op + 2000000000ull)
		analysis_warn(a, "the GPU stayed busy for %.1f s after the last recorded operation: "
				 "another profiler (torch.profiler, Nsight) may have taken CUPTI over, "
				 "and the report covers only the time before",
			      (double)(last_busy - last_op) / 1e9);
}

/* The report's own figures checked against each other (invariants.c): if
 * one fails in the field, the report says so instead of printing
 * inconsistent numbers silently. */
static void self_check(struct analysis *a)
{
	char why[400];

	if (analysis_check_invariants(a, why, sizeof(why)) < 0)
		analysis_warn(a, "internal consistency check failed: %s; please report it (gpuwhy %s, "
				 "with the recording if you can share it)", why, GPUWHY_VERSION);
}

int analyze(struct trace *t, struct analysis *a, unsigned flags)
{
	return analyze_steps(t, a, flags, NULL);
}

/* The memory the analysis took at its peak (resident), when far above the
 * recording's size: what a file made gpuwhy allocate, measured rather than
 * predicted (report.c predicts from the size before reading). */
static void note_memory(struct analysis *a)
{
	struct rusage ru;
	struct stat st;
	double peak, size;

	if (getrusage(RUSAGE_SELF, &ru) < 0 || a->t->spooled || stat(a->t->path, &st) < 0)
		return;
	peak = (double)ru.ru_maxrss * 1024;
	size = (double)st.st_size;
	if (peak >= 512.0 * 1048576 && peak > 64 * size)
		analysis_warn(a, "analyzing this %.1f MB recording took %.0f MiB of memory at its peak, "
				 "%.0fx its size (a recording of very many processes, threads or "
				 "streams, or a crafted file)", size / 1e6, peak / 1048576, peak / size);
}

int analyze_steps(struct trace *t, struct analysis *a, unsigned flags, const char *steps)
{
	const char *v;
	int ret, no_cupti = 0;

	memset(a, 0, sizeof(*a));
	a->t = t;
	a->keep_gaps = !!(flags & ANALYZE_KEEP_GAPS);
	v = trace_meta(t, "host.clk_tck");
	a->clk_tck_ns = 1e9 / (v && atoi(v) > 0 ? atoi(v) : 100);
	v = trace_meta(t, "target.cpu_count");
	a->cpus_allowed = v ? (unsigned)atoi(v) : 0;
	if (!a->cpus_allowed) {
		v = trace_meta(t, "host.cpus");
		a->cpus_allowed = v ? (unsigned)atoi(v) : 1;
	}
	v = trace_meta(t, "env.CUDA_LAUNCH_BLOCKING");
	a->launch_blocking = v && atoi(v) == 1;
	v = trace_meta(t, "record.schedstat");
	a->rq_known = (v && !strcmp(v, "yes")) || t->has_run_delay;
	a->step_source = "none";
	if (!(a->knames = kname_cache_new()) || !(a->x = calloc(1, sizeof(*a->x)))) {
		analysis_nomem(a, "starting the analysis");
		return a->err; /* the passes need their scratch */
	}
	if (t->nomem)
		analysis_nomem(a, "loading the recording");

	if (t->verdict.kind != GW_VERDICT_OK) /* the reader's verdict, in its own words */
		analysis_warn(a, "%s", t->damage ? t->damage : "the recording is damaged");
	else if (!t->complete)
		analysis_warn(a, "some traced processes' streams were not merged into the recording "
				 "when it ended (the disk was full?)%s",
			      t->parts_read ? ": they were read from the .parts folder next to it"
					    : ", and the .parts folder that holds them is not next to it: "
					      "copy that folder along with the file");
	if (t->verdict.kind != GW_VERDICT_OK && t->parts_read)
		analysis_warn(a, "the traced processes' streams left in the .parts folder next to "
				 "the recording were read too (%u)", t->parts_read);
	if (t->parts_skipped)
		analysis_warn(a, "%u entr%s of the .parts folder skipped: %s", t->parts_skipped,
			      t->parts_skipped == 1 ? "y" : "ies", t->parts_skip_why);
	if (t->drops_activity || t->drops_api || t->drops_write)
		analysis_warn(a, "records were dropped while recording (GPU activity %llu, host calls "
				 "%llu, failed writes %llu): figures are lower bounds",
			      (unsigned long long)t->drops_activity, (unsigned long long)t->drops_api,
			      (unsigned long long)t->drops_write);
	for (size_t i = 0; i < t->events.n; i++) {
		if (t->events.v[i].code == GW_IEV_CUPTI_BUSY)
			analysis_warn(a, "another tool held CUPTI in pid %u (%s): host calls were not "
					 "traced, so sync attribution is approximate",
				      t->events.v[i].pid, t->events.v[i].detail);
		else if (t->events.v[i].code == GW_IEV_CUPTI_ERROR)
			analysis_warn(a, "CUPTI reported an error in pid %u: %s", t->events.v[i].pid,
				      t->events.v[i].detail);
		else if (t->events.v[i].code == GW_IEV_NO_CUPTI) {
			analysis_warn(a, "no GPU timeline from pid %u, host-side data only: %s",
				      t->events.v[i].pid, t->events.v[i].detail);
			no_cupti = 1;
		}
	}
	if (t->samples_back_in_time)
		analysis_warn(a, "%llu thread samples went back in time (a damaged recording?): each "
				 "was read at the time of the sample before it",
			      (unsigned long long)t->samples_back_in_time);
	if (trace_meta(t, "record.stopped_early"))
		analysis_warn(a, "recording stopped early (%s limit): later activity is not included",
			      trace_meta(t, "record.stopped_early"));

	sort_timelines(a);
	if (t->nops == 0) {
		const char *inj = trace_meta(t, "record.inject");

		if (!no_cupti) /* else the line above said why */
			analysis_warn(a, "%s", t->verdict.kind != GW_VERDICT_OK
				       ? "no GPU activity in what this recording holds: it is cut short "
					 "or damaged, and the traced processes' GPU timeline is appended "
					 "at its end, so their CUDA calls may be in the part that is missing"
				       : inj && !strcmp(inj, "yes")
				       ? "no GPU activity was recorded: the program made no CUDA calls"
				       : "no GPU timeline in this recording (no NVIDIA driver or no "
					 "injection library when it was made)");
		detect_framework(a);
		run_rules(a);
		sites_attach(a);
		analysis_facts(a);
		self_check(a);
		return a->err;
	}
	index_host_samples(a);
	take_totals(a);
	pick_main(a, &t->scan->pc);
	mark_gpu_processes(a);
	detect_framework(a);
	build_windows(a);
	hostcoll_spans(a);
	check_lost_tail(a);
	ret = detect_steps(a, steps);
	if (ret < 0)
		return ret;
	note_ring(a); /* after detect_steps: it needs first_op */
	steady_pass(a);
	judge_sufficiency(a);
	run_rules(a);
	sites_attach(a);
	analysis_facts(a);
	self_check(a);
	note_memory(a);
	if (t->nomem) /* in a pass that reads the file again */
		analysis_nomem(a, "reading the recording again");
	return a->err;
}

void analysis_free(struct analysis *a)
{
	for (size_t i = 0; i < a->warnings.n; i++)
		free(a->warnings.v[i]);
	free(a->warnings.v);
	free(a->steps.v);
	free(a->gaps.v);
	free(a->windows.v);
	free(a->findings.v);
	kname_cache_free(a->knames);
	free(a->sites.v);
	free(a->name_totals);
	depgraph_free(a->graph);
	if (a->x) {
		free(a->x->threads.v);
		free(a->x->dstate.v);
		free(a->x->dstate_maxend.v);
		free(a->x->io_reads.v);
		free(a->x->io_writes.v);
		free(a->x->comm_spans.v);
		free(a->x->other_run.v);
		free(a->x->iter_starts.v);
		free(a->x->node_site.v);
		free(a->x->node_optim.v);
		for (size_t i = 0; i < FRAME_MEMOS; i++)
			free(a->x->frame_memo[i].v);
		free(a->x->loop_path);
		hmap_free(&a->x->site_index);
		free(a->x->dec.v);
		free(a->x);
	}
	memset(a, 0, sizeof(*a));
}
