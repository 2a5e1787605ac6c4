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
#define PROFILER_STEP "ProfilerStep#"    /* torch.profiler's ranges: one name per step */
#define TUNING_STEP_SHARE 0.1 /* a compiling step this much of the median or less: autotuning */
#define RESTART_STEP_SHARE 0.5 /* a long last step this much in starting workers: an epoch's restart */
#define STEPS_FOR_HIGH_CONFIDENCE 10 /* fewer steps found: at most medium confidence */

/* Start-up stretches between boundaries far shorter than a step, before
 * the first step kept: the boundary operation ran again inside one
 * iteration of the start-up (cuDNN's autotuning tries a convolution's
 * candidate kernels, a compiler benchmarks its own), not another
 * iteration of the loop. */
static int start_up_repeat(const struct step_set *ss, const uint64_t *starts, size_t n, size_t i)
{
	return ss->steps.n && ss->median > 0 && i + 1 < n && starts[i + 1] <= ss->steps.v[0].start &&
	       (double)(starts[i + 1] - starts[i]) < TUNING_STEP_SHARE * ss->median;
}

static void set_steps_from_starts(struct analysis *a, const uint64_t *starts, size_t n)
{
	struct step_set ss = { 0 };

	steps_from_starts(&ss, starts, n);
	if (ss.nomem)
		analysis_nomem(a, "finding the steps");
	/* the iterations, and when each began (activities.c: the iterations
	 * between an activity's runs) */
	int full = 0;

	a->step_iterations = 0;
	a->x->iter_starts.n = 0;
	for (size_t i = 0; i < n; i++) {
		if (start_up_repeat(&ss, starts, n, i))
			continue;
		a->step_iterations++;
		if (!full && VEC_PUSH(a->x->iter_starts, starts[i]) < 0) {
			analysis_nomem(a, "finding the steps");
			full = 1;
		}
	}
	a->steps_long_last = ss.long_last;
	free(a->steps.v);
	a->steps.v = ss.steps.v;
	a->steps.n = ss.steps.n;
	a->steps.cap = ss.steps.cap;
	a->step_median_ns = ss.median;
	a->step_p95_ns = ss.p95;
	a->step_min_ns = ss.min;
	a->step_max_ns = ss.max;
}

/* The step statistics again, after steps were taken off. */
static void step_stats(struct analysis *a)
{
	double *d = malloc((a->steps.n + 1) * sizeof(*d));

	if (!d) {
		analysis_nomem(a, "measuring the steps");
		return;
	}
	for (size_t i = 0; i < a->steps.n; i++)
		d[i] = (double)(a->steps.v[i].end - a->steps.v[i].start);
	a->step_median_ns = quantile(d, a->steps.n, 0.5);
	a->step_p95_ns = quantile(d, a->steps.n, 0.95);
	a->step_min_ns = quantile(d, a->steps.n, 0);
	a->step_max_ns = quantile(d, a->steps.n, 1);
	free(d);
}

/* The driving thread's time over an interval in stacks `in` says yes to
 * (a compiler's work, starting worker processes). */
struct time_in {
	const struct analysis *a;
	int (*in)(const struct analysis *a, uint32_t node);
	double ns;
};

static void add_time_in(void *ctx, uint32_t node, uint8_t state, uint64_t s, uint64_t e)
{
	struct time_in *c = ctx;

	(void)state;
	if (c->in(c->a, node))
		c->ns += (double)(e - s);
}

/* The last of the first third of the steps in which the driving thread's
 * stacks were in a compiler for WARMUP_COMPILE_SHARE of the step or more,
 * + 1; 0: none. A jit that compiles again at its second call (donated
 * buffers, a new layout), or functions compiled lazily on their first use,
 * start the loop. No count of steps bounds it, as one does the long steps'
 * test: where the step found is a fraction of the program's (one of 64
 * releases a model step advances), a kernel compiled on first use after
 * the first check comes hundreds of steps in. Of them,
 * the ones shorter than a tenth of the median step are the compiler running
 * the program's kernels to pick the fastest (XLA's autotuning), not
 * iterations of the loop: *tuning counts them. */
static size_t compiled_until(struct analysis *a, size_t *tuning)
{
	const struct py_thread *th = a->t->py_samples ? sites_driving_thread(a) : NULL;
	size_t lim = a->steps.n / 3, cut = 0;
	struct py_holds c;

	*tuning = 0;
	if (!th || !th->n)
		return 0;
	holds_init(&c, a->t, th);
	for (size_t i = 0; i < lim; i++) {
		const struct step *s = &a->steps.v[i];
		struct time_in ct = { a, sites_node_compiles, 0 };
		double d = (double)(s->end - s->start);

		holds_over(&c, s->start, s->end, add_time_in, &ct);
		if (ct.ns >= WARMUP_COMPILE_SHARE * d) {
			cut = i + 1;
			*tuning += d < TUNING_STEP_SHARE * a->step_median_ns;
		}
	}
	return cut;
}

/* The step finder leaves long last steps out: a final evaluation or
 * checkpoint is not the loop's. A long last step in which the driving
 * thread spent most of the time starting worker processes is: a
 * DataLoader without persistent workers starts them again at each epoch,
 * and the loop ran on after it (the step ends where the next one starts).
 * Such steps are taken back, in order, up to the first that is not. */
static void keep_restarts(struct analysis *a)
{
	const struct py_thread *th = a->t->py_samples ? sites_driving_thread(a) : NULL;
	size_t back = 0;
	struct py_holds h;

	/* time windows hold no steps, and a duty-cycled recording's steps
	 * were compacted over the ones held past n */
	if (!th || !th->n || !a->steps_long_last || a->step_window_ns || a->windows.n ||
	    a->steps.n + a->steps_long_last > a->steps.cap)
		return;
	holds_init(&h, a->t, th);
	for (size_t i = 0; i < a->steps_long_last; i++) {
		const struct step *s = &a->steps.v[a->steps.n + i];
		struct time_in st = { a, sites_node_starts_workers, 0 };

		holds_over(&h, s->start, s->end, add_time_in, &st);
		if (st.ns < RESTART_STEP_SHARE * (double)(s->end - s->start))
			break;
		back++;
	}
	if (!back)
		return;
	a->steps.n += back;
	a->steps_long_last -= back;
	a->restart_steps = (uint32_t)back;
	step_stats(a);
}

/* Warm-up: the first steps run long while the framework compiles, autotunes
 * (cudnn.benchmark) and loads kernels lazily. A step among the first tenth
 * (at least WARMUP_MIN_STEPS: a first step cut short by where the recording
 * found the loop's start leaves the forward and the backward pass's
 * autotuning in the second and third; at most WARMUP_MAX_STEPS) that lasts STEP_WARMUP_FACTOR x the median or
 * more and longer than every later step, and every step before it, is
 * start-up, not the steady run: what it costs is not a bottleneck of the
 * loop (docs/RULES.md section 2). So is a step among the first third that
 * the training thread spent mostly compiling, with every step before it,
 * however long the steps after it. */
static void trim_warmup(struct analysis *a)
{
	size_t n = a->steps.n, lim = n / 10 > WARMUP_MIN_STEPS ? n / 10 : WARMUP_MIN_STEPS, cut = 0;

	if (a->step_window_ns || n < 10 || !(a->step_median_ns > 0))
		return;
	if (lim > WARMUP_MAX_STEPS)
		lim = WARMUP_MAX_STEPS;
	/* longer than any step after them too: a validation pass every 10
	 * steps makes long steps early and later alike, and is the loop's */
	uint64_t later = 0;

	for (size_t i = lim; i < n; i++)
		if (a->steps.v[i].end - a->steps.v[i].start > later)
			later = a->steps.v[i].end - a->steps.v[i].start;
	for (size_t i = 0; i < lim; i++) {
		uint64_t d = a->steps.v[i].end - a->steps.v[i].start;

		if ((double)d >= STEP_WARMUP_FACTOR * a->step_median_ns && d > later)
			cut = i + 1;
	}
	size_t tuning, compiled = compiled_until(a, &tuning);

	cut = compiled > cut ? compiled : cut;
	if (tuning < a->step_iterations)
		a->step_iterations -= tuning;
	if (!cut)
		return;
	memmove(a->steps.v, a->steps.v + cut, (n - cut) * sizeof(*a->steps.v));
	a->steps.n = n - cut;
	a->warmup_steps = (uint32_t)cut;
	step_stats(a);
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

/* Ranges the program itself marks: NVTX's default domain. Libraries mark
 * their own calls in domains of their own (CCCL's cub::DeviceReduce::Sum,
 * NCCL's collectives), one or more per step or none: never the loop. */
static int program_range(const struct marker_range *m)
{
	return m->domain == 0;
}

/* Steps from the main process's NVTX ranges named `want` (see nvtx_is), in
 * the default domain unless any_domain (--steps nvtx:NAME): each range starts
 * a step; the last range's end ends the last one. */
static int steps_from_nvtx(struct analysis *a, const char *want, int any_domain)
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

		if (m->pid != a->main_pid || !nvtx_is(t, m->name, want) || (!any_domain && !program_range(m)))
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

/* The main process's NVTX range names in the default domain, most frequent
 * first: n names at most into out[] (ProfilerStep#N counted as one). Returns
 * how many. */
static size_t nvtx_names(const struct analysis *a, uint32_t *out, size_t *count, size_t max)
{
	const struct trace *t = a->t;
	size_t k = 0;

	for (size_t i = 0; i < t->markers.n; i++) {
		uint32_t nm = t->markers.v[i].name;
		size_t j;

		if (t->markers.v[i].pid != a->main_pid || nm >= t->names.n || !program_range(&t->markers.v[i]))
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
			return steps_from_nvtx(a, PROFILER_STEP, 0);
	return k && count[0] >= 3 && steps_from_nvtx(a, a->t->names.v[names[0]], 0);
}

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
		struct op_sinks k = { feed_again, NULL, NULL, &ff, NULL };

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

/* A step is a training iteration. Where the main GPU runs an optimizer's
 * updates (PyTorch's multi_tensor_apply, fused Adam: kernel_updates_params)
 * in fewer bursts than half the repeating unit's occurrences, the unit is a
 * part of the iteration: an evaluation batch of a validation pass every N
 * steps, a micro-batch of gradient accumulation. In 1.1 to 1.9 times as
 * many, the unit misses iterations. In fewer than the unit's occurrences,
 * with most of the unit's steps holding no update, the unit runs beside the
 * iterations (a validation's batches, more of them than the training steps
 * between). Each step then ends with the
 * optimizer's updates: it starts at the first operation after a burst.
 * A burst is the updates with fewer than OPT_BURST_GAP other kernels
 * between them (an iteration's forward and backward passes run more). */
#define OPT_BURST_GAP 8
#define OPT_MISSED 1.1     /* the updates outnumber the unit's steps this much: it misses iterations, */
#define OPT_MISSED_MAX 1.9 /* ... but not two updates an iteration */
struct opt_feed {
	const struct analysis *a;
	VEC(uint64_t) starts;
	VEC(uint64_t) bursts; /* each burst's first update, by its start */
	uint64_t pending; /* the first operation after the last update seen (0: none yet) */
	unsigned since;   /* kernels since the last update */
	uint32_t name;    /* the first update's name */
	int have, err;
};

static void feed_opt(void *ctx, const struct gpu_op *o)
{
	struct opt_feed *of = ctx;

	if (o->pid != of->a->main_pid)
		return;
	if (o->kind == OP_KERNEL && o->updates_params) {
		if ((!of->have || of->since >= OPT_BURST_GAP) && of->pending && VEC_PUSH(of->starts, of->pending) < 0)
			of->err = -ENOMEM;
		if ((!of->have || of->since >= OPT_BURST_GAP) && VEC_PUSH(of->bursts, o->start) < 0)
			of->err = -ENOMEM;
		if (!of->have)
			of->name = o->name;
		of->have = 1;
		of->since = 0;
		of->pending = 0;
		return;
	}
	if (of->have && !of->pending)
		of->pending = o->start;
	of->since += o->kind == OP_KERNEL;
}

/* How many of the steps found hold the start of an update burst. */
static size_t steps_updating(const struct analysis *a, const uint64_t *bursts, size_t n)
{
	size_t held = 0, j = 0;

	for (size_t i = 0; i < a->steps.n; i++) {
		const struct step *st = &a->steps.v[i];

		while (j < n && bursts[j] < st->start)
			j++;
		held += j < n && bursts[j] < st->end;
	}
	return held;
}

/* 1: steps from the optimizer's updates replaced the found ones (or gave
 * some where none were found); 0: they stand. */
static int from_optimizer(struct analysis *a, int found)
{
	struct trace *t = a->t;
	struct opt_feed of = { .a = a };
	struct op_sinks k = { feed_opt, NULL, NULL, &of, NULL };
	char err[512];
	uint64_t units = found ? a->step_iterations : 0;
	int ret = 0;

	/* an optimizer launches one or many update kernels a step: only the
	 * bursts, read in time order, say how many steps it made */
	if (t->scan->updates[a->main_dev] < 3)
		return 0;
	if (timeline_replay(t, a->main_dev, &k, err, sizeof(err)) < 0 || of.err) {
		if (of.err || !strstr(err, "memory"))
			analysis_warn(a, "could not read the recording again for the optimizer's steps: %s",
				      of.err ? "out of memory" : err);
		goto out;
	}
	if (of.pending && VEC_PUSH(of.starts, of.pending) < 0)
		goto out;
	/* three iterations at least, and fewer than half the unit's steps; or
	 * a tenth more than the unit's, but under twice as many (two updates
	 * or more an iteration: a GAN's two optimizers, an actor's several):
	 * the unit misses iterations, its marker a kernel that some batch
	 * shapes pick and others do not */
	double per = units ? (double)(of.starts.n - 1) / (double)units : 0;
	int misses = found && per >= OPT_MISSED && per < OPT_MISSED_MAX;
	/* the unit's steps hold no update, most of them: it runs beside the
	 * iterations (a validation pass's batches), not as them */
	size_t updating = found ? steps_updating(a, of.bursts.v, of.bursts.n) : 0;
	int beside = found && a->steps.n && updating * 2 < a->steps.n && of.starts.n - 1 < units;

	if (of.starts.n < 4 || (found && (double)(of.starts.n - 1) >= units / 2.0 && !misses && !beside))
		goto out;
	char why[sizeof(a->step_why)];

	if (misses)
		snprintf(why, sizeof(why), "each step ends with the optimizer's update; the repeating unit of "
			 "%u operations came %llu times, fewer than the optimizer's %zu updates (some "
			 "iterations run other operations, as batches of other shapes do): %s", a->step_ops,
			 (unsigned long long)units, of.starts.n - 1, a->step_why);
	else if (beside && (double)(of.starts.n - 1) >= units / 2.0)
		snprintf(why, sizeof(why), "each step ends with the optimizer's update; the repeating unit of "
			 "%u operations (%llu times) holds an update in %zu of its %zu steps: it runs beside "
			 "the iterations (an evaluation's batches) or is a part of one (a micro-batch): %s", a->step_ops, (unsigned long long)units,
			 updating, a->steps.n, a->step_why);
	else if (found)
		snprintf(why, sizeof(why), "each step ends with the optimizer's update; the repeating unit of "
			 "%u operations (%llu times) is a part of the iteration (an evaluation batch, a "
			 "micro-batch): %s", a->step_ops, (unsigned long long)units, a->step_why);
	else
		snprintf(why, sizeof(why), "each step ends with the optimizer's update (%s)", a->step_why);
	set_steps_from_starts(a, of.starts.v, of.starts.n);
	snprintf(a->step_why, sizeof(a->step_why), "%s", why);
	a->step_source = "optimizer";
	snprintf(a->step_marker, sizeof(a->step_marker), "%s", t->names.v[of.name]);
	a->step_marker_name = of.name;
	a->step_confidence = CONF_HIGH;
	ret = a->steps.n >= 2;
out:
	free(of.starts.v);
	free(of.bursts.v);
	return ret;
}

/* --steps kernel:NAME: every operation of the main process on the main GPU
 * whose name contains NAME starts a step (one name only). */
struct named_feed {
	const struct analysis *a;
	const char *want;
	uint8_t *match;   /* per name: 0 not yet seen, 1 matches, 2 does not */
	uint32_t *count;  /* per name: operations of the main process */
	size_t nnames;    /* names when match and count were made: the reading
			   * names copies as it meets them, so more may follow */
	VEC(uint64_t) starts;
	uint32_t first;   /* the first matching name, and whether another matched */
	int several, err;
};

static void feed_named(void *ctx, const struct gpu_op *o)
{
	struct named_feed *nf = ctx;
	const struct trace *t = nf->a->t;

	if (o->pid != nf->a->main_pid || !o->name || o->name >= nf->nnames)
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
	uint8_t *used = calloc(nf->nnames + 1, 1);
	size_t off = 0;

	buf[0] = 0;
	for (int k = 0; used && k < 5; k++) {
		uint32_t best = 0;

		for (uint32_t i = 1; i < nf->nnames; i++)
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
	struct op_sinks k = { feed_named, NULL, NULL, &nf, NULL };
	char err[512], names[600];
	int ret = -EINVAL;

	nf.nnames = t->names.n;
	nf.match = calloc(nf.nnames + 1, 1);
	nf.count = calloc(nf.nnames + 1, sizeof(*nf.count));
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
		if (steps_from_nvtx(a, spec + 5, 1)) {
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
	} else if (!from_nvtx(a)) {
		int found = from_kernels(a);

		if (!from_optimizer(a, found) && !found) {
			a->steps.n = 0;
			a->step_source = "none";
		}
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
	keep_restarts(a);
	trim_warmup(a);
	/* a handful of steps says little about the loop, however regular */
	if (a->steps.n && a->steps.n < STEPS_FOR_HIGH_CONFIDENCE && a->step_confidence == CONF_HIGH)
		a->step_confidence = CONF_MEDIUM;
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
	/* after the last step, kept apart as the start-up is (activities.c
	 * adds what the training thread did there) */
	memset(&a->tail, 0, sizeof(a->tail));
	if (a->steps.n && !a->step_window_ns && a->last_op > a->t1)
		a->tail.ns = (double)(a->last_op - a->t1);
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
