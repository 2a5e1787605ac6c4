/* Idle attribution: every idle interval of the main GPU inside the steady
 * window gets exactly one cause, by the first rule that matches (the order
 * and thresholds are documented and justified in docs/RULES.md). */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define PAGEABLE_GAP_NS 1000000ull     /* staging gaps next to a pageable copy */
#define BLOCKING_HOST_GAP_NS 1000000ull /* under blocking launches, a gap this long may hold other host work */
#define SYNC_SLACK_NS 20000ull       /* a sync returning this close to the gap's start */
#define INPUT_GAP_NS 1000000ull       /* input preparation between steps: >= 1 ms */
#define BUSY_CORES 0.5               /* "busy": at least half a core of CPU time */
#define READS_BESIDE_CORES 0.9     /* ...unless the training thread ran on its CPU this share of the gap or more, none in D */
#define WRITES_OVER_READS 16       /* a thread in D while the job wrote this many times what it read is writing */
#define OVERSUB_AWAKE_SHARE 0.8    /* reads beside a training thread waiting for a core: it was awake this share */
#define DATA_WAIT_TRAIN_SHARE 0.9  /* busy workers are an input wait only while the training thread ran less than this share */
/* C7 from run-queue waits: the training thread waited for a core at least
 * this share of the gap, and at least as long as it ran (docs/RULES.md). */
#define TRAIN_WAIT_SHARE 0.25
#define TRAIN_WAIT_SHARE_SATURATED 0.10 /* ... when the machine had no idle CPU */
#define SATURATED_IDLE 0.05             /* "no idle CPU": under 5% of the machine's CPU time idle */

static int is_pageable_transfer(const struct gpu_op *o)
{
	if (o->kind != OP_MEMCPY)
		return 0;
	if (o->copy_kind == COPY_HTOD)
		return o->src_kind == MEM_PAGEABLE;
	if (o->copy_kind == COPY_DTOH)
		return o->dst_kind == MEM_PAGEABLE && o->bytes > SMALL_COPY_BYTES;
	return 0;
}

static int is_sync_copy(const struct gpu_op *o)
{
	return o->kind == OP_MEMCPY && o->copy_kind == COPY_DTOH &&
	       (!o->async || o->bytes <= SMALL_COPY_BYTES || o->dst_kind == MEM_PAGEABLE);
}

/* Reads issued back to back: a small asynchronous copy into pinned memory
 * followed by another device-to-host copy, with the CUDA calls recorded and
 * no synchronize call of the training thread in or just before the gap. The
 * host went on issuing instead of waiting (a loop of non_blocking copies
 * into pinned buffers, one event waited on after them): the gap is its
 * issuing, not a synchronization. .item() copies into a pinned buffer too,
 * and synchronizes the stream before the next. */
static int reads_without_wait(const struct analysis *a, const struct attr_pass *p, const struct gpu_op *prev,
			      const struct gpu_op *next, uint64_t ga, uint64_t gb)
{
	/* JAX reads a value by polling an event, a wait with no call gpuwhy
	 * sees: its reads are never known to go unwaited */
	if (!prev || !next || !a->t->ncalls || a->framework == FW_JAX || prev->kind != OP_MEMCPY ||
	    prev->copy_kind != COPY_DTOH ||
	    !prev->async || prev->dst_kind != MEM_PINNED || prev->bytes > SMALL_COPY_BYTES ||
	    next->kind != OP_MEMCPY || next->copy_kind != COPY_DTOH)
		return 0;
	size_t i = p->tcall_cursor;

	while (i > 0 && a->t->calls.v[p->tcalls.v[i - 1]].end + SYNC_SLACK_NS >= ga)
		i--;
	for (; i < p->tcalls.n; i++) { /* one thread's calls: by end is by start */
		const struct host_call *c = &a->t->calls.v[p->tcalls.v[i]];

		if (c->start >= gb)
			break;
		if (c->cls == HC_SYNC && c->end + SYNC_SLACK_NS >= ga)
			return 0;
	}
	return 1;
}

/* A host synchronization of the main process that returned near the gap's
 * start. Gaps come in time order and calls are sorted by end, so *cursor
 * (the first call with end >= ga - slack) only moves on. */
static int sync_returned_at(const struct analysis *a, uint64_t ga, uint64_t gb, size_t *cursor)
{
	const struct trace *t = a->t;
	size_t lo = *cursor;

	while (lo < t->calls.n && t->calls.v[lo].end + SYNC_SLACK_NS < ga)
		lo++;
	*cursor = lo;
	for (size_t i = lo; i < t->calls.n && t->calls.v[i].end < gb; i++) {
		const struct host_call *c = &t->calls.v[i];

		if (c->pid == a->main_pid && c->cls == HC_SYNC && c->start < ga)
			return 1;
	}
	/* without host-call records (CUPTI held by another tool): activity sync
	 * records (sorted by end: a search, then those ending before gb) */
	if (!t->ncalls) {
		size_t hi = t->syncs.n;

		lo = 0;
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;

			if (t->syncs.v[mid].end + SYNC_SLACK_NS < ga)
				lo = mid + 1;
			else
				hi = mid;
		}
		for (size_t i = lo; i < t->syncs.n && t->syncs.v[i].end < gb; i++)
			if (t->syncs.v[i].pid == a->main_pid && t->syncs.v[i].start < ga)
				return 1;
	}
	return 0;
}

/* Step 2b: what the training thread was doing during the gap, when one of
 * its synchronize or copy calls covers at least half of it (the others
 * stay with the rules after: a call covering less is the end of the gap,
 * not what filled it). Inside a synchronize call, or a device-to-host copy
 * (which returns with the data), the host waited on the GPU: `sync`. Inside
 * a copy from or to pageable memory the driver staged the data through a
 * pinned buffer on the CPU, whatever the gap's length: `pageable_copy`.
 * Inside a host-to-device copy from pinned memory the GPU waited for the
 * host to issue the copy: `launch_overhead`. Calls whose copy is unknown
 * (its record lost) decide nothing. Returns IDLE_NCAUSES when no call
 * decides. Gaps come in time order and calls are sorted by end, so the
 * cursor (the first call ending after the gap's start) only moves on. */
static enum idle_cause inside_call(const struct analysis *a, struct attr_pass *p, uint64_t ga,
				   uint64_t gb)
{
	const struct host_call *best = NULL;
	uint64_t best_ns = 0;
	size_t i = p->tcall_cursor;

	while (i < p->tcalls.n && a->t->calls.v[p->tcalls.v[i]].end <= ga)
		i++;
	p->tcall_cursor = i;
	/* one thread makes one call at a time: only the first call ending at
	 * or after the gap's end can still have started inside it */
	for (; i < p->tcalls.n; i++) {
		const struct host_call *c = &a->t->calls.v[p->tcalls.v[i]];
		uint64_t s = c->start > ga ? c->start : ga, e = c->end < gb ? c->end : gb;

		if (e > s && e - s > best_ns) {
			best_ns = e - s;
			best = c;
		}
		if (c->end >= gb)
			break;
	}
	if (!best || best_ns * 2 < gb - ga)
		return IDLE_NCAUSES;
	if (best->cls == HC_SYNC)
		return IDLE_SYNC;
	if (!best->copy_dir)
		return IDLE_NCAUSES;
	if (best->copy_host == MEM_PAGEABLE)
		return IDLE_PAGEABLE;
	return best->copy_dir == COPY_DTOH ? IDLE_SYNC : IDLE_LAUNCH_OVERHEAD;
}

/* Whether the training thread's call that set the sync gap [ga, gb) (the
 * one that returned at its start or spans it) frees memory (the caching
 * allocator's doing) or is a library's check that torch.compile skips
 * (sites_sync_compile_skips): not a read of the program's. Calls of one
 * thread do not overlap, so by end is by start too. */
static int sync_gap_not_a_read(const struct analysis *a, const struct attr_pass *p, uint64_t ga, uint64_t gb)
{
	const struct trace *t = a->t;
	size_t lo = 0, hi = p->tcalls.n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (t->calls.v[p->tcalls.v[mid]].end + SYNC_SLACK_NS < ga)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == p->tcalls.n)
		return 0;
	const struct host_call *c = &t->calls.v[p->tcalls.v[lo]];

	return c->start < gb &&
	       ((c->cls == HC_SYNC && c->name < t->names.n && strstr(t->names.v[c->name], "Free") != NULL) ||
		((c->cls == HC_SYNC || c->cls == HC_MEMCPY) && c->py_stack &&
		 sites_sync_compile_skips(a, c->py_stack)));
}

/* What classify() saw of the host in a gap's window, for the evidence. */
struct gap_host {
	uint64_t w0, w1;
	struct rq_window q;
	double machine_idle; /* share, -1 unknown */
	int rq;              /* q and machine_idle were computed */
};

/* The training thread itself waited for a core (run-queue waits known):
 * at least a quarter of the window (a tenth when the machine had no idle
 * CPU) and at least as long as it ran. */
static int train_waited_core(const struct gap_host *h)
{
	double need = h->machine_idle >= 0 && h->machine_idle < SATURATED_IDLE ? TRAIN_WAIT_SHARE_SATURATED
									      : TRAIN_WAIT_SHARE;

	return h->rq && h->q.train_wait >= need && h->q.train_wait >= h->q.train_run;
}

/* Step 6: the job's threads waited for cores. From run-queue waits where
 * they were recorded: the training thread waited for a core
 * (train_waited_core), or the job's threads together waited at least half a
 * core's worth and at least as long as they ran. Sleeping threads add
 * nothing, however many. Without run-queue waits: more runnable threads
 * than 1.25x the CPUs while the tree burns half a core. */
static int oversubscribed(const struct analysis *a, uint64_t w0, uint64_t w1, double cores,
			  struct gap_host *h)
{
	if (!a->rq_known)
		return a->cpus_allowed && cores >= BUSY_CORES &&
		       runnable_threads(a, w0, w1) * 4 > a->cpus_allowed * 5;
	run_queue_split(a, w0, w1, &h->q);
	h->machine_idle = machine_idle_share(a, w0, w1);
	h->rq = 1;
	return train_waited_core(h) || (h->q.job_wait >= BUSY_CORES && h->q.job_wait >= h->q.job_run);
}

/* The training thread ran on its CPU half of the window or more and was
 * never seen waiting on storage: the job's reads went on beside its work
 * (another process's: a pool's workers paging in their libraries while it
 * launched), not in its way. */
static int reads_beside(const struct analysis *a, uint64_t w0, uint64_t w1)
{
	double own = training_cpu_ns(a, w0, w1);

	return own >= BUSY_CORES * (double)(w1 - w0) && !training_in_d(a, w0, w1);
}

/* Under CUDA_LAUNCH_BLOCKING=1 every launch holds the host until its kernel
 * ends: a gap between two kernels is the host waking up, dispatching and
 * launching again (C5), unless it is long enough to hold other work
 * (BLOCKING_HOST_GAP_NS): that is judged as any gap, by what the host did
 * (the input a training thread prepares between batches is C1's, a read
 * from storage C2's), and what comes out as launching or waiting on the
 * device is still the blocking launches'. */
static int blocked(const struct analysis *a, int cause)
{
	return a->launch_blocking && (cause == IDLE_LAUNCH_OVERHEAD || cause == IDLE_UNKNOWN || cause == IDLE_SYNC)
		       ? IDLE_LAUNCH_BLOCKING
		       : cause;
}

static enum idle_cause classify(const struct analysis *a, const struct gpu_op *prev,
				const struct gpu_op *next, uint64_t ga, uint64_t gb, struct attr_pass *p,
				struct gap_host *h)
{
	uint64_t len = gb - ga, w0, w1;
	enum idle_cause in_call;

	int pageable = (prev && is_pageable_transfer(prev)) || (next && is_pageable_transfer(next));

	/* inside a collective the host runs (gloo): the GPU waits for the
	 * other ranks and the reduction, whatever the host thread does */
	if (a->x->comm_spans.n && hostcoll_overlap(a, ga, gb) * 2 >= len)
		return IDLE_COMM;
	/* after a device-to-host copy the host waited for (its data is back):
	 * what it did next followed a synchronization, unless the gap is the
	 * driver moving a pageable copy's data out of its pinned buffer */
	int issuing = reads_without_wait(a, p, prev, next, ga, gb);

	if ((prev && is_sync_copy(prev) && !issuing && (!is_pageable_transfer(prev) || len >= PAGEABLE_GAP_NS)) ||
	    sync_returned_at(a, ga, gb, &p->call_cursor))
		return IDLE_SYNC;
	/* issuing reads, the host's time in their copy calls is issuing too */
	if ((in_call = inside_call(a, p, ga, gb)) != IDLE_NCAUSES)
		return issuing && in_call == IDLE_SYNC ? IDLE_LAUNCH_OVERHEAD : in_call;
	/* The driver stages pageable copies through a pinned buffer: short gaps
	 * next to them are that staging. Long ones are whatever the host did
	 * before the copy (reading the file, preparing the batch): look at it. */
	if (pageable && len < PAGEABLE_GAP_NS)
		return IDLE_PAGEABLE;
	if (len < SHORT_GAP_NS)
		return IDLE_LAUNCH_OVERHEAD;
	gap_window(ga, gb, &w0, &w1);
	h->w0 = w0;
	h->w1 = w1;
	if (!a->t->nsamples)
		return pageable ? IDLE_PAGEABLE : IDLE_UNKNOWN;
	/* Storage, from what was read and written: reads (any, with a thread
	 * in D; or more than 1 MiB) are storage reads; a thread in D while the
	 * job wrote and read nothing, or wrote far more than it read, is
	 * writing (checkpoints, os.sync(): the kernel holds a writer in D while
	 * its dirty pages go out, and a few KiB of metadata are read meanwhile). */
	double rb = io_bytes_in(a->x->io_reads.v, a->x->io_reads.n, w0, w1, NULL);
	double wb = io_bytes_in(a->x->io_writes.v, a->x->io_writes.n, w0, w1, NULL);
	int d = dstate_in(a, w0, w1);

	double main, workers;

	cpu_cores_split(a, w0, w1, &main, &workers);
	if (d && wb > 0 && wb >= WRITES_OVER_READS * rb)
		return IDLE_WRITE;
	/* The training thread waited for a core, was never seen in D and was
	 * awake (on a run queue or a CPU) nearly all the window: the job's
	 * reads (another process's pages and files) did not hold it up; a
	 * thread that read would have slept in them (state D is sampled, a
	 * short read can fall between two samples; its sleep cannot). */
	int over = -1;

	if ((d || rb > READ_BYTES) && !training_in_d(a, w0, w1)) {
		over = oversubscribed(a, w0, w1, main + workers, h);
		if (over && train_waited_core(h) && h->q.train_wait + h->q.train_run >= OVERSUB_AWAKE_SHARE)
			return IDLE_OVERSUB;
	}
	/* Reads with no thread in D while the training thread computed on its
	 * CPU the whole time did not hold it up: they went on beside its work
	 * (readahead, a library's pages), and the gap is that work. */
	if (((d && rb > 0) || (rb > READ_BYTES && (d || main < READS_BESIDE_CORES))) && !reads_beside(a, w0, w1))
		return IDLE_IO;
	if (over < 0 ? oversubscribed(a, w0, w1, main + workers, h) : over)
		return IDLE_OVERSUB;
	/* waiting for input: the workers busy while the training thread was
	 * not; one that ran on its CPU nearly all the window launched or
	 * computed (its workers preparing later batches beside it) */
	if (workers >= BUSY_CORES && workers >= main &&
	    training_cpu_ns(a, w0, w1) < DATA_WAIT_TRAIN_SHARE * (double)(w1 - w0))
		return IDLE_DATA_WAIT;
	if (main >= BUSY_CORES)
		return IDLE_HOST_COMPUTE;
	return pageable ? IDLE_PAGEABLE : IDLE_UNKNOWN;
}

/* Long steps every d steps (from step r) whose training thread ran the same
 * stacks, in the same shares, as in the others: the loop's own work (an
 * iteration of the loop spans d of the steps found: XLA's programs for a
 * scan), not an activity every d steps. The distance, and the pattern where
 * it is the loop's own, are kept for the report and the tests. */
static int same_code(struct analysis *a, const uint8_t *is_long, size_t d, size_t r)
{
	size_t n = a->steps.n;
	uint8_t *marked = calloc(n, 1);
	double longest = 0;

	if (!marked) {
		analysis_nomem(a, "looking for periodic steps");
		return 0;
	}
	for (size_t i = r; i < n; i += d) {
		double len = (double)(a->steps.v[i].end - a->steps.v[i].start);

		marked[i] = is_long[i];
		if (marked[i] && len > longest)
			longest = len;
	}
	a->periodic_apart = sites_marked_steps_apart(a, marked);
	free(marked);
	if (a->periodic_apart == -ENOMEM)
		analysis_nomem(a, "looking for periodic steps");
	if (!(a->periodic_apart >= 0 && a->periodic_apart < PERIODIC_STACKS_APART))
		return 0;
	a->steps_long_every = (unsigned)d;
	a->steps_long_max_ns = longest;
	a->step_iterations_if_long = (a->step_iterations + d / 2) / d;
	if (a->step_confidence == CONF_HIGH) /* the unit may be a part of the iteration */
		a->step_confidence = CONF_MEDIUM;
	return 1;
}

/* Steps that run long (> 1.5x median) and recur at a regular spacing: the
 * spacing d and phase r that explain the most long steps, with >= 70% of the
 * steps at positions r, r+d, r+2d... long, and at least 3 of them (or two
 * alone, below), unless they ran the loop's own code (same_code). Other long
 * steps (noise, garbage collection) do not break the pattern. */
static void mark_periodic(struct analysis *a)
{
	size_t n = a->steps.n, best_hits = 0, best_d = 0, best_r = 0, nlong = 0;
	/* three occurrences at spacing d fit in n steps from 2d < n on */
	size_t dmax = n < 2 ? 0 : (n - 1) / 2 < 100 ? (n - 1) / 2 : 100;
	uint8_t *is_long = n ? calloc(n, 1) : NULL;
	/* long steps at each spacing d and phase r, counted from the long
	 * steps alone in one pass (a pass per spacing and phase, striding over
	 * every step, was slow with millions of them) */
	uint32_t hits_at[101][100];

	a->periodic_apart = -1;
	if (n && !is_long)
		analysis_nomem(a, "looking for periodic steps");
	if (!is_long || n < 6 || a->step_window_ns) /* long time windows are not steps */
		goto out;
	memset(hits_at, 0, sizeof(hits_at));
	for (size_t i = 0; i < n; i++) {
		is_long[i] = (double)(a->steps.v[i].end - a->steps.v[i].start) > 1.5 * a->step_median_ns;
		if (!is_long[i])
			continue;
		nlong++;
		for (size_t d = 2; d <= dmax; d++)
			hits_at[d][i % d]++;
	}
	for (size_t d = 2; d <= dmax; d++) {
		for (size_t r = 0; r < d; r++) {
			size_t hits = hits_at[d][r], total = (n - r + d - 1) / d; /* steps r, r+d, ... */

			if (hits >= 3 && hits * 10 >= total * 7 && hits > best_hits) {
				best_hits = hits;
				best_d = d;
				best_r = r;
			}
		}
	}
	/* A pattern that leaves most long steps off it is chance, not a period:
	 * with a fifth of the steps long at random, some spacing and phase
	 * among the thousands tried lands on 3 of 4 of them (c9_hf_log_item:
	 * 7 long steps, where new batch shapes cost 150 ms of CPU work in the
	 * forward and backward passes, 3 of them "every 9 steps"). */
	if (best_hits * 2 < nlong)
		best_d = 0;
	/* Two long steps only, both far longer than the rest, placed so that the
	 * window holds no third step at their spacing (the first within one
	 * spacing of the start, the second within one of the end): work every N
	 * steps seen twice in a short recording (a gc.collect() or a log every
	 * 10 steps in 27). How often it comes is known to within one time
	 * (C14's evidence says so). */
	if (!best_d && nlong == 2) {
		size_t i0 = n, i1 = n;

		for (size_t i = 0; i < n; i++) {
			double len = (double)(a->steps.v[i].end - a->steps.v[i].start);

			if (!is_long[i] || len <= PERIODIC_TWICE_LONG * a->step_median_ns)
				continue;
			if (i0 == n)
				i0 = i;
			else
				i1 = i;
		}
		if (i1 < n && i1 - i0 >= 2 && i0 < i1 - i0 && i1 + (i1 - i0) >= n) {
			best_d = i1 - i0;
			best_r = i0;
		}
	}
	if (best_d && same_code(a, is_long, best_d, best_r))
		best_d = 0;
	for (size_t i = best_r; best_d && i < n; i += best_d)
		a->steps.v[i].periodic = is_long[i];
out:
	free(is_long);
}

/* The host-compute gaps of one step, held until the step's longest is known:
 * the second pass may keep two of them as input preparation. */
struct step_hc {
	struct cause_sum all;
	uint64_t start_len;  /* the one that ends where the next step starts */
	uint64_t long_len;   /* the longest (the first, on ties) ... */
	uint64_t long_start; /* ... identified by its start */
	uint32_t start_trace, long_trace; /* gpuwhy's own cost in each of the two */
	uint8_t has_start, has_long, long_at_start;
};

/* trace: gpuwhy's own cost in the gap at most (struct gap's) */
static void add_gap(struct cause_sum *c, uint64_t len, int at_start, uint64_t trace)
{
	c->ns += len;
	c->cost += len < trace ? len : trace;
	c->n++;
	c->at_start += at_start != 0;
}

/* Second pass, decided per step: CPU work on the training thread inside a
 * step is the framework issuing work (Python, launch overhead), except for
 * the gap right before the next step or the step's longest one, if it lasts
 * >= 1 ms and >= 1/4 of the step: that is input preparation (C1). */
static int input_preparation(const struct analysis *a, uint32_t step, uint64_t len)
{
	const struct step *s = &a->steps.v[step];

	return len >= INPUT_GAP_NS && len * 4 >= s->end - s->start;
}

/* Splits a step's host-compute gaps into those that stay (input preparation)
 * and those that become launch overhead. */
static void refine_host_compute(const struct analysis *a, uint32_t step, const struct step_hc *h,
				struct cause_sum *tot)
{
	struct cause_sum keep = { 0 }, *lo = &tot[IDLE_LAUNCH_OVERHEAD];

	if (h->has_start && input_preparation(a, step, h->start_len))
		add_gap(&keep, h->start_len, 1, h->start_trace);
	if (h->has_long && !h->long_at_start && input_preparation(a, step, h->long_len))
		add_gap(&keep, h->long_len, 0, h->long_trace);
	lo->ns += h->all.ns - keep.ns;
	lo->cost += h->all.cost - keep.cost;
	lo->n += h->all.n - keep.n;
	lo->at_start += h->all.at_start - keep.at_start;
	tot[IDLE_HOST_COMPUTE].ns += keep.ns;
	tot[IDLE_HOST_COMPUTE].cost += keep.cost;
	tot[IDLE_HOST_COMPUTE].n += keep.n;
	tot[IDLE_HOST_COMPUTE].at_start += keep.at_start;
}

/* Idle inside periodic long steps belongs to the periodic stall, unless
 * storage, oversubscription, the loaders or a collective explain it (a
 * rank waiting in a collective for another rank's periodic work: the job
 * report names that rank). */
static int periodic_overrides(int cause)
{
	return cause != IDLE_IO && cause != IDLE_OVERSUB && cause != IDLE_DATA_WAIT && cause != IDLE_WRITE &&
	       cause != IDLE_COMM;
}

/* C2's figures: what the job read in a storage gap's window (each growth
 * of read_bytes counted once), and whether a thread was in state D. */
static void note_reads(struct analysis *a, struct attr_pass *p, uint64_t ga, uint64_t gb)
{
	uint64_t w0, w1;

	gap_window(ga, gb, &w0, &w1);
	a->io_read_bytes += io_bytes_in(a->x->io_reads.v, a->x->io_reads.n, w0, w1, &p->read_counted);
	a->io_gaps_dstate += dstate_in(a, w0, w1) != 0;
}

/* The figures the evidence of C2, C7 and C14 gives, summed over their gaps. */
static void note_host(struct analysis *a, struct attr_pass *p, const struct gap *g, const struct gap_host *h)
{
	double len = (double)(g->end - g->start);

	switch (g->cause) {
	case IDLE_IO: /* with Python samples, by the gap's final cause (flush_pending) */
		if (!p->sp)
			note_reads(a, p, g->start, g->end);
		break;
	case IDLE_WRITE:
		a->io_write_bytes += io_bytes_in(a->x->io_writes.v, a->x->io_writes.n, h->w0, h->w1,
							 &p->write_counted);
		/* one occurrence per step with writes (per gap outside steps) */
		if (g->step == UINT32_MAX || p->last_write_step != g->step + 1)
			a->write_occurrences++;
		p->last_write_step = g->step == UINT32_MAX ? 0 : g->step + 1;
		if (g->step != UINT32_MAX && a->steps.v[g->step].periodic)
			a->write_idle_periodic_ns += g->end - g->start;
		break;
	case IDLE_OVERSUB:
		if (!h->rq)
			break;
		a->oversub.train_wait_ns += h->q.train_wait * len;
		a->oversub.train_run_ns += h->q.train_run * len;
		a->oversub.job_wait_ns += h->q.job_wait * len;
		if (h->machine_idle >= 0) {
			a->oversub.machine_idle_ns += h->machine_idle * len;
			a->oversub.machine_ns += len;
		}
		break;
	default:
		break;
	}
}

/* A host-compute gap's final cause, once its step is decided: input
 * preparation (the step's last or longest, if long enough), else the host
 * issuing work. */
static int hc_cause(const struct analysis *a, const struct step_hc *hc, const struct gap *g)
{
	if (g->step == UINT32_MAX || g->cause != IDLE_HOST_COMPUTE)
		return g->cause;
	const struct step_hc *h = &hc[g->step];
	int candidate = g->at_step_start || (h->has_long && h->long_start == g->start);

	return candidate && input_preparation(a, g->step, g->end - g->start) ? IDLE_HOST_COMPUTE
									  : IDLE_LAUNCH_OVERHEAD;
}

/* Final causes of the kept gaps (--trace), by the same per-step decisions. */
static void finish_kept_gaps(struct analysis *a, const struct step_hc *hc)
{
	for (size_t i = 0; i < a->gaps.n; i++)
		a->gaps.v[i].cause = (uint8_t)hc_cause(a, hc, &a->gaps.v[i]);
}

/* The same for the replay's graph, where no code sites decided them. */
static void finish_graph_gaps(struct analysis *a, struct attr_pass *p)
{
	for (size_t i = 0; i < p->graph_hc.n; i++)
		depgraph_gap(a, p->graph_hc.v[i].op, hc_cause(a, p->hc, &p->graph_hc.v[i]));
}

/* Code sites: hands a step's gaps, with their final causes, to sites.c, in
 * time order; where the site classes give a host-compute gap another cause
 * (docs/RULES.md, section 6), moves its time there. */
static void flush_pending(struct analysis *a, struct attr_pass *p)
{
	for (size_t i = 0; i < p->pend.n; i++) {
		const struct gap *g = &p->pend.v[i];
		int hc = g->cause == IDLE_HOST_COMPUTE, cause = hc_cause(a, p->hc, g);

		uint64_t glen = g->end - g->start;
		enum site_decides d = hc ? SD_HOST_COMPUTE
				 : cause == IDLE_SYNC ? SD_AFTER_SYNC
				 : cause == IDLE_UNKNOWN || (cause == IDLE_LAUNCH_OVERHEAD && glen >= SHORT_GAP_NS)
				 ? SD_IDLE_HOST
				 : cause == IDLE_PAGEABLE ? SD_SERIALIZE_ONLY
				 : cause == IDLE_DATA_WAIT ? SD_STAGE_ONLY
				 : cause == IDLE_WRITE ? SD_COMPILE_ONLY
				 : SD_NONE;
		/* an activity (checkpointing, evaluation) takes the gap whatever
		 * its mechanism, also in a periodic long step (asked by its
		 * mechanism: a socket wait inside a checkpoint is the
		 * checkpoint's, not a wait every N steps); the sites then place
		 * it in the code */
		int asked = cause == IDLE_PERIODIC && g->step != UINT32_MAX ? g->mech : cause;
		int act = activities_gap(a, p->ap, asked, g->step, g->start, g->end);

		if (act != asked)
			d = SD_ACTIVITY;
		else
			act = cause;
		if (d != SD_ACTIVITY && cause == IDLE_PERIODIC && g->step != UINT32_MAX &&
		    (g->mech == IDLE_LAUNCH_OVERHEAD || g->mech == IDLE_UNKNOWN || g->mech == IDLE_WAIT ||
		     g->mech == IDLE_SYNC))
			d = SD_PERIODIC_WAIT;
		int now = blocked(a, sites_gap(a, p->sp, act, d, g));

		depgraph_gap(a, g->op, now);
		if (now == IDLE_IO)
			note_reads(a, p, g->start, g->end);

		if (now != cause) {
			uint64_t len = g->end - g->start;

			add_gap(&p->moved_out[cause], len, g->at_step_start, g->trace);
			add_gap(&p->moved_in[now], len, g->at_step_start, g->trace);
			a->site_moved_ns += len;
			if (now == IDLE_PERIODIC && act == cause) /* serialization, by the sites */
				a->site_ckpt_ns += len;
			if (now == IDLE_PAGEABLE) {
				a->site_stage_ns += len;
				if (g->next_htod == 1 + MEM_PINNED)
					a->site_stage_lib_ns += len;
			}
			if (a->keep_gaps && i < p->pend_idx.n &&
			    VEC_PUSH(p->overrides, (uint64_t)p->pend_idx.v[i] << 8 | (uint64_t)now) < 0)
				analysis_nomem(a, "keeping the idle intervals");
		}
	}
	p->pend.n = 0;
	p->pend_idx.n = 0;
}

/* gpuwhy's own cost in the GPU's idle gap [s, e): a launch's
 * (TRACE_COST_PER_LAUNCH_NS, the host's cost of tracing the launch that ends
 * the gap), or more where a CUDA graph's launch call of the main process ran
 * in the gap: CUPTI's kernel tracing costs each of the graph's operations at
 * its launch, as it costs each launch (XLA's step in a graph of 138 kernels:
 * 222 us in each cuGraphLaunch call, its plain run 256 us a step against 594
 * us recorded). That is the call's time in the gap less an untraced launch's
 * (GRAPH_PACE_NS an operation), at most the per-launch cost for each of the
 * graph's operations. */
static uint32_t gap_trace_cost(const struct analysis *a, struct attr_pass *p, uint64_t s, uint64_t e)
{
	double own = 0;

	while (p->gcall_cursor < p->gcalls.n && a->t->calls.v[p->gcalls.v[p->gcall_cursor]].end <= s)
		p->gcall_cursor++;
	for (size_t i = p->gcall_cursor; i < p->gcalls.n; i++) {
		const struct host_call *c = &a->t->calls.v[p->gcalls.v[i]];
		uint64_t n = hmap_get(&a->t->call_ops, (uint64_t)c->pid << 32 | c->corr);
		uint64_t from = c->start > s ? c->start : s, to = c->end < e ? c->end : e;
		double in, cap;

		if (c->start >= e) /* sorted by end, and one process's graph launches do
				    * not overlap: the later ones start later still */
			break;
		if (to <= from)
			continue;
		n = n ? n : 1;
		in = (double)(to - from) - GRAPH_PACE_NS * (double)n;
		cap = (double)p->per_launch * (double)n;
		own += in <= 0 ? 0 : in < cap ? in : cap;
	}
	own = own > (double)p->per_launch ? own : (double)p->per_launch;
	own = own < (double)(e - s) ? own : (double)(e - s);
	return own < (double)UINT32_MAX ? (uint32_t)own : UINT32_MAX;
}

/* Attributes each idle interval of the main GPU in the steady window, in
 * time order, adding it to per-cause totals at once; only the host-compute
 * gaps of a step wait for the step's end (64 bytes per step). */
int attr_begin(struct analysis *a, struct attr_pass *p)
{
	const char *launches = trace_meta(a->t, "record.launch_calls");

	memset(p, 0, sizeof(*p));
	p->per_launch = TRACE_COST_PER_LAUNCH_NS +
			(launches && !strcmp(launches, "traced") ? LAUNCH_CALLBACK_COST_NS : 0);
	p->graph_op = UINT32_MAX;
	if (a->graph)
		a->graph->trace_ns = (double)p->per_launch;
	p->hc = calloc(a->steps.n + 1, sizeof(*p->hc));
	if (!p->hc) {
		analysis_nomem(a, "attributing idle time");
		return -ENOMEM;
	}
	mark_periodic(a); /* from step lengths alone, so before the gaps */
	for (size_t i = 0; i < a->t->calls.n; i++) {
		const struct host_call *c = &a->t->calls.v[i];

		if ((c->pid == a->main_pid && c->tid == a->main_tid &&
		     (c->cls == HC_SYNC || c->cls == HC_MEMCPY) && VEC_PUSH(p->tcalls, (uint32_t)i) < 0) ||
		    (c->pid == a->main_pid && c->cls == HC_GRAPH && VEC_PUSH(p->gcalls, (uint32_t)i) < 0)) {
			free(p->hc);
			free(p->tcalls.v);
			free(p->gcalls.v);
			p->hc = NULL;
			analysis_nomem(a, "attributing idle time");
			return -ENOMEM;
		}
	}
	p->sp = sites_begin(a);
	p->ap = p->sp ? activities_begin(a) : NULL;
	return 0;
}

void attr_add(struct analysis *a, struct attr_pass *p, const struct gpu_op *o)
{
	if (p->has_prev && o->start > p->cur_end && p->cur_end >= a->t0 && traced_until(a, p->cur_end)) {
		uint64_t until = traced_until(a, p->cur_end);
		struct gap g = { .start = p->cur_end, .end = o->start < until ? o->start : until, .op = p->graph_op };

		g.step = step_at(a, g.start, &p->step_cursor);
		g.at_step_start = g.step != UINT32_MAX && g.step + 1 < a->steps.n &&
				  a->steps.v[g.step + 1].start == g.end;
		if (o->kind == OP_MEMCPY && o->copy_kind == COPY_HTOD && o->start == g.end) {
			g.next_htod = (uint8_t)(1 + o->src_kind);
			g.next_value = o->bytes <= SCALAR_BYTES;
		}
		if (p->prev.kind == OP_MEMCPY && p->prev.copy_kind == COPY_HTOD && p->prev.end == g.start)
			g.prev_htod = (uint8_t)(1 + p->prev.src_kind);
		struct gap_host h = { .machine_idle = -1 };

		/* without Python samples a long gap under blocking launches is
		 * theirs: the host's CPU time cannot tell its own work from its
		 * wait inside a launch (the driver may spin there) */
		g.cause = (uint8_t)(a->launch_blocking && (g.end - g.start < BLOCKING_HOST_GAP_NS || !p->sp)
					    ? IDLE_LAUNCH_BLOCKING
					    : blocked(a, classify(a, &p->prev, o, g.start, g.end, p, &h)));

		uint64_t len = g.end - g.start;

		if (g.step != UINT32_MAX && a->step_window_ns) {
			/* a time window, not a step: its idle time is counted, split
			 * over the windows a long gap spans, and the gap is
			 * attributed as without steps */
			for (uint32_t k = g.step; k < a->steps.n && a->steps.v[k].start < g.end; k++) {
				uint64_t s0 = a->steps.v[k].start > g.start ? a->steps.v[k].start : g.start;
				uint64_t s1 = a->steps.v[k].end < g.end ? a->steps.v[k].end : g.end;

				if (s1 > s0)
					a->steps.v[k].idle_ns += s1 - s0;
			}
			g.step = UINT32_MAX;
			g.at_step_start = 0;
		}
		if (g.step != UINT32_MAX) {
			a->steps.v[g.step].idle_ns += len;
			g.mech = g.cause;
			if (a->steps.v[g.step].periodic && periodic_overrides(g.cause))
				g.cause = IDLE_PERIODIC;
		}
		g.trace = gap_trace_cost(a, p, g.start, g.end);
		a->trace_graph_gaps += g.trace > p->per_launch;
		note_host(a, p, &g, &h);
		/* the GPU idle after a read of the program's (C9: two a step or
		 * more split any capture of the step) */
		if (g.cause == IDLE_SYNC && g.step != UINT32_MAX && !sync_gap_not_a_read(a, p, g.start, g.start + len))
			a->sync_read_gaps++;
		depgraph_gap(a, g.op, g.cause);
		depgraph_trace(a, g.op, g.trace);
		if (!p->sp && g.cause == IDLE_HOST_COMPUTE && a->graph && g.op != UINT32_MAX &&
		    VEC_PUSH(p->graph_hc, g) < 0)
			analysis_nomem(a, "building the replay's graph");
		if (g.cause == IDLE_HOST_COMPUTE && g.step != UINT32_MAX) {
			struct step_hc *h = &p->hc[g.step];

			add_gap(&h->all, len, g.at_step_start, g.trace);
			if (g.at_step_start) {
				h->has_start = 1;
				h->start_len = len;
				h->start_trace = g.trace;
			}
			if (!h->has_long || len > h->long_len) {
				h->has_long = 1;
				h->long_len = len;
				h->long_trace = g.trace;
				h->long_start = g.start;
				h->long_at_start = g.at_step_start;
			}
		} else {
			add_gap(&p->tot[g.cause], len, g.at_step_start, g.trace);
		}
		if (a->keep_gaps && VEC_PUSH(a->gaps, g) < 0)
			analysis_nomem(a, "keeping the idle intervals");
		if (p->sp) {
			if (p->pend.n && p->pend.v[0].step != g.step)
				flush_pending(a, p); /* the step before is decided */
			if (VEC_PUSH(p->pend, g) < 0 ||
			    (a->keep_gaps && VEC_PUSH(p->pend_idx, a->gaps.n - 1) < 0))
				analysis_nomem(a, "placing idle time in the code");
			if (g.step == UINT32_MAX)
				flush_pending(a, p);
		}
	}
	if (!p->has_prev || o->end > p->cur_end) {
		p->cur_end = o->end;
		p->prev = *o; /* a copy: in a stream the operation does not stay */
		p->has_prev = 1;
	}
}

void attr_end(struct analysis *a, struct attr_pass *p)
{
	struct cause_sum *tot = p->tot;

	if (p->sp)
		flush_pending(a, p);
	else
		finish_graph_gaps(a, p);
	for (uint32_t s = 0; s < a->steps.n; s++)
		refine_host_compute(a, s, &p->hc[s], tot);
	if (a->keep_gaps)
		finish_kept_gaps(a, p->hc);
	/* what the code sites moved (none without Python samples) */
	for (int c = 0; c < IDLE_NCAUSES; c++) {
		tot[c].ns += p->moved_in[c].ns - p->moved_out[c].ns;
		tot[c].cost += p->moved_in[c].cost - p->moved_out[c].cost;
		tot[c].n += p->moved_in[c].n - p->moved_out[c].n;
		tot[c].at_start += p->moved_in[c].at_start - p->moved_out[c].at_start;
	}
	for (size_t i = 0; i < p->overrides.n; i++)
		if ((p->overrides.v[i] >> 8) < a->gaps.n)
			a->gaps.v[p->overrides.v[i] >> 8].cause = (uint8_t)(p->overrides.v[i] & 0xff);
	sites_end(a, p->sp);
	p->sp = NULL;
	activities_end(a, p->ap);
	p->ap = NULL;
	free(p->pend.v);
	free(p->pend_idx.v);
	free(p->overrides.v);
	free(p->tcalls.v);
	free(p->gcalls.v);
	free(p->graph_hc.v);
	free(p->hc);
	p->hc = NULL;
	for (int c = 0; c < IDLE_NCAUSES; c++) {
		a->idle_by_cause[c] = tot[c].ns;
		a->gaps_by_cause[c] = tot[c].n;
		a->gaps_at_step_start[c] = tot[c].at_start;
		a->idle_ns += tot[c].ns;
		a->dev[a->main_dev].idle_by_cause[c] = tot[c].ns;
	}
	a->trace_cost_ns = tot[IDLE_LAUNCH_OVERHEAD].cost;
	a->busy_ns = a->steady_ns > a->idle_ns ? a->steady_ns - a->idle_ns : 0;
	for (size_t i = 0; i < a->steps.n; i++) {
		struct step *s = &a->steps.v[i];
		uint64_t d = s->end - s->start;

		s->busy_ns = d > s->idle_ns ? d - s->idle_ns : 0;
	}
}
