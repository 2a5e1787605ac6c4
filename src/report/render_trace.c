/* Timeline export in the Chrome trace-event format (opens in Perfetto or
 * chrome://tracing): what gpuwhy saw and how it judged it. One process per
 * GPU with a track per CUDA stream, a track of idle intervals named by their
 * cause, a track of steps; one process for the host calls the attribution
 * used. Times are microseconds from the first GPU operation. Kernels are
 * named by their short name; args.name holds the demangled one. */
#include <stdio.h>
#include <string.h>

#include "../analyze/analyze.h"
#include "../util/json.h"
#include "render.h"

/* Perfetto copes. An event takes about 170 bytes, a kernel's about 240 more
 * with its demangled name (c4 fixture, PyTorch elementwise kernels: 659,272
 * events, 113 MB without the names, 191 MB with them): under ~1 GB. */
#define MAX_EVENTS 2000000

static void event_args(struct json *j, const char *name, const char *cat, double ts_us, double dur_us,
		       unsigned pid, unsigned tid, const char *full_name)
{
	json_obj_begin(j, NULL);
	json_str(j, "name", name);
	json_str(j, "cat", cat);
	json_str(j, "ph", "X");
	json_dbl(j, "ts", ts_us);
	json_dbl(j, "dur", dur_us);
	json_u64(j, "pid", pid);
	json_u64(j, "tid", tid);
	if (full_name) {
		json_obj_begin(j, "args");
		json_str(j, "name", full_name);
		json_obj_end(j);
	}
	json_obj_end(j);
}

static void event(struct json *j, const char *name, const char *cat, double ts_us, double dur_us,
		  unsigned pid, unsigned tid)
{
	event_args(j, name, cat, ts_us, dur_us, pid, tid, NULL);
}

static void meta_name(struct json *j, const char *what, unsigned pid, unsigned tid, const char *name)
{
	json_obj_begin(j, NULL);
	json_str(j, "name", what);
	json_str(j, "ph", "M");
	json_u64(j, "pid", pid);
	json_u64(j, "tid", tid);
	json_obj_begin(j, "args");
	json_str(j, "name", name);
	json_obj_end(j);
	json_obj_end(j);
}

/* One thread's Python stacks as nested slices (a flame chart): frames
 * shared with the previous sample stay open; the others close where the
 * next sample's hold begins. */
#define TRACE_PY_DEPTH 64
static size_t py_slices(struct json *j, const struct analysis *a, const struct py_thread *th,
			unsigned pid, uint64_t base, size_t budget)
{
	const struct trace *t = a->t;
	uint32_t open[TRACE_PY_DEPTH], cur[TRACE_PY_DEPTH];
	uint64_t since[TRACE_PY_DEPTH], half, hold, ts = 0, prev_ts = 0;
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
		while (nopen > keep && n < budget) { /* close the frames that changed */
			const struct py_frame_rec *fr = &t->py_frames.v[t->py_nodes.v[open[--nopen]].frame];

			snprintf(name, sizeof(name), "%s (%s:%u)", t->names.v[fr->func],
				 t->names.v[fr->file], fr->line);
			if (at <= since[nopen] || since[nopen] < base)
				continue;
			event(j, name, "python", (double)(since[nopen] - base) / 1e3,
			      (double)(at - since[nopen]) / 1e3, pid, th->tid);
			n++;
		}
		if (!more)
			break;
		for (unsigned i = keep; i < depth; i++) {
			open[nopen] = cur[i];
			since[nopen++] = at;
		}
		prev_ts = ts;
	}
	return n;
}

int render_trace(FILE *f, const struct analysis *a)
{
	const struct trace *t = a->t;
	const uint64_t base = a->first_op;
	const unsigned host_pid = 1000, idle_tid = 1000000, step_tid = 1000001;
	struct json j;
	size_t n = 0;
	char buf[64];

	if (!t->ops.n)
		return -1;
	json_init(&j, f, 0);
	json_obj_begin(&j, NULL);
	json_str(&j, "displayTimeUnit", "ms");
	json_arr_begin(&j, "traceEvents");
	for (uint32_t d = 0; d < a->ndev && d < 16; d++) {
		snprintf(buf, sizeof(buf), "GPU %u", d);
		meta_name(&j, "process_name", d, 0, buf);
	}
	meta_name(&j, "thread_name", a->main_dev, idle_tid, "idle (gpuwhy's cause)");
	meta_name(&j, "thread_name", a->main_dev, step_tid, "steps");
	meta_name(&j, "process_name", host_pid, 0, "host CUDA calls");
	for (size_t i = 0; i < t->ops.n && n < MAX_EVENTS; i++, n++) {
		const struct gpu_op *o = &t->ops.v[i];

		const double ts = (double)(o->start - base) / 1e3, dur = (double)(o->end - o->start) / 1e3;

		if (o->kind == OP_KERNEL) {
			const char *s = analysis_kname(a, o->name, KNAME_SHORT),
				   *full = analysis_kname(a, o->name, KNAME_FULL);

			/* the demangled name only where it says more */
			event_args(&j, s, "kernel", ts, dur, o->dev, o->stream, strcmp(s, full) ? full : NULL);
		} else {
			event(&j, o->name < t->names.n ? t->names.v[o->name] : "?",
			      o->kind == OP_MEMCPY ? "memcpy" : "memset", ts, dur, o->dev, o->stream);
		}
	}
	for (size_t i = 0; i < a->gaps.n && n < MAX_EVENTS; i++, n++) {
		const struct gap *g = &a->gaps.v[i];

		event(&j, idle_cause_id(g->cause), "idle", (double)(g->start - base) / 1e3,
		      (double)(g->end - g->start) / 1e3, a->main_dev, idle_tid);
	}
	for (size_t i = 0; i < a->steps.n && n < MAX_EVENTS; i++, n++) {
		const struct step *s = &a->steps.v[i];

		snprintf(buf, sizeof(buf), "%s %zu%s", a->step_window_ns ? "window" : "step", i + 1,
			 s->periodic ? " (periodic stall)" : "");
		event(&j, buf, "step", (double)(s->start - base) / 1e3, (double)(s->end - s->start) / 1e3,
		      a->main_dev, step_tid);
	}
	for (size_t i = 0; i < t->calls.n && n < MAX_EVENTS; i++, n++) {
		const struct host_call *c = &t->calls.v[i];

		if (c->start < base)
			continue;
		event(&j, c->name < t->names.n ? t->names.v[c->name] : "?", "host",
		      (double)(c->start - base) / 1e3, (double)(c->end - c->start) / 1e3, host_pid, c->tid);
	}
	/* Python stacks: one process per job process, a track per thread */
	for (size_t i = 0; i < t->py_threads.n && n < MAX_EVENTS; i++) {
		const struct py_thread *th = &t->py_threads.v[i];
		unsigned pid = 2000000 + th->pid;

		snprintf(buf, sizeof(buf), "Python stacks, pid %u", th->pid);
		meta_name(&j, "process_name", pid, 0, buf);
		snprintf(buf, sizeof(buf), "thread %u%s", th->tid,
			 th->pid == a->main_pid && th->tid == a->main_tid ? " (training thread)" : "");
		meta_name(&j, "thread_name", pid, th->tid, buf);
		n += py_slices(&j, a, th, pid, base, MAX_EVENTS - n);
	}
	json_arr_end(&j);
	json_obj_end(&j);
	json_done(&j);
	return n >= MAX_EVENTS ? 1 : 0;
}
