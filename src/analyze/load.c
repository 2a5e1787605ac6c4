/* Loads a recording into struct trace: one pass over the records, strings
 * resolved once per (stream, id) and interned globally (names.c). GPU operations go to
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

#include "../format/contract.h"
#include "../format/format.h"
#include "../format/intern.h"
#include "../util/util.h"
#include "analyze.h"
#include "internal.h"

static struct proc_info *proc_get(struct trace *t, uint32_t pid)
{
	struct proc_info p = { .pid = pid };
	uint64_t i = hmap_get(&t->proc_index, pid);

	if (i)
		return &t->procs.v[i - 1];
	if (VEC_PUSH(t->procs, p) < 0)
		return NULL;
	if (hmap_put(&t->proc_index, pid, t->procs.n) < 0) {
		t->procs.n--;
		return NULL;
	}
	return &t->procs.v[t->procs.n - 1];
}

const struct proc_info *trace_proc(const struct trace *t, uint32_t pid)
{
	uint64_t i = hmap_get(&t->proc_index, pid);

	return i ? &t->procs.v[i - 1] : NULL;
}

size_t trace_gpu_ranks(const struct trace *t)
{
	static const char *const keys[] = { "env.RANK", "env.SLURM_PROCID", "env.OMPI_COMM_WORLD_RANK",
					    "env.PMI_RANK" };
	const struct pid_counts *pc = t->scan ? &t->scan->pc : NULL;
	size_t n = 0;

	for (int k = 0; pc && k < pc->npids && k < 64; k++) {
		int ranked = 0;

		for (size_t i = 0; i < t->meta.n && pc->n[k] && !ranked; i++)
			for (size_t e = 0; e < sizeof(keys) / sizeof(*keys) && !ranked; e++)
				ranked = t->meta.v[i].pid == pc->pid[k] && !strcmp(t->meta.v[i].key, keys[e]);
		n += ranked;
	}
	return n;
}

const char *trace_meta(const struct trace *t, const char *key)
{
	/* the last value wins: later records (end of recording) refine earlier ones */
	for (size_t i = t->meta.n; i-- > 0;)
		if (strcmp(t->meta.v[i].key, key) == 0)
			return t->meta.v[i].value;
	return NULL;
}

const char *trace_gpu_name(const struct trace *t, uint32_t dev)
{
	for (size_t i = t->gpus.n; i-- > 0;)
		if (t->gpus.v[i].index == dev && t->gpus.v[i].name && *t->gpus.v[i].name)
			return t->gpus.v[i].name;
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

/* Per (process, stream): the CUPTI correlation id of the host call that
 * made the operation read last there, for gpu_op.same_call. Per stream,
 * because records of different streams come interleaved in a file, while
 * a graph launch's operations on one stream come in order. */
struct last_call {
	struct hmap by_stream; /* pid << 32 | stream -> correlation id */
	struct hmap graph_end; /* pid << 32 | correlation id -> a graph launch call's end */
	int count;             /* the first reading: count the operations of multi-operation calls */
};

/* An operation of a graph that started this long after its launch call
 * returned waited in the GPU's queue: a margin of ten times the launch
 * latency the replay assumes for an operation the host issued last
 * (depgraph.c's LAUNCH_LAT_NS, 2 us; not measured for graphs). */
#define GRAPH_QUEUED_NS 20000ull

static void note_call(struct trace *t, struct last_call *lc, struct gpu_op *op, uint64_t corr)
{
	uint64_t key = (uint64_t)op->pid << 32 | op->stream, prev = hmap_get(&lc->by_stream, key);
	/* one lookup an operation, and only where the job launched graphs */
	uint64_t launched = corr && lc->graph_end.n
				    ? hmap_get(&lc->graph_end, (uint64_t)op->pid << 32 | (corr & 0xffffffffu))
				    : 0;

	op->queued = launched && op->start > launched + GRAPH_QUEUED_NS;
	op->same_call = corr && prev == corr;
	if (corr && prev != corr && hmap_put(&lc->by_stream, key, corr) < 0)
		t->nomem = 1;
	if (lc->count && op->same_call) {
		uint64_t ck = (uint64_t)op->pid << 32 | (corr & 0xffffffffu), n = hmap_get(&t->call_ops, ck);

		if (hmap_put(&t->call_ops, ck, n ? n + 1 : 2) < 0)
			t->nomem = 1;
	}
}

/* Blocks of a kernel resident on one SM at once, from its launch's threads:
 * Hopper's limits per SM (2048 threads, 32 blocks). Older GPUs have the same
 * or lower limits: there it counts a wave too large, and a batch fix's
 * replay grows such kernels late (docs/RULES.md section 4). Registers and
 * shared memory are left out: with them the waves come out smaller and the
 * batch replay grows too few kernels (measured on the corpus: docs/RULES.md). */
static uint16_t blocks_per_sm(uint64_t threads)
{
	uint64_t warps = (threads + 31) / 32, n = 32, m;

	if (!threads || threads > 1024)
		return 0; /* not a launch we can read */
	m = 64 / warps;
	n = m < n ? m : n;
	return (uint16_t)(n ? n : 1);
}

/* A grid's blocks, saturating (a damaged record's dimensions can be anything). */
static uint32_t grid_blocks(uint64_t x, uint64_t y, uint64_t z)
{
	if (x > UINT32_MAX || y > UINT32_MAX || z > UINT32_MAX)
		return UINT32_MAX;
	unsigned __int128 b = (unsigned __int128)x * y * z;

	return b > UINT32_MAX ? UINT32_MAX : (uint32_t)b;
}

/* A kernel name launched with a tiled matrix kernel's resources
 * (counters.c reads its counters). */
static void mark_tiled(struct trace *t, uint32_t name)
{
	if (name >= t->name_tiled.n) {
		size_t n = t->name_tiled.n;

		if (vec_grow_((void **)&t->name_tiled.v, &t->name_tiled.cap, (size_t)name + 1, 1) < 0) {
			t->nomem = 1;
			return;
		}
		memset(t->name_tiled.v + n, 0, (size_t)name + 1 - n);
		t->name_tiled.n = (size_t)name + 1;
	}
	t->name_tiled.v[name] = 1;
}

int trace_name_tiled(const struct trace *t, uint32_t name)
{
	return name < t->name_tiled.n && t->name_tiled.v[name];
}

/* The GPU operation a record describes: 1 and *op filled, or 0. */
static int op_of_record(struct trace *t, struct gw_reader *rd, const struct gw_record *r,
			struct last_call *lc, struct gpu_op *op)
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
			.blocks = grid_blocks(v[GW_KERNEL_GX], v[GW_KERNEL_GY], v[GW_KERNEL_GZ]),
			.per_sm = blocks_per_sm(v[GW_KERNEL_BX] * v[GW_KERNEL_BY] * v[GW_KERNEL_BZ]),
			.kind = OP_KERNEL, .dev = (uint8_t)v[GW_KERNEL_DEVICE],
		};
		note_call(t, lc, op, v[GW_KERNEL_CORR]);
		/* the first reading decodes every field; the second leaves the
		 * launch's resources out, and the name keeps what the first saw */
		if (v[GW_KERNEL_REGS] >= TILE_REGS && v[GW_KERNEL_SHMEM] >= TILE_SHMEM)
			mark_tiled(t, op->name);
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
		note_call(t, lc, op, v[GW_MEMCPY_CORR]);
		return 1;
	case GW_REC_MEMSET:
		*op = (struct gpu_op){
			.start = v[GW_MEMSET_START], .end = v[GW_MEMSET_END], .bytes = v[GW_MEMSET_BYTES],
			.pid = r->stream, .stream = (uint32_t)v[GW_MEMSET_STREAM],
			.kind = OP_MEMSET,
			.dev = (uint8_t)v[GW_MEMSET_DEVICE], .async = v[GW_MEMSET_ASYNC] != 0,
		};
		note_call(t, lc, op, v[GW_MEMSET_CORR]);
		return 1;
	default:
		return 0;
	}
}

/* ---- Python stacks ---------------------------------------------------- */

/* Python frame and stack ids are a stream's own; ids a writer cannot make
 * (0, above 2^26) are ignored. */
#define PY_MAX_ID (1u << 26)

static int py_map_set(struct trace *t, int nodes, uint32_t stream, uint64_t id, uint32_t idx)
{
	if (!id || id > PY_MAX_ID)
		return 0;
	return hmap_put(nodes ? &t->py_node_ids : &t->py_frame_ids, (uint64_t)stream << 32 | id, idx);
}

/* The global index of a stream's frame or stack id; 0 if not defined. */
static uint32_t py_lookup(struct trace *t, uint32_t stream, int nodes, uint64_t id)
{
	if (!id || id > PY_MAX_ID)
		return 0;
	return (uint32_t)hmap_get(nodes ? &t->py_node_ids : &t->py_frame_ids,
				  (uint64_t)stream << 32 | id);
}

static int py_add_sample(struct trace *t, uint32_t pid, uint32_t tid, uint64_t ts, uint32_t node,
			 uint64_t state)
{
	uint64_t key = (uint64_t)pid << 32 | tid, i = hmap_get(&t->py_thread_index, key);
	struct py_thread *th = i ? &t->py_threads.v[i - 1] : NULL;
	uint8_t buf[20];
	size_t n;

	if (!th) {
		struct py_thread nt = { .pid = pid, .tid = tid, .first_ts = ts, .last_ts = ts };

		if (VEC_PUSH(t->py_threads, nt) < 0)
			return -ENOMEM;
		if (hmap_put(&t->py_thread_index, key, t->py_threads.n) < 0) {
			t->py_threads.n--;
			return -ENOMEM;
		}
		th = &t->py_threads.v[t->py_threads.n - 1];
	}
	if (ts < th->last_ts) {
		t->py_back_in_time++; /* a damaged recording: keep time monotonic */
		ts = th->last_ts;
	}
	n = gw_put_uvarint(buf, ts - th->last_ts);
	/* the node and the thread's state in one varint (PY_NODE_STATE) */
	n += gw_put_uvarint(buf + n, (uint64_t)node << 2 | (state <= GW_PYSTATE_DISK ? state : 0));
	if (vec_grow_((void **)&th->data.v, &th->data.cap, th->data.n + n, 1) < 0)
		return -ENOMEM;
	memcpy(th->data.v + th->data.n, buf, n);
	th->data.n += n;
	th->last_ts = ts;
	th->n++;
	t->py_samples++;
	return 0;
}

/* NVTX range starts waiting for their ends: found through a hash of
 * (stream, id) that leads to the newest start of that key, each start to
 * the one before it of the same key; slots freed by an end are reused. */
struct open_range {
	uint64_t id, ts;
	uint32_t stream, tid, name, domain;
	uint32_t prev; /* index + 1 of the start before it with the same key, 0 = none */
};
struct open_ranges {
	VEC(struct open_range) v;
	VEC(uint32_t) free; /* slots of v to reuse */
	struct hmap index;  /* range_key() -> index + 1 of the newest start */
};

static uint64_t range_key(uint32_t stream, uint64_t id)
{
	return (uint64_t)stream << 32 ^ id;
}

static int range_start(struct open_ranges *o, const struct open_range *s)
{
	uint64_t key = range_key(s->stream, s->id);
	struct open_range e = *s;
	uint32_t i;

	e.prev = (uint32_t)hmap_get(&o->index, key);
	if (o->free.n) {
		i = o->free.v[--o->free.n];
		o->v.v[i] = e;
	} else {
		if (o->v.n >= UINT32_MAX - 1 || VEC_PUSH(o->v, e) < 0)
			return -ENOMEM;
		i = (uint32_t)o->v.n - 1;
	}
	return hmap_put(&o->index, key, (uint64_t)i + 1);
}

/* The newest open start of (stream, id), taken out: 1 and *out, 0 when
 * none, or -ENOMEM. */
static int range_end(struct open_ranges *o, uint32_t stream, uint64_t id, struct open_range *out)
{
	uint64_t key = range_key(stream, id);
	uint32_t i = (uint32_t)hmap_get(&o->index, key), newer = 0;

	for (; i; newer = i, i = o->v.v[i - 1].prev) {
		struct open_range *e = &o->v.v[i - 1];

		if (e->stream != stream || e->id != id)
			continue; /* another (stream, id) of the same key */
		*out = *e;
		if (newer)
			o->v.v[newer - 1].prev = e->prev;
		else if (!e->prev)
			hmap_del(&o->index, key);
		else if (hmap_put(&o->index, key, e->prev) < 0)
			return -ENOMEM;
		return VEC_PUSH(o->free, i - 1) < 0 ? -ENOMEM : 1;
	}
	return 0;
}

static void ranges_free(struct open_ranges *o)
{
	free(o->v.v);
	free(o->free.v);
	hmap_free(&o->index);
}

/* ---- one function per record type ---------------------------------------- */

/* What every record function reads from: the trace it fills, the reader
 * (for strings) and the NVTX ranges still open. */
struct loader {
	struct trace *t;
	struct gw_reader *rd;
	struct open_ranges *om;
	struct last_call lc;
};
typedef int (*record_fn)(struct loader *l, const struct gw_record *r);

/* A kernel, copy or memset: to the timeline (load.c keeps only totals). */
static int rec_op(struct loader *l, const struct gw_record *r)
{
	struct trace *t = l->t;
	const uint64_t *v = r->v;
	struct gpu_op op;

	if (!op_of_record(t, l->rd, r, &l->lc, &op))
		return 0;
	/* a host<->device copy: its memory kinds, for the call that made it */
	if (r->type == GW_REC_MEMCPY && v[GW_MEMCPY_CORR] &&
	    (op.copy_kind == COPY_HTOD || op.copy_kind == COPY_DTOH)) {
		struct copy_mem m = { .pid = op.pid, .corr = (uint32_t)v[GW_MEMCPY_CORR],
				      .dir = (uint8_t)op.copy_kind,
				      .host = (uint8_t)(op.copy_kind == COPY_HTOD ? op.src_kind : op.dst_kind) };

		if (VEC_PUSH(t->copy_mems, m) < 0)
			return -ENOMEM;
	}
	timeline_add(t, &op); /* names it, sums it, finds steps */
	return t->keep_ops ? push_op(t, &op) : 0;
}

static int rec_string(struct loader *l, const struct gw_record *r)
{
	forget_id(l->t, l->rd, r->stream, r->v[0]);
	return 0;
}

static int rec_meta(struct loader *l, const struct gw_record *r)
{
	struct trace *t = l->t;
	struct kv kv = { .key = dupn(r->blob, r->blob_len), .value = dupn(r->blob2, r->blob2_len),
			 .pid = r->stream };

	if (!kv.key || !kv.value || VEC_PUSH(t->meta, kv) < 0) {
		free(kv.key);
		free(kv.value);
		return -ENOMEM;
	}
	if (strcmp(kv.key, "record.complete") == 0)
		t->complete = 1;
	return 0;
}

static int rec_sync(struct loader *l, const struct gw_record *r)
{
	const uint64_t *v = r->v;
	struct sync_ev s = { .start = v[GW_SYNC_START], .end = v[GW_SYNC_END], .pid = r->stream,
			     .type = (uint32_t)v[GW_SYNC_TYPE] };

	if (!s.start || s.end < s.start)
		return 0;
	return VEC_PUSH(l->t->syncs, s);
}

static int rec_api(struct loader *l, const struct gw_record *r)
{
	struct trace *t = l->t;
	const uint64_t *v = r->v;
	uint32_t name = name_of(t, l->rd, r->stream, v[GW_API_NAME]);
	struct host_call c = {
		.start = v[GW_API_START], .end = v[GW_API_END], .pid = r->stream,
		.tid = (uint32_t)v[GW_API_TID], .corr = (uint32_t)v[GW_API_CORR], .name = name,
		.cls = call_class(t, name),
		.py_stack = v[GW_API_PY_STACK] ? py_lookup(t, r->stream, 1, v[GW_API_PY_STACK]) : 0,
	};

	t->ncalls++;
	if (timeline_call(t, c.pid, c.tid, c.cls) < 0)
		return -ENOMEM;
	if (c.corr && c.start) {
		struct call_anchor an = { c.start, c.pid, c.tid, c.corr };

		if (VEC_PUSH(t->anchors, an) < 0)
			return -ENOMEM;
	}
	/* the analysis looks at synchronizations, copies, allocations and graph
	 * launches only (with --launches the other calls are one per kernel; a
	 * caching allocator makes few allocation calls, a loop that frees every
	 * step as many as it frees; a graph launch issues many kernels): the
	 * rest are counted per thread, and kept only for the timeline export */
	if (c.cls != HC_SYNC && c.cls != HC_MEMCPY && c.cls != HC_ALLOC && c.cls != HC_GRAPH && !t->keep_ops)
		return 0;
	return VEC_PUSH(t->calls, c);
}

static int rec_marker(struct loader *l, const struct gw_record *r)
{
	const uint64_t *v = r->v;
	uint64_t flags = v[GW_MARKER_FLAGS];

	if (flags & 2) { /* range start: keep until its end arrives */
		struct open_range s = {
			.id = v[GW_MARKER_ID], .ts = v[GW_MARKER_TS], .stream = r->stream,
			.tid = (uint32_t)v[GW_MARKER_TID],
			.name = trace_intern(l->t, gw_reader_string(l->rd, r->stream, v[GW_MARKER_NAME])),
			.domain = trace_intern(l->t, gw_reader_string(l->rd, r->stream, v[GW_MARKER_DOMAIN])),
		};

		return range_start(l->om, &s);
	}
	struct open_range s;
	int found = flags & 4 ? range_end(l->om, r->stream, v[GW_MARKER_ID], &s) : 0;

	if (found <= 0)
		return found;
	struct marker_range m = { .start = s.ts, .end = v[GW_MARKER_TS], .pid = r->stream, .tid = s.tid,
				  .name = s.name, .domain = s.domain };

	return VEC_PUSH(l->t->markers, m);
}

static int rec_py_frame(struct loader *l, const struct gw_record *r)
{
	struct trace *t = l->t;
	const uint64_t *v = r->v;
	struct py_frame_rec f = { .file = name_of(t, l->rd, r->stream, v[GW_PYF_FILE]),
				  .func = name_of(t, l->rd, r->stream, v[GW_PYF_FUNC]),
				  .line = (uint32_t)v[GW_PYF_LINE] };

	if (!t->py_frames.n && VEC_PUSH(t->py_frames, (struct py_frame_rec){ 0 }) < 0)
		return -ENOMEM;
	if (VEC_PUSH(t->py_frames, f) < 0)
		return -ENOMEM;
	return py_map_set(t, 0, r->stream, v[GW_PYF_ID], (uint32_t)t->py_frames.n - 1);
}

static int rec_py_stack(struct loader *l, const struct gw_record *r)
{
	struct trace *t = l->t;
	const uint64_t *v = r->v;
	struct py_node nd = { .parent = py_lookup(t, r->stream, 1, v[GW_PYK_PARENT]),
			      .frame = py_lookup(t, r->stream, 0, v[GW_PYK_FRAME]) };

	if (!nd.frame)
		return 0; /* its frame was lost with a damaged chunk */
	if (!t->py_nodes.n && VEC_PUSH(t->py_nodes, (struct py_node){ 0 }) < 0)
		return -ENOMEM;
	if (VEC_PUSH(t->py_nodes, nd) < 0)
		return -ENOMEM;
	return py_map_set(t, 1, r->stream, v[GW_PYK_ID], (uint32_t)t->py_nodes.n - 1);
}

static int rec_py_sample(struct loader *l, const struct gw_record *r)
{
	const uint64_t *v = r->v;

	return py_add_sample(l->t, (uint32_t)v[GW_PYS_PID], (uint32_t)v[GW_PYS_TID], v[GW_PYS_TS],
			     py_lookup(l->t, r->stream, 1, v[GW_PYS_STACK]), v[GW_PYS_STATE]);
}

static int rec_py_status(struct loader *l, const struct gw_record *r)
{
	const uint64_t *v = r->v;
	struct py_status_rec s = {
		.pid = (uint32_t)v[GW_PYST_PID], .stream = r->stream, .code = (uint32_t)v[GW_PYST_CODE],
		.detail = strdup(gw_reader_string(l->rd, r->stream, v[GW_PYST_DETAIL])),
		.samples = v[GW_PYST_SAMPLES], .dropped = v[GW_PYST_DROPPED],
	};

	if (!s.detail || VEC_PUSH(l->t->py_status, s) < 0) {
		free(s.detail);
		return -ENOMEM;
	}
	return 0;
}

/* Cumulative per stream: the largest seen is kept (streams summed approximately). */
static int rec_drops(struct loader *l, const struct gw_record *r)
{
	struct trace *t = l->t;
	const uint64_t *v = r->v;

	if (v[GW_DROPS_ACTIVITY] > t->drops_activity)
		t->drops_activity = v[GW_DROPS_ACTIVITY];
	if (v[GW_DROPS_API] > t->drops_api)
		t->drops_api = v[GW_DROPS_API];
	if (v[GW_DROPS_WRITE] > t->drops_write)
		t->drops_write = v[GW_DROPS_WRITE];
	return 0;
}

static int rec_inject_event(struct loader *l, const struct gw_record *r)
{
	struct trace *t = l->t;
	const uint64_t *v = r->v;
	struct inject_event e = { .ts = v[GW_IEV_TS], .pid = r->stream, .code = (uint32_t)v[GW_IEV_CODE],
				  .detail = strdup(gw_reader_string(l->rd, r->stream, v[GW_IEV_DETAIL])),
				  .value = v[GW_IEV_VALUE] };
	struct proc_info *p = proc_get(t, r->stream);

	if (p)
		p->has_cuda = 1;
	if (!p || !e.detail || VEC_PUSH(t->events, e) < 0) {
		free(e.detail);
		return -ENOMEM;
	}
	return 0;
}

static int rec_thread(struct loader *l, const struct gw_record *r)
{
	const uint64_t *v = r->v;
	struct tsample s = { .ts = v[GW_THREAD_TS], .pid = (uint32_t)v[GW_THREAD_PID],
			     .tid = (uint32_t)v[GW_THREAD_TID], .state = (char)v[GW_THREAD_STATE],
			     .cpu_ticks = v[GW_THREAD_UTIME] + v[GW_THREAD_STIME],
			     .ivcsw = (uint32_t)v[GW_THREAD_IVCSW], .run_delay = v[GW_THREAD_RUN_DELAY] };

	l->t->has_run_delay |= s.run_delay != 0;
	return samples_add(l->t, &s);
}

static int rec_process(struct loader *l, const struct gw_record *r)
{
	const uint64_t *v = r->v;
	struct proc_info *p = proc_get(l->t, (uint32_t)v[GW_PROC_PID]);

	if (!p)
		return -ENOMEM;
	p->ppid = (uint32_t)v[GW_PROC_PPID];
	p->is_target = (int)v[GW_PROC_TARGET];
	p->first_ts = v[GW_PROC_TS];
	free(p->cmdline);
	p->cmdline = strdup(gw_reader_string(l->rd, r->stream, v[GW_PROC_CMDLINE]));
	return p->cmdline ? 0 : -ENOMEM;
}

static int rec_proc_io(struct loader *l, const struct gw_record *r)
{
	const uint64_t *v = r->v;
	struct io_sample s = { .ts = v[GW_PIO_TS], .pid = (uint32_t)v[GW_PIO_PID],
			       .read_bytes = v[GW_PIO_READ], .write_bytes = v[GW_PIO_WRITE] };

	return VEC_PUSH(l->t->io, s);
}

static int rec_proc_libs(struct loader *l, const struct gw_record *r)
{
	const uint64_t *v = r->v;
	struct proc_info *p = proc_get(l->t, (uint32_t)v[GW_PLIBS_PID]);
	const char *py = gw_reader_string(l->rd, r->stream, v[GW_PLIBS_PYTHON]);

	if (!p)
		return -ENOMEM;
	p->libs |= (unsigned)v[GW_PLIBS_FLAGS];
	if (py && *py)
		snprintf(p->python, sizeof(p->python), "%s", py);
	return 0;
}

/* 50 a second: one per 100 ms is enough to tell a saturated machine. */
static int rec_sys_cpu(struct loader *l, const struct gw_record *r)
{
	struct trace *t = l->t;
	const uint64_t *v = r->v;
	struct sys_sample s = { .ts = v[GW_SCPU_TS] };

	for (int k = GW_SCPU_USER; k <= GW_SCPU_STEAL; k++)
		s.total += v[k];
	s.busy = s.total - v[GW_SCPU_IDLE] - v[GW_SCPU_IOWAIT];
	if (t->sys.n && s.ts < t->sys.v[t->sys.n - 1].ts + 100000000ull)
		return 0;
	return VEC_PUSH(t->sys, s);
}

static int rec_proc_exit(struct loader *l, const struct gw_record *r)
{
	struct proc_info *p = proc_get(l->t, (uint32_t)r->v[GW_PEXIT_PID]);

	if (!p)
		return -ENOMEM;
	p->exit_ts = r->v[GW_PEXIT_TS];
	return 0;
}

static int rec_gpu(struct loader *l, const struct gw_record *r)
{
	const uint64_t *v = r->v;
	struct gpu_samp s = { .ts = v[GW_GPU_TS], .gpu = (uint32_t)v[GW_GPU_INDEX],
			      .valid = (uint32_t)v[GW_GPU_VALID], .sm_mhz = (uint32_t)v[GW_GPU_SMCLK],
			      .mem_mhz = (uint32_t)v[GW_GPU_MEMCLK], .power_mw = (uint32_t)v[GW_GPU_POWER_MW],
			      .temp_c = (uint32_t)v[GW_GPU_TEMP], .util = (uint32_t)v[GW_GPU_UTIL],
			      .reasons = v[GW_GPU_REASONS], .mem_used_mib = v[GW_GPU_MEMUSED_MIB] };

	timeline_gpu_sample(l->t, &s);
	if (l->t->keep_samples && VEC_PUSH(l->t->gpu_samples, s) < 0)
		return -ENOMEM;
	return 0;
}

static int rec_gpu_info(struct loader *l, const struct gw_record *r)
{
	struct gw_reader *rd = l->rd;
	const uint64_t *v = r->v;
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

	if (!g.name || !g.uuid || !g.bus_id || !g.cpus || VEC_PUSH(l->t->gpus, g) < 0) {
		free(g.name);
		free(g.uuid);
		free(g.bus_id);
		free(g.cpus);
		return -ENOMEM;
	}
	return 0;
}

/* By record type; types without an entry (overhead and GPM records, read in
 * the steady pass; PCIe samples; thread names; types this version does not
 * know) are skipped. */
static const record_fn record_fns[GW_REC_TYPE_MAX] = {
	[GW_REC_STRING] = rec_string,
	[GW_REC_META] = rec_meta,
	[GW_REC_KERNEL] = rec_op,
	[GW_REC_MEMCPY] = rec_op,
	[GW_REC_MEMSET] = rec_op,
	[GW_REC_SYNC] = rec_sync,
	[GW_REC_API] = rec_api,
	[GW_REC_MARKER] = rec_marker,
	[GW_REC_DROPS] = rec_drops,
	[GW_REC_INJECT_EVENT] = rec_inject_event,
	[GW_REC_THREAD] = rec_thread,
	[GW_REC_PROCESS] = rec_process,
	[GW_REC_PROC_IO] = rec_proc_io,
	[GW_REC_PROC_EXIT] = rec_proc_exit,
	[GW_REC_SYS_CPU] = rec_sys_cpu,
	[GW_REC_PROC_LIBS] = rec_proc_libs,
	[GW_REC_GPU] = rec_gpu,
	[GW_REC_GPU_INFO] = rec_gpu_info,
	[GW_REC_PY_FRAME] = rec_py_frame,
	[GW_REC_PY_STACK] = rec_py_stack,
	[GW_REC_PY_SAMPLE] = rec_py_sample,
	[GW_REC_PY_STATUS] = rec_py_status,
};

static int add_record(struct loader *l, const struct gw_record *r)
{
	record_fn fn = r->type < GW_REC_TYPE_MAX ? record_fns[r->type] : NULL;

	return fn ? fn(l, r) : 0;
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
	/* this pass needs a kernel's times, name, device and stream (the step
	 * finder tells streams apart: the same kernels on two streams are two
	 * tokens), its grid and the host call that launched it (a graph's
	 * kernels are one submission), and its registers and shared memory,
	 * which say whether its name launches as a tiled matrix kernel does
	 * (counters.c); the analysis reads the rest in its own pass */
	gw_reader_fields(rd, GW_REC_KERNEL, GW_KERNEL_SHMEM + 1);
	struct loader l = { .t = t, .rd = rd, .om = om, .lc.count = 1 };

	while (gw_reader_next(rd, &rec) == 1) {
		records++;
		if (add_record(&l, &rec) < 0) {
			snprintf(err, errlen, "out of memory after %llu records",
				 (unsigned long long)(t->records + records));
			ret = -ENOMEM;
			break;
		}
	}
	t->records += records;
	hmap_free(&l.lc.by_stream);
	hmap_free(&l.lc.graph_end);
	if (ret == 0 && gw_reader_nomem(rd)) {
		snprintf(err, errlen, "out of memory while reading %s", path);
		ret = -ENOMEM;
	}
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

int trace_read_ops(struct trace *t, const char *path, uint64_t records, const struct op_sinks *k,
		   char *err, size_t errlen)
{
	struct gw_reader *rd;
	struct gw_record rec;
	struct gpu_op op;
	struct last_call lc = { 0 };
	int ret = gw_reader_open(&rd, path, err, errlen);

	if (ret < 0)
		return ret;
	/* the graph launches read in the first reading, for gpu_op.queued */
	for (size_t i = 0; i < t->calls.n; i++) {
		const struct host_call *c = &t->calls.v[i];

		if (c->cls == HC_GRAPH && c->corr &&
		    hmap_put(&lc.graph_end, (uint64_t)c->pid << 32 | c->corr, c->end) < 0)
			t->nomem = 1;
	}
	/* only what the sinks take and the strings that name operations: of
	 * the other records the reader decodes just the times that chain */
	for (unsigned type = 0; type < GW_REC_TYPE_MAX; type++)
		gw_reader_fields(rd, type, 0);
	gw_reader_fields(rd, GW_REC_KERNEL, GW_KERNEL_CORR + 1);
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
		} else if (op_of_record(t, rd, &rec, &lc, &op)) {
			if (k->issued && rec.type == GW_REC_KERNEL && v[GW_KERNEL_CORR])
				k->issued(k->ctx, &op, (uint32_t)v[GW_KERNEL_CORR]);
			if (k->op)
				k->op(k->ctx, &op);
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
	hmap_free(&lc.by_stream);
	hmap_free(&lc.graph_end);
	if (gw_reader_nomem(rd)) {
		snprintf(err, errlen, "out of memory while reading %s", path);
		ret = -ENOMEM;
	}
	gw_reader_close(rd);
	return ret;
}

/* If gpuwhy itself died before finalizing, the traced processes' streams are
 * still in PATH.parts/: read them too, so nothing flushed is lost. */
static int read_parts(struct trace *t, const char *path, struct open_ranges *om, char *err,
		      size_t errlen)
{
	char dir[4096], file[8192];
	struct dirent *de;
	DIR *d;

	snprintf(dir, sizeof(dir), "%s.parts", path);
	d = opendir(dir);
	if (!d)
		return 0;
	while ((de = readdir(d))) {
		if (strncmp(de->d_name, GW_PARTS_INJECT_PREFIX, strlen(GW_PARTS_INJECT_PREFIX)) != 0)
			continue;
		snprintf(file, sizeof(file), "%s/%s", dir, de->d_name);
		int ret = read_file(t, file, om, 0, err, errlen);

		if (ret == -ENOMEM) { /* not a damaged side file: the report would be wrong */
			closedir(d);
			return ret;
		}
		if (ret == 0)
			t->parts_read++;
		else if (!t->parts_skipped++) /* a FIFO, a link, unreadable: said, not waited on */
			snprintf(t->parts_skip_why, sizeof(t->parts_skip_why), "%s", err);
	}
	closedir(d);
	return 0;
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
	t->path = strdup(path);
	if (!t->path || names_init(t) < 0 || timeline_begin(t) < 0) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	ret = spool(path, &t->spool_fd, readable, sizeof(readable), err, errlen);
	t->spooled = t->spool_fd >= 0;
	if (ret == 0)
		ret = read_file(t, readable, &open_markers, 1, err, errlen);
	if (ret == 0 && !t->complete && !t->spooled)
		ret = read_parts(t, path, &open_markers, err, errlen);
	if (ret == 0 && t->verdict.kind != GW_VERDICT_OK) {
		char why[1024];

		gw_verdict_describe(&t->verdict, why, sizeof(why));
		if (!(t->damage = strdup(why))) {
			snprintf(err, errlen, "out of memory");
			ret = -ENOMEM;
		}
	}
	/* a view of one process of a recording (src/job/split.c): named by it */
	const char *of = trace_meta(t, "job.split_of"), *pid = trace_meta(t, "job.split_pid");

	if (ret == 0 && of && pid && asprintf(&t->shown, "%s (pid %s)", of, pid) < 0) {
		t->shown = NULL;
		snprintf(err, errlen, "out of memory");
		ret = -ENOMEM;
	}
	ranges_free(&open_markers);
	timeline_end(t);
	return ret;
}

int trace_load(struct trace *t, const char *path, char *err, size_t errlen)
{
	return trace_load_flags(t, path, 0, err, errlen);
}

void trace_free(struct trace *t)
{
	free(t->shown);
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
	free(t->py_frames.v);
	free(t->py_nodes.v);
	free(t->py_threads.v);
	free(t->py_status.v);
	hmap_free(&t->proc_index);
	hmap_free(&t->py_frame_ids);
	hmap_free(&t->py_node_ids);
	hmap_free(&t->py_thread_index);
	free(t->ops.v);
	free(t->calls.v);
	free(t->anchors.v);
	free(t->copy_mems.v);
	hmap_free(&t->call_ops);
	free(t->syncs.v);
	samples_free(t);
	free(t->procs.v);
	free(t->io.v);
	free(t->sys.v);
	free(t->gpu_samples.v);
	free(t->gpm_samples.v);
	free(t->name_tiled.v);
	free(t->markers.v);
	free(t->host_colls.v);
	free(t->gpus.v);
	free(t->meta.v);
	free(t->events.v);
	names_free(t);
	timeline_free(t->scan);
	if (t->spooled)
		close(t->spool_fd);
	free(t->damage);
	free(t->path);
	memset(t, 0, sizeof(*t));
}
