/* Thread-sample lookups: the job's threads as /proc sampled them (samples.c
 * keeps them delta-coded), indexed once for the analysis, and what the
 * passes ask of them over a window: CPU cores used by the main process and
 * the rest, run-queue waits, runnable threads, threads in state D, and the
 * bytes the processes read and wrote. Windows come in time order, so each
 * thread keeps the two blocks of samples it decoded last (in a pool shared
 * by all threads: struct dec_pool). */
#include <stdlib.h>
#include <string.h>

#include "analyze.h"
#include "internal.h"

#define HOST_WINDOW_NS 40000000ull   /* /proc is sampled every 20 ms: look at >= 2 samples */

/* Block b of a thread's samples, decoded (through its two-block cache). */
static const struct tsample *block_of(struct thread_range *th, size_t b)
{
	struct dec_pool *p = th->pool;
	unsigned k;

	if (th->block[0] == b && p->v[th->slot[0]].owner == th)
		k = 0;
	else if (th->block[1] == b && p->v[th->slot[1]].owner == th)
		k = 1;
	else {
		k = th->older;
		if (th->block[k] == SIZE_MAX || p->v[th->slot[k]].owner != th) {
			th->slot[k] = (uint32_t)p->next; /* its slot was taken: take the next */
			p->next = (p->next + 1) % p->n;
		}
		samples_block(th->s, b, p->v[th->slot[k]].s);
		p->v[th->slot[k]].owner = th;
		th->block[k] = b;
	}
	th->older = !k;
	return p->v[th->slot[k]].s;
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
	for (size_t r = 0; r < a->x->threads.n; r++) {
		struct thread_range *th = &a->x->threads.v[r];

		if (th->cpu_flat)
			continue;
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
	for (size_t r = 0; r < a->x->threads.n; r++) {
		struct thread_range *th = &a->x->threads.v[r];
		double wait, run;

		if (th->other_gpu_process)
			continue;
		wait = th->wait_flat ? 0 : thread_growth(th, t0, t1, 1) / len;
		run = th->cpu_flat ? 0 : thread_ticks(th, t0, t1) * a->clk_tck_ns / len;
		q->job_wait += wait;
		q->job_run += run;
		if (th->s->tid == a->main_tid && th->s->pid == a->main_pid) {
			q->train_wait = wait;
			q->train_run = run;
		}
	}
}

/* The samples of thread tid of pid, or NULL. */
static struct thread_range *thread_of(const struct analysis *a, uint32_t pid, uint32_t tid)
{
	for (size_t r = 0; r < a->x->threads.n; r++) {
		struct thread_range *th = &a->x->threads.v[r];

		if (th->s->tid == tid && th->s->pid == pid && th->s->n)
			return th;
	}
	return NULL;
}

double thread_cpu_ns(const struct analysis *a, uint32_t pid, uint32_t tid, uint64_t t0, uint64_t t1)
{
	struct thread_range *th = t1 > t0 ? thread_of(a, pid, tid) : NULL;

	return th ? thread_ticks(th, t0, t1) * a->clk_tck_ns : -1;
}

/* The training thread was seen in state D (waiting on storage) during
 * [t0, t1]: a sample in D whose span to the next sample meets the window. */
int training_in_d(const struct analysis *a, uint64_t t0, uint64_t t1)
{
	struct thread_range *th = t1 > t0 ? thread_of(a, a->main_pid, a->main_tid) : NULL;
	size_t i = th ? first_after(th, t0) : 0;

	for (i = i ? i - 1 : 0; th && i < th->s->n; i++) {
		const struct tsample *x = sample(th, i);

		if (x->ts > t1)
			break;
		if (x->state == 'D')
			return 1;
	}
	return 0;
}

double training_cpu_ns(const struct analysis *a, uint64_t t0, uint64_t t1)
{
	return thread_cpu_ns(a, a->main_pid, a->main_tid, t0, t1);
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

	for (size_t r = 0; r < a->x->threads.n; r++) {
		struct thread_range *th = &a->x->threads.v[r];

		if (th->never_runnable)
			continue;
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

/* Threads of other processes that use the GPU (the other ranks of a DDP job)
 * are busy with their own work: their CPU time is no sign of data loading. */
void mark_gpu_processes(struct analysis *a)
{
	for (size_t r = 0; r < a->x->threads.n; r++) {
		struct thread_range *th = &a->x->threads.v[r];

		th->other_gpu_process = 0;
		if (th->s->pid == a->main_pid)
			continue;
		const struct proc_info *p = trace_proc(a->t, th->s->pid);

		th->other_gpu_process = p ? p->has_cuda : 0;
	}
}

static int cmp_thread(const void *x, const void *y)
{
	const struct thread_range *a = x, *b = y;

	return a->s->tid < b->s->tid ? -1 : a->s->tid > b->s->tid;
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

	a->x->io_period_ns = 5 * (1000000000ull / (hz && atoi(hz) > 0 ? (unsigned)atoi(hz) : 50));
	struct hmap last = { 0 }; /* pid -> index + 1 of its sample before */

	for (size_t i = 0; i < t->io.n; i++) {
		const struct io_sample *s = &t->io.v[i];
		uint64_t j = hmap_get(&last, s->pid);

		if (hmap_put(&last, s->pid, i + 1) < 0) {
			analysis_nomem(a, "indexing the processes' reads and writes");
			break;
		}
		if (!j)
			continue;
		const struct io_sample *p = &t->io.v[j - 1];
		uint64_t from = s->ts > p->ts + a->x->io_period_ns ? s->ts - a->x->io_period_ns : p->ts;

		if (s->read_bytes > p->read_bytes &&
		    VEC_PUSH(a->x->io_reads, ((struct io_event){ from, s->ts, s->read_bytes - p->read_bytes, s->pid })) < 0)
			analysis_nomem(a, "indexing the processes' reads");
		if (s->write_bytes > p->write_bytes &&
		    VEC_PUSH(a->x->io_writes,
			     ((struct io_event){ from, s->ts, s->write_bytes - p->write_bytes, s->pid })) < 0)
			analysis_nomem(a, "indexing the processes' writes");
	}
	hmap_free(&last);
	if (a->x->io_reads.n)
		qsort(a->x->io_reads.v, a->x->io_reads.n, sizeof(*a->x->io_reads.v), cmp_io_event);
	if (a->x->io_writes.n)
		qsort(a->x->io_writes.v, a->x->io_writes.n, sizeof(*a->x->io_writes.v), cmp_io_event);
}

/* Per-thread sample ranges and the state-D spans attribution looks up. */
void index_host_samples(struct analysis *a)
{
	const struct trace *t = a->t;

	for (size_t i = 0; i < t->threads.n; i++) {
		const struct thread_samples *s = &t->threads.v[i];
		struct thread_range th = { .s = s,
					   .block = { SIZE_MAX, SIZE_MAX } };
		struct sample_iter it;
		uint64_t prev_ts = 0, cpu0, wait0;
		int prev_d = 0;

		if (!s->n)
			continue;
		sample_at(&it, s, 0);
		cpu0 = it.s.cpu_ticks;
		wait0 = it.s.run_delay;
		th.cpu_flat = th.wait_flat = th.never_runnable = 1;
		do {
			th.cpu_flat &= it.s.cpu_ticks == cpu0;
			th.wait_flat &= it.s.run_delay == wait0;
			th.never_runnable &= it.s.state != 'R';
			/* in D from the sample that saw it to the next one */
			if (prev_d && VEC_PUSH(a->x->dstate, ((struct time_span){ prev_ts, it.s.ts })) < 0)
				goto nomem;
			prev_ts = it.s.ts;
			prev_d = it.s.state == 'D';
		} while (sample_next(&it));
		/* in D at its last sample: one sampling period on */
		if (prev_d &&
		    VEC_PUSH(a->x->dstate, ((struct time_span){ prev_ts, prev_ts + 20000000ull })) < 0)
			goto nomem;
		if (VEC_PUSH(a->x->threads, th) < 0)
			goto nomem;
	}
	/* by thread id, so that sums over threads add up in one order */
	if (a->x->threads.n)
		qsort(a->x->threads.v, a->x->threads.n, sizeof(*a->x->threads.v), cmp_thread);
	a->x->dec.n = a->x->threads.n * 2 < DEC_SLOTS ? a->x->threads.n * 2 : DEC_SLOTS;
	if (a->x->dec.n && !(a->x->dec.v = calloc(a->x->dec.n, sizeof(*a->x->dec.v))))
		goto nomem;
	for (size_t i = 0; i < a->x->threads.n; i++)
		a->x->threads.v[i].pool = &a->x->dec;
	if (a->x->dstate.n)
		qsort(a->x->dstate.v, a->x->dstate.n, sizeof(*a->x->dstate.v), cmp_span);
	for (size_t i = 0; i < a->x->dstate.n; i++) {
		uint64_t e = a->x->dstate.v[i].end;

		if (i && a->x->dstate_maxend.v[i - 1] > e)
			e = a->x->dstate_maxend.v[i - 1];
		if (VEC_PUSH(a->x->dstate_maxend, e) < 0)
			goto nomem;
	}
	index_io(a);
	return;
nomem: /* the analysis fails: no thread is looked at */
	a->x->threads.n = 0;
	analysis_nomem(a, "indexing the thread samples");
}

int dstate_in(const struct analysis *a, uint64_t w0, uint64_t w1)
{
	size_t lo = 0, hi = a->x->dstate.n;

	if (a->x->dstate_maxend.n != a->x->dstate.n)
		return 0; /* out of memory while indexing (the analysis fails) */
	while (lo < hi) { /* the spans starting at or before w1: [0, lo) */
		size_t mid = lo + (hi - lo) / 2;

		if (a->x->dstate.v[mid].start <= w1)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo > 0 && a->x->dstate_maxend.v[lo - 1] >= w0;
}

void gap_window(uint64_t ga, uint64_t gb, uint64_t *w0, uint64_t *w1)
{
	uint64_t len = gb - ga, pad = len < HOST_WINDOW_NS ? (HOST_WINDOW_NS - len) / 2 : 0;

	*w0 = ga > pad ? ga - pad : 0;
	*w1 = gb + pad;
}

/* Bytes of the growths in [w0, w1] (pid 0: every process's). */
static double io_bytes(const struct io_event *v, size_t n, uint64_t w0, uint64_t w1, uint64_t *counted,
		       uint32_t pid)
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
		if (v[i].start > w1 || (counted && v[i].end <= *counted) || (pid && v[i].pid != pid))
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

double io_bytes_in(const struct io_event *v, size_t n, uint64_t w0, uint64_t w1, uint64_t *counted)
{
	return io_bytes(v, n, w0, w1, counted, 0);
}

double io_bytes_of(const struct io_event *v, size_t n, uint64_t w0, uint64_t w1, uint32_t pid)
{
	return io_bytes(v, n, w0, w1, NULL, pid);
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
