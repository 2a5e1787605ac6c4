/* The analysis pipeline: timeline per device, steps, idle attribution, rules. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../util/util.h"
#include "analyze.h"
#include "internal.h"

static const struct {
	const char *id, *name;
} causes[IDLE_NCAUSES] = {
	[IDLE_LAUNCH_OVERHEAD] = { "launch_overhead", "host too slow to issue work (launch/Python)" },
	[IDLE_LAUNCH_BLOCKING] = { "launch_blocking", "CUDA_LAUNCH_BLOCKING serialization" },
	[IDLE_SYNC] = { "sync", "synchronization stall (host waited on the GPU)" },
	[IDLE_PAGEABLE] = { "pageable_copy", "pageable host copies" },
	[IDLE_DATA_WAIT] = { "data_wait", "waiting for data-loader workers" },
	[IDLE_HOST_COMPUTE] = { "host_compute", "CPU work on the training thread" },
	[IDLE_IO] = { "storage_io", "storage reads" },
	[IDLE_OVERSUB] = { "cpu_oversubscription", "CPU oversubscription" },
	[IDLE_PERIODIC] = { "periodic", "periodic stalls (validation, checkpoints)" },
	[IDLE_COMM] = { "communication", "waiting on other GPUs" },
	[IDLE_WRITE] = { "file_writes", "checkpoint / file writes" },
	[IDLE_UNKNOWN] = { "unknown", "unattributed" },
};

const char *idle_cause_name(enum idle_cause c)
{
	return c < IDLE_NCAUSES ? causes[c].name : "?";
}

const char *idle_cause_id(enum idle_cause c)
{
	return c < IDLE_NCAUSES ? causes[c].id : "?";
}

void analysis_warn(struct analysis *a, const char *fmt, ...)
{
	char buf[512], *s;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	s = strdup(buf);
	if (s && VEC_PUSH(a->warnings, s) < 0)
		free(s);
}

static int contains(const char *s, const char *needle)
{
	return strstr(s, needle) != NULL;
}

enum kclass classify_kernel(const char *n)
{
	if (contains(n, "nccl") || contains(n, "NCCL"))
		return KC_COMM;
	/* cuBLAS (gemm, gemv: a batch of one turns a GEMM into a GEMV; its
	 * split-K reduction is part of the GEMM), nvjet and CUTLASS on Hopper,
	 * XLA's gemm_fusion_dot, cuDNN convolutions */
	int mm = contains(n, "gemm") || contains(n, "Gemm") || contains(n, "nvjet") ||
		 contains(n, "xmma") || contains(n, "matmul") || contains(n, "wgmma") ||
		 contains(n, "cutlass") || contains(n, "gemv") || contains(n, "splitKreduce") ||
		 contains(n, "convolve_");
	if (mm) {
		int tc = contains(n, "tf32") || contains(n, "bf16") || contains(n, "f16") ||
			 contains(n, "bfloat16") || contains(n, "__half") ||
			 contains(n, "hmma") || contains(n, "16816") || contains(n, "1688") ||
			 contains(n, "884") || contains(n, "tensorop") || contains(n, "nvjet") ||
			 contains(n, "wgmma") || contains(n, "e4m3") || contains(n, "i8i8");
		int fp32 = contains(n, "f32f32_f32f32") || contains(n, "_ffma") ||
			   contains(n, "sgemm") || contains(n, "simt");
		if (fp32 && !tc)
			return KC_MATMUL_FP32;
		return KC_MATMUL_TC;
	}
	/* optimizers (multi_tensor_apply) are already fused: not a fusion candidate */
	if (contains(n, "multi_tensor_apply") || contains(n, "Optimizer") || contains(n, "adam"))
		return KC_OTHER;
	if (contains(n, "elementwise") || contains(n, "cupy_") || contains(n, "reduce_kernel") ||
	    contains(n, "Functor"))
		return KC_ELEMENTWISE;
	return KC_OTHER;
}

struct op_key {
	uint64_t key; /* device above the start's offset from the earliest start */
	uint64_t idx;
};

#define RADIX_BITS 11
#define RADIX_SIZE (1u << RADIX_BITS)

/* Stable LSD radix sort of k[0..n) by key, using tmp[0..n); the result ends
 * in k. Only as many 11-bit digits as the largest key has. */
static void radix_sort_keys(struct op_key *k, struct op_key *tmp, size_t n, unsigned bits)
{
	size_t *count = malloc(RADIX_SIZE * sizeof(*count));

	if (!count)
		return;
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
static void sort_ops(struct trace *t)
{
	size_t n = t->ops.n, i;
	struct op_key *k, *tmp;
	uint64_t first = UINT64_MAX, last = 0;
	unsigned maxdev = 0, bits;

	if (!t->ops_unordered) /* the loader noted whether the timeline came in order */
		return;
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
		return; /* out of memory: attribution will be approximate, never wrong memory */
	}
	if (bits <= 64) {
		for (i = 0; i < n; i++)
			k[i] = (struct op_key){ (dev_bits ? (uint64_t)t->ops.v[i].dev << span_bits : 0) |
							(t->ops.v[i].start - first), i };
		radix_sort_keys(k, tmp, n, bits);
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
}

static int cmp_thread(const void *x, const void *y)
{
	const struct thread_range *a = x, *b = y;

	return a->s->tid < b->s->tid ? -1 : a->s->tid > b->s->tid;
}

static int cmp_call(const void *x, const void *y)
{
	const struct host_call *a = x, *b = y;

	return a->end < b->end ? -1 : a->end > b->end;
}

double launch_idle_untraced(const struct analysis *a)
{
	double idle = (double)a->idle_by_cause[IDLE_LAUNCH_OVERHEAD] - (double)a->trace_cost_ns;

	return idle > 0 ? idle : 0;
}

double steady_untraced_ns(const struct analysis *a)
{
	return a->steady_ns > a->trace_cost_ns ? (double)(a->steady_ns - a->trace_cost_ns) : 0;
}

/* The device and process doing most of the GPU work (summed operation time,
 * from the device summaries; the process with the most operations). */
static void pick_main(struct analysis *a, const struct pid_counts *pc)
{
	struct trace *t = a->t;

	a->main_dev = 0;
	for (uint32_t d = 0; d < 16; d++) {
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

	if (t->keep_ops)
		sort_ops(t); /* for the timeline export */
	join_copy_calls(t);
	if (t->calls.n)
		qsort(t->calls.v, t->calls.n, sizeof(*t->calls.v), cmp_call);
}

/* The totals the reading pass summed (timeline.c): device summaries and the
 * last end of any operation. Busy and idle come with the steady pass. */
static void take_totals(struct analysis *a)
{
	const struct op_scan *s = a->t->scan;

	memcpy(a->dev, s->dev, sizeof(a->dev));
	a->ops_end = s->ops_end;
}

/* Block b of a thread's samples, decoded (through its two-block cache). */
static const struct tsample *block_of(struct thread_range *th, size_t b)
{
	unsigned k;

	if (th->block[0] == b)
		k = 0;
	else if (th->block[1] == b)
		k = 1;
	else {
		k = th->older;
		samples_block(th->s, b, th->dec[k]);
		th->block[k] = b;
	}
	th->older = !k;
	return th->dec[k];
}

/* Sample i of a thread. */
static const struct tsample *sample(struct thread_range *th, size_t i)
{
	return &block_of(th, i / SAMPLE_BLOCK)[i % SAMPLE_BLOCK];
}

/* Index of the first sample of a thread after x (th->s->n if none). */
static size_t first_after(struct thread_range *th, uint64_t x)
{
	const struct thread_samples *s = th->s;
	size_t b = th->block[!th->older]; /* the block used last */
	size_t lo, hi;

	if (b == SIZE_MAX || s->blocks.v[b].ts > x ||
	    (b + 1 < s->blocks.n && s->blocks.v[b + 1].ts <= x)) {
		lo = 0;
		hi = s->blocks.n;
		while (lo < hi) { /* one past the last block starting at or before x */
			size_t mid = lo + (hi - lo) / 2;

			if (s->blocks.v[mid].ts <= x)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo == 0)
			return 0;
		b = lo - 1;
	}
	/* in block b: its first sample is at or before x, the next block's after */
	const struct tsample *v = block_of(th, b);
	size_t first = b * SAMPLE_BLOCK;

	lo = 1;
	hi = s->n - first < SAMPLE_BLOCK ? s->n - first : SAMPLE_BLOCK;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (v[mid].ts <= x)
			lo = mid + 1;
		else
			hi = mid;
	}
	return first + lo;
}

/* The growth of a cumulative figure of one thread over [t0, t1]: CPU time
 * in clock ticks (run_delay 0), or its run-queue wait in ns (1). It is
 * carried forward between change-only samples and interpolated between the
 * samples around each end. */
static double thread_growth(struct thread_range *th, uint64_t t0, uint64_t t1, int run_delay)
{
	size_t n = th->s->n;
	double val[2];

	for (int k = 0; k < 2; k++) {
		uint64_t x = k ? t1 : t0;
		size_t lo = first_after(th, x);

		if (lo == 0) {
			const struct tsample *f = sample(th, 0);

			val[k] = (double)(run_delay ? f->run_delay : f->cpu_ticks);
		} else if (lo == n) {
			val[k] = (double)(run_delay ? th->s->last.run_delay : th->s->last.cpu_ticks);
		} else {
			struct tsample p = *sample(th, lo - 1);
			const struct tsample *q = sample(th, lo);
			double f = (double)(x - p.ts) / (double)(q->ts - p.ts);
			double pv = (double)(run_delay ? p.run_delay : p.cpu_ticks);
			double qv = (double)(run_delay ? q->run_delay : q->cpu_ticks);

			val[k] = pv + f * (qv - pv);
		}
	}
	return val[1] - val[0];
}

static double thread_ticks(struct thread_range *th, uint64_t t0, uint64_t t1)
{
	return thread_growth(th, t0, t1, 0);
}

void cpu_cores_split(const struct analysis *a, uint64_t t0, uint64_t t1, double *main,
		     double *workers)
{
	double m = 0, w = 0;

	*main = *workers = 0;
	if (t1 <= t0)
		return;
	for (size_t r = 0; r < a->threads.n; r++) {
		struct thread_range *th = &a->threads.v[r];

		if (th->s->pid == a->main_pid)
			m += thread_ticks(th, t0, t1);
		else if (!th->other_gpu_process)
			w += thread_ticks(th, t0, t1);
	}
	*main = m * a->clk_tck_ns / (double)(t1 - t0);
	*workers = w * a->clk_tck_ns / (double)(t1 - t0);
}

void run_queue_split(const struct analysis *a, uint64_t t0, uint64_t t1, struct rq_window *q)
{
	double len = (double)(t1 - t0);

	memset(q, 0, sizeof(*q));
	if (t1 <= t0)
		return;
	for (size_t r = 0; r < a->threads.n; r++) {
		struct thread_range *th = &a->threads.v[r];
		double wait, run;

		if (th->other_gpu_process)
			continue;
		wait = thread_growth(th, t0, t1, 1) / len;
		run = thread_ticks(th, t0, t1) * a->clk_tck_ns / len;
		q->job_wait += wait;
		q->job_run += run;
		if (th->s->tid == a->main_tid && th->s->pid == a->main_pid) {
			q->train_wait = wait;
			q->train_run = run;
		}
	}
}

double machine_idle_share(const struct analysis *a, uint64_t t0, uint64_t t1)
{
	const struct trace *t = a->t;
	size_t lo = 0, hi = t->sys.n;

	/* the samples around the window: the last at or before t0, the first at or after t1 */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (t->sys.v[mid].ts <= t0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0 || lo >= t->sys.n)
		return -1;
	const struct sys_sample *p = &t->sys.v[lo - 1], *q = p;

	for (size_t i = lo; i < t->sys.n; i++) {
		q = &t->sys.v[i];
		if (q->ts >= t1)
			break;
	}
	if (q->total <= p->total || q->busy < p->busy)
		return -1;
	return 1.0 - (double)(q->busy - p->busy) / (double)(q->total - p->total);
}

unsigned runnable_threads(const struct analysis *a, uint64_t w0, uint64_t w1)
{
	unsigned n = 0;

	for (size_t r = 0; r < a->threads.n; r++) {
		struct thread_range *th = &a->threads.v[r];
		size_t i = first_after(th, w0);

		/* the state in force at w0, and any sample inside the window */
		if (i > 0 && sample(th, i - 1)->state == 'R') {
			n++;
			continue;
		}
		for (; i < th->s->n && sample(th, i)->ts <= w1; i++)
			if (sample(th, i)->state == 'R') {
				n++;
				break;
			}
	}
	return n;
}

int cmp_u64(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;

	return a < b ? -1 : a > b;
}

/* Threads of other processes that use the GPU (the other ranks of a DDP job)
 * are busy with their own work: their CPU time is no sign of data loading. */
static void mark_gpu_processes(struct analysis *a)
{
	for (size_t r = 0; r < a->threads.n; r++) {
		struct thread_range *th = &a->threads.v[r];

		th->other_gpu_process = 0;
		if (th->s->pid == a->main_pid)
			continue;
		for (size_t i = 0; i < a->t->procs.n; i++)
			if (a->t->procs.v[i].pid == th->s->pid) {
				th->other_gpu_process = a->t->procs.v[i].has_cuda;
				break;
			}
	}
}

static int cmp_span(const void *x, const void *y)
{
	const struct time_span *a = x, *b = y;

	return a->start < b->start ? -1 : a->start > b->start;
}

static int cmp_io_event(const void *x, const void *y)
{
	const struct io_event *a = x, *b = y;

	return a->end < b->end ? -1 : a->end > b->end;
}

/* What the processes read and wrote, from their proc_io samples: a sample
 * is written when a check (every io_period) found a change, so a growth
 * happened after the check before it: in [max(previous sample, ts - period), ts]. */
static void index_io(struct analysis *a)
{
	const struct trace *t = a->t;
	const char *hz = trace_meta(t, "record.proc_hz");

	a->io_period_ns = 5 * (1000000000ull / (hz && atoi(hz) > 0 ? (unsigned)atoi(hz) : 50));
	for (size_t i = 0; i < t->io.n; i++) {
		const struct io_sample *s = &t->io.v[i];

		for (size_t j = i; j-- > 0;) {
			const struct io_sample *p = &t->io.v[j];

			if (p->pid != s->pid)
				continue;
			uint64_t from = s->ts > p->ts + a->io_period_ns ? s->ts - a->io_period_ns : p->ts;

			if (s->read_bytes > p->read_bytes)
				VEC_PUSH(a->io_reads, ((struct io_event){ from, s->ts, s->read_bytes - p->read_bytes }));
			if (s->write_bytes > p->write_bytes)
				VEC_PUSH(a->io_writes,
					 ((struct io_event){ from, s->ts, s->write_bytes - p->write_bytes }));
			break;
		}
	}
	if (a->io_reads.n)
		qsort(a->io_reads.v, a->io_reads.n, sizeof(*a->io_reads.v), cmp_io_event);
	if (a->io_writes.n)
		qsort(a->io_writes.v, a->io_writes.n, sizeof(*a->io_writes.v), cmp_io_event);
}

/* Per-thread sample ranges and the state-D spans attribution looks up. */
static void index_host_samples(struct analysis *a)
{
	const struct trace *t = a->t;

	for (size_t i = 0; i < t->threads.n; i++) {
		const struct thread_samples *s = &t->threads.v[i];
		struct thread_range th = { .s = s,
					   .block = { SIZE_MAX, SIZE_MAX } };
		struct sample_iter it;
		uint64_t prev_ts = 0;
		int prev_d = 0;

		if (!s->n)
			continue;
		VEC_PUSH(a->threads, th);
		sample_at(&it, s, 0);
		do {
			if (prev_d) /* in D from the sample that saw it to the next one */
				VEC_PUSH(a->dstate, ((struct time_span){ prev_ts, it.s.ts }));
			prev_ts = it.s.ts;
			prev_d = it.s.state == 'D';
		} while (sample_next(&it));
		if (prev_d) /* in D at its last sample: one sampling period on */
			VEC_PUSH(a->dstate, ((struct time_span){ prev_ts, prev_ts + 20000000ull }));
	}
	/* by thread id, so that sums over threads add up in one order */
	if (a->threads.n)
		qsort(a->threads.v, a->threads.n, sizeof(*a->threads.v), cmp_thread);
	if (a->dstate.n)
		qsort(a->dstate.v, a->dstate.n, sizeof(*a->dstate.v), cmp_span);
	for (size_t i = 0; i < a->dstate.n; i++) {
		uint64_t e = a->dstate.v[i].end;

		if (i && a->dstate_maxend.v[i - 1] > e)
			e = a->dstate_maxend.v[i - 1];
		VEC_PUSH(a->dstate_maxend, e);
	}
	index_io(a);
}

int dstate_in(const struct analysis *a, uint64_t w0, uint64_t w1)
{
	size_t lo = 0, hi = a->dstate.n;

	if (a->dstate_maxend.n != a->dstate.n)
		return 0; /* out of memory while indexing */
	while (lo < hi) { /* the spans starting at or before w1: [0, lo) */
		size_t mid = lo + (hi - lo) / 2;

		if (a->dstate.v[mid].start <= w1)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo > 0 && a->dstate_maxend.v[lo - 1] >= w0;
}

double io_bytes_in(const struct io_event *v, size_t n, uint64_t w0, uint64_t w1, uint64_t *counted)
{
	size_t lo = 0, hi = n;
	uint64_t max_end = 0;
	double bytes = 0;

	while (lo < hi) { /* the first growth ending at or after w0 */
		size_t mid = lo + (hi - lo) / 2;

		if (v[mid].end < w0)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* a growth spans at most one check period, so none ending much later can start in the window */
	for (size_t i = lo; i < n && v[i].end <= w1 + 1000000000ull; i++) {
		if (v[i].start > w1 || (counted && v[i].end <= *counted))
			continue;
		if (counted) {
			bytes += (double)v[i].bytes;
		} else { /* at an even rate over its span: the part inside the window */
			uint64_t s = v[i].start > w0 ? v[i].start : w0, e = v[i].end < w1 ? v[i].end : w1;
			uint64_t span = v[i].end - v[i].start;

			bytes += span ? (double)v[i].bytes * (double)(e > s ? e - s : 0) / (double)span
				      : (double)v[i].bytes;
		}
		if (v[i].end > max_end)
			max_end = v[i].end;
	}
	if (counted && max_end > *counted)
		*counted = max_end;
	return bytes;
}

/* 1 if some time in the sorted list falls in [w0, w1]. */
int any_time_in(const uint64_t *v, size_t n, uint64_t w0, uint64_t w1)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (v[mid] < w0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && v[lo] <= w1;
}

/* Traced windows from the injection library's duty-cycle events. */
static void build_windows(struct analysis *a)
{
	const struct trace *t = a->t;
	uint64_t on = 0;
	int open = 0, any_off = 0;

	for (size_t i = 0; i < t->events.n; i++)
		any_off |= t->events.v[i].pid == a->main_pid && t->events.v[i].code == GW_IEV_TRACE_OFF;
	if (!any_off)
		return;
	for (size_t i = 0; i < t->events.n; i++) {
		const struct inject_event *e = &t->events.v[i];

		if (e->pid != a->main_pid)
			continue;
		if ((e->code == GW_IEV_TRACE_ON || e->code == GW_IEV_STARTED) && !open) {
			on = e->ts;
			open = 1;
		} else if (e->code == GW_IEV_TRACE_OFF && open) {
			VEC_PUSH(a->windows, on);
			VEC_PUSH(a->windows, e->ts);
			open = 0;
		}
	}
	if (open) {
		VEC_PUSH(a->windows, on);
		VEC_PUSH(a->windows, UINT64_MAX);
	}
}

uint64_t traced_until(const struct analysis *a, uint64_t t)
{
	if (!a->windows.n)
		return UINT64_MAX;
	for (size_t i = 0; i + 1 < a->windows.n; i += 2)
		if (t >= a->windows.v[i] && t < a->windows.v[i + 1])
			return a->windows.v[i + 1];
	return 0;
}

int traced(const struct analysis *a, uint64_t t0, uint64_t t1)
{
	uint64_t end = traced_until(a, t0);

	return end && t1 <= end;
}

/* The pass over the operations once the steps are known (the recording is
 * read again, each device's operations in time order): each GPU's busy time,
 * over its whole timeline and inside the main GPU's steady window (so that
 * the ranks of a multi-GPU job compare on the same footing), the idle
 * attribution, and the op statistics the rules read. */
struct steady_pass {
	struct analysis *a;
	struct attr_pass ap;
	struct op_stats_pass sp;
	int attr;
	size_t step_cursor; /* main GPU: the step of its operations (step.nops) */
	uint64_t busy[GW_MAX_DEVS], cur_end[GW_MAX_DEVS], steady_end[GW_MAX_DEVS];
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
	uint32_t st = step_at(a, o->start, &p->step_cursor);

	if (st != UINT32_MAX)
		a->steps.v[st].nops++;
	if (p->attr && o->start < a->t1)
		attr_add(a, &p->ap, o);
	if (o->start >= a->t0 && o->end <= a->t1)
		op_stats_add(a, &p->sp, o);
}

/* The main process blocked on a full GPU command queue inside the steady
 * window: the GPU, not the host, set the pace then. */
static void steady_wait(void *ctx, const struct host_wait *q)
{
	struct analysis *a = ((struct steady_pass *)ctx)->a;
	uint64_t s = q->start > a->t0 ? q->start : a->t0, e = q->end < a->t1 ? q->end : a->t1;

	if (q->pid == a->main_pid && e > s)
		a->queue_full_ns += e - s;
}

/* GPM samples of the main GPU in the steady window, for C8 and C11. */
static void steady_gpm(void *ctx, const struct gpm_samp *g)
{
	struct analysis *a = ((struct steady_pass *)ctx)->a;

	if (a->t->keep_samples)
		(void)VEC_PUSH(a->t->gpm_samples, *g); /* a chart loses a point, no more */
	if (g->gpu != a->main_dev || g->ts < a->t0 || g->ts > a->t1)
		return;
	if (g->valid & 4) {
		a->gpm_tensor += g->tensor;
		a->gpm_tensor_n++;
	}
	if ((g->valid & 8) && g->sm_util > 5) { /* only while the GPU works */
		a->gpm_dram += g->dram;
		a->gpm_dram_n++;
	}
}

static void steady_pass(struct analysis *a)
{
	struct steady_pass *p = calloc(1, sizeof(*p));
	struct replay_sinks k = { steady_add, steady_wait, steady_gpm, p };
	char err[512];

	if (!p) {
		analysis_warn(a, "out of memory: idle time was not attributed");
		return;
	}
	p->a = a;
	p->attr = attr_begin(a, &p->ap) == 0;
	op_stats_begin(a, &p->sp);
	if (timeline_replay(a->t, UINT32_MAX, &k, err, sizeof(err)) < 0)
		analysis_warn(a, "could not read the recording's GPU timeline again (%s): the "
				 "attribution is incomplete", err);
	if (p->attr)
		attr_end(a, &p->ap);
	op_stats_end(a, &p->sp);
	for (unsigned d = 0; d < GW_MAX_DEVS; d++) {
		struct device_summary *s = &a->dev[d];

		s->busy_ns = p->busy[d];
		s->idle_ns = s->window_ns > p->busy[d] ? s->window_ns - p->busy[d] : 0;
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
	a->knames = kname_cache_new(); /* NULL: names are shown as recorded */

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
		self_check(a);
		return 0;
	}
	index_host_samples(a);
	take_totals(a);
	pick_main(a, &t->scan->pc);
	mark_gpu_processes(a);
	detect_framework(a);
	build_windows(a);
	check_lost_tail(a);
	ret = detect_steps(a, steps);
	if (ret < 0)
		return ret;
	note_ring(a); /* after detect_steps: it needs first_op */
	steady_pass(a);
	run_rules(a);
	sites_attach(a);
	self_check(a);
	return 0;
}

const char *analysis_kname(const struct analysis *a, uint32_t name, int form)
{
	if (name >= a->t->names.n)
		return "?";
	return kname_cached(a->knames, name, a->t->names.v[name], form);
}

void analysis_free(struct analysis *a)
{
	for (size_t i = 0; i < a->warnings.n; i++)
		free(a->warnings.v[i]);
	free(a->warnings.v);
	free(a->steps.v);
	free(a->gaps.v);
	free(a->threads.v);
	free(a->windows.v);
	free(a->dstate.v);
	free(a->dstate_maxend.v);
	free(a->io_reads.v);
	free(a->io_writes.v);
	free(a->findings.v);
	kname_cache_free(a->knames);
	free(a->sites.v);
	free(a->node_site.v);
	free(a->name_totals);
	memset(a, 0, sizeof(*a));
}

static void swap_d(double *a, double *b)
{
	double t = *a;

	*a = *b;
	*b = t;
}

/* Quickselect (Hoare): the k-th smallest in O(n) on average; reorders x. */
double quantile(double *x, size_t n, double q)
{
	size_t k, lo = 0, hi;

	if (!n)
		return 0;
	k = (size_t)(q * (double)(n - 1) + 0.5);
	if (k >= n)
		k = n - 1;
	hi = n - 1;
	while (lo < hi) {
		double pivot = x[lo + (hi - lo) / 2];
		size_t i = lo, j = hi;

		while (i <= j) {
			while (x[i] < pivot)
				i++;
			while (x[j] > pivot)
				j--;
			if (i <= j) {
				swap_d(&x[i], &x[j]);
				i++;
				if (j == 0)
					break;
				j--;
			}
		}
		if (k <= j)
			hi = j;
		else if (k >= i)
			lo = i;
		else
			break;
	}
	return x[k];
}
