/* libgpuwhy-inject-cuN.so: loaded into the target by the CUDA driver through
 * CUDA_INJECTION64_PATH. It records the GPU timeline (CUPTI Activity API)
 * and the few host API calls needed to attribute idle time (CUPTI callbacks
 * on chosen API ids), and writes them to $GPUWHY_PARTS_DIR/inject-<pid>.gws
 * in the recording format.
 *
 * CUPTI is loaded at run time (dlopen), found in the order of
 * src/format/cupti_find.h; its record layouts differ between CUDA majors, so
 * one library is built per major against that major's headers (the headers
 * give the types only). A library that finds the other major's CUPTI hands
 * over to its sibling (libgpuwhy-inject-cu12.so <-> -cu13.so in the same
 * folder); with no usable CUPTI the job runs untraced and the stream says why.
 *
 * NVTX ranges reach CUPTI through NVTX's own injection hook: the recorder
 * points NVTX_INJECTION64_PATH at this library, whose InitializeInjectionNvtx2
 * hands NVTX to the CUPTI the same search finds, so that one CUPTI serves
 * both (a second one loaded for NVTX alone would run beside it).
 *
 * Rules: never print, abort, exit or block the target. On trouble, drop data,
 * count it, and write an inject_event record saying what happened.
 * Only InitializeInjection and InitializeInjectionNvtx2 are exported (see
 * inject.map).
 */
#include <cupti.h>
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#include "../src/format/contract.h"
#include "../src/format/format.h"
#include "../src/pystack/pystack.h"
#include "../src/format/cupti_find.h"

/* What this library was built for: the record layouts of that major. */
#if CUPTI_API_VERSION >= 130000
#define GW_CUPTI_MAJOR 13
typedef CUpti_ActivityKernel10 gw_kernel_rec;
#else
#define GW_CUPTI_MAJOR 12
typedef CUpti_ActivityKernel9 gw_kernel_rec;
#endif
#define STR_(x) #x
#define STR(x) STR_(x)
#define LIB_NAME "libgpuwhy-inject-cu" STR(GW_CUPTI_MAJOR) ".so"

/* The CUPTI entry points, resolved from the library found (nvtop-style). */
#define CUPTI_FNS(X)                                                                        \
	X(cuptiActivityDisable) X(cuptiActivityEnable) X(cuptiActivityFlushAll)              \
	X(cuptiActivityGetNextRecord) X(cuptiActivityGetNumDroppedRecords)                   \
	X(cuptiActivityRegisterCallbacks) X(cuptiEnableCallback) X(cuptiGetResultString)     \
	X(cuptiGetVersion) X(cuptiSubscribe) X(cuptiGetTimestamp)
static struct {
#define X(f) __typeof__(f) *f;
	CUPTI_FNS(X)
#undef X
	/* optional (absent from older 12.x releases): without it GPU times are
	 * moved onto the recording's clock by a measured offset */
	__typeof__(cuptiActivityRegisterTimestampCallback) *cuptiActivityRegisterTimestampCallback;
	void *lib;
	char path[PATH_MAX];
	const char *source;
	uint32_t api;
	int64_t clock_off; /* CUPTI's clock minus the recording's, when not the same clock */
} cu;

#define ACT_BUF_SIZE (2u << 20)
#define API_RING 16384 /* pending API records per half of the double buffer */

struct api_call {
	uint64_t start, end;
	const char *name;
	uint32_t cbid, tid, corr, domain;
	uint32_t py_stack; /* the Python code that made it (sync and DtoH copies only) */
};

/* Exact sync sites: the calling thread's own Python stack, read at the end
 * of a synchronizing call or device-to-host copy (never of a launch). The
 * reader is opened on this process once, at the first such call; a
 * permanent failure turns it off for good. An application thread never
 * waits here: a busy reader drops the stack (counted). A read costs the
 * job 45-148 us (bench/pystack_read.sh), so the reads' time is held within
 * PY_SITE_BUDGET of the time since the reader opened, after a first
 * allowance: a job that synchronizes very often gets sites for part of
 * its calls (the rest are skipped and counted), never a slowdown. */
#define PY_SITE_DEPTH 64
#define PY_SITE_BUDGET 200                  /* 1/200 = 0.5% */
#define PY_SITE_ALLOWANCE_NS 50000000ull   /* 50 ms before the budget applies */
static struct {
	pthread_mutex_t lock; /* the reader and the trie: app threads try it, never wait */
	int state;            /* 0 not tried, 1 open, -1 off (code says why) */
	int code;
	char detail[200];
	struct py_proc *p;
	struct gw_pytrie *trie;
	uint64_t read, dropped, skipped;
	uint64_t opened_ns, spent_ns; /* the reads' own time, against the budget */
	int enabled;
} py = { .lock = PTHREAD_MUTEX_INITIALIZER };

static struct {
	int enabled;
	pid_t pid;
	int fd;
	pthread_mutex_t lock;     /* guards w and the counters (CUPTI and flush threads) */
	pthread_mutex_t api_lock; /* guards the API buffers: the only lock app threads take */
	struct gw_writer w;
	struct api_call *api[2];
	unsigned api_len;
	int api_cur;
	uint64_t api_dropped, activity_dropped, buffers_failed;
	CUpti_SubscriberHandle sub;
	pthread_t flusher;
	int flusher_started;
	pthread_cond_t wake; /* wakes the flush thread early at exit */
	int stop;
	unsigned flush_ms;
	unsigned duty_on_ms, duty_period_ms; /* 0: always on */
	char stop_path[4096]; /* gpuwhy creates it to end tracing (--duration, --max-size) */
	int stopped;
	int tracing;
	int trace_launches;
	unsigned kind_mask; /* which of kinds[] to enable */
	int ring;
	struct gw_segments seg;
} g = { .lock = PTHREAD_MUTEX_INITIALIZER, .api_lock = PTHREAD_MUTEX_INITIALIZER, .wake = PTHREAD_COND_INITIALIZER, .fd = -1 };

enum { KIND_SYNC = 3 }; /* index of "sync" below */
static const struct {
	const char *name;
	CUpti_ActivityKind kind;
} kinds[] = {
	{ "kernel", CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL },
	{ "memcpy", CUPTI_ACTIVITY_KIND_MEMCPY },
	{ "memset", CUPTI_ACTIVITY_KIND_MEMSET },
	{ "sync", CUPTI_ACTIVITY_KIND_SYNCHRONIZATION },
	{ "marker", CUPTI_ACTIVITY_KIND_MARKER },
	{ "overhead", CUPTI_ACTIVITY_KIND_OVERHEAD },
};

/* Kernel launches: one callback pair per kernel is the costliest thing to trace
 * (docs/CUPTI.md: callbacks on 8 runtime ids added more per op than kernel
 * tracing on a launch-bound loop), so they are
 * traced only on request (GPUWHY_TRACE_LAUNCHES=1, `gpuwhy record --launches`).
 * Idle attribution works without them (docs/RULES.md). */
static const CUpti_CallbackId runtime_launch_ids[] = {
	CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
	CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000,
	CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060,
	CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060,
#if GW_CUPTI_MAJOR >= 13
	CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000,
	CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000,
#endif
};
static const CUpti_CallbackId driver_launch_ids[] = {
	CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
	CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx,
};

/* The host calls that idle attribution needs: copies, syncs, allocations, graphs. */
static const CUpti_CallbackId runtime_ids[] = {
	CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000,
	CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000,
	CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020,
	CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2D_v3020,
	CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020,
	CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_ptsz_v7000,
	CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2DAsync_v3020,
	CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyToSymbol_v3020,
	CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyFromSymbol_v3020,
	CUPTI_RUNTIME_TRACE_CBID_cudaMemset_v3020,
	CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020,
	CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020,
	CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_ptsz_v7000,
	CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020,
	CUPTI_RUNTIME_TRACE_CBID_cudaThreadSynchronize_v3020,
	CUPTI_RUNTIME_TRACE_CBID_cudaEventSynchronize_v3020,
	CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020,
	CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020,
	CUPTI_RUNTIME_TRACE_CBID_cudaMallocHost_v3020,
	CUPTI_RUNTIME_TRACE_CBID_cudaHostAlloc_v3020,
};

/* Driver-level entry points used directly by Triton, CuPy, JAX and plain C. */
static const CUpti_CallbackId driver_ids[] = {
	CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch,
	CUPTI_DRIVER_TRACE_CBID_cuMemcpy,
	CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync,
	CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2,
	CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2,
	CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2,
	CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2,
	CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize,
	CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize,
#if GW_CUPTI_MAJOR >= 13
	CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize_v2,
#endif
	CUPTI_DRIVER_TRACE_CBID_cuEventSynchronize,
};

/* One clock for everything gpuwhy records (docs/FORMAT.md, "Clock"). */
static uint64_t CUPTIAPI now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint32_t my_tid(void)
{
	static __thread uint32_t tid;

	if (!tid)
		tid = (uint32_t)syscall(SYS_gettid);
	return tid;
}

/* Records an event; the caller holds g.lock. */
static void event_locked(unsigned code, const char *detail, uint64_t value)
{
	uint64_t v[GW_IEV_NF] = { now_ns(), code, gw_intern(&g.w, detail), value };

	gw_emit(&g.w, GW_REC_INJECT_EVENT, v, GW_IEV_NF);
}

static void cupti_failed(const char *what, CUptiResult res)
{
	const char *msg = NULL;
	char detail[200];

	if (!strncmp(what, "cu.", 3)) /* the entry point's own name in messages */
		what += 3;
	cu.cuptiGetResultString(res, &msg);
	snprintf(detail, sizeof(detail), "%s: %s", what, msg ? msg : "unknown CUPTI error");
	pthread_mutex_lock(&g.lock);
	event_locked(res == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED ? GW_IEV_CUPTI_BUSY
									   : GW_IEV_CUPTI_ERROR,
		     detail, (uint64_t)res);
	pthread_mutex_unlock(&g.lock);
}

#define TRY(call)                                 \
	do {                                      \
		CUptiResult r_ = (call);          \
		if (r_ != CUPTI_SUCCESS)          \
			cupti_failed(#call, r_);  \
	} while (0)

/* ---- host API callbacks (hot path: keep short, never block long) ---- */

/* A synchronizing call, or a copy that may go device to host. */
static int is_sync_site(CUpti_CallbackDomain dom, CUpti_CallbackId cbid, const void *params)
{
	if (!params)
		return 0;
	if (dom == CUPTI_CB_DOMAIN_RUNTIME_API) {
		switch (cbid) {
		case CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020:
		case CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_ptsz_v7000:
		case CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020:
		case CUPTI_RUNTIME_TRACE_CBID_cudaThreadSynchronize_v3020:
		case CUPTI_RUNTIME_TRACE_CBID_cudaEventSynchronize_v3020:
		case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyFromSymbol_v3020:
			return 1;
#define DTOH(k) ((k) == cudaMemcpyDeviceToHost || (k) == cudaMemcpyDefault)
		case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020:
			return DTOH(((const cudaMemcpy_v3020_params *)params)->kind);
		case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020:
			return DTOH(((const cudaMemcpyAsync_v3020_params *)params)->kind);
		case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_ptsz_v7000:
			return DTOH(((const cudaMemcpyAsync_ptsz_v7000_params *)params)->kind);
		case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2D_v3020:
			return DTOH(((const cudaMemcpy2D_v3020_params *)params)->kind);
		case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2DAsync_v3020:
			return DTOH(((const cudaMemcpy2DAsync_v3020_params *)params)->kind);
#undef DTOH
		default:
			return 0;
		}
	}
	switch (cbid) {
	case CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize:
	case CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize_ptsz:
	case CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize:
#if GW_CUPTI_MAJOR >= 13
	case CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize_v2:
#endif
	case CUPTI_DRIVER_TRACE_CBID_cuEventSynchronize:
	case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2:
	case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2:
	case CUPTI_DRIVER_TRACE_CBID_cuMemcpy: /* unified addressing: either way */
	case CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync:
	case CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync_ptsz:
		return 1;
	default:
		return 0;
	}
}

/* Opens the reader on this process (py.lock held): file I/O and large
 * allocations (the interpreter's symbol tables), so the flush thread does
 * it, not a callback; a callback does only where no flush thread runs. */
static void py_open_locked(void)
{
	int ret = py_proc_open(&py.p, getpid(), py.detail, sizeof(py.detail));

	py.trie = ret == 0 ? gw_pytrie_new(1u << 16) : NULL;
	if (ret == 0 && py.trie) {
		snprintf(py.detail, sizeof(py.detail), "exact sync sites: Python %s", py_proc_version(py.p));
		py.code = GW_PY_OK;
		py.opened_ns = now_ns();
		__atomic_store_n(&py.state, 1, __ATOMIC_RELAXED);
		return;
	}
	if (ret == 0) {
		py_proc_close(py.p);
		snprintf(py.detail, sizeof(py.detail), "out of memory");
	}
	py.p = NULL;
	py.code = ret ? gw_py_status_of(ret) : GW_PY_ERROR;
	__atomic_store_n(&py.state, -1, __ATOMIC_RELAXED);
}

/* The calling thread's Python stack as a trie id; 0 when none or dropped. */
static uint32_t py_site(void)
{
	struct py_frame fr[PY_SITE_DEPTH];
	struct gw_pyframe gf[PY_SITE_DEPTH];
	uint32_t id = 0;
	int d;

	if (!py.enabled || __atomic_load_n(&py.state, __ATOMIC_RELAXED) < 0)
		return 0;
	if (pthread_mutex_trylock(&py.lock) != 0) {
		__atomic_add_fetch(&py.dropped, 1, __ATOMIC_RELAXED);
		return 0;
	}
	if (py.state == 0) {
		if (g.flusher_started) { /* the flush thread has not opened it yet */
			__atomic_add_fetch(&py.dropped, 1, __ATOMIC_RELAXED);
			goto out;
		}
		py_open_locked();
		if (py.state < 0)
			goto out;
	}
	uint64_t t0 = now_ns();

	if (py.spent_ns > PY_SITE_ALLOWANCE_NS + (t0 - py.opened_ns) / PY_SITE_BUDGET) {
		__atomic_add_fetch(&py.skipped, 1, __ATOMIC_RELAXED);
		goto out;
	}
	d = py_proc_stack(py.p, (pid_t)my_tid(), fr, PY_SITE_DEPTH);
	py.spent_ns += now_ns() - t0;
	if (d == -EAGAIN) /* atomic: threads that find the lock busy count here too */
		__atomic_add_fetch(&py.dropped, 1, __ATOMIC_RELAXED);
	if (d > 0) {
		py.read++;
		for (int i = 0; i < d; i++)
			gf[i] = (struct gw_pyframe){ fr[i].file, fr[i].func, fr[i].line };
		id = gw_pytrie_stack(py.trie, gf, d);
	}
out:
	pthread_mutex_unlock(&py.lock);
	return id;
}

static void CUPTIAPI on_api(void *ud, CUpti_CallbackDomain dom, CUpti_CallbackId cbid,
			    const void *data)
{
	/* Runtime calls run driver calls inside them, and CUPTI reports both:
	 * keep the outer (runtime) one only. */
	static __thread int runtime_depth;
	const CUpti_CallbackData *cb = data;
	struct api_call *c;
	int wake;

	(void)ud;
	if (dom == CUPTI_CB_DOMAIN_DRIVER_API && runtime_depth > 0)
		return;
	if (cb->callbackSite == CUPTI_API_ENTER) {
		if (dom == CUPTI_CB_DOMAIN_RUNTIME_API)
			runtime_depth++;
		*cb->correlationData = now_ns();
		return;
	}
	if (dom == CUPTI_CB_DOMAIN_RUNTIME_API && runtime_depth > 0)
		runtime_depth--;
	uint64_t end = now_ns();
	/* after the wait, so the read adds nothing to the wait recorded */
	uint32_t py_stack = is_sync_site(dom, cbid, cb->functionParams) ? py_site() : 0;

	pthread_mutex_lock(&g.api_lock);
	wake = g.api_len == API_RING / 2; /* drain early rather than drop */
	if (wake)
		pthread_cond_signal(&g.wake);
	if (g.api_len >= API_RING) {
		g.api_dropped++;
	} else {
		c = &g.api[g.api_cur][g.api_len++];
		c->start = *cb->correlationData;
		c->end = end;
		c->name = cb->functionName;
		c->cbid = cbid;
		c->tid = my_tid();
		c->corr = cb->correlationId;
		c->domain = (uint32_t)dom;
		c->py_stack = py_stack;
	}
	pthread_mutex_unlock(&g.api_lock);
}

/* ---- activity buffers ------------------------------------------------ */

static void CUPTIAPI buffer_requested(uint8_t **buf, size_t *size, size_t *max_records)
{
	void *p = NULL;

	*max_records = 0;
	if (posix_memalign(&p, 8, ACT_BUF_SIZE) != 0) {
		__atomic_add_fetch(&g.buffers_failed, 1, __ATOMIC_RELAXED);
		*buf = NULL;
		*size = 0;
		return;
	}
	*buf = p;
	*size = ACT_BUF_SIZE;
}

/* A CUPTI time on the recording's clock (0, a forced flush's unknown time, stays 0). */
#define TS(t) ((t) ? (uint64_t)((int64_t)(t) - cu.clock_off) : 0)

static void emit_activity(CUpti_Activity *rec)
{
	switch (rec->kind) {
	case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
	case CUPTI_ACTIVITY_KIND_KERNEL: {
		gw_kernel_rec *k = (gw_kernel_rec *)rec;
		uint64_t v[GW_KERNEL_NF] = {
			TS(k->start), TS(k->end), gw_intern(&g.w, k->name), k->deviceId, k->contextId,
			k->streamId, (uint64_t)k->gridX, (uint64_t)k->gridY, (uint64_t)k->gridZ,
			(uint64_t)k->blockX, (uint64_t)k->blockY, (uint64_t)k->blockZ,
			k->correlationId, k->registersPerThread,
			(uint64_t)k->staticSharedMemory + k->dynamicSharedMemory, k->graphId,
		};
		gw_emit(&g.w, GW_REC_KERNEL, v, GW_KERNEL_NF);
		break;
	}
	case CUPTI_ACTIVITY_KIND_MEMCPY: {
		CUpti_ActivityMemcpy6 *m = (CUpti_ActivityMemcpy6 *)rec;
		uint64_t v[GW_MEMCPY_NF] = {
			TS(m->start), TS(m->end), m->copyKind, m->srcKind, m->dstKind, m->bytes,
			(m->flags & CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC) ? 1 : 0, m->deviceId,
			m->streamId, m->correlationId,
		};
		gw_emit(&g.w, GW_REC_MEMCPY, v, GW_MEMCPY_NF);
		break;
	}
	case CUPTI_ACTIVITY_KIND_MEMSET: {
		CUpti_ActivityMemset4 *m = (CUpti_ActivityMemset4 *)rec;
		uint64_t v[GW_MEMSET_NF] = {
			TS(m->start), TS(m->end), m->bytes, m->memoryKind,
			(m->flags & CUPTI_ACTIVITY_FLAG_MEMSET_ASYNC) ? 1 : 0, m->deviceId,
			m->streamId, m->correlationId,
		};
		gw_emit(&g.w, GW_REC_MEMSET, v, GW_MEMSET_NF);
		break;
	}
	case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: {
		CUpti_ActivitySynchronization2 *s = (CUpti_ActivitySynchronization2 *)rec;
		uint64_t v[GW_SYNC_NF] = { TS(s->start), TS(s->end), (uint64_t)s->type, s->streamId,
					   s->correlationId };
		gw_emit(&g.w, GW_REC_SYNC, v, GW_SYNC_NF);
		break;
	}
	case CUPTI_ACTIVITY_KIND_MARKER: {
		CUpti_ActivityMarker2 *m = (CUpti_ActivityMarker2 *)rec;
		uint64_t v[GW_MARKER_NF] = {
			TS(m->timestamp), (uint64_t)m->flags, m->id, gw_intern(&g.w, m->name),
			m->objectKind == CUPTI_ACTIVITY_OBJECT_THREAD ? m->objectId.pt.threadId : 0,
			gw_intern(&g.w, m->domain),
		};
		gw_emit(&g.w, GW_REC_MARKER, v, GW_MARKER_NF);
		break;
	}
	case CUPTI_ACTIVITY_KIND_OVERHEAD: {
		CUpti_ActivityOverhead3 *o = (CUpti_ActivityOverhead3 *)rec;
		uint64_t v[GW_OVERHEAD_NF] = { TS(o->start), TS(o->end), (uint64_t)o->overheadKind };
		gw_emit(&g.w, GW_REC_OVERHEAD, v, GW_OVERHEAD_NF);
		break;
	}
	default:
		break;
	}
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buf, size_t size,
				      size_t valid)
{
	CUpti_Activity *rec = NULL;
	size_t dropped = 0;

	if (!buf)
		return;
	pthread_mutex_lock(&g.lock);
	if (g.enabled && g.pid == getpid()) {
		while (cu.cuptiActivityGetNextRecord(buf, valid, &rec) == CUPTI_SUCCESS)
			emit_activity(rec);
		if (cu.cuptiActivityGetNumDroppedRecords(ctx, stream, &dropped) == CUPTI_SUCCESS)
			g.activity_dropped += dropped;
	}
	pthread_mutex_unlock(&g.lock);
	(void)size;
	free(buf);
}

/* ---- flushing -------------------------------------------------------- */

/* Moves pending API calls into the writer and writes the chunk. Only the
 * flush thread (or at_exit after it stopped) calls this, so the half it takes
 * is fully encoded before the next swap hands it back to the app threads;
 * app threads never wait for the disk. */
static void drain(void)
{
	struct api_call *batch;
	unsigned n;
	uint64_t api_dropped;

	pthread_mutex_lock(&g.api_lock);
	batch = g.api[g.api_cur];
	n = g.api_len;
	g.api_cur ^= 1;
	g.api_len = 0;
	api_dropped = g.api_dropped;
	pthread_mutex_unlock(&g.api_lock);
	uint32_t py_frames = 0, py_stacks = 0;

	if (py.trie) { /* the stacks made so far: their nodes do not move */
		pthread_mutex_lock(&py.lock);
		gw_pytrie_counts(py.trie, &py_frames, &py_stacks);
		pthread_mutex_unlock(&py.lock);
	}
	pthread_mutex_lock(&g.lock);
	if (py_stacks)
		gw_pytrie_emit_upto(py.trie, &g.w, py_frames, py_stacks);
	for (unsigned i = 0; i < n; i++) {
		struct api_call *c = &batch[i];
		uint64_t v[GW_API_NF] = { c->start, c->end, c->cbid, c->tid, c->corr,
					  gw_intern(&g.w, c->name), c->domain, c->py_stack };
		gw_emit(&g.w, GW_REC_API, v, GW_API_NF);
	}
	uint64_t d[GW_DROPS_NF] = { now_ns(), g.activity_dropped + g.buffers_failed, api_dropped,
				    g.w.records_lost };
	gw_emit(&g.w, GW_REC_DROPS, d, GW_DROPS_NF);
	gw_flush(&g.w);
	if (g.ring)
		gw_seg_rotate_if_full(&g.seg, &g.w); /* also switches g.w.fd */
	pthread_mutex_unlock(&g.lock);
}

static void set_tracing(int on)
{
	if (on == g.tracing)
		return;
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		if (!(g.kind_mask & (1u << i)))
			continue;
		if (on)
			TRY(cu.cuptiActivityEnable(kinds[i].kind));
		else
			TRY(cu.cuptiActivityDisable(kinds[i].kind));
	}
	if (g.sub) {
		for (size_t i = 0; i < sizeof(runtime_ids) / sizeof(runtime_ids[0]); i++)
			cu.cuptiEnableCallback(on, g.sub, CUPTI_CB_DOMAIN_RUNTIME_API, runtime_ids[i]);
		for (size_t i = 0; i < sizeof(driver_ids) / sizeof(driver_ids[0]); i++)
			cu.cuptiEnableCallback(on, g.sub, CUPTI_CB_DOMAIN_DRIVER_API, driver_ids[i]);
		for (size_t i = 0; g.trace_launches && i < sizeof(runtime_launch_ids) /
								sizeof(runtime_launch_ids[0]); i++)
			cu.cuptiEnableCallback(on, g.sub, CUPTI_CB_DOMAIN_RUNTIME_API,
					    runtime_launch_ids[i]);
		for (size_t i = 0; g.trace_launches && i < sizeof(driver_launch_ids) /
								sizeof(driver_launch_ids[0]); i++)
			cu.cuptiEnableCallback(on, g.sub, CUPTI_CB_DOMAIN_DRIVER_API,
					    driver_launch_ids[i]);
	}
	g.tracing = on;
	pthread_mutex_lock(&g.lock);
	event_locked(on ? GW_IEV_TRACE_ON : GW_IEV_TRACE_OFF, NULL, 0);
	pthread_mutex_unlock(&g.lock);
}

static void deadline_in(struct timespec *ts, unsigned ms)
{
	clock_gettime(CLOCK_REALTIME, ts);
	ts->tv_sec += ms / 1000;
	ts->tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts->tv_nsec >= 1000000000L) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000L;
	}
}

static void *flush_thread(void *arg)
{
	uint64_t t0 = now_ns();

	(void)arg;
	if (py.enabled) {
		pthread_mutex_lock(&py.lock);
		if (py.state == 0)
			py_open_locked();
		pthread_mutex_unlock(&py.lock);
	}
	for (;;) {
		struct timespec ts;
		int stop;

		deadline_in(&ts, g.flush_ms);
		pthread_mutex_lock(&g.lock);
		if (!g.stop)
			pthread_cond_timedwait(&g.wake, &g.lock, &ts);
		stop = g.stop;
		pthread_mutex_unlock(&g.lock);
		if (stop)
			break;
		if (!g.stopped && access(g.stop_path, F_OK) == 0) {
			set_tracing(0);
			g.stopped = 1;
		}
		if (g.duty_period_ms && !g.stopped) {
			uint64_t ms = (now_ns() - t0) / 1000000ull;

			set_tracing(ms % g.duty_period_ms < g.duty_on_ms);
		}
		cu.cuptiActivityFlushAll(0);
		drain();
	}
	return NULL;
}

/* Takes and releases m within ms: fails when this thread itself holds it
 * (exit() called from a signal handler that interrupted one of our short
 * critical sections) or when its holder is stuck. */
static int free_within(pthread_mutex_t *m, unsigned ms)
{
	struct timespec ts;

	deadline_in(&ts, ms);
	if (pthread_mutex_timedlock(m, &ts) != 0)
		return 0;
	pthread_mutex_unlock(m);
	return 1;
}

static void at_exit(void)
{
	struct timespec ts;

	if (!g.enabled || g.pid != getpid())
		return; /* a forked child (e.g. a data-loader worker): not ours to flush */
	/* The job's exit never waits without bound: a flush thread stuck in a
	 * write (a hung network filesystem) or a lock held by the very thread
	 * that exits costs the tail of the recording, not the job. */
	if (!free_within(&g.lock, 1000) || !free_within(&g.api_lock, 1000) ||
	    !free_within(&py.lock, 1000)) /* drain takes it, and so may a stack read of this thread */
		return;
	pthread_mutex_lock(&g.lock);
	g.stop = 1;
	pthread_cond_signal(&g.wake);
	pthread_mutex_unlock(&g.lock);
	deadline_in(&ts, 3000);
	if (g.flusher_started && !pthread_equal(g.flusher, pthread_self()) &&
	    pthread_timedjoin_np(g.flusher, NULL, &ts) != 0)
		return;
	g.flusher_started = 0;
	cu.cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
	pthread_mutex_lock(&g.lock);
	event_locked(GW_IEV_FINISHED, NULL, 0);
	if (py.state) { /* the exact sync sites: read or why not, and the drops */
		uint64_t skipped = __atomic_load_n(&py.skipped, __ATOMIC_RELAXED);

		if (skipped && py.state > 0)
			snprintf(py.detail + strlen(py.detail), sizeof(py.detail) - strlen(py.detail),
				 "; %llu calls not read (the reads held within 0.5%% of the run)",
				 (unsigned long long)skipped);
		uint64_t v[GW_PYST_NF] = { now_ns(), (uint64_t)g.pid, (uint64_t)py.code,
					   gw_intern(&g.w, py.detail), py.read,
					   __atomic_load_n(&py.dropped, __ATOMIC_RELAXED) };
		gw_emit(&g.w, GW_REC_PY_STATUS, v, GW_PYST_NF);
	}
	pthread_mutex_unlock(&g.lock);
	drain();
	pthread_mutex_lock(&g.lock);
	g.enabled = 0;
	pthread_mutex_unlock(&g.lock);
}

static void after_fork_child(void)
{
	/* The child has no flush thread and must never touch the parent's file. */
	g.enabled = 0;
	g.flusher_started = 0;
	pthread_mutex_init(&g.lock, NULL);
	pthread_mutex_init(&g.api_lock, NULL);
	/* the parent's reader reads the parent: this process opens its own */
	pthread_mutex_init(&py.lock, NULL);
	py.p = NULL;
	py.trie = NULL;
	py.state = 0;
	py.enabled = 0;
}

static unsigned env_uint(const char *name, unsigned dflt)
{
	const char *s = getenv(name);
	char *end;
	unsigned long v;

	if (!s || !*s)
		return dflt;
	v = strtoul(s, &end, 10);
	return *end ? dflt : (unsigned)v;
}

/* The target's own allowlisted environment (it may differ from gpuwhy's). */
static void emit_environment(struct gw_writer *w)
{
	for (char **e = environ; e && *e; e++) {
		const char *eq = strchr(*e, '=');
		char key[300];

		if (!eq || eq - *e > 255)
			continue;
		snprintf(key, sizeof(key), "env.%.*s", (int)(eq - *e), *e);
		if (gw_env_keep(key + 4, eq + 1))
			gw_emit_meta(w, key, eq + 1);
	}
}

static unsigned kinds_from_env(const char *list)
{
	unsigned mask = 0;

	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		size_t n = strlen(kinds[i].name);

		for (const char *p = list; (p = strstr(p, kinds[i].name)); p += n)
			if ((p == list || p[-1] == ',') && (p[n] == 0 || p[n] == ','))
				mask |= 1u << i;
	}
	return mask;
}

/* ---- finding and loading CUPTI --------------------------------------- */

struct found {
	char path[PATH_MAX];
	const char *source;
	unsigned major; /* 0: unknown */
	uint32_t api;
	void *lib;      /* open when its major is this library's */
	int mine_only;  /* second pass: skip the other major's */
	const char *missing; /* an entry point it lacks (cupti_bind) */
};

/* The first CUPTI that exists wins (a loader name only when it loads); one of
 * this library's major is kept open, the other major's is only noted. */
static int try_cupti(const char *path, const char *source, void *ud)
{
	struct found *f = ud;
	int bare = !strchr(path, '/');
	unsigned major = gw_cupti_file_major(path);
	__typeof__(cuptiGetVersion) *get_version;
	void *h = NULL;

	if (f->mine_only && major && major != GW_CUPTI_MAJOR)
		return 0;
	if (bare || !major || major == GW_CUPTI_MAJOR) {
		h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
		if (!h)
			return 0; /* not on the loader's path, or not loadable: look further */
		get_version = (__typeof__(cuptiGetVersion) *)dlsym(h, "cuptiGetVersion");
		if (!get_version || get_version(&f->api) != CUPTI_SUCCESS) {
			dlclose(h);
			return 0;
		}
		major = gw_cupti_api_major(f->api);
		if (major != GW_CUPTI_MAJOR) {
			dlclose(h);
			if (f->mine_only)
				return 0;
			h = NULL;
		}
	}
	snprintf(f->path, sizeof(f->path), "%s", path);
	f->source = source;
	f->major = major;
	f->lib = h;
	return 1;
}

/* Resolves every entry point; -1 (and the library closed, f->missing naming
 * the first entry point it lacks) when one is missing. */
static int cupti_bind(struct found *f)
{
#define X(fn) if (!(cu.fn = (__typeof__(cu.fn))dlsym(f->lib, #fn))) { f->missing = #fn; goto missing; }
	CUPTI_FNS(X)
#undef X
	cu.cuptiActivityRegisterTimestampCallback = (__typeof__(cu.cuptiActivityRegisterTimestampCallback))
		dlsym(f->lib, "cuptiActivityRegisterTimestampCallback");
	cu.lib = f->lib;
	cu.api = f->api;
	cu.source = f->source;
	snprintf(cu.path, sizeof(cu.path), "%s", f->path);
	return 0;
missing:
	dlclose(f->lib);
	f->lib = NULL;
	return -1;
}

/* The other major's library next to this one, when f needs it: its own
 * InitializeInjection takes over. Returns 1 when it did. The sibling finds
 * the same CUPTI and never hands back: this library is loaded already. */
/* The path of the sibling library for CUPTI major `major` (this library's
 * name with -cuN.so changed): 0, or -1 when this library was renamed. */
static int sibling_path(unsigned major, char *other, size_t len)
{
	char self[PATH_MAX], tail[16];
	Dl_info info;
	size_t n;

	if (!dladdr((void *)sibling_path, &info) || !info.dli_fname)
		return -1;
	snprintf(self, sizeof(self), "%s", info.dli_fname);
	snprintf(tail, sizeof(tail), "-cu%u.so", GW_CUPTI_MAJOR);
	n = strlen(self);
	if (n < strlen(tail) || strcmp(self + n - strlen(tail), tail))
		return -1; /* renamed: no sibling to know of */
	snprintf(other, len, "%.*s-cu%u.so", (int)(n - strlen(tail)), self, major);
	return 0;
}

static int hand_over(const struct found *f)
{
	char other[PATH_MAX];
	void *h;
	int (*init)(void);

	if (!f->major || f->major == GW_CUPTI_MAJOR || sibling_path(f->major, other, sizeof(other)) < 0)
		return 0;
	h = dlopen(other, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
	if (h) { /* loaded already: it handed over to this one */
		dlclose(h);
		return 0;
	}
	h = dlopen(other, RTLD_NOW | RTLD_LOCAL);
	if (!h)
		return 0;
	init = (int (*)(void))dlsym(h, "InitializeInjection");
	if (!init) {
		dlclose(h);
		return 0;
	}
	init();
	return 1; /* h stays loaded: its threads and exit handler run from it */
}

/* CUPTI's clock minus the recording's, where CUPTI cannot be given the
 * recording's clock: the closest of a few bracketed reads. */
static int64_t clock_offset(void)
{
	int64_t best = 0;
	uint64_t best_w = UINT64_MAX;

	for (int i = 0; i < 5; i++) {
		uint64_t t0 = now_ns(), c = 0, t1;

		if (cu.cuptiGetTimestamp(&c) != CUPTI_SUCCESS)
			return 0;
		t1 = now_ns();
		if (t1 - t0 < best_w) {
			best_w = t1 - t0;
			best = (int64_t)c - (int64_t)(t0 + (t1 - t0) / 2);
		}
	}
	return best;
}

/* The stream's account of the CUPTI used (meta records cupti.*), or of why
 * none was: an inject_event the report turns into one line. */
static void note_cupti(const struct found *f, int ok, unsigned looked)
{
	char buf[PATH_MAX + 200];

	pthread_mutex_lock(&g.lock);
	if (ok) {
		gw_emit_meta(&g.w, "cupti.path", cu.path);
		if (cu.api >= 10000)
			snprintf(buf, sizeof(buf), "%u.%u (API %u)", cu.api / 10000, cu.api / 100 % 100,
				 cu.api);
		else /* API v19..v28: CUDA 12.0..12.9 (cupti_version.h) */
			snprintf(buf, sizeof(buf), "12.%u (API %u)",
				 cu.api <= 19 ? 0 : cu.api >= 27 ? 9 : cu.api - 18, cu.api);
		gw_emit_meta(&g.w, "cupti.version", buf);
		gw_emit_meta(&g.w, "cupti.source", cu.source);
	} else if (f->path[0] && f->missing) {
		snprintf(buf, sizeof(buf), "%s (%s) is CUPTI %u but lacks %s, which gpuwhy uses: install "
			 "a newer nvidia-cuda-cupti-cu%u in the job's environment, or set " GW_ENV_CUPTI
			 " to a newer libcupti.so.%u", f->path, f->source, f->major, f->missing, f->major,
			 f->major);
		event_locked(GW_IEV_NO_CUPTI, buf, f->major);
	} else if (f->path[0]) {
		snprintf(buf, sizeof(buf), "%s (%s) is CUPTI %u; this library (%s) needs CUPTI %d%s",
			 f->path, f->source, f->major, LIB_NAME, GW_CUPTI_MAJOR,
			 f->major ? ": install gpuwhy with both injection libraries, or set " GW_ENV_CUPTI
				  : ": it does not load, or its version is not 12 or 13; set " GW_ENV_CUPTI);
		event_locked(GW_IEV_NO_CUPTI, buf, f->major);
	} else if (getenv(GW_ENV_CUPTI) && *getenv(GW_ENV_CUPTI)) {
		snprintf(buf, sizeof(buf), GW_ENV_CUPTI "=%.*s is not a CUPTI library that loads: set "
			 "it to a libcupti.so.12 or libcupti.so.13, or unset it", PATH_MAX, getenv(GW_ENV_CUPTI));
		event_locked(GW_IEV_NO_CUPTI, buf, 0);
	} else {
		/* the CUDA runtime the job loaded says which CUPTI wheel fits it */
		void *rt12 = dlopen("libcudart.so.12", RTLD_LAZY | RTLD_NOLOAD);
		unsigned want = rt12 ? 12 : 13;

		if (rt12)
			dlclose(rt12);

		snprintf(buf, sizeof(buf), "no CUPTI found (%u places searched): pip install "
			 "nvidia-cuda-cupti-cu%u in the job's environment, or set " GW_ENV_CUPTI " to a libcupti.so",
			 looked, want);
		event_locked(GW_IEV_NO_CUPTI, buf, 0);
	}
	pthread_mutex_unlock(&g.lock);
}

/* GPU times on the recording's clock: CUPTI's timestamp callback, or where
 * it is absent or refused, CUPTI's clock moved onto ours by a measured
 * offset. (GPUWHY_TS_CALLBACK=0, for overhead studies only, leaves CUPTI's
 * own clock: the GPU times then no longer share the samplers' clock.) */
static void use_our_clock(void)
{
	CUptiResult ts = CUPTI_ERROR_NOT_SUPPORTED;

	if (cu.cuptiActivityRegisterTimestampCallback) {
		ts = cu.cuptiActivityRegisterTimestampCallback(now_ns);
		if (ts != CUPTI_SUCCESS)
			cupti_failed("cuptiActivityRegisterTimestampCallback", ts);
	}
	if (ts != CUPTI_SUCCESS)
		cu.clock_off = clock_offset();
}

static int init_injection(void)
{
	const char *dir = getenv(GW_ENV_PARTS_DIR), *kinds_env;
	char path[4096];
	uint32_t version = 0;
	unsigned ring_bytes;
	CUptiResult res;

	struct found found = { .path = "" };
	unsigned looked = 0;
	int have_cupti;

	if (!dir || !*dir || g.enabled)
		return 1;
	gw_cupti_search(NULL, try_cupti, &found, &looked);
	if (!found.lib && hand_over(&found))
		return 1;
	if (!found.lib && found.major) { /* no sibling to take the other major: one of this major */
		struct found mine = { .path = "", .mine_only = 1 };

		if (gw_cupti_search(NULL, try_cupti, &mine, NULL) && mine.lib)
			found = mine;
	}
	have_cupti = found.lib && cupti_bind(&found) == 0;
	snprintf(g.stop_path, sizeof(g.stop_path), "%s/" GW_PARTS_STOP, dir);
	ring_bytes = env_uint(GW_ENV_RING_BYTES, 0); /* this process's ring budget */
	if (ring_bytes) {
		/* Ring mode: what later records need (the environment, the start)
		 * goes to a head file that is never rotated away; the timeline goes
		 * to segments of which the newest four are kept. */
		char prefix[64];
		struct gw_writer head;
		int hfd;

		snprintf(path, sizeof(path), "%s/" GW_PARTS_INJECT_PREFIX "%d.head.gws", dir, (int)getpid());
		hfd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		if (hfd < 0)
			return 1;
		if (gw_write_file_header(hfd) == 0 &&
		    gw_writer_init(&head, hfd, (uint32_t)getpid(), 0, 1u << 16) == 0) {
			emit_environment(&head);
			gw_flush(&head);
			gw_writer_free(&head);
		}
		close(hfd);
		snprintf(prefix, sizeof(prefix), GW_PARTS_INJECT_PREFIX "%d", (int)getpid());
		g.fd = gw_seg_open(&g.seg, dir, prefix, ring_bytes / 4, 4);
		if (g.fd < 0)
			return 1;
		g.ring = 1;
	} else {
		snprintf(path, sizeof(path), "%s/" GW_PARTS_INJECT_PREFIX "%d.gws", dir, (int)getpid());
		g.fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		if (g.fd < 0)
			return 1; /* nowhere to write: the target runs on untraced */
		if (gw_write_file_header(g.fd) < 0)
			goto out_close;
	}
	if (gw_writer_init(&g.w, g.fd, (uint32_t)getpid(), 0, 1u << 20) < 0)
		goto out_close;
	g.api[0] = calloc(API_RING, sizeof(struct api_call));
	g.api[1] = calloc(API_RING, sizeof(struct api_call));
	if (!g.api[0] || !g.api[1])
		goto out_free;
	g.pid = getpid();
	g.enabled = 1;
	g.flush_ms = env_uint(GW_ENV_FLUSH_MS, 500);
	if (g.flush_ms < 10)
		g.flush_ms = 10;
	g.trace_launches = env_uint(GW_ENV_TRACE_LAUNCHES, 0) != 0;
	py.enabled = env_uint(GW_ENV_PY_SITES, 1) != 0; /* record --no-py: 0 */
	g.duty_on_ms = env_uint(GW_ENV_DUTY_ON_MS, 0);
	g.duty_period_ms = env_uint(GW_ENV_DUTY_PERIOD_MS, 0);
	if (g.duty_on_ms == 0 || g.duty_on_ms >= g.duty_period_ms)
		g.duty_period_ms = 0;

	if (!g.ring)
		emit_environment(&g.w);
	note_cupti(&found, have_cupti, looked);
	if (!have_cupti) { /* the job runs untraced; the stream says why */
		g.enabled = 0;
		drain();
		free(g.api[0]);
		free(g.api[1]);
		gw_writer_free(&g.w);
		close(g.fd);
		g.fd = -1;
		return 1;
	}
	cu.cuptiGetVersion(&version);
	pthread_mutex_lock(&g.lock);
	event_locked(GW_IEV_STARTED, "cupti", version);
	pthread_mutex_unlock(&g.lock);

	if (env_uint(GW_ENV_TS_CALLBACK, 1))
		use_our_clock();
	TRY(cu.cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed));
	/* Diagnostic switches for overhead studies (bench/run.sh): GPUWHY_KINDS=
	 * kernel,memcpy,... selects activity kinds; GPUWHY_API_CALLBACKS=0 skips
	 * the callback subscription. */
	kinds_env = getenv(GW_ENV_KINDS);
	g.kind_mask = kinds_env && *kinds_env ? kinds_from_env(kinds_env) : ~0u;
	res = env_uint(GW_ENV_API_CALLBACKS, 1) ? cu.cuptiSubscribe(&g.sub, on_api, NULL) : CUPTI_SUCCESS;
	if (res != CUPTI_SUCCESS) {
		/* Another tool holds the callback API: keep the GPU timeline only. */
		cupti_failed("cuptiSubscribe", res);
		g.sub = NULL;
	}
	/* The host-call callbacks already give each synchronization's thread,
	 * start and end; SYNCHRONIZATION records repeat them at a cost measured
	 * on host-bound loops (bench/RESULTS.md), so they are the fallback for
	 * when the callbacks are unavailable, or on request (--sync-records). */
	if (g.sub && !(kinds_env && *kinds_env) && !env_uint(GW_ENV_SYNC_RECORDS, 0))
		g.kind_mask &= ~(1u << KIND_SYNC);
	set_tracing(1);
	pthread_atfork(NULL, NULL, after_fork_child);
	atexit(at_exit);
	drain(); /* the start events reach the disk at once, before drain has two callers */
	/* The flush thread takes none of the job's signals: a handler of the job
	 * (one that calls exit(), say) must never run on it while it holds g.lock. */
	sigset_t all, old;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	if (pthread_create(&g.flusher, NULL, flush_thread, NULL) == 0) {
		g.flusher_started = 1;
	} else {
		pthread_mutex_lock(&g.lock);
		event_locked(GW_IEV_NO_FLUSHER, NULL, 0);
		pthread_mutex_unlock(&g.lock);
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return 1;
out_free:
	free(g.api[0]);
	free(g.api[1]);
	gw_writer_free(&g.w);
out_close:
	close(g.fd);
	unlink(path);
	g.fd = -1;
	return 1;
}

/* ---- NVTX -------------------------------------------------------------- */

/* The CUPTI that traces, chosen as init_injection chooses it: the first
 * found when it is this library's major; of the other major, that one too
 * when the sibling library is there to trace with it (hand_over); else the
 * first of this library's major. Its handle stays open (NULL: none). */
static void *tracing_cupti(void)
{
	struct found f = { .path = "" }, mine = { .path = "", .mine_only = 1 };
	char other[PATH_MAX];

	gw_cupti_search(NULL, try_cupti, &f, NULL);
	if (f.lib)
		return f.lib;
	if (f.major && sibling_path(f.major, other, sizeof(other)) == 0 && access(other, R_OK) == 0)
		return dlopen(f.path, RTLD_NOW | RTLD_LOCAL);
	return gw_cupti_search(NULL, try_cupti, &mine, NULL) ? mine.lib : NULL;
}

/* Called by NVTX (NVTX_INJECTION64_PATH names this library) on the job's
 * first NVTX call, once, on any thread (it shares no state with
 * InitializeInjection). NVTX is handed to the CUPTI that traces
 * (tracing_cupti; one the job or this library loaded already is found
 * first). 0 (NVTX then stays off, the job runs on) when there is none. */
__attribute__((visibility("default"))) int InitializeInjectionNvtx2(const void *get_export_table)
{
	void *h, *init = NULL;
	int (*fn)(const void *), ret = 0;
	sigset_t all, old;

	/* as in InitializeInjection: a thread CUPTI starts here must never
	 * run a handler of the job */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	if ((h = tracing_cupti()) && (init = dlsym(h, "InitializeInjectionNvtx2"))) {
		*(void **)&fn = init;
		ret = fn(get_export_table);
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return ret;
}

/* Called by the CUDA driver on the job's thread that initializes CUDA. Every
 * thread started meanwhile (the flush thread, CUPTI's own) starts with all
 * signals blocked: a handler of the job must never run on one of them. */
__attribute__((visibility("default"))) int InitializeInjection(void)
{
	sigset_t all, old;
	int ret;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	ret = init_injection();
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return ret;
}
