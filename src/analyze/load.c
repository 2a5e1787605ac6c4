/* Loads a recording into struct trace: one pass over the records, strings
 * resolved once per (stream, id) and interned globally. GPU operations go to
 * timeline.c instead of memory, and trace_read_ops() reads them again for
 * the analysis. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../format/format.h"
#include "../format/intern.h"
#include "../util/util.h"
#include "analyze.h"
#include "internal.h"

int vec_grow_(void **v, size_t *cap, size_t need, size_t elem)
{
	size_t ncap;
	void *nv;

	if (need <= *cap)
		return 0;
	ncap = *cap ? *cap * 2 : 64;
	while (ncap < need)
		ncap *= 2;
	nv = realloc(*v, ncap * elem);
	if (!nv)
		return -ENOMEM;
	*v = nv;
	*cap = ncap;
	return 0;
}

/* string -> index (the format's interning table: its ids 1, 2, ... are the
 * indexes into trace.names, whose slot 0 is ""), and (stream,id) -> index */
struct name_table {
	struct gw_intern *strings;
	struct {
		uint64_t key; /* stream << 32 | id, 0 = empty */
		uint32_t idx;
	} *ids;
	size_t id_cap, id_count;
	/* the ids of one stream in an array (ids are small and dense, and a
	 * stream's records come in long runs): index + 1, 0 = not cached */
	uint32_t fast_stream;
	uint32_t *fast;
	size_t fast_cap;
	/* enum host_class + 1 of each host call name, 0 = not yet classified */
	uint8_t *call_cls;
	size_t call_cls_cap;
};

#define FAST_IDS 65536u

uint32_t trace_intern(struct trace *t, const char *s)
{
	int is_new = 0;
	uint64_t id;
	char *copy;

	if (!s || !*s)
		return 0;
	id = gw_intern_get(t->name_index->strings, s, &is_new);
	if (!id || !is_new)
		return (uint32_t)id;
	copy = strdup(s);
	if (!copy || VEC_PUSH(t->names, copy) < 0) {
		free(copy);
		return 0;
	}
	return (uint32_t)id; /* == t->names.n - 1: both grow in step */
}

static uint64_t mix(uint64_t k)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdull;
	k ^= k >> 33;
	return k;
}

/* Remembers idx for (stream, id) in the per-stream array; a new stream
 * starts it afresh. */
static void cache_fast(struct name_table *nt, uint32_t stream, uint64_t id, uint32_t idx)
{
	if (id >= FAST_IDS)
		return;
	if (stream != nt->fast_stream && nt->fast)
		memset(nt->fast, 0, nt->fast_cap * sizeof(*nt->fast));
	nt->fast_stream = stream;
	if (id >= nt->fast_cap) {
		size_t ncap = nt->fast_cap ? nt->fast_cap : 256;
		uint32_t *nf;

		while (ncap <= id)
			ncap *= 2;
		nf = realloc(nt->fast, ncap * sizeof(*nf));
		if (!nf)
			return;
		memset(nf + nt->fast_cap, 0, (ncap - nt->fast_cap) * sizeof(*nf));
		nt->fast = nf;
		nt->fast_cap = ncap;
	}
	nt->fast[id] = idx + 1;
}

/* Global name index of string id `id` of `stream`, cached. */
static uint32_t name_of(struct trace *t, struct gw_reader *rd, uint32_t stream, uint64_t id)
{
	struct name_table *nt = t->name_index;
	uint64_t key = (uint64_t)stream << 32 | (id & 0xffffffffu);
	size_t i;

	if (!id)
		return 0;
	if (id < FAST_IDS && stream == nt->fast_stream && id < nt->fast_cap && nt->fast[id])
		return nt->fast[id] - 1;
	if ((nt->id_count + 1) * 2 > nt->id_cap) {
		size_t ncap = nt->id_cap ? nt->id_cap * 2 : 1024;
		__typeof__(nt->ids) ni = calloc(ncap, sizeof(*ni));

		if (!ni)
			return trace_intern(t, gw_reader_string(rd, stream, id));
		for (size_t j = 0; j < nt->id_cap; j++) {
			if (!nt->ids[j].key)
				continue;
			size_t k = mix(nt->ids[j].key) & (ncap - 1);

			while (ni[k].key)
				k = (k + 1) & (ncap - 1);
			ni[k] = nt->ids[j];
		}
		free(nt->ids);
		nt->ids = ni;
		nt->id_cap = ncap;
	}
	for (i = mix(key) & (nt->id_cap - 1); nt->ids[i].key; i = (i + 1) & (nt->id_cap - 1))
		if (nt->ids[i].key == key)
			break;
	if (!nt->ids[i].key) {
		nt->ids[i].key = key;
		nt->ids[i].idx = trace_intern(t, gw_reader_string(rd, stream, id));
		nt->id_count++;
	}
	cache_fast(nt, stream, id, nt->ids[i].idx);
	return nt->ids[i].idx;
}

/* A STRING record redefines an id after a lost chunk: resolve it again. */
static void forget_id(struct trace *t, struct gw_reader *rd, uint32_t stream, uint64_t id)
{
	struct name_table *nt = t->name_index;
	uint64_t key = (uint64_t)stream << 32 | (id & 0xffffffffu);

	if (stream == nt->fast_stream && id < nt->fast_cap)
		nt->fast[id] = 0;
	if (!nt->id_cap)
		return;
	for (size_t i = mix(key) & (nt->id_cap - 1); nt->ids[i].key; i = (i + 1) & (nt->id_cap - 1))
		if (nt->ids[i].key == key)
			nt->ids[i].idx = trace_intern(t, gw_reader_string(rd, stream, id));
}

static uint8_t host_class_of(const char *name)
{
	if (strstr(name, "Synchronize"))
		return HC_SYNC;
	if (strstr(name, "GraphLaunch"))
		return HC_GRAPH;
	if (strstr(name, "Launch"))
		return HC_LAUNCH;
	if (strstr(name, "Memcpy"))
		return HC_MEMCPY;
	if (strstr(name, "Memset"))
		return HC_MEMSET;
	if (strstr(name, "Malloc") || strstr(name, "Free") || strstr(name, "HostAlloc"))
		return HC_ALLOC;
	return HC_OTHER;
}

/* host_class_of() once per distinct name. */
static uint8_t call_class(struct trace *t, uint32_t name)
{
	struct name_table *nt = t->name_index;

	if (name >= nt->call_cls_cap) {
		size_t ncap = nt->call_cls_cap ? nt->call_cls_cap : 256;
		uint8_t *nc;

		while (ncap <= name)
			ncap *= 2;
		nc = realloc(nt->call_cls, ncap);
		if (!nc)
			return host_class_of(t->names.v[name]);
		memset(nc + nt->call_cls_cap, 0, ncap - nt->call_cls_cap);
		nt->call_cls = nc;
		nt->call_cls_cap = ncap;
	}
	if (!nt->call_cls[name])
		nt->call_cls[name] = (uint8_t)(host_class_of(t->names.v[name]) + 1);
	return (uint8_t)(nt->call_cls[name] - 1);
}

static struct proc_info *proc_get(struct trace *t, uint32_t pid)
{
	struct proc_info p = { .pid = pid };

	for (size_t i = 0; i < t->procs.n; i++)
		if (t->procs.v[i].pid == pid)
			return &t->procs.v[i];
	if (VEC_PUSH(t->procs, p) < 0)
		return NULL;
	return &t->procs.v[t->procs.n - 1];
}

const char *trace_meta(const struct trace *t, const char *key)
{
	/* the last value wins: later records (end of recording) refine earlier ones */
	for (size_t i = t->meta.n; i-- > 0;)
		if (strcmp(t->meta.v[i].key, key) == 0)
			return t->meta.v[i].value;
	return NULL;
}

static char *dupn(const uint8_t *s, size_t n)
{
	char *d = malloc(n + 1);

	if (d) {
		memcpy(d, s, n);
		d[n] = 0;
	}
	return d;
}

/* Appends an operation, noting whether the timeline is still in (device,
 * start) order, so that the analysis sorts only when it must. */
static int push_op(struct trace *t, const struct gpu_op *op)
{
	if (t->ops.n) {
		const struct gpu_op *last = &t->ops.v[t->ops.n - 1];

		if (op->dev < last->dev || (op->dev == last->dev && op->start < last->start))
			t->ops_unordered = 1;
	}
	return VEC_PUSH(t->ops, *op);
}

/* A recorded enum value for a bit field of struct gpu_op: 0 (unknown) when
 * it is beyond what the field holds. */
static uint16_t fits(uint64_t v, unsigned max)
{
	return v <= max ? (uint16_t)v : 0;
}

/* The GPU operation a record describes: 1 and *op filled, or 0. */
static int op_of_record(struct trace *t, struct gw_reader *rd, const struct gw_record *r,
			struct gpu_op *op)
{
	const uint64_t *v = r->v;

	_Static_assert(GW_KERNEL_START == 0 && GW_KERNEL_END == 1 && GW_MEMCPY_START == 0 &&
			       GW_MEMCPY_END == 1 && GW_MEMSET_START == 0 && GW_MEMSET_END == 1,
		       "operations start with their start and end");
	if (r->type != GW_REC_KERNEL && r->type != GW_REC_MEMCPY && r->type != GW_REC_MEMSET)
		return 0;
	if (!v[0] || v[1] < v[0])
		return 0; /* forced flush leftovers: start = end = 0 */
	switch (r->type) {
	case GW_REC_KERNEL:
		*op = (struct gpu_op){
			.start = v[GW_KERNEL_START], .end = v[GW_KERNEL_END],
			.name = name_of(t, rd, r->stream, v[GW_KERNEL_NAME]), .pid = r->stream,
			.stream = (uint32_t)v[GW_KERNEL_STREAM],
			.blocks = (uint32_t)(v[GW_KERNEL_GX] * v[GW_KERNEL_GY] * v[GW_KERNEL_GZ]),
			.kind = OP_KERNEL, .dev = (uint8_t)v[GW_KERNEL_DEVICE],
		};
		return 1;
	case GW_REC_MEMCPY:
		*op = (struct gpu_op){
			.start = v[GW_MEMCPY_START], .end = v[GW_MEMCPY_END], .bytes = v[GW_MEMCPY_BYTES],
			.pid = r->stream, .stream = (uint32_t)v[GW_MEMCPY_STREAM],
			.kind = OP_MEMCPY,
			.dev = (uint8_t)v[GW_MEMCPY_DEVICE], .copy_kind = fits(v[GW_MEMCPY_KIND], 15),
			.src_kind = fits(v[GW_MEMCPY_SRC], 7), .dst_kind = fits(v[GW_MEMCPY_DST], 7),
			.async = v[GW_MEMCPY_ASYNC] != 0,
		};
		return 1;
	case GW_REC_MEMSET:
		*op = (struct gpu_op){
			.start = v[GW_MEMSET_START], .end = v[GW_MEMSET_END], .bytes = v[GW_MEMSET_BYTES],
			.pid = r->stream, .stream = (uint32_t)v[GW_MEMSET_STREAM],
			.kind = OP_MEMSET,
			.dev = (uint8_t)v[GW_MEMSET_DEVICE], .async = v[GW_MEMSET_ASYNC] != 0,
		};
		return 1;
	default:
		return 0;
	}
}

/* ---- Python stacks ---------------------------------------------------- */

static struct py_ids *py_ids_of(struct trace *t, uint32_t stream)
{
	struct py_ids n = { .stream = stream };

	for (size_t i = t->py_ids.n; i-- > 0;)
		if (t->py_ids.v[i].stream == stream)
			return &t->py_ids.v[i];
	if (VEC_PUSH(t->py_ids, n) < 0)
		return NULL;
	return &t->py_ids.v[t->py_ids.n - 1];
}

/* Sets map[id] = idx, growing the map (ids are small and dense). */
static int py_map_set(struct py_ids *ids, int nodes, uint64_t id, uint32_t idx)
{
	uint32_t **v = nodes ? &ids->nodes.v : &ids->frames.v;
	size_t *n = nodes ? &ids->nodes.n : &ids->frames.n;
	size_t *cap = nodes ? &ids->nodes.cap : &ids->frames.cap;

	if (!id || id > (1u << 26))
		return 0; /* not an id a writer makes: ignore */
	if (vec_grow_((void **)v, cap, id + 1, sizeof(**v)) < 0)
		return -ENOMEM;
	while (*n <= id)
		(*v)[(*n)++] = 0;
	(*v)[id] = idx;
	return 0;
}

/* The global index of a stream's frame or stack id; 0 if not defined. */
static uint32_t py_lookup(struct trace *t, uint32_t stream, int nodes, uint64_t id)
{
	struct py_ids *ids = NULL;

	for (size_t i = t->py_ids.n; i-- > 0;)
		if (t->py_ids.v[i].stream == stream)
			ids = &t->py_ids.v[i];
	if (!ids || !id)
		return 0;
	if (nodes)
		return id < ids->nodes.n ? ids->nodes.v[id] : 0;
	return id < ids->frames.n ? ids->frames.v[id] : 0;
}

static int py_add_sample(struct trace *t, uint32_t pid, uint32_t tid, uint64_t ts, uint32_t node)
{
	struct py_thread *th = NULL;
	uint8_t buf[20];
	size_t n;

	for (size_t i = t->py_threads.n; i-- > 0;)
		if (t->py_threads.v[i].tid == tid && t->py_threads.v[i].pid == pid) {
			th = &t->py_threads.v[i];
			break;
		}
	if (!th) {
		struct py_thread nt = { .pid = pid, .tid = tid, .first_ts = ts, .last_ts = ts };

		if (VEC_PUSH(t->py_threads, nt) < 0)
			return -ENOMEM;
		th = &t->py_threads.v[t->py_threads.n - 1];
	}
	if (ts < th->last_ts) {
		t->py_back_in_time++; /* a damaged recording: keep time monotonic */
		ts = th->last_ts;
	}
	n = gw_put_uvarint(buf, ts - th->last_ts);
	n += gw_put_uvarint(buf + n, node);
	if (vec_grow_((void **)&th->data.v, &th->data.cap, th->data.n + n, 1) < 0)
		return -ENOMEM;
	memcpy(th->data.v + th->data.n, buf, n);
	th->data.n += n;
	th->last_ts = ts;
	th->n++;
	t->py_samples++;
	return 0;
}

static int add_py_record(struct trace *t, struct gw_reader *rd, const struct gw_record *r)
{
	const uint64_t *v = r->v;
	struct py_ids *ids;

	switch (r->type) {
	case GW_REC_PY_FRAME: {
		struct py_frame_rec f = { name_of(t, rd, r->stream, v[GW_PYF_FILE]),
					  name_of(t, rd, r->stream, v[GW_PYF_FUNC]),
					  (uint32_t)v[GW_PYF_LINE] };

		if (!t->py_frames.n && VEC_PUSH(t->py_frames, (struct py_frame_rec){ 0 }) < 0)
			return -ENOMEM;
		if (!(ids = py_ids_of(t, r->stream)) || VEC_PUSH(t->py_frames, f) < 0)
			return -ENOMEM;
		return py_map_set(ids, 0, v[GW_PYF_ID], (uint32_t)t->py_frames.n - 1);
	}
	case GW_REC_PY_STACK: {
		struct py_node nd = { py_lookup(t, r->stream, 1, v[GW_PYK_PARENT]),
				      py_lookup(t, r->stream, 0, v[GW_PYK_FRAME]) };

		if (!nd.frame)
			return 0; /* its frame was lost with a damaged chunk */
		if (!t->py_nodes.n && VEC_PUSH(t->py_nodes, (struct py_node){ 0 }) < 0)
			return -ENOMEM;
		if (!(ids = py_ids_of(t, r->stream)) || VEC_PUSH(t->py_nodes, nd) < 0)
			return -ENOMEM;
		return py_map_set(ids, 1, v[GW_PYK_ID], (uint32_t)t->py_nodes.n - 1);
	}
	case GW_REC_PY_SAMPLE:
		return py_add_sample(t, (uint32_t)v[GW_PYS_PID], (uint32_t)v[GW_PYS_TID], v[GW_PYS_TS],
				     py_lookup(t, r->stream, 1, v[GW_PYS_STACK]));
	case GW_REC_PY_STATUS: {
		struct py_status_rec s = { (uint32_t)v[GW_PYST_PID], r->stream, (uint32_t)v[GW_PYST_CODE],
					   strdup(gw_reader_string(rd, r->stream, v[GW_PYST_DETAIL])),
					   v[GW_PYST_SAMPLES], v[GW_PYST_DROPPED] };

		if (!s.detail || VEC_PUSH(t->py_status, s) < 0) {
			free(s.detail);
			return -ENOMEM;
		}
		return 0;
	}
	default:
		return 0;
	}
}

/* NVTX range starts waiting for their ends. */
struct open_ranges {
	struct gw_record *v;
	size_t n, cap;
};

static int add_record(struct trace *t, struct gw_reader *rd, const struct gw_record *r,
		      struct open_ranges *open_markers)
{
	const uint64_t *v = r->v;
	struct gpu_op op;

	if (op_of_record(t, rd, r, &op)) {
		/* a host<->device copy: its memory kinds, for the call that made it */
		if (r->type == GW_REC_MEMCPY && v[GW_MEMCPY_CORR] &&
		    (op.copy_kind == COPY_HTOD || op.copy_kind == COPY_DTOH)) {
			struct copy_mem m = { op.pid, (uint32_t)v[GW_MEMCPY_CORR], (uint8_t)op.copy_kind,
					      (uint8_t)(op.copy_kind == COPY_HTOD ? op.src_kind
										  : op.dst_kind) };

			if (VEC_PUSH(t->copy_mems, m) < 0)
				return -ENOMEM;
		}
		timeline_add(t, &op); /* names it, sums it, finds steps */
		return t->keep_ops ? push_op(t, &op) : 0;
	}
	switch (r->type) {
	case GW_REC_STRING:
		forget_id(t, rd, r->stream, v[0]);
		return 0;
	case GW_REC_META: {
		struct kv kv = { dupn(r->blob, r->blob_len), dupn(r->blob2, r->blob2_len) };

		if (!kv.key || !kv.value || VEC_PUSH(t->meta, kv) < 0) {
			free(kv.key);
			free(kv.value);
			return -ENOMEM;
		}
		if (strcmp(kv.key, "record.complete") == 0)
			t->complete = 1;
		return 0;
	}
	case GW_REC_SYNC: {
		struct sync_ev s = { v[GW_SYNC_START], v[GW_SYNC_END], r->stream,
				     (uint32_t)v[GW_SYNC_TYPE] };

		if (!s.start || s.end < s.start)
			return 0;
		return VEC_PUSH(t->syncs, s);
	}
	case GW_REC_API: {
		uint32_t name = name_of(t, rd, r->stream, v[GW_API_NAME]);
		struct host_call c = { v[GW_API_START], v[GW_API_END], r->stream,
				       (uint32_t)v[GW_API_TID], (uint32_t)v[GW_API_CORR], name,
				       call_class(t, name), 0, 0,
				       v[GW_API_PY_STACK] ? py_lookup(t, r->stream, 1, v[GW_API_PY_STACK])
							  : 0 };

		t->ncalls++;
		timeline_call(t, c.pid, c.tid, c.cls);
		/* the analysis looks at synchronizations and copies only (with
		 * --launches the other calls are one per kernel): the rest are
		 * counted per thread, and kept only for the timeline export */
		if (c.cls != HC_SYNC && c.cls != HC_MEMCPY && !t->keep_ops)
			return 0;
		return VEC_PUSH(t->calls, c);
	}
	case GW_REC_MARKER: {
		uint64_t flags = v[GW_MARKER_FLAGS];

		if (flags & 2) { /* range start: keep until its end arrives */
			struct gw_record copy = *r;

			copy.v[GW_MARKER_NAME] = trace_intern(t, gw_reader_string(rd, r->stream,
										   v[GW_MARKER_NAME]));
			return VEC_PUSH(*open_markers, copy);
		}
		if (flags & 4) {
			for (size_t i = open_markers->n; i-- > 0;) {
				struct gw_record *s = &open_markers->v[i];

				if (s->stream != r->stream || s->v[GW_MARKER_ID] != v[GW_MARKER_ID])
					continue;
				struct marker_range m = { s->v[GW_MARKER_TS], v[GW_MARKER_TS], r->stream,
							  (uint32_t)s->v[GW_MARKER_TID],
							  (uint32_t)s->v[GW_MARKER_NAME] };
				open_markers->v[i] = open_markers->v[--open_markers->n];
				return VEC_PUSH(t->markers, m);
			}
		}
		return 0;
	}
	case GW_REC_PY_FRAME:
	case GW_REC_PY_STACK:
	case GW_REC_PY_SAMPLE:
	case GW_REC_PY_STATUS:
		return add_py_record(t, rd, r);
	case GW_REC_OVERHEAD: /* read in the steady pass (one per blocked launch) */
	case GW_REC_GPM:      /* likewise (summed over the steady window) */
		return 0;
	case GW_REC_DROPS:
		/* cumulative per stream: keep the largest seen (streams summed approximately) */
		if (v[GW_DROPS_ACTIVITY] > t->drops_activity)
			t->drops_activity = v[GW_DROPS_ACTIVITY];
		if (v[GW_DROPS_API] > t->drops_api)
			t->drops_api = v[GW_DROPS_API];
		if (v[GW_DROPS_WRITE] > t->drops_write)
			t->drops_write = v[GW_DROPS_WRITE];
		return 0;
	case GW_REC_INJECT_EVENT: {
		struct inject_event e = { v[GW_IEV_TS], r->stream, (uint32_t)v[GW_IEV_CODE],
					  strdup(gw_reader_string(rd, r->stream, v[GW_IEV_DETAIL])),
					  v[GW_IEV_VALUE] };
		struct proc_info *p = proc_get(t, r->stream);

		if (p)
			p->has_cuda = 1;
		if (!e.detail || VEC_PUSH(t->events, e) < 0) {
			free(e.detail);
			return -ENOMEM;
		}
		return 0;
	}
	case GW_REC_THREAD: {
		struct tsample s = { .ts = v[GW_THREAD_TS], .pid = (uint32_t)v[GW_THREAD_PID],
				     .tid = (uint32_t)v[GW_THREAD_TID], .state = (char)v[GW_THREAD_STATE],
				     .cpu_ticks = v[GW_THREAD_UTIME] + v[GW_THREAD_STIME],
				     .ivcsw = (uint32_t)v[GW_THREAD_IVCSW],
				     .run_delay = v[GW_THREAD_RUN_DELAY] };
		t->has_run_delay |= s.run_delay != 0;
		return samples_add(t, &s);
	}
	case GW_REC_PROCESS: {
		struct proc_info *p = proc_get(t, (uint32_t)v[GW_PROC_PID]);

		if (!p)
			return -ENOMEM;
		p->ppid = (uint32_t)v[GW_PROC_PPID];
		p->is_target = (int)v[GW_PROC_TARGET];
		p->first_ts = v[GW_PROC_TS];
		free(p->cmdline);
		p->cmdline = strdup(gw_reader_string(rd, r->stream, v[GW_PROC_CMDLINE]));
		return 0;
	}
	case GW_REC_PROC_IO: {
		struct io_sample s = { v[GW_PIO_TS], (uint32_t)v[GW_PIO_PID], v[GW_PIO_READ],
				       v[GW_PIO_WRITE] };

		return VEC_PUSH(t->io, s);
	}
	case GW_REC_PROC_LIBS: {
		struct proc_info *p = proc_get(t, (uint32_t)v[GW_PLIBS_PID]);
		const char *py = gw_reader_string(rd, r->stream, v[GW_PLIBS_PYTHON]);

		if (!p)
			return -ENOMEM;
		p->libs |= (unsigned)v[GW_PLIBS_FLAGS];
		if (py && *py)
			snprintf(p->python, sizeof(p->python), "%s", py);
		return 0;
	}
	case GW_REC_SYS_CPU: {
		/* 50 a second: one per 100 ms is enough to tell a saturated machine */
		struct sys_sample s = { v[GW_SCPU_TS], 0, 0 };

		for (int k = GW_SCPU_USER; k <= GW_SCPU_STEAL; k++)
			s.total += v[k];
		s.busy = s.total - v[GW_SCPU_IDLE] - v[GW_SCPU_IOWAIT];
		if (t->sys.n && s.ts < t->sys.v[t->sys.n - 1].ts + 100000000ull)
			return 0;
		return VEC_PUSH(t->sys, s);
	}
	case GW_REC_PROC_EXIT: {
		struct proc_info *p = proc_get(t, (uint32_t)v[GW_PEXIT_PID]);

		if (p)
			p->exit_ts = v[GW_PEXIT_TS];
		return 0;
	}
	case GW_REC_GPU: {
		struct gpu_samp s = { v[GW_GPU_TS], (uint32_t)v[GW_GPU_INDEX], (uint32_t)v[GW_GPU_VALID],
				      (uint32_t)v[GW_GPU_SMCLK], (uint32_t)v[GW_GPU_MEMCLK],
				      (uint32_t)v[GW_GPU_POWER_MW], (uint32_t)v[GW_GPU_TEMP],
				      (uint32_t)v[GW_GPU_UTIL], v[GW_GPU_REASONS],
				      v[GW_GPU_MEMUSED_MIB] };

		timeline_gpu_sample(t, &s);
		if (t->keep_samples)
			(void)VEC_PUSH(t->gpu_samples, s); /* a chart loses a point, no more */
		return 0;
	}
	case GW_REC_GPU_INFO: {
		struct gpu_info g = {
			.index = (uint32_t)v[GW_GINFO_INDEX], .valid = (uint32_t)v[GW_GINFO_VALID],
			.name = strdup(gw_reader_string(rd, r->stream, v[GW_GINFO_NAME])),
			.uuid = strdup(gw_reader_string(rd, r->stream, v[GW_GINFO_UUID])),
			.bus_id = strdup(gw_reader_string(rd, r->stream, v[GW_GINFO_BUSID])),
			.cpus = strdup(gw_reader_string(rd, r->stream, v[GW_GINFO_CPUS])),
			.sm_count = (uint32_t)v[GW_GINFO_SMS], .pcie_gen = (uint32_t)v[GW_GINFO_PCIE_GEN],
			.pcie_gen_max = (uint32_t)v[GW_GINFO_PCIE_GEN_MAX],
			.pcie_width = (uint32_t)v[GW_GINFO_PCIE_WIDTH],
			.pcie_width_max = (uint32_t)v[GW_GINFO_PCIE_WIDTH_MAX],
			.persistence = (uint32_t)v[GW_GINFO_PERSIST],
			.numa_node = (int64_t)v[GW_GINFO_NUMA], .mem_total_mib = v[GW_GINFO_MEM_MIB],
			.power_limit_mw = v[GW_GINFO_POWER_LIMIT_MW],
			.power_default_mw = v[GW_GINFO_POWER_DEFAULT_MW],
			.power_max_mw = v[GW_GINFO_POWER_MAX_MW],
			.cc_major = (uint32_t)v[GW_GINFO_CC_MAJOR], .cc_minor = (uint32_t)v[GW_GINFO_CC_MINOR],
		};
		if (VEC_PUSH(t->gpus, g) < 0) {
			free(g.name);
			free(g.uuid);
			free(g.bus_id);
			free(g.cpus);
			return -ENOMEM;
		}
		return 0;
	}
	default:
		return 0;
	}
}

/* Reads every record of one file into t. The main file's verdict becomes
 * t->verdict; a side file's damage is added to it. */
static int read_file(struct trace *t, const char *path, struct open_ranges *om, int main_file,
		     char *err, size_t errlen)
{
	struct gw_reader *rd;
	struct gw_record rec;
	struct gw_verdict v;
	uint64_t records = 0;
	int ret = gw_reader_open_flags(&rd, path, main_file ? 0 : GW_OPEN_REGULAR, err, errlen);

	if (ret < 0)
		return ret;
	/* this pass needs a kernel's times, name and device only (the timeline
	 * export also its stream); the analysis reads the rest in its own pass */
	gw_reader_fields(rd, GW_REC_KERNEL, t->keep_ops ? GW_KERNEL_GZ + 1 : GW_KERNEL_DEVICE + 1);
	while (gw_reader_next(rd, &rec) == 1) {
		records++;
		if (add_record(t, rd, &rec, om) < 0) {
			snprintf(err, errlen, "out of memory after %llu records",
				 (unsigned long long)(t->records + records));
			ret = -ENOMEM;
			break;
		}
	}
	t->records += records;
	gw_reader_verdict(rd, main_file, &v);
	if (main_file)
		t->verdict = v;
	else
		gw_verdict_add(&t->verdict, &v);
	gw_reader_close(rd);
	if (ret == 0 && timeline_file_done(t, path, records) < 0) {
		snprintf(err, errlen, "out of memory");
		ret = -ENOMEM;
	}
	return ret;
}

int trace_read_ops(struct trace *t, const char *path, uint64_t records, const struct read_sinks *k,
		   char *err, size_t errlen)
{
	struct gw_reader *rd;
	struct gw_record rec;
	struct gpu_op op;
	int ret = gw_reader_open(&rd, path, err, errlen);

	if (ret < 0)
		return ret;
	/* only what the sinks take and the strings that name operations: of
	 * the other records the reader decodes just the times that chain */
	for (unsigned type = 0; type < GW_REC_TYPE_MAX; type++)
		gw_reader_fields(rd, type, 0);
	gw_reader_fields(rd, GW_REC_KERNEL, GW_KERNEL_GZ + 1);
	gw_reader_fields(rd, GW_REC_MEMCPY, GW_MEMCPY_NF);
	gw_reader_fields(rd, GW_REC_MEMSET, GW_MEMSET_NF);
	if (k->wait)
		gw_reader_fields(rd, GW_REC_OVERHEAD, GW_OVERHEAD_NF);
	if (k->gpm)
		gw_reader_fields(rd, GW_REC_GPM, GW_GPM_NF);
	for (uint64_t n = 0; n < records && gw_reader_next(rd, &rec) == 1; n++) {
		const uint64_t *v = rec.v;

		if (rec.type == GW_REC_STRING) {
			forget_id(t, rd, rec.stream, v[0]);
		} else if (op_of_record(t, rd, &rec, &op)) {
			if (k->op)
				k->op(k->op_ctx, &op);
		} else if (rec.type == GW_REC_OVERHEAD && k->wait &&
			   v[GW_OVERHEAD_KIND] == GW_OVERHEAD_COMMAND_BUFFER_FULL &&
			   v[GW_OVERHEAD_END] > v[GW_OVERHEAD_START]) {
			struct host_wait q = { v[GW_OVERHEAD_START], v[GW_OVERHEAD_END], rec.stream };

			k->wait(k->ctx, &q);
		} else if (rec.type == GW_REC_GPM && k->gpm) {
			struct gpm_samp s = { v[GW_GPM_TS], (uint32_t)v[GW_GPM_INDEX],
					      (uint32_t)v[GW_GPM_VALID], v[GW_GPM_SM_UTIL] / 100.0,
					      v[GW_GPM_SM_OCC] / 100.0, v[GW_GPM_TENSOR] / 100.0,
					      v[GW_GPM_DRAM] / 100.0, v[GW_GPM_FP32] / 100.0,
					      v[GW_GPM_FP16] / 100.0 };

			k->gpm(k->ctx, &s);
		}
	}
	gw_reader_close(rd);
	return 0;
}

/* If gpuwhy itself died before finalizing, the traced processes' streams are
 * still in PATH.parts/: read them too, so nothing flushed is lost. */
static void read_parts(struct trace *t, const char *path, struct open_ranges *om)
{
	char dir[4096], file[8192], err[256];
	struct dirent *de;
	DIR *d;

	snprintf(dir, sizeof(dir), "%s.parts", path);
	d = opendir(dir);
	if (!d)
		return;
	while ((de = readdir(d))) {
		if (strncmp(de->d_name, "inject-", 7) != 0)
			continue;
		snprintf(file, sizeof(file), "%s/%s", dir, de->d_name);
		if (read_file(t, file, om, 0, err, sizeof(err)) == 0)
			t->parts_read++;
		else if (!t->parts_skipped++) /* a FIFO, a link, unreadable: said, not waited on */
			snprintf(t->parts_skip_why, sizeof(t->parts_skip_why), "%s", err);
	}
	closedir(d);
}

/* The analysis reads a recording twice: one that cannot be read again (a
 * pipe, /dev/stdin fed by one) is first copied to an unlinked temporary
 * file, read through /proc/self/fd. 0 (*spool_fd = -1 when none was needed)
 * or -errno. */
static int spool(const char *path, int *spool_fd, char *readable, size_t len, char *err,
		 size_t errlen)
{
	const char *dir = getenv("TMPDIR");
	char tmpl[4096], buf[1 << 16];
	struct stat st;
	ssize_t n;
	int in, out, ret = 0;

	*spool_fd = -1;
	snprintf(readable, len, "%s", path);
	if (stat(path, &st) < 0 || !(S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode)))
		return 0; /* files, and what is not a file, go to the reader, which says why */
	snprintf(tmpl, sizeof(tmpl), "%s/gpuwhy-report-XXXXXX", dir && *dir ? dir : "/tmp");
	in = open(path, O_RDONLY);
	if (in < 0) {
		ret = -errno;
		snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
		return ret;
	}
	out = mkstemp(tmpl);
	if (out < 0) {
		ret = -errno;
		snprintf(err, errlen, "%s is not a regular file and cannot be copied to %s to be "
			 "read twice: %s (set TMPDIR to a writable directory)", path, tmpl,
			 strerror(errno));
		goto out_in;
	}
	unlink(tmpl);
	while ((n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, (size_t)n) != n)
			break;
	if (n != 0) { /* a read error, or a short write (disk full) */
		ret = errno ? -errno : -EIO;
		snprintf(err, errlen, "copying %s to a temporary file in %s failed: %s", path,
			 dir && *dir ? dir : "/tmp", errno ? strerror(errno) : "short write");
		close(out);
		goto out_in;
	}
	*spool_fd = out;
	snprintf(readable, len, "/proc/self/fd/%d", out);
out_in:
	close(in);
	return ret;
}

int trace_load_flags(struct trace *t, const char *path, unsigned flags, char *err, size_t errlen)
{
	struct open_ranges open_markers = { 0 };
	char readable[64 + 4096];
	int ret;

	memset(t, 0, sizeof(*t));
	t->keep_ops = !!(flags & TRACE_KEEP_OPS);
	t->keep_samples = !!(flags & TRACE_KEEP_SAMPLES);
	t->name_index = calloc(1, sizeof(*t->name_index));
	t->path = strdup(path);
	if (t->name_index)
		t->name_index->strings = gw_intern_new();
	if (!t->name_index || !t->name_index->strings || !t->path ||
	    VEC_PUSH(t->names, strdup("")) < 0 || timeline_begin(t) < 0) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	ret = spool(path, &t->spool_fd, readable, sizeof(readable), err, errlen);
	t->spooled = t->spool_fd >= 0;
	if (ret == 0)
		ret = read_file(t, readable, &open_markers, 1, err, errlen);
	if (ret == 0 && !t->complete && !t->spooled)
		read_parts(t, path, &open_markers);
	if (ret == 0 && t->verdict.kind != GW_VERDICT_OK) {
		char why[1024];

		gw_verdict_describe(&t->verdict, why, sizeof(why));
		t->damage = strdup(why);
	}
	free(open_markers.v);
	timeline_end(t);
	return ret;
}

int trace_load(struct trace *t, const char *path, char *err, size_t errlen)
{
	return trace_load_flags(t, path, 0, err, errlen);
}

void trace_free(struct trace *t)
{
	for (size_t i = 0; i < t->names.n; i++)
		free(t->names.v[i]);
	for (size_t i = 0; i < t->meta.n; i++) {
		free(t->meta.v[i].key);
		free(t->meta.v[i].value);
	}
	for (size_t i = 0; i < t->procs.n; i++)
		free(t->procs.v[i].cmdline);
	for (size_t i = 0; i < t->events.n; i++)
		free(t->events.v[i].detail);
	for (size_t i = 0; i < t->gpus.n; i++) {
		free(t->gpus.v[i].name);
		free(t->gpus.v[i].uuid);
		free(t->gpus.v[i].bus_id);
		free(t->gpus.v[i].cpus);
	}
	for (size_t i = 0; i < t->py_threads.n; i++)
		free(t->py_threads.v[i].data.v);
	for (size_t i = 0; i < t->py_status.n; i++)
		free(t->py_status.v[i].detail);
	for (size_t i = 0; i < t->py_ids.n; i++) {
		free(t->py_ids.v[i].frames.v);
		free(t->py_ids.v[i].nodes.v);
	}
	free(t->py_frames.v);
	free(t->py_nodes.v);
	free(t->py_threads.v);
	free(t->py_status.v);
	free(t->py_ids.v);
	free(t->ops.v);
	free(t->calls.v);
	free(t->copy_mems.v);
	free(t->syncs.v);
	samples_free(t);
	free(t->procs.v);
	free(t->io.v);
	free(t->sys.v);
	free(t->gpu_samples.v);
	free(t->gpm_samples.v);
	free(t->markers.v);
	free(t->gpus.v);
	free(t->meta.v);
	free(t->events.v);
	free(t->names.v);
	if (t->name_index) {
		gw_intern_free(t->name_index->strings);
		free(t->name_index->ids);
		free(t->name_index->fast);
		free(t->name_index->call_cls);
		free(t->name_index);
	}
	timeline_free(t->scan);
	if (t->spooled)
		close(t->spool_fd);
	free(t->damage);
	free(t->path);
	memset(t, 0, sizeof(*t));
}
