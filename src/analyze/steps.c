/* Step (iteration) detection (docs/RULES.md, section 2), in this order:
 *  1. what --steps asks for: none (time windows), nvtx:NAME, kernel:NAME;
 *  2. NVTX ranges of the main process: PyTorch profiler's ProfilerStep#N,
 *     else the range name that repeats most (>= 3 times);
 *  3. the repeating unit of the main GPU's operation sequence
 *     (steps_period.c), judged on a prefix of the run, whose boundary
 *     operation then starts every step of the whole run;
 *  4. none found with confidence: no steps are invented; the run is
 *     analysed in fixed time windows.
 * Everything before the first step is start-up, reported apart. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define STEP_WINDOW_MIN_NS 1000000000ull /* time windows: at least 1 s ... */
#define STEP_WINDOWS_MAX 200             /* ... and at most 200 of them */
#define WARMUP_LONG 3                    /* a warm-up step runs > 3x the median ... */
#define WARMUP_GAP 2                     /* ... with at most 2 normal steps between them */
#define PROFILER_STEP "ProfilerStep#"    /* torch.profiler's ranges: one name per step */

/* Steps between consecutive starts, less warm-up and long last steps, and
 * their length statistics. */
struct step_set {
	VEC(struct step) steps;
	double median, p95, min, max;
	int nomem; /* an allocation failed: the set is not to be used */
};

static void steps_from_starts(struct step_set *ss, const uint64_t *starts, size_t n)
{
	double *d;

	ss->steps.n = 0;
	for (size_t i = 0; i + 1 < n; i++) {
		struct step s = { .start = starts[i], .end = starts[i + 1] };

		if (s.end > s.start && VEC_PUSH(ss->steps, s) < 0) {
			ss->nomem = 1;
			return;
		}
	}
	if (!ss->steps.n)
		return;
	d = malloc(ss->steps.n * sizeof(*d));
	if (!d) {
		ss->nomem = 1;
		return;
	}
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < ss->steps.n; i++)
			d[i] = (double)(ss->steps.v[i].end - ss->steps.v[i].start);
		ss->median = quantile(d, ss->steps.n, 0.5);
		if (pass)
			break;
		/* Long steps at the very start are warm-up (JIT compilation,
		 * autotuning, allocator growth, late imports): they belong to
		 * start-up. Warm-up is a cluster from the first step, within the
		 * first 10%: a long step after a run of normal ones is the job's
		 * own periodic work (validation every N steps), kept. Likewise long
		 * last steps. */
		size_t lead = 0, max = ss->steps.n / 10;

		for (size_t i = 0; i < max && i <= lead + WARMUP_GAP; i++)
			if ((double)(ss->steps.v[i].end - ss->steps.v[i].start) > WARMUP_LONG * ss->median)
				lead = i + 1;
		if (lead) {
			memmove(ss->steps.v, ss->steps.v + lead,
				(ss->steps.n - lead) * sizeof(*ss->steps.v));
			ss->steps.n -= lead;
		}
		while (ss->steps.n > 2 && (double)(ss->steps.v[ss->steps.n - 1].end -
						   ss->steps.v[ss->steps.n - 1].start) > WARMUP_LONG * ss->median)
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
	if (ss.nomem)
		analysis_nomem(a, "finding the steps");
	a->step_iterations = n;
	free(a->steps.v);
	a->steps.v = ss.steps.v;
	a->steps.n = ss.steps.n;
	a->steps.cap = ss.steps.cap;
	a->step_median_ns = ss.median;
	a->step_p95_ns = ss.p95;
	a->step_min_ns = ss.min;
	a->step_max_ns = ss.max;
}

static int profiler_step(const char *name)
{
	return !strncmp(name, PROFILER_STEP, strlen(PROFILER_STEP));
}

/* Does NVTX range name nm belong to the set `want` names: one name, or
 * with want "ProfilerStep#" every ProfilerStep#N. */
static int nvtx_is(const struct trace *t, uint32_t nm, const char *want)
{
	const char *s = nm < t->names.n ? t->names.v[nm] : "";

	return profiler_step(want) ? profiler_step(s) : !strcmp(s, want);
}

/* Steps from the main process's NVTX ranges named `want` (see nvtx_is):
 * each range starts a step; the last range's end ends the last one. */
static int steps_from_nvtx(struct analysis *a, const char *want)
{
	struct trace *t = a->t;
	uint64_t *starts = malloc((t->markers.n + 1) * sizeof(*starts)), last_end = 0;
	size_t n = 0;

	if (!starts) {
		analysis_nomem(a, "finding the steps");
		return 0;
	}
	for (size_t i = 0; i < t->markers.n; i++) {
		const struct marker_range *m = &t->markers.v[i];

		if (m->pid != a->main_pid || !nvtx_is(t, m->name, want))
			continue;
		starts[n++] = m->start;
		if (m->end > last_end)
			last_end = m->end;
	}
	if (n < 3) {
		free(starts);
		return 0;
	}
	/* ranges are recorded as they end */
	qsort(starts, n, sizeof(*starts), cmp_u64);
	starts[n++] = last_end;
	set_steps_from_starts(a, starts, n);
	free(starts);
	a->step_source = "nvtx";
	snprintf(a->step_marker, sizeof(a->step_marker), "%s", want);
	a->step_confidence = CONF_HIGH;
	snprintf(a->step_why, sizeof(a->step_why), "each NVTX range %s%s of the main process starts a step",
		 want, profiler_step(want) ? "N (PyTorch profiler)" : "");
	return a->steps.n > 0;
}

/* The main process's NVTX range names, most frequent first: n names at most
 * into out[] (ProfilerStep#N counted as one). Returns how many. */
static size_t nvtx_names(const struct analysis *a, uint32_t *out, size_t *count, size_t max)
{
	const struct trace *t = a->t;
	size_t k = 0;

	for (size_t i = 0; i < t->markers.n; i++) {
		uint32_t nm = t->markers.v[i].name;
		size_t j;

		if (t->markers.v[i].pid != a->main_pid || nm >= t->names.n)
			continue;
		for (j = 0; j < k; j++)
			if (out[j] == nm || (profiler_step(t->names.v[nm]) && profiler_step(t->names.v[out[j]])))
				break;
		if (j == k) {
			if (k == max)
				continue;
			out[k] = nm;
			count[k++] = 0;
		}
		count[j]++;
		while (j > 0 && count[j] > count[j - 1]) { /* keep them in order */
			uint32_t x = out[j];
			size_t c = count[j];

			out[j] = out[j - 1];
			count[j] = count[j - 1];
			out[j - 1] = x;
			count[j - 1] = c;
			j--;
		}
	}
	return k;
}

/* ProfilerStep#N when present, else the most frequent range name. */
static int from_nvtx(struct analysis *a)
{
	uint32_t names[64];
	size_t count[64], k = nvtx_names(a, names, count, 64);

	for (size_t i = 0; i < k; i++)
		if (profiler_step(a->t->names.v[names[i]]) && count[i] >= 3)
			return steps_from_nvtx(a, PROFILER_STEP);
	return k && count[0] >= 3 && steps_from_nvtx(a, a->t->names.v[names[0]]);
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
		uint64_t end = e->start + e->dur;

		if (i >= from && e->pid == pid && prev_end && e->start > prev_end &&
		    e->start - prev_end > longest) {
			longest = e->start - prev_end;
			cut = i;
		}
		if (end > prev_end)
			prev_end = end;
	}
	return cut;
}

/* (name, stream) -> dense token id, open addressing (grows at half full). */
struct tok_table {
	uint64_t *key; /* name << 32 | stream, +1 (0: empty) */
	uint32_t *id;
	size_t cap, n;
};

static int tok_id(struct tok_table *h, uint32_t name, uint32_t stream, uint32_t *id)
{
	uint64_t k = ((uint64_t)name << 32 | stream) + 1;

	if (2 * (h->n + 1) > h->cap) {
		struct tok_table g = { 0 };

		g.cap = h->cap ? h->cap * 2 : 1024;
		g.key = calloc(g.cap, sizeof(*g.key));
		g.id = malloc(g.cap * sizeof(*g.id));
		if (!g.key || !g.id) {
			free(g.key);
			free(g.id);
			return -ENOMEM;
		}
		for (size_t i = 0; i < h->cap; i++)
			if (h->key[i]) {
				size_t j = (size_t)(h->key[i] * 0x9E3779B97F4A7C15ull) & (g.cap - 1);

				while (g.key[j])
					j = (j + 1) & (g.cap - 1);
				g.key[j] = h->key[i];
				g.id[j] = h->id[i];
			}
		g.n = h->n;
		free(h->key);
		free(h->id);
		*h = g;
	}
	size_t j = (size_t)(k * 0x9E3779B97F4A7C15ull) & (h->cap - 1);

	while (h->key[j] && h->key[j] != k)
		j = (j + 1) & (h->cap - 1);
	if (!h->key[j]) {
		h->key[j] = k;
		h->id[j] = (uint32_t)h->n++;
	}
	*id = h->id[j];
	return 0;
}

/* The prefix in time order (when it filled up: up to prefix_cut()); its
 * operations of process pid, as tokens, give the repeating unit
 * (steps_period.c). Keeps the boundary's starts in the whole prefix. */
static void decide(struct trace *t, struct step_finder *f, uint32_t pid, int full)
{
	uint32_t nnames = (uint32_t)t->names.n, *tok = malloc((f->npre + 1) * sizeof(*tok));
	uint32_t *tname = NULL, *tstream = NULL;
	uint64_t *start = malloc((f->npre + 1) * sizeof(*start)), prev_end = 0;
	double *gap = malloc((f->npre + 1) * sizeof(*gap));
	struct tok_table h = { 0 };
	size_t n = 0;

	f->decided = 1;
	f->pid = pid;
	f->marker = 0;
	f->starts.n = 0;
	memset(&f->per, 0, sizeof(f->per));
	f->per.tok = UINT32_MAX;
	snprintf(f->per.why, sizeof(f->per.why), "out of memory while looking for steps");
	if (!tok || !start || !gap || sort_prefix(f->pre, f->npre) < 0)
		goto nomem;
	size_t upto = full ? prefix_cut(f, pid) : f->npre;

	for (size_t i = 0; i < upto; i++) {
		const struct sf_entry *e = &f->pre[i];
		uint64_t end = e->start + e->dur;

		if (e->pid == pid && e->name && e->name < nnames) {
			if (tok_id(&h, e->name, e->stream, &tok[n]) < 0)
				goto nomem;
			start[n] = e->start;
			gap[n] = prev_end && e->start > prev_end ? (double)(e->start - prev_end) : 0;
			n++;
		}
		if (end > prev_end)
			prev_end = end;
	}
	if (step_period_find(tok, start, gap, n, (uint32_t)h.n, &f->per) < 0)
		goto nomem;
	if (f->per.tok == UINT32_MAX || f->per.confidence == CONF_LOW)
		goto out;
	/* the boundary token's name and stream */
	tname = malloc(h.n * sizeof(*tname));
	tstream = malloc(h.n * sizeof(*tstream));
	if (!tname || !tstream)
		goto nomem;
	for (size_t i = 0; i < h.cap; i++)
		if (h.key[i]) {
			tname[h.id[i]] = (uint32_t)((h.key[i] - 1) >> 32);
			tstream[h.id[i]] = (uint32_t)(h.key[i] - 1);
		}
	uint32_t mname = tname[f->per.tok], mstream = tstream[f->per.tok];
	struct step_set ss = { 0 };

	for (size_t j = 0; j < f->npre; j++)
		if (f->pre[j].pid == pid && f->pre[j].name == mname && f->pre[j].stream == mstream &&
		    VEC_PUSH(f->starts, f->pre[j].start) < 0)
			goto nomem;
	steps_from_starts(&ss, f->starts.v, f->starts.n);
	if (ss.nomem)
		t->nomem = 1;
	else if (ss.steps.n >= 2) {
		f->marker = mname;
		f->marker_stream = mstream;
	}
	free(ss.steps.v);
	goto out;
nomem: /* the analysis fails: never steps from part of the timeline */
	t->nomem = 1;
out:
	if (!f->marker)
		f->starts.n = 0;
	free(tok);
	free(start);
	free(gap);
	free(tname);
	free(tstream);
	free(h.key);
	free(h.id);
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
		if (f->marker && o->name == f->marker && o->stream == f->marker_stream &&
		    o->pid == f->pid && VEC_PUSH(f->starts, o->start) < 0)
			t->nomem = 1;
		return;
	}
	if (f->npre == f->cap) {
		size_t ncap = f->cap ? f->cap * 2 : 1024;
		struct sf_entry *np = realloc(f->pre, ncap * sizeof(*np));

		if (!np) { /* the analysis fails (never steps from part of the prefix) */
			t->nomem = 1;
			decide(t, f, f->pid ? f->pid : prefix_pid(f), 1);
			return;
		}
		f->pre = np;
		f->cap = ncap;
	}
	/* durations past 4.29 s are clipped: they only feed the idle gaps */
	uint64_t dur = o->end > o->start ? o->end - o->start : 0;

	f->pre[f->npre++] = (struct sf_entry){ o->start, dur > UINT32_MAX ? UINT32_MAX : (uint32_t)dur,
					       o->name, o->pid, o->stream };
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

static const char *conf_word(int c)
{
	return c == CONF_HIGH ? "high" : c == CONF_MEDIUM ? "medium" : "low";
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

		int ret = timeline_replay(t, a->main_dev, &k, err, sizeof(err));

		if (ret == -ENOMEM)
			analysis_nomem(a, "finding the steps");
		else if (ret < 0)
			analysis_warn(a, "could not read the recording again for steps: %s", err);
		step_finder_end(t, &again, a->main_pid);
		f = &again;
	}
	a->step_confidence = f->per.confidence;
	a->step_ops = f->per.ops;
	snprintf(a->step_why, sizeof(a->step_why), "%s", f->per.why);
	if (f->marker) {
		set_steps_from_starts(a, f->starts.v, f->starts.n);
		a->step_source = "auto";
		snprintf(a->step_marker, sizeof(a->step_marker), "%s", t->names.v[f->marker]);
		a->step_marker_name = f->marker;
	}
	int found = f->marker && a->steps.n >= 2;

	if (f->marker && !found) {
		a->step_confidence = CONF_LOW;
		snprintf(a->step_why, sizeof(a->step_why),
			 "the repeating unit left fewer than 2 steps after warm-up");
	}
	if (f == &again)
		step_finder_free(&again);
	return found;
}

/* --steps kernel:NAME: every operation of the main process on the main GPU
 * whose name contains NAME starts a step (one name only). */
struct named_feed {
	const struct analysis *a;
	const char *want;
	uint8_t *match;   /* per name: 0 not yet seen, 1 matches, 2 does not */
	uint32_t *count;  /* per name: operations of the main process */
	VEC(uint64_t) starts;
	uint32_t first;   /* the first matching name, and whether another matched */
	int several, err;
};

static void feed_named(void *ctx, const struct gpu_op *o)
{
	struct named_feed *nf = ctx;
	const struct trace *t = nf->a->t;

	if (o->pid != nf->a->main_pid || !o->name || o->name >= t->names.n)
		return;
	nf->count[o->name]++;
	if (!nf->match[o->name])
		nf->match[o->name] = strstr(t->names.v[o->name], nf->want) ? 1 : 2;
	if (nf->match[o->name] != 1)
		return;
	if (!nf->first)
		nf->first = o->name;
	else if (nf->first != o->name)
		nf->several = 1;
	if (VEC_PUSH(nf->starts, o->start) < 0)
		nf->err = -ENOMEM;
}

/* Up to 5 names, most frequent first, into buf (for an error message):
 * those matching (want_match) or all. */
static void list_names(const struct analysis *a, const struct named_feed *nf, int only_matching, char *buf,
		       size_t len)
{
	uint8_t *used = calloc(a->t->names.n, 1);
	size_t off = 0;

	buf[0] = 0;
	for (int k = 0; used && k < 5; k++) {
		uint32_t best = 0;

		for (uint32_t i = 1; i < a->t->names.n; i++)
			if (!used[i] && nf->count[i] && (!only_matching || nf->match[i] == 1) &&
			    (!best || nf->count[i] > nf->count[best]))
				best = i;
		if (!best)
			break;
		used[best] = 1;
		off += (size_t)snprintf(buf + off, off < len ? len - off : 0, "%s'%.60s%s' (%u)", k ? ", " : "",
					a->t->names.v[best], strlen(a->t->names.v[best]) > 60 ? "..." : "",
					nf->count[best]);
	}
	free(used);
}

static int from_named_kernel(struct analysis *a, const char *want)
{
	struct trace *t = a->t;
	struct named_feed nf = { .a = a, .want = want };
	struct replay_sinks k = { feed_named, NULL, NULL, &nf };
	char err[512], names[600];
	int ret = -EINVAL;

	nf.match = calloc(t->names.n + 1, 1);
	nf.count = calloc(t->names.n + 1, sizeof(*nf.count));
	if (!nf.match || !nf.count) {
		snprintf(a->step_why, sizeof(a->step_why), "out of memory");
		ret = -ENOMEM;
		goto out;
	}
	if (timeline_replay(t, a->main_dev, &k, err, sizeof(err)) < 0 || nf.err) {
		snprintf(a->step_why, sizeof(a->step_why), "--steps kernel:%s: %s", want,
			 nf.err ? "out of memory" : err);
		goto out;
	}
	if (nf.several) {
		list_names(a, &nf, 1, names, sizeof(names));
		snprintf(a->step_why, sizeof(a->step_why),
			 "--steps kernel:%s matches several operation names on GPU %u: %s; give more of "
			 "the one that starts each step", want, a->main_dev, names);
		goto out;
	}
	if (nf.starts.n < 3) {
		list_names(a, &nf, 0, names, sizeof(names));
		snprintf(a->step_why, sizeof(a->step_why),
			 "--steps kernel:%s: %s on GPU %u; the most frequent operations there: %s", want,
			 nf.starts.n ? "fewer than 3 operations match" : "no operation name matches",
			 a->main_dev, names[0] ? names : "none");
		goto out;
	}
	/* in time order already; the last one starts a step whose end is not
	 * known (NAME may be the step's last operation) */
	set_steps_from_starts(a, nf.starts.v, nf.starts.n);
	a->step_source = "kernel";
	snprintf(a->step_marker, sizeof(a->step_marker), "%s", t->names.v[nf.first]);
	a->step_marker_name = nf.first;
	a->step_confidence = CONF_HIGH;
	snprintf(a->step_why, sizeof(a->step_why), "--steps kernel:%s", want);
	ret = 0;
out:
	free(nf.match);
	free(nf.count);
	free(nf.starts.v);
	return ret;
}

/* No steps: fixed windows of max(1 s, run / 200) from the first operation. */
static void time_windows(struct analysis *a)
{
	uint64_t w = (a->last_op - a->first_op) / STEP_WINDOWS_MAX;

	if (w < STEP_WINDOW_MIN_NS)
		w = STEP_WINDOW_MIN_NS;
	a->steps.n = 0;
	a->step_window_ns = w;
	a->step_median_ns = a->step_p95_ns = a->step_min_ns = a->step_max_ns = 0;
	/* by index: s += w could wrap past a damaged file's last time */
	uint64_t n = (a->last_op - a->first_op) / w + 1;

	for (uint64_t i = 0; i < n && i <= STEP_WINDOWS_MAX; i++) {
		uint64_t s = a->first_op + i * w;
		struct step st = { .start = s, .end = a->last_op - s > w ? s + w : a->last_op };

		if (s >= a->last_op)
			break;
		if (VEC_PUSH(a->steps, st) < 0) {
			analysis_nomem(a, "dividing the run into time windows");
			break;
		}
	}
}

int detect_steps(struct analysis *a, const char *spec)
{
	const struct device_summary *m = &a->dev[a->main_dev];
	uint64_t first = m->first_start, last = m->first_start + m->window_ns;

	a->first_op = first;
	a->last_op = last;
	a->step_confidence = CONF_LOW;
	if (spec && !strcmp(spec, "none")) {
		a->step_user = 1;
		snprintf(a->step_why, sizeof(a->step_why), "--steps none");
	} else if (spec && !strncmp(spec, "nvtx:", 5)) {
		a->step_user = 1;
		if (steps_from_nvtx(a, spec + 5)) {
			snprintf(a->step_why, sizeof(a->step_why), "--steps %s", spec);
		} else {
			uint32_t names[64];
			size_t count[64], k = nvtx_names(a, names, count, 64), off = 0;
			char list[400] = "";

			for (size_t i = 0; i < k && i < 5; i++)
				off += (size_t)snprintf(list + off, off < sizeof(list) ? sizeof(list) - off : 0,
							"%s'%.40s' (%zu)", i ? ", " : "",
							profiler_step(a->t->names.v[names[i]]) ? PROFILER_STEP
											: a->t->names.v[names[i]],
							count[i]);
			snprintf(a->step_why, sizeof(a->step_why),
				 "--steps nvtx:%s: the main process (pid %u) has %s NVTX ranges named '%s'; "
				 "its ranges, most frequent first: %s", spec + 5, a->main_pid,
				 a->steps.n ? "too few steps from the" : "fewer than 3", spec + 5,
				 k ? list : "none");
			return -EINVAL;
		}
	} else if (spec && !strncmp(spec, "kernel:", 7)) {
		int r = from_named_kernel(a, spec + 7);

		a->step_user = 1;

		if (r < 0)
			return r;
	} else if (!from_nvtx(a) && !from_kernels(a)) {
		a->steps.n = 0;
		a->step_source = "none";
	}
	if (!a->steps.n) {
		a->step_source = "none";
		a->step_marker[0] = 0;
		time_windows(a);
	}
	if (a->windows.n && a->steps.n) {
		/* duty cycling: only steps wholly inside a traced window count */
		size_t k = 0;
		double *d = malloc(a->steps.n * sizeof(*d));

		if (!d)
			analysis_nomem(a, "measuring the steps");

		for (size_t i = 0; i < a->steps.n; i++)
			if (traced(a, a->steps.v[i].start, a->steps.v[i].end))
				a->steps.v[k++] = a->steps.v[i];
		a->steps.n = k;
		for (size_t i = 0; d && i < k; i++)
			d[i] = (double)(a->steps.v[i].end - a->steps.v[i].start);
		if (d && k && !a->step_window_ns) {
			a->step_median_ns = quantile(d, k, 0.5);
			a->step_p95_ns = quantile(d, k, 0.95);
			a->step_min_ns = quantile(d, k, 0);
			a->step_max_ns = quantile(d, k, 1);
		}
		free(d);
	}
	if (a->steps.n && !a->step_window_ns) {
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
	return 0;
}

const char *step_confidence_name(int c)
{
	return conf_word(c);
}
