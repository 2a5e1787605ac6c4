/* Step (iteration) detection, with no annotation needed:
 *  1. NVTX ranges of the main process whose name repeats (>= 3 times);
 *  2. otherwise the GPU operation stream (kernels by name, copies by direction
 *     and memory kind): a step marker is a name X such that
 *     (a) the stretches between consecutive X have a consistent length
 *         (>= 60% within 10% of the modal length), and
 *     (b) every kernel name at least as frequent as X occurs in >= 90% of
 *         those stretches;
 *     the least frequent such X wins (a step is the longest repeating unit
 *     that still contains every per-step kernel), ties going to the name
 *     that follows the longest idle gap (the step boundary).
 * Everything before the first step is start-up, reported apart. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Steps between consecutive starts, less warm-up and long last steps, and
 * their length statistics. */
struct step_set {
	VEC(struct step) steps;
	double median, p95, min, max;
};

static void steps_from_starts(struct step_set *ss, const uint64_t *starts, size_t n)
{
	double *d;

	ss->steps.n = 0;
	for (size_t i = 0; i + 1 < n; i++) {
		struct step s = { .start = starts[i], .end = starts[i + 1] };

		VEC_PUSH(ss->steps, s);
	}
	if (!ss->steps.n)
		return;
	d = malloc(ss->steps.n * sizeof(*d));
	if (!d)
		return;
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < ss->steps.n; i++)
			d[i] = (double)(ss->steps.v[i].end - ss->steps.v[i].start);
		ss->median = quantile(d, ss->steps.n, 0.5);
		if (pass)
			break;
		/* Steps up to the last one running > 3x the median within the first
		 * 10% are warm-up (JIT compilation, autotuning, allocator growth, late
		 * imports): they belong to start-up. Likewise long last steps. */
		size_t lead = 0, max = ss->steps.n / 10;

		for (size_t i = 0; i < max; i++)
			if ((double)(ss->steps.v[i].end - ss->steps.v[i].start) > 3 * ss->median)
				lead = i + 1;
		if (lead) {
			memmove(ss->steps.v, ss->steps.v + lead,
				(ss->steps.n - lead) * sizeof(*ss->steps.v));
			ss->steps.n -= lead;
		}
		while (ss->steps.n > 2 && (double)(ss->steps.v[ss->steps.n - 1].end -
						   ss->steps.v[ss->steps.n - 1].start) > 3 * ss->median)
			ss->steps.n--;
	}
	ss->p95 = quantile(d, ss->steps.n, 0.95);
	ss->min = quantile(d, ss->steps.n, 0); /* quickselect: d is not sorted */
	ss->max = quantile(d, ss->steps.n, 1);
	free(d);
}

static void set_steps_from_starts(struct analysis *a, const uint64_t *starts, size_t n)
{
	struct step_set ss = { 0 };

	steps_from_starts(&ss, starts, n);
	free(a->steps.v);
	a->steps.v = ss.steps.v;
	a->steps.n = ss.steps.n;
	a->steps.cap = ss.steps.cap;
	a->step_median_ns = ss.median;
	a->step_p95_ns = ss.p95;
	a->step_min_ns = ss.min;
	a->step_max_ns = ss.max;
}

static int from_nvtx(struct analysis *a)
{
	struct trace *t = a->t;
	uint32_t best = 0;
	size_t best_n = 0;

	for (size_t i = 0; i < t->markers.n; i++) {
		uint32_t name = t->markers.v[i].name;
		size_t n = 0;

		if (t->markers.v[i].pid != a->main_pid || name == best)
			continue;
		for (size_t j = 0; j < t->markers.n; j++)
			n += t->markers.v[j].name == name && t->markers.v[j].pid == a->main_pid;
		if (n > best_n) {
			best_n = n;
			best = name;
		}
	}
	if (best_n < 3)
		return 0;
	uint64_t *starts = malloc((best_n + 1) * sizeof(*starts));
	size_t n = 0;

	if (!starts)
		return 0;
	for (size_t i = 0; i < t->markers.n; i++)
		if (t->markers.v[i].name == best && t->markers.v[i].pid == a->main_pid)
			starts[n++] = t->markers.v[i].start;
	/* the last range ends the last step */
	uint64_t last_end = 0;

	for (size_t i = 0; i < t->markers.n; i++)
		if (t->markers.v[i].name == best && t->markers.v[i].pid == a->main_pid &&
		    t->markers.v[i].end > last_end)
			last_end = t->markers.v[i].end;
	starts[n++] = last_end;
	set_steps_from_starts(a, starts, n);
	free(starts);
	a->step_source = "nvtx";
	snprintf(a->step_marker, sizeof(a->step_marker), "%s", t->names.v[best]);
	a->step_marker_name = best;
	return a->steps.n > 0;
}

struct cand {
	uint32_t name;
	uint32_t count;
	double gap_before; /* summed idle gap before its occurrences */
};

static int cmp_cand(const void *x, const void *y)
{
	const struct cand *a = x, *b = y;

	if (a->count != b->count)
		return a->count < b->count ? -1 : 1;
	return a->gap_before > b->gap_before ? -1 : a->gap_before < b->gap_before;
}

/* Checks conditions (a), (b) and (c) for marker x over the name sequence
 * seq[0..n) of the main process's operations on the main GPU. */
static int marker_ok(const uint32_t *seq, size_t n, uint32_t x, const uint32_t *count,
		     uint32_t nnames, uint32_t *seen_in, uint32_t *last_seg)
{
	size_t nseg = 0, len = 0, *lens;
	uint32_t cx = count[x], seg = 0;
	int started = 0;

	lens = malloc((cx + 1) * sizeof(*lens));
	if (!lens)
		return 0;
	memset(seen_in, 0, nnames * sizeof(*seen_in));
	for (uint32_t k = 0; k < nnames; k++)
		last_seg[k] = UINT32_MAX;
	for (size_t i = 0; i < n; i++) {
		uint32_t nm = seq[i];

		if (nm == x) {
			if (started && nseg < cx)
				lens[nseg++] = len;
			started = 1;
			len = 0;
			seg++;
		}
		if (!started)
			continue;
		len++;
		if (last_seg[nm] != seg) {
			last_seg[nm] = seg;
			if (nm != x)
				seen_in[nm]++;
		}
	}
	int ok = nseg >= 2;

	/* (a) consistent lengths */
	if (ok) {
		size_t best = 0, best_n = 0;

		for (size_t i = 0; i < nseg && i < 64; i++) { /* modal length among a sample */
			size_t m = 0;

			for (size_t j = 0; j < nseg; j++)
				m += lens[j] * 10 >= lens[i] * 9 && lens[j] * 10 <= lens[i] * 11;
			if (m > best_n) {
				best_n = m;
				best = lens[i];
			}
		}
		ok = best > 0 && best_n * 10 >= nseg * 6;
	}
	/* (b) every name at least as frequent occurs in >= 90% of the stretches,
	 * unless it is a periodic extra crowded into a few of them (<= 20%: the
	 * kernels of a validation pass every N steps) */
	for (uint32_t k = 0; ok && k < nnames; k++)
		if (k != x && count[k] >= cx && seen_in[k] * 10 < (uint32_t)(seg * 9) &&
		    (seen_in[k] * 5 > seg || seen_in[k] < 2))
			ok = 0;
	/* (c) the stretches must cover most of the run, not a burst at start-up */
	if (ok) {
		size_t first = n, last = 0;

		for (size_t i = 0; i < n; i++)
			if (seq[i] == x) {
				if (first == n)
					first = i;
				last = i;
			}
		ok = first < n && (last - first) * 10 >= n * 6;
	}
	free(lens);
	return ok;
}

/* Stable merge sort of the prefix by start (it comes nearly in order). */
static int sort_prefix(struct sf_entry *v, size_t n)
{
	struct sf_entry *tmp, *src = v, *dst;
	size_t sorted = 1;

	while (sorted < n && v[sorted - 1].start <= v[sorted].start)
		sorted++;
	if (sorted >= n)
		return 0; /* in order already (one process, one GPU) */
	tmp = dst = malloc(n * sizeof(*tmp));
	if (!tmp)
		return -1;
	for (size_t w = 1; w < n; w *= 2) {
		for (size_t lo = 0; lo < n; lo += 2 * w) {
			size_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
			size_t i = lo, j = mid, k = lo;

			if (mid == hi || src[mid - 1].start <= src[mid].start) { /* already in order */
				memcpy(dst + lo, src + lo, (hi - lo) * sizeof(*src));
				continue;
			}
			while (i < mid && j < hi)
				dst[k++] = src[j].start < src[i].start ? src[j++] : src[i++];
			while (i < mid)
				dst[k++] = src[i++];
			while (j < hi)
				dst[k++] = src[j++];
		}
		struct sf_entry *x = src;

		src = dst;
		dst = x;
	}
	if (src != v)
		memcpy(v, src, n * sizeof(*v));
	free(tmp);
	return 0;
}

/* The prefix in time order (when it filled up: up to prefix_cut()); its
 * operations of process pid give the name sequence and, per name, its count
 * and the idle time before it. Chooses the marker (the first candidate that
 * passes (a)-(c) and leaves >= 2 steps after warm-up) and keeps its starts. */
/* Where a full prefix stops counting: before the longest idle gap in its
 * last tenth, i.e. at a step boundary (where the input wait is), so that the
 * step cut by the prefix's end does not count some names once more than
 * others. */
static size_t prefix_cut(const struct step_finder *f, uint32_t pid)
{
	size_t cut = f->npre, from = f->npre - f->npre / 10;
	uint64_t prev_end = 0, longest = 0;

	for (size_t i = 0; i < f->npre; i++) {
		const struct sf_entry *e = &f->pre[i];

		if (i >= from && e->pid == pid && prev_end && e->start > prev_end &&
		    e->start - prev_end > longest) {
			longest = e->start - prev_end;
			cut = i;
		}
		if (e->end > prev_end)
			prev_end = e->end;
	}
	return cut;
}

static void decide(struct trace *t, struct step_finder *f, uint32_t pid, int full)
{
	uint32_t nnames = (uint32_t)t->names.n;
	uint32_t *count = calloc(nnames, sizeof(*count));
	uint32_t *seen_in = calloc(nnames, sizeof(*seen_in));
	uint32_t *last_seg = calloc(nnames, sizeof(*last_seg));
	double *gap = calloc(nnames, sizeof(*gap));
	uint32_t *seq = malloc((f->npre + 1) * sizeof(*seq));
	struct cand *c = NULL;
	size_t n = 0, nc = 0;
	uint64_t prev_end = 0;

	f->decided = 1;
	f->pid = pid;
	f->marker = 0;
	f->starts.n = 0;
	if (!count || !seen_in || !last_seg || !gap || !seq || sort_prefix(f->pre, f->npre) < 0)
		goto out;
	size_t upto = full ? prefix_cut(f, pid) : f->npre;

	for (size_t i = 0; i < upto; i++) {
		const struct sf_entry *e = &f->pre[i];

		if (e->pid == pid && e->name && e->name < nnames) {
			seq[n++] = e->name;
			count[e->name]++;
			if (prev_end && e->start > prev_end)
				gap[e->name] += (double)(e->start - prev_end);
		}
		if (e->end > prev_end)
			prev_end = e->end;
	}
	c = calloc(nnames, sizeof(*c));
	if (!c)
		goto out;
	for (uint32_t k = 0; k < nnames; k++)
		if (count[k] >= 4)
			c[nc++] = (struct cand){ k, count[k], gap[k] };
	if (nc)
		qsort(c, nc, sizeof(*c), cmp_cand);
	for (size_t i = 0; i < nc && !f->marker; i++) {
		/* several names may share a count: the first (largest gap) is tried first */
		if (!marker_ok(seq, n, c[i].name, count, nnames, seen_in, last_seg))
			continue;
		struct step_set ss = { 0 };

		f->starts.n = 0;
		for (size_t j = 0; j < f->npre; j++)
			if (f->pre[j].pid == pid && f->pre[j].name == c[i].name &&
			    VEC_PUSH(f->starts, f->pre[j].start) < 0)
				goto out;
		steps_from_starts(&ss, f->starts.v, f->starts.n);
		if (ss.steps.n >= 2)
			f->marker = c[i].name;
		free(ss.steps.v);
	}
out:
	if (!f->marker)
		f->starts.n = 0;
	free(count);
	free(seen_in);
	free(last_seg);
	free(gap);
	free(seq);
	free(c);
	free(f->pre);
	f->pre = NULL;
	f->npre = f->cap = f->nown = 0;
}

/* The process with the most operations in the prefix (the lower pid on ties). */
static uint32_t prefix_pid(const struct step_finder *f)
{
	uint32_t pid[16] = { 0 };
	size_t cnt[16] = { 0 };
	unsigned np = 0, best = 0;

	for (size_t i = 0; i < f->npre; i++) {
		unsigned k;

		for (k = 0; k < np && pid[k] != f->pre[i].pid; k++)
			;
		if (k == np && np < 16)
			pid[np++] = f->pre[i].pid;
		if (k < 16)
			cnt[k]++;
	}
	for (unsigned k = 1; k < np; k++)
		if (cnt[k] > cnt[best] || (cnt[k] == cnt[best] && pid[k] < pid[best]))
			best = k;
	return pid[best];
}

void step_finder_add(struct trace *t, struct step_finder *f, const struct gpu_op *o)
{
	if (f->decided) {
		if (f->marker && o->name == f->marker && o->pid == f->pid)
			VEC_PUSH(f->starts, o->start);
		return;
	}
	if (f->npre == f->cap) {
		size_t ncap = f->cap ? f->cap * 2 : 1024;
		struct sf_entry *np = realloc(f->pre, ncap * sizeof(*np));

		if (!np) { /* decide on what there is */
			decide(t, f, f->pid ? f->pid : prefix_pid(f), 1);
			return;
		}
		f->pre = np;
		f->cap = ncap;
	}
	f->pre[f->npre++] = (struct sf_entry){ o->start, o->end, o->name, o->pid };
	/* with the process known, only its operations count towards the prefix
	 * (the others' are kept for the idle gaps they close) */
	f->nown += !f->pid || o->pid == f->pid;
	if (f->nown >= step_prefix_ops)
		decide(t, f, f->pid ? f->pid : prefix_pid(f), 1);
}

void step_finder_end(struct trace *t, struct step_finder *f, uint32_t pid)
{
	if (!f->decided)
		decide(t, f, pid, 0);
	/* starts read after the prefix came in file order */
	if (f->starts.n > 1)
		qsort(f->starts.v, f->starts.n, sizeof(*f->starts.v), cmp_u64);
}

void step_finder_free(struct step_finder *f)
{
	free(f->pre);
	free(f->starts.v);
	memset(f, 0, sizeof(*f));
}

size_t step_prefix_ops = STEP_PREFIX_OPS;

struct finder_feed {
	struct trace *t;
	struct step_finder *f;
};

static void feed_again(void *ctx, const struct gpu_op *o)
{
	struct finder_feed *ff = ctx;

	step_finder_add(ff->t, ff->f, o);
}

static int from_kernels(struct analysis *a)
{
	struct trace *t = a->t;
	struct step_finder *f = &t->scan->finder[a->main_dev], again = { .pid = a->main_pid };
	char err[512];

	step_finder_end(t, f, a->main_pid);
	if (f->pid != a->main_pid) {
		/* the prefix's main process was another one: read the main GPU again */
		struct finder_feed ff = { t, &again };
		struct replay_sinks k = { feed_again, NULL, NULL, &ff };

		if (timeline_replay(t, a->main_dev, &k, err, sizeof(err)) < 0)
			analysis_warn(a, "could not read the recording again for steps: %s", err);
		step_finder_end(t, &again, a->main_pid);
		f = &again;
	}
	if (f->marker) {
		set_steps_from_starts(a, f->starts.v, f->starts.n);
		a->step_source = "auto";
		snprintf(a->step_marker, sizeof(a->step_marker), "%s", t->names.v[f->marker]);
		a->step_marker_name = f->marker;
	}
	int found = f->marker && a->steps.n >= 2;

	if (f == &again)
		step_finder_free(&again);
	return found;
}

void detect_steps(struct analysis *a)
{
	const struct device_summary *m = &a->dev[a->main_dev];
	uint64_t first = m->first_start, last = m->first_start + m->window_ns;

	a->first_op = first;
	a->last_op = last;
	if (!from_nvtx(a) && !from_kernels(a)) {
		a->steps.n = 0;
		a->step_source = "none";
	}
	if (a->windows.n && a->steps.n) {
		/* duty cycling: only steps wholly inside a traced window count */
		size_t k = 0;
		double *d = malloc(a->steps.n * sizeof(*d));

		for (size_t i = 0; i < a->steps.n; i++)
			if (traced(a, a->steps.v[i].start, a->steps.v[i].end))
				a->steps.v[k++] = a->steps.v[i];
		a->steps.n = k;
		for (size_t i = 0; d && i < k; i++)
			d[i] = (double)(a->steps.v[i].end - a->steps.v[i].start);
		if (d && k) {
			a->step_median_ns = quantile(d, k, 0.5);
			a->step_p95_ns = quantile(d, k, 0.95);
			a->step_min_ns = quantile(d, k, 0);
			a->step_max_ns = quantile(d, k, 1);
		}
		free(d);
	}
	if (a->steps.n) {
		a->t0 = a->steps.v[0].start;
		a->t1 = a->steps.v[a->steps.n - 1].end;
	} else {
		a->t0 = first;
		a->t1 = last;
	}
	if (a->t0 < first)
		a->t0 = first;
	a->startup_ns = a->t0 > first ? a->t0 - first : 0;
	a->steady_ns = a->t1 > a->t0 ? a->t1 - a->t0 : 0;
	if (a->windows.n) {
		/* only traced time counts */
		uint64_t sum = 0;

		for (size_t i = 0; i + 1 < a->windows.n; i += 2) {
			uint64_t w0 = a->windows.v[i] > a->t0 ? a->windows.v[i] : a->t0;
			uint64_t w1 = a->windows.v[i + 1] < a->t1 ? a->windows.v[i + 1] : a->t1;

			if (w1 > w0)
				sum += w1 - w0;
		}
		a->steady_ns = sum;
	}
}
