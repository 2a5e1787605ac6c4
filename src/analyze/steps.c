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

static void set_steps_from_starts(struct analysis *a, const uint64_t *starts, size_t n)
{
	double *d;

	a->steps.n = 0;
	for (size_t i = 0; i + 1 < n; i++) {
		struct step s = { .start = starts[i], .end = starts[i + 1] };

		VEC_PUSH(a->steps, s);
	}
	if (!a->steps.n)
		return;
	d = malloc(a->steps.n * sizeof(*d));
	if (!d)
		return;
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < a->steps.n; i++)
			d[i] = (double)(a->steps.v[i].end - a->steps.v[i].start);
		a->step_median_ns = quantile(d, a->steps.n, 0.5);
		if (pass)
			break;
		/* Steps up to the last one running > 3x the median within the first
		 * 10% are warm-up (JIT compilation, autotuning, allocator growth, late
		 * imports): they belong to start-up. Likewise long last steps. */
		size_t lead = 0, max = a->steps.n / 10;

		for (size_t i = 0; i < max; i++)
			if ((double)(a->steps.v[i].end - a->steps.v[i].start) > 3 * a->step_median_ns)
				lead = i + 1;
		if (lead) {
			memmove(a->steps.v, a->steps.v + lead, (a->steps.n - lead) * sizeof(*a->steps.v));
			a->steps.n -= lead;
		}
		while (a->steps.n > 2 && (double)(a->steps.v[a->steps.n - 1].end -
						  a->steps.v[a->steps.n - 1].start) > 3 * a->step_median_ns)
			a->steps.n--;
	}
	a->step_p95_ns = quantile(d, a->steps.n, 0.95);
	a->step_min_ns = quantile(d, a->steps.n, 0); /* quickselect: d is not sorted */
	a->step_max_ns = quantile(d, a->steps.n, 1);
	free(d);
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

static int from_kernels(struct analysis *a)
{
	struct trace *t = a->t;
	uint32_t nnames = (uint32_t)t->names.n;
	uint32_t *count = calloc(nnames, sizeof(*count));
	uint32_t *seen_in = calloc(nnames, sizeof(*seen_in));
	uint32_t *last_seg = calloc(nnames, sizeof(*last_seg));
	double *gap = calloc(nnames, sizeof(*gap));
	uint32_t *seq = malloc((t->ops.n + 1) * sizeof(*seq)); /* names, read in order */
	struct cand *c = NULL;
	size_t n = 0, nc = 0;
	uint64_t prev_end = 0;
	int found = 0;

	if (!count || !seen_in || !last_seg || !gap || !seq)
		goto out;
	for (size_t i = 0; i < t->ops.n; i++) {
		struct gpu_op *o = &t->ops.v[i];

		if (o->dev != a->main_dev)
			continue;
		if (o->pid == a->main_pid && o->name) {
			seq[n++] = o->name;
			count[o->name]++;
			if (prev_end && o->start > prev_end)
				gap[o->name] += (double)(o->start - prev_end);
		}
		if (o->end > prev_end)
			prev_end = o->end;
	}
	c = calloc(nnames, sizeof(*c));
	if (!c)
		goto out;
	for (uint32_t k = 0; k < nnames; k++)
		if (count[k] >= 4)
			c[nc++] = (struct cand){ k, count[k], gap[k] };
	if (nc)
		qsort(c, nc, sizeof(*c), cmp_cand);
	for (size_t i = 0; i < nc && !found; i++) {
		/* several names may share a count: the first (largest gap) is tried first */
		if (!marker_ok(seq, n, c[i].name, count, nnames, seen_in, last_seg))
			continue;
		uint64_t *starts = malloc((c[i].count + 1) * sizeof(*starts));
		size_t ns = 0;

		if (!starts)
			break;
		for (size_t j = 0; j < t->ops.n && ns < c[i].count; j++) {
			const struct gpu_op *o = &t->ops.v[j];

			if (o->dev == a->main_dev && o->pid == a->main_pid && o->name == c[i].name)
				starts[ns++] = o->start;
		}
		set_steps_from_starts(a, starts, ns);
		free(starts);
		a->step_source = "auto";
		snprintf(a->step_marker, sizeof(a->step_marker), "%s", t->names.v[c[i].name]);
		found = a->steps.n >= 2;
	}
out:
	free(count);
	free(seen_in);
	free(last_seg);
	free(gap);
	free(seq);
	free(c);
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
