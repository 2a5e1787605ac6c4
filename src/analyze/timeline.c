/* The GPU timeline without holding it. The reading pass (load.c) hands
 * every operation to timeline_add(): it is named and classified, summed into
 * per-device and per-process totals, and given to its device's step finder
 * (step_finder.c), which keeps a prefix and then only the marker's starts.
 * The analysis reads the operations a second time through timeline_replay()
 * (replay.c), each device's in time order.
 *
 * Order: CUPTI returns its activity buffers out of time order, so in a file
 * an operation can start up to about a second before one already read on
 * the same device (bench/disorder.sh). The reading pass measures, per device,
 * the most an operation starts before the latest start read before it (its
 * lateness). In the second reading each device's operations go through a
 * reorder buffer (ordered.c) that releases an operation once a start later by that
 * lateness has been read: no operation can come after that and belong
 * before, so they come out in (start, order read) order, as a stable sort of
 * the whole timeline would give them. Memory is one lateness window of
 * operations (none where they come in order), not the run. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* ---- names and kernel classes ------------------------------------------ */

/* Copies and memsets get names too ("[memcpy HtoD pageable]"), so that step
 * detection can use them (often the only once-per-step operation is the
 * input copy); each distinct kernel name is classified once. */
/* A kernel name's family and whether it only moves elements, in one byte
 * for the per-name cache (0xff stays "not yet"). */
#define KCLASS_MOVES 0x08
#define KCLASS_PARAMS 0x10
#define KCLASS_F64 0x20
#define KCLASS_F32 0x40
#define KCLASS_UNTYPED 0x80 /* never with F32 or F64: 0xff stays free */
_Static_assert(KC_NCLASSES <= KCLASS_MOVES, "enum kclass reaches the moves bit");
static uint8_t kernel_class_of(const char *name)
{
	return (uint8_t)(classify_kernel(name) | (kernel_moves_only(name) ? KCLASS_MOVES : 0) |
			 (kernel_updates_params(name) ? KCLASS_PARAMS : 0) | (kernel_on_doubles(name) ? KCLASS_F64 : 0) |
			 (kernel_on_floats(name) ? KCLASS_F32 : 0) | (kernel_untyped(name) ? KCLASS_UNTYPED : 0));
}

static void set_kernel_class(struct gpu_op *o, uint8_t c)
{
	o->name_class = c & (KCLASS_MOVES - 1);
	o->moves_only = (c & KCLASS_MOVES) != 0;
	o->updates_params = (c & KCLASS_PARAMS) != 0;
	o->f64 = (c & KCLASS_F64) != 0;
	o->f32 = (c & KCLASS_F32) != 0;
	o->untyped = (c & KCLASS_UNTYPED) != 0;
}

void timeline_name_op(struct trace *t, struct gpu_op *o)
{
	struct op_namer *nm = &t->scan->nm;

	static const char *const kind_names[] = { [COPY_HTOD] = "HtoD", [COPY_DTOH] = "DtoH",
						  [COPY_DTOD] = "DtoD", [COPY_PTOP] = "PtoP" };
	static const char *const mem_names[] = { "?", "pageable", "pinned", "device", "array",
						 "managed", "device-static", "managed-static" };

	if (o->kind == OP_KERNEL) {
		if (o->name >= nm->ncls) {
			size_t ncap = nm->ncls ? nm->ncls : 256;
			uint8_t *nc;

			while (ncap <= o->name)
				ncap *= 2;
			nc = realloc(nm->cls, ncap);
			if (!nc) {
				set_kernel_class(o, kernel_class_of(t->names.v[o->name]));
				return;
			}
			memset(nc + nm->ncls, 0xff, ncap - nm->ncls);
			nm->cls = nc;
			nm->ncls = ncap;
		}
		if (nm->cls[o->name] == 0xff)
			nm->cls[o->name] = kernel_class_of(t->names.v[o->name]);
		set_kernel_class(o, nm->cls[o->name]);
	} else if (o->kind == OP_MEMCPY) {
		unsigned ck = o->copy_kind < 16 ? o->copy_kind : 15;
		unsigned host = o->copy_kind == COPY_DTOH ? o->dst_kind : o->src_kind;
		unsigned hk = host < 8 ? host : 0;
		char buf[64];

		if (!nm->copy[ck][hk]) {
			snprintf(buf, sizeof(buf), "[memcpy %s %s]",
				 o->copy_kind < 11 && kind_names[o->copy_kind] ? kind_names[o->copy_kind]
										 : "other",
				 host < 8 ? mem_names[host] : "?");
			nm->copy[ck][hk] = trace_intern(t, buf);
		}
		o->name = nm->copy[ck][hk];
	} else if (o->kind == OP_MEMSET) {
		if (!nm->memset)
			nm->memset = trace_intern(t, "[memset]");
		o->name = nm->memset;
	}
}

/* ---- the reading pass --------------------------------------------------- */

int timeline_begin(struct trace *t)
{
	t->scan = calloc(1, sizeof(*t->scan));
	if (!t->scan)
		return -ENOMEM;
	return 0;
}

/* Order-free totals (device summaries, per-process counts), lateness, and
 * the device's step finder. */
void timeline_add(struct trace *t, struct gpu_op *o)
{
	struct op_scan *s = t->scan;
	uint64_t d = o->end - o->start;

	timeline_name_op(t, o);
	t->nops++;
	if (o->end > s->ops_end)
		s->ops_end = o->end;
	int k;

	for (k = 0; k < s->pc.npids && s->pc.pid[k] != o->pid; k++)
		;
	if (k == s->pc.npids && s->pc.npids < 64)
		s->pc.pid[s->pc.npids++] = o->pid;
	if (k < 64)
		s->pc.n[k]++;
	if (o->dev >= GW_MAX_GPUS)
		return;
	s->updates[o->dev] += o->kind == OP_KERNEL && o->updates_params;
	struct device_summary *ds = &s->dev[o->dev];

	if (!ds->nkernels && !ds->ncopies) {
		ds->dev = o->dev;
		ds->first_start = o->start;
	}
	if (o->kind == OP_KERNEL) {
		ds->nkernels++;
		if (o->name_class == KC_COMM)
			ds->comm_ns += d;
		else
			ds->kernel_ns += d;
	} else {
		ds->ncopies++;
		ds->copy_ns += d;
	}
	if (o->start < ds->first_start)
		ds->first_start = o->start;
	if (o->end > s->last_end[o->dev])
		s->last_end[o->dev] = o->end;
	if (s->max_start[o->dev] > o->start && s->max_start[o->dev] - o->start > s->late_ns[o->dev])
		s->late_ns[o->dev] = s->max_start[o->dev] - o->start;
	if (o->start > s->max_start[o->dev])
		s->max_start[o->dev] = o->start;

	step_finder_add(t, &s->finder[o->dev], o);
	hostcoll_scan(t, o);
}

int timeline_call(struct trace *t, uint32_t pid, uint32_t tid, int cls)
{
	struct op_scan *s = t->scan;
	uint64_t key = (uint64_t)pid << 32 | tid, i = hmap_get(&s->thread_index, key);

	if (!i) {
		if (vec_grow_((void **)&s->threads, &s->threads_cap, s->nthreads + 1, sizeof(*s->threads)) < 0)
			return -ENOMEM;
		s->threads[s->nthreads] = (struct thread_calls){ pid, tid, 0, 0 };
		if (hmap_put(&s->thread_index, key, s->nthreads + 1) < 0)
			return -ENOMEM;
		i = ++s->nthreads;
	}
	s->threads[i - 1].calls++;
	s->threads[i - 1].syncs += cls == HC_SYNC;
	return 0;
}

void timeline_gpu_sample(struct trace *t, const struct gpu_samp *s)
{
	struct gpu_sample_totals *g = s->gpu < GW_MAX_GPUS ? &t->gsum[s->gpu] : NULL;

	t->ngsamples++;
	/* NVML utilization averages over up to a second: the GPU worked then;
	 * not where its memory fell under half its peak (a context torn down
	 * at the job's exit reads as busy a last time) */
	if (FIELD_VALID(s, GPU_VALID_UTIL) && s->util >= 10 && s->ts > t->last_busy_ts &&
	    !(g && s->mem_used_mib && 2 * s->mem_used_mib < g->max_mem_used_mib))
		t->last_busy_ts = s->ts;
	if (!g)
		return;

	if (FIELD_VALID(s, GPU_VALID_SMCLK) && s->sm_mhz > g->max_sm_mhz)
		g->max_sm_mhz = s->sm_mhz;
	if (s->mem_used_mib > g->max_mem_used_mib)
		g->max_mem_used_mib = s->mem_used_mib;
	/* busy: utilization above zero and no idle reason */
	if (!FIELD_VALID(s, GPU_VALID_REASONS) || (s->reasons & 1) || !s->util)
		return;
	g->busy++;
	if (s->reasons & GPU_THROTTLE_REASONS) {
		g->throttled++;
		g->throttled_mhz += s->sm_mhz;
	}
	if (s->reasons & GPU_FAULT_REASONS) {
		g->faulted++;
		g->faulted_mhz += s->sm_mhz;
	}
}

int timeline_file_done(struct trace *t, const char *path, uint64_t records)
{
	struct op_scan *s = t->scan;
	struct scan_file *nf;

	if (vec_grow_((void **)&s->files, &s->files_cap, s->nfiles + 1, sizeof(*s->files)) < 0)
		return -ENOMEM;
	nf = s->files;
	nf[s->nfiles].path = strdup(path);
	nf[s->nfiles].records = records;
	if (!nf[s->nfiles].path)
		return -ENOMEM;
	s->nfiles++;
	return 0;
}

void timeline_end(struct trace *t)
{
	struct op_scan *s = t->scan;

	for (unsigned d = 0; d < GW_MAX_GPUS; d++)
		s->dev[d].window_ns = s->last_end[d] > s->dev[d].first_start
					      ? s->last_end[d] - s->dev[d].first_start : 0;
	hostcoll_pair(t);
}

void timeline_free(struct op_scan *s)
{
	if (!s)
		return;
	for (unsigned d = 0; d < GW_MAX_GPUS; d++)
		step_finder_free(&s->finder[d]);
	for (size_t i = 0; i < s->nfiles; i++)
		free(s->files[i].path);
	free(s->files);
	free(s->threads);
	hmap_free(&s->thread_index);
	free(s->staged.v);
	free(s->nm.cls);
	free(s);
}
