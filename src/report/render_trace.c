/* Timeline export in the Chrome trace-event format (opens in Perfetto or
 * chrome://tracing): what gpuwhy saw and how it judged it.
 *
 *   process "GPU d"            a track per CUDA stream (and process), a track
 *                              of idle intervals named by their cause, a track
 *                              of steps (main GPU), counter tracks of the NVML
 *                              and GPM readings (SM clock, power, utilization,
 *                              SM, tensor and DRAM activity, PCIe); its pid is
 *                              GPU_PID(d), above any Linux pid
 *   each job process (its pid) a track per thread of the CUDA calls recorded,
 *                              with flow arrows from a launch to its kernel,
 *                              and a track per thread of its sampled stacks
 *
 * A process and a thread are named once, when the first event of theirs is
 * written: no name without events.
 * Times are integer nanoseconds from the earliest time in the recording,
 * written as microseconds with three decimals (exact at any length). No two
 * slices overlap on a track: a slice that would overlap another without
 * nesting inside it goes to a second track of the same stream or thread
 * ("overlapping"). Kernels are named by their short name; the first slice
 * of each name has the demangled one in args.name where it says more, and
 * every kernel its launch's grid, block, stream, correlation id, registers
 * and shared memory in args. Past TRACE_MAX_EVENTS the shortest
 * kernels are left out first (then the host calls other than syncs and
 * copies, then Python stacks); steps, idle intervals, copies, syncs and
 * counters always stay. */
#include <stdlib.h>
#include <string.h>

#include "../analyze/analyze.h"
#include "../analyze/export.h"
#include "../util/json.h"
#include "render.h"

/* The default limit: Perfetto copes; an event takes about 100 bytes. */
#define TRACE_MAX_EVENTS 2000000
/* Linux's pids stay below PID_MAX_LIMIT (2^22): the GPUs' tracks go above */
#define GPU_PID(d) (4194304u + (d))
#define IS_GPU_PID(p) ((p) >= GPU_PID(0) && (p) < GPU_PID(GW_MAX_GPUS))

/* A track: the slices of one stream or thread. Lanes are the extra tracks
 * that slices overlapping without nesting go to; each keeps the ends of
 * its open (enclosing) slices. */
#define LANES 8
#define LANE_DEPTH 32
struct lane {
	uint64_t ends[LANE_DEPTH];
	unsigned depth;
	uint32_t tid; /* 0 until used */
};
struct track {
	uint32_t pid;
	uint64_t key;
	char name[96];
	struct lane lane[LANES];
};

struct out {
	struct json j;
	const struct analysis *a;
	uint64_t base;
	uint32_t next_tid;
	struct track *tracks;
	size_t ntracks, cap;
	uint32_t named[256]; /* processes named so far (a pid once) */
	size_t nnamed;
	uint64_t events, overflow; /* slices that found no lane */
};

static void meta_name(struct out *o, const char *what, uint32_t pid, uint32_t tid, const char *name)
{
	json_obj_begin(&o->j, NULL);
	json_str(&o->j, "name", what);
	json_str(&o->j, "ph", "M");
	json_u64(&o->j, "pid", pid);
	json_u64(&o->j, "tid", tid);
	json_obj_begin(&o->j, "args");
	json_str(&o->j, "name", name);
	json_obj_end(&o->j);
	json_obj_end(&o->j);
}

static void meta_sort(struct out *o, uint32_t pid, uint32_t tid, uint64_t index)
{
	json_obj_begin(&o->j, NULL);
	json_str(&o->j, "name", "thread_sort_index");
	json_str(&o->j, "ph", "M");
	json_u64(&o->j, "pid", pid);
	json_u64(&o->j, "tid", tid);
	json_obj_begin(&o->j, "args");
	json_u64(&o->j, "sort_index", index);
	json_obj_end(&o->j);
	json_obj_end(&o->j);
}

/* The process_name (and sort index: GPUs first) of pid, before its first
 * event; once per pid. */
static void proc_named(struct out *o, uint32_t pid)
{
	const struct trace *t = o->a->t;
	char buf[160];

	for (size_t i = 0; i < o->nnamed; i++)
		if (o->named[i] == pid)
			return;
	if (o->nnamed < sizeof(o->named) / sizeof(o->named[0]))
		o->named[o->nnamed++] = pid;
	if (IS_GPU_PID(pid)) {
		const char *model = trace_gpu_name(t, pid - GPU_PID(0));

		snprintf(buf, sizeof(buf), "GPU %u%s%s%s", pid - GPU_PID(0), model ? " (" : "", model ? model : "",
			 model ? ")" : "");
	} else {
		const struct proc_info *p = trace_proc(t, pid);

		if (p && p->cmdline && *p->cmdline)
			snprintf(buf, sizeof(buf), "%.100s%s", p->cmdline, strlen(p->cmdline) > 100 ? "..." : "");
		else
			snprintf(buf, sizeof(buf), "pid %u", pid);
	}
	meta_name(o, "process_name", pid, 0, buf);
	json_obj_begin(&o->j, NULL);
	json_str(&o->j, "name", "process_sort_index");
	json_str(&o->j, "ph", "M");
	json_u64(&o->j, "pid", pid);
	json_u64(&o->j, "tid", 0);
	json_obj_begin(&o->j, "args");
	json_u64(&o->j, "sort_index", IS_GPU_PID(pid) ? pid - GPU_PID(0) : 100 + o->nnamed);
	json_obj_end(&o->j);
	json_obj_end(&o->j);
}

static struct track *track_get(struct out *o, uint32_t pid, uint64_t key, const char *name)
{
	/* callers come in runs of one track: the last one first */
	for (size_t i = o->ntracks; i-- > 0;)
		if (o->tracks[i].pid == pid && o->tracks[i].key == key)
			return &o->tracks[i];
	if (o->ntracks == o->cap) {
		size_t cap = o->cap ? o->cap * 2 : 64;
		struct track *v = realloc(o->tracks, cap * sizeof(*v));

		if (!v)
			return NULL;
		o->tracks = v;
		o->cap = cap;
	}
	struct track *tr = &o->tracks[o->ntracks++];

	memset(tr, 0, sizeof(*tr));
	tr->pid = pid;
	tr->key = key;
	snprintf(tr->name, sizeof(tr->name), "%s", name);
	return tr;
}

/* The tid of the lane a slice [start, end) goes to, in start order: 0 if
 * none is free (counted). */
static uint32_t place(struct out *o, struct track *tr, uint64_t start, uint64_t end)
{
	if (!tr)
		return 0;
	for (unsigned k = 0; k < LANES; k++) {
		struct lane *l = &tr->lane[k];

		while (l->depth && l->ends[l->depth - 1] <= start)
			l->depth--;
		if (l->depth == LANE_DEPTH || (l->depth && l->ends[l->depth - 1] < end))
			continue;
		l->ends[l->depth++] = end;
		if (!l->tid) {
			char name[128];

			l->tid = ++o->next_tid;
			proc_named(o, tr->pid);
			if (k)
				snprintf(name, sizeof(name), "%s (overlapping, %u)", tr->name, k + 1);
			else
				snprintf(name, sizeof(name), "%s", tr->name);
			meta_name(o, "thread_name", tr->pid, l->tid, name);
			meta_sort(o, tr->pid, l->tid, l->tid);
		}
		return l->tid;
	}
	o->overflow++;
	return 0;
}

/* A complete event up to its args (slice_end closes it). */
static void slice_begin(struct out *o, const char *name, const char *cat, uint64_t start, uint64_t end,
			uint32_t pid, uint32_t tid)
{
	json_obj_begin(&o->j, NULL);
	json_str(&o->j, "name", name);
	json_str(&o->j, "cat", cat);
	json_str(&o->j, "ph", "X");
	json_ns_us(&o->j, "ts", (int64_t)(start - o->base));
	json_ns_us(&o->j, "dur", (int64_t)(end - start));
	json_u64(&o->j, "pid", pid);
	json_u64(&o->j, "tid", tid);
}

static void slice_end(struct out *o)
{
	json_obj_end(&o->j);
	o->events++;
}

static void slice(struct out *o, const char *name, const char *cat, uint64_t start, uint64_t end,
		  uint32_t pid, uint32_t tid, const char *arg_name)
{
	slice_begin(o, name, cat, start, end, pid, tid);
	if (arg_name) {
		json_obj_begin(&o->j, "args");
		json_str(&o->j, "name", arg_name);
		json_obj_end(&o->j);
	}
	slice_end(o);
}

/* ---- what the export's reading gathered (analyze/export.h) ------------- */

static const char *const counter_name[CT_N] = {
	"SM clock (MHz)", "power (W)", "GPU utilization (%)", "SM activity (%)",
	"tensor activity (%)", "DRAM activity (%)", "PCIe (MB/s)",
};

static void counters(struct out *o, const struct trace_export *s)
{
	for (size_t i = 0; i < s->counters.n; i++) {
		const struct trace_counter *c = &s->counters.v[i];

		if (c->ts < o->base)
			continue;
		proc_named(o, GPU_PID(c->gpu)); /* once: a short list */
		json_obj_begin(&o->j, NULL);
		json_str(&o->j, "name", counter_name[c->what]);
		json_str(&o->j, "ph", "C");
		json_ns_us(&o->j, "ts", (int64_t)(c->ts - o->base));
		json_u64(&o->j, "pid", GPU_PID(c->gpu));
		json_obj_begin(&o->j, "args");
		if (c->what == CT_PCIE) {
			json_dbl(&o->j, "tx", c->v);
			json_dbl(&o->j, "rx", c->v2);
		} else {
			json_dbl(&o->j, "value", c->v);
		}
		json_obj_end(&o->j);
		json_obj_end(&o->j);
		o->events++;
	}
}

/* ---- Python stacks ------------------------------------------------------ */

/* One thread's Python stacks as nested slices (a flame chart): frames
 * shared with the previous sample stay open; the others close where the
 * next sample's hold begins. */
#define TRACE_PY_DEPTH 64
struct py_track {
	uint32_t pid, tid; /* tid 0 until its first slice: then named */
	char name[160];
};

static size_t py_slices(struct out *o, const struct analysis *a, const struct py_thread *th,
			struct py_track *pt, size_t budget)
{
	const struct trace *t = a->t;
	uint32_t open[TRACE_PY_DEPTH], cur[TRACE_PY_DEPTH];
	uint64_t since[TRACE_PY_DEPTH], half, hold, ts = 0, prev_ts = 0, last_at = 0;
	unsigned nopen = 0;
	size_t pos = 0, n = 0;
	uint32_t node;
	int more = 1;
	char name[512];

	py_hold(t, &half, &hold);
	while (n < budget) {
		unsigned depth = 0, keep = 0;
		uint64_t at;

		more = more && py_thread_next(th, &pos, &ts, &node);
		if (more) {
			at = ts > half ? ts - half : 0;
			if (nopen && at > prev_ts + hold)
				at = prev_ts + hold; /* the thread went unsampled: close at the hold */
			/* the stack, outermost first */
			for (uint32_t k = node; k && k < t->py_nodes.n && depth < TRACE_PY_DEPTH;
			     k = t->py_nodes.v[k].parent)
				cur[depth++] = k;
			for (unsigned i = 0; i < depth / 2; i++) {
				uint32_t x = cur[i];

				cur[i] = cur[depth - 1 - i];
				cur[depth - 1 - i] = x;
			}
			while (keep < nopen && keep < depth && open[keep] == cur[keep])
				keep++;
		} else {
			at = prev_ts + half < prev_ts + hold ? prev_ts + half : prev_ts + hold;
		}
		if (at < last_at)
			at = last_at; /* a sample back in time: slices stay nested */
		last_at = at;
		while (nopen > keep && n < budget) { /* close the frames that changed */
			const struct py_frame_rec *fr = &t->py_frames.v[t->py_nodes.v[open[--nopen]].frame];

			snprintf(name, sizeof(name), "%s (%s:%u)", t->names.v[fr->func],
				 t->names.v[fr->file], fr->line);
			if (at <= since[nopen] || since[nopen] < o->base)
				continue;
			if (!pt->tid) {
				pt->tid = ++o->next_tid;
				proc_named(o, pt->pid);
				meta_name(o, "thread_name", pt->pid, pt->tid, pt->name);
				meta_sort(o, pt->pid, pt->tid, pt->tid);
			}
			slice(o, name, "python", since[nopen], at, pt->pid, pt->tid, NULL);
			n++;
		}
		if (!more || nopen > keep)
			break; /* the end, or the budget ran out with frames still open */
		for (unsigned i = keep; i < depth; i++) {
			open[nopen] = cur[i];
			since[nopen++] = at;
		}
		prev_ts = ts;
	}
	return n;
}

/* ---- the budget ---------------------------------------------------------- */

static int cmp_u64_desc(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;

	return a < b ? 1 : a > b ? -1 : 0;
}

/* Host calls by thread, then start (the longer first, so nesting holds). */
static int cmp_call(const void *x, const void *y, void *ctx)
{
	const struct host_call *v = ctx, *a = &v[*(const uint32_t *)x], *b = &v[*(const uint32_t *)y];

	if (a->pid != b->pid)
		return a->pid < b->pid ? -1 : 1;
	if (a->tid != b->tid)
		return a->tid < b->tid ? -1 : 1;
	if (a->start != b->start)
		return a->start < b->start ? -1 : 1;
	return a->end > b->end ? -1 : a->end < b->end;
}

static int call_kept_always(const struct host_call *c)
{
	return c->cls == HC_SYNC || c->cls == HC_MEMCPY;
}

/* The earliest time anything in the timeline has: every timestamp is
 * written from there, so none can be negative (or wrap around). */
static uint64_t earliest(const struct analysis *a, const struct trace_export *s)
{
	const struct trace *t = a->t;
	const char *st = trace_meta(t, "record.start_ns");
	uint64_t b = st ? strtoull(st, NULL, 10) : 0, half, hold;

	if (!b)
		b = UINT64_MAX;
	for (size_t i = 0; i < t->ops.n; i++)
		b = t->ops.v[i].start < b ? t->ops.v[i].start : b;
	for (size_t i = 0; i < t->calls.n; i++)
		if (t->calls.v[i].start)
			b = t->calls.v[i].start < b ? t->calls.v[i].start : b;
	for (size_t i = 0; i < a->gaps.n; i++)
		b = a->gaps.v[i].start < b ? a->gaps.v[i].start : b;
	for (size_t i = 0; i < a->steps.n; i++)
		b = a->steps.v[i].start < b ? a->steps.v[i].start : b;
	for (size_t i = 0; i < s->counters.n; i++)
		b = s->counters.v[i].ts < b ? s->counters.v[i].ts : b;
	py_hold(t, &half, &hold);
	for (size_t i = 0; i < t->py_threads.n; i++)
		if (t->py_threads.v[i].n && t->py_threads.v[i].first_ts > half &&
		    t->py_threads.v[i].first_ts - half < b)
			b = t->py_threads.v[i].first_ts - half;
	return b == UINT64_MAX ? 0 : b;
}

/* Which kernels fit the limit: the longest first. thr is the shortest
 * duration kept and at_thr how many of that duration still fit; left is
 * what remains for host calls and Python stacks. */
struct budget {
	uint64_t thr, at_thr;
	size_t left;
};

static void plan_budget(const struct analysis *a, const struct trace_export *sec, uint64_t limit,
			struct render_trace_stats *st, struct budget *b)
{
	const struct trace *t = a->t;
	uint64_t *durs = NULL, must = 0, nkernels = 0, keep_k;

	/* what always stays; then kernels, longest first */
	must = a->gaps.n + a->steps.n + sec->counters.n;
	for (size_t i = 0; i < t->ops.n; i++) {
		if (t->ops.v[i].kind == OP_KERNEL)
			nkernels++;
		else
			must++;
	}
	for (size_t i = 0; i < t->calls.n; i++)
		if (call_kept_always(&t->calls.v[i]))
			must++;
	b->left = must < limit ? limit - must : 0;
	keep_k = nkernels;
	if (nkernels > b->left && (durs = malloc(nkernels * sizeof(*durs)))) {
		size_t n = 0;

		for (size_t i = 0; i < t->ops.n; i++)
			if (t->ops.v[i].kind == OP_KERNEL)
				durs[n++] = t->ops.v[i].end - t->ops.v[i].start;
		qsort(durs, n, sizeof(*durs), cmp_u64_desc);
		keep_k = b->left;
		if (keep_k) {
			b->thr = durs[keep_k - 1];
			b->at_thr = 1; /* how many of duration thr fit: those above come first */
			for (size_t i = keep_k - 1; i-- > 0 && durs[i] == b->thr;)
				b->at_thr++;
		} else {
			b->thr = UINT64_MAX;
		}
		st->dropped = nkernels - keep_k;
		free(durs);
	}
	b->left -= keep_k < b->left ? keep_k : b->left;
}

static void write_header(struct out *o, const struct analysis *a, const struct render_trace_stats *st)
{
	json_obj_begin(&o->j, NULL);
	json_str(&o->j, "displayTimeUnit", "ms");
	json_obj_begin(&o->j, "otherData");
	json_str(&o->j, "producer", "gpuwhy " GPUWHY_VERSION);
	json_str(&o->j, "recording", trace_shown(a->t));
	json_u64(&o->j, "time_zero_ns", o->base); /* CLOCK_MONOTONIC of ts 0 */
	json_u64(&o->j, "kernels_left_out", st->dropped);
	json_obj_end(&o->j);
	json_arr_begin(&o->j, "traceEvents");
}

/* The judgement first, on top of the main GPU: steps and idle intervals. */
static void write_judgement(struct out *o, const struct analysis *a)
{
	struct track *steps = track_get(o, GPU_PID(a->main_dev), 1ull << 62, "steps");
	struct track *idle = track_get(o, GPU_PID(a->main_dev), (1ull << 62) + 1, "idle (gpuwhy's cause)");
	char buf[160];

	for (size_t i = 0; i < a->steps.n; i++) {
		const struct step *s = &a->steps.v[i];
		uint32_t tid;

		if (s->end < s->start || !(tid = place(o, steps, s->start, s->end)))
			continue;
		snprintf(buf, sizeof(buf), "%s %zu%s", a->step_window_ns ? "window" : "step", i + 1,
			 s->periodic ? " (periodic stall)" : "");
		slice(o, buf, "step", s->start, s->end, GPU_PID(a->main_dev), tid, NULL);
	}
	for (size_t i = 0; i < a->gaps.n; i++) {
		const struct gap *g = &a->gaps.v[i];
		uint32_t tid;

		if (g->end < g->start || !(tid = place(o, idle, g->start, g->end)))
			continue;
		slice(o, idle_cause_id(g->cause), "idle", g->start, g->end, GPU_PID(a->main_dev), tid,
		      NULL);
	}
}

/* GPU operations: a track per (process, stream); op_tid[i] gets the lane
 * each was drawn on (0: left out). named has a bit per kernel name whose
 * full form was written. */
/* A kernel: its short name; in args the demangled one (once per name:
 * repeated on every slice it tripled the file) and its launch. */
static void kernel_slice(struct out *o, const struct analysis *a, const struct gpu_op *op, uint32_t tid,
			 uint8_t *named, const struct kernel_args *ka)
{
	const struct trace *t = a->t;
	const char *s = analysis_kname(a, op->name, KNAME_SHORT), *full = analysis_kname(a, op->name, KNAME_FULL);
	int first = named && op->name < t->names.n && !(named[op->name / 8] & (1u << (op->name % 8)));
	char buf[64];

	if (first)
		named[op->name / 8] |= (uint8_t)(1u << (op->name % 8));
	slice_begin(o, s, "kernel", op->start, op->end, GPU_PID(op->dev), tid);
	json_obj_begin(&o->j, "args");
	if (first && strcmp(s, full))
		json_str(&o->j, "name", full);
	json_u64(&o->j, "stream", op->stream);
	if (ka && ka->have) {
		snprintf(buf, sizeof(buf), "%ux%ux%u", ka->grid[0], ka->grid[1], ka->grid[2]);
		json_str(&o->j, "grid", buf);
		snprintf(buf, sizeof(buf), "%ux%ux%u", ka->block[0], ka->block[1], ka->block[2]);
		json_str(&o->j, "block", buf);
		json_u64(&o->j, "correlation", ka->corr);
		json_u64(&o->j, "registers_per_thread", ka->regs);
		json_u64(&o->j, "shared_memory_bytes", ka->shmem);
	}
	json_obj_end(&o->j);
	slice_end(o);
}

static void copy_slice(struct out *o, const struct analysis *a, const struct gpu_op *op, uint32_t tid)
{
	const struct trace *t = a->t;

	slice_begin(o, op->name < t->names.n ? t->names.v[op->name] : "?",
		    op->kind == OP_MEMCPY ? "memcpy" : "memset", op->start, op->end, GPU_PID(op->dev), tid);
	json_obj_begin(&o->j, "args");
	json_u64(&o->j, "bytes", op->bytes);
	json_u64(&o->j, "stream", op->stream);
	json_obj_end(&o->j);
	slice_end(o);
}

static void write_ops(struct out *o, const struct analysis *a, const struct render_trace_stats *st,
		      struct budget *b, uint32_t *op_tid, uint8_t *named, const struct kernel_args *ka)
{
	const struct trace *t = a->t;
	int many_pids = 0;
	char buf[160];

	for (size_t i = 1; i < t->ops.n && !many_pids; i++)
		many_pids = t->ops.v[i].pid != t->ops.v[0].pid;
	for (size_t i = 0; i < t->ops.n; i++) {
		const struct gpu_op *op = &t->ops.v[i];
		uint64_t dur = op->end - op->start;
		struct track *tr;
		uint32_t tid;

		if (op->end < op->start)
			continue;
		if (op->kind == OP_KERNEL && st->dropped) { /* the longest kernels stay */
			if (dur < b->thr || (dur == b->thr && !b->at_thr))
				continue;
			if (dur == b->thr)
				b->at_thr--;
		}
		if (many_pids)
			snprintf(buf, sizeof(buf), "stream %u (pid %u)", op->stream, op->pid);
		else
			snprintf(buf, sizeof(buf), "stream %u", op->stream);
		tr = track_get(o, GPU_PID(op->dev), (uint64_t)op->pid << 32 | op->stream, buf);
		if (!(tid = place(o, tr, op->start, op->end)))
			continue;
		if (op_tid)
			op_tid[i] = tid;
		if (op->kind == OP_KERNEL)
			kernel_slice(o, a, op, tid, named, ka ? &ka[i] : NULL);
		else
			copy_slice(o, a, op, tid);
	}
}

/* Host calls: a track per thread, in (thread, start) order through order[];
 * call_tid[i] gets the lane each was drawn on. Calls other than syncs and
 * copies take from the budget. */
static void write_calls(struct out *o, const struct analysis *a, uint32_t *order, uint32_t *call_tid,
			struct budget *b)
{
	const struct trace *t = a->t;
	char buf[160];

	for (size_t i = 0; i < t->calls.n; i++)
		order[i] = (uint32_t)i;
	qsort_r(order, t->calls.n, sizeof(*order), cmp_call, t->calls.v);
	for (size_t k = 0; k < t->calls.n; k++) {
		const struct host_call *c = &t->calls.v[order[k]];
		struct track *tr;
		uint32_t tid;

		if (!c->start || c->end < c->start)
			continue;
		if (!call_kept_always(c)) {
			if (!b->left)
				continue;
			b->left--;
		}
		snprintf(buf, sizeof(buf), "thread %u: CUDA calls%s", c->tid,
			 c->pid == a->main_pid && c->tid == a->main_tid ? " (training thread)" : "");
		tr = track_get(o, c->pid, c->tid, buf);
		if (!(tid = place(o, tr, c->start, c->end)))
			continue;
		if (call_tid)
			call_tid[order[k]] = tid;
		slice(o, c->name < t->names.n ? t->names.v[c->name] : "?", "host", c->start, c->end, c->pid,
		      tid, NULL);
	}
}

/* A launch's arrow to its kernel, where both are drawn. */
static void write_flows(struct out *o, const struct trace *t, const struct trace_export *sec,
			const uint32_t *op_tid, const uint32_t *call_tid)
{
	for (size_t i = 0; i < sec->flows.n; i++) {
		const struct trace_flow *fl = &sec->flows.v[i];
		const struct host_call *c = &t->calls.v[fl->call];
		const struct gpu_op *op = &t->ops.v[fl->op];

		if (!op_tid[fl->op] || !call_tid[fl->call])
			continue;
		json_obj_begin(&o->j, NULL);
		json_str(&o->j, "name", "launch");
		json_str(&o->j, "cat", "launch");
		json_str(&o->j, "ph", "s");
		json_u64(&o->j, "id", i + 1);
		json_ns_us(&o->j, "ts", (int64_t)(c->start - o->base));
		json_u64(&o->j, "pid", c->pid);
		json_u64(&o->j, "tid", call_tid[fl->call]);
		json_obj_end(&o->j);
		json_obj_begin(&o->j, NULL);
		json_str(&o->j, "name", "launch");
		json_str(&o->j, "cat", "launch");
		json_str(&o->j, "ph", "f");
		json_str(&o->j, "bp", "e");
		json_u64(&o->j, "id", i + 1);
		json_ns_us(&o->j, "ts", (int64_t)(op->start - o->base));
		json_u64(&o->j, "pid", GPU_PID(op->dev));
		json_u64(&o->j, "tid", op_tid[fl->op]);
		json_obj_end(&o->j);
		o->events += 2;
	}
}

/* Python stacks: in the job process they were read from, a track per
 * thread (named with its first slice: a thread whose samples fall outside
 * the timeline gets none). */
static void write_python(struct out *o, const struct analysis *a, struct budget *b)
{
	const struct trace *t = a->t;

	for (size_t i = 0; i < t->py_threads.n && b->left; i++) {
		const struct py_thread *th = &t->py_threads.v[i];
		struct py_track pt = { th->pid, 0, "" };

		snprintf(pt.name, sizeof(pt.name), "thread %u: Python stack%s", th->tid,
			 th->pid == a->main_pid && th->tid == a->main_tid ? " (training thread)" : "");
		b->left -= py_slices(o, a, th, &pt, b->left);
	}
}

void render_trace(FILE *f, const struct analysis *a, const struct trace_export *sec, uint64_t limit,
		  struct render_trace_stats *st)
{
	const struct trace *t = a->t;
	struct out o = { 0 };
	struct budget b = { 0 };
	uint32_t *order = NULL, *call_tid = NULL, *op_tid = NULL;
	uint8_t *named = NULL; /* kernel names whose full form was written */

	memset(st, 0, sizeof(*st));
	st->limit = limit = limit ? limit : TRACE_MAX_EVENTS;
	o.base = earliest(a, sec);
	plan_budget(a, sec, limit, st, &b);

	op_tid = calloc(t->ops.n ? t->ops.n : 1, sizeof(*op_tid));
	call_tid = calloc(t->calls.n ? t->calls.n : 1, sizeof(*call_tid));
	order = malloc((t->calls.n ? t->calls.n : 1) * sizeof(*order));
	named = calloc(t->names.n / 8 + 1, 1);

	o.a = a;
	json_init(&o.j, f, 0);
	write_header(&o, a, st);
	write_judgement(&o, a);
	write_ops(&o, a, st, &b, op_tid, named, sec->kargs);
	counters(&o, sec);
	if (order)
		write_calls(&o, a, order, call_tid, &b);
	if (op_tid && call_tid)
		write_flows(&o, t, sec, op_tid, call_tid);
	write_python(&o, a, &b);
	json_arr_end(&o.j);
	json_obj_end(&o.j);
	json_done(&o.j);
	st->events = o.events;
	st->dropped_other = o.overflow;
	for (size_t i = 0; i < t->calls.n && call_tid; i++)
		st->dropped_other += !call_tid[i] && t->calls.v[i].start && t->calls.v[i].end >= t->calls.v[i].start;
	free(o.tracks);
	free(order);
	free(named);
	free(op_tid);
	free(call_tid);
}
