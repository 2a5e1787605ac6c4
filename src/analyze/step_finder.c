/* The repeating unit of one device's operations, found while the recording
 * is read (timeline.c feeds every operation to its device's finder): the
 * first STEP_PREFIX_OPS operations are kept, put in time order, and their
 * sequence of (name, stream) tokens handed to steps_period.c; once the unit
 * is known, only the starts of its boundary operation are kept, for the
 * whole run. steps.c turns them into steps. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define WARMUP_LONG 3 /* a warm-up step runs > 3x the median ... */
#define WARMUP_GAP 2  /* ... with at most 2 normal steps between them */
#define STRIDE_MAX 16 /* launches of one kernel a step, told by their spacings */

size_t step_prefix_ops = STEP_PREFIX_OPS;

void steps_from_starts(struct step_set *ss, const uint64_t *starts, size_t n)
{
	double *d;

	ss->steps.n = 0;
	ss->long_last = 0;
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
						   ss->steps.v[ss->steps.n - 1].start) > WARMUP_LONG * ss->median) {
			ss->steps.n--;
			ss->long_last++; /* kept past n: steps.c may take it back */
		}
	}
	ss->p95 = quantile(d, ss->steps.n, 0.95);
	ss->min = quantile(d, ss->steps.n, 0); /* quickselect: d is not sorted */
	ss->max = quantile(d, ss->steps.n, 1);
	free(d);
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

/* The token of operation (name, stream, role): ids 0, 1, ... in the order
 * first seen, through h (tok_key() -> id + 1). The role tells a CUDA
 * graph's launch apart from the same operations submitted one by one: an
 * operation submitted alone, the first of a host call that made several,
 * or one of the others (which cannot start a step). 0, or -ENOMEM. */
static uint64_t tok_key(uint32_t name, uint32_t stream, unsigned role)
{
	return (uint64_t)name << 34 | (uint64_t)stream << 2 | role;
}

static int tok_id(struct hmap *h, uint32_t name, uint32_t stream, unsigned role, uint32_t *id)
{
	uint64_t k = tok_key(name, stream, role), v = hmap_get(h, k);

	if (!v) {
		v = h->n + 1;
		if (hmap_put(h, k, v) < 0)
			return -ENOMEM;
	}
	*id = (uint32_t)(v - 1);
	return 0;
}

/* ROLE_OPEN: the last operation of its stream in the prefix, whose role the
 * next operation decides (a token as ROLE_ALONE). */
enum { ROLE_ALONE, ROLE_FIRST, ROLE_INNER, ROLE_OPEN };

/* The role of each prefix entry (see tok_key), in one backward pass: the
 * first of several when the next operation of its process and stream came
 * from the same call. NULL on -ENOMEM. */
static uint8_t *op_roles(const struct step_finder *f)
{
	uint8_t *role = malloc(f->npre + 1);
	struct hmap next = { 0 }; /* pid << 32 | stream -> the next entry's same_call + 1 */

	for (size_t i = f->npre; role && i-- > 0;) {
		const struct sf_entry *e = &f->pre[i];
		uint64_t key = (uint64_t)e->pid << 32 | e->stream, nx = hmap_get(&next, key);

		role[i] = e->same_call ? ROLE_INNER : nx == 2 ? ROLE_FIRST : nx ? ROLE_ALONE : ROLE_OPEN;
		if (hmap_put(&next, key, 1 + (uint64_t)e->same_call) < 0) {
			free(role);
			role = NULL;
		}
	}
	hmap_free(&next);
	return role;
}

/* How operations become tokens: by name and stream; also by role (a CUDA
 * graph's launch); or by name and role on any stream (work that rotates
 * over streams). */
enum tok_mode { TM_PLAIN, TM_ROLES, TM_ANY_STREAM };
#define ANY_STREAM UINT32_MAX

static unsigned role_of(const uint8_t *role, size_t i, int mode)
{
	return mode == TM_PLAIN || role[i] == ROLE_OPEN ? ROLE_ALONE : role[i];
}

/* By role, a start of the marker's name whose role the next operation of
 * its stream decides: held per stream until then. */
static void hold_start(struct trace *t, struct step_finder *f, uint32_t stream, uint64_t start)
{
	if (hmap_put(&f->held, stream, start ? start : 1) < 0)
		t->nomem = 1;
}

/* The next operation o of a stream with a held start: it came from the
 * same call (the start was a graph launch's first operation) or not (the
 * start was alone); the start counts when that is the marker's role. */
static void settle_held(struct trace *t, struct step_finder *f, uint32_t stream, int same_call)
{
	uint64_t held = hmap_get(&f->held, stream);

	if (!held)
		return;
	hmap_del(&f->held, stream);
	if ((same_call ? ROLE_FIRST : ROLE_ALONE) == f->marker_role && VEC_PUSH(f->starts, held) < 0)
		t->nomem = 1;
}

/* The share of the boundary token's occurrences (before upto) that a host
 * call made after its first: a unit cut inside CUDA graphs' launches. */
static double inside_launches(const struct step_finder *f, uint32_t pid, size_t upto,
			      uint32_t name, uint32_t stream)
{
	size_t all = 0, inner = 0;

	for (size_t i = 0; i < upto; i++) {
		const struct sf_entry *e = &f->pre[i];

		if (e->pid == pid && e->name == name && e->stream == stream) {
			all++;
			inner += e->same_call;
		}
	}
	return all ? (double)inner / (double)all : 0;
}

/* A search for the repeating unit among the prefix's operations of one
 * process (before upto), and the token buffers its tries share: each try
 * (a way of making tokens of operations) refills them. */
struct unit_search {
	const struct trace *t;
	struct step_finder *f;
	const uint8_t *role; /* op_roles() */
	uint32_t pid;
	size_t upto;
	struct hmap h;   /* token key (tok_key) -> token + 1 */
	uint32_t *tok;   /* per operation taken: its token, start and the idle before it */
	uint64_t *start;
	double *gap;
	uint8_t *inner;  /* per token: it cannot start a step */
	size_t n;        /* operations taken by the last tokens() */
};

/* The operations as tokens of one mode, into s's buffers; returns how many,
 * or -ENOMEM. */
static long tokens(struct unit_search *s, int mode)
{
	uint32_t nnames = (uint32_t)s->t->names.n;
	uint64_t prev_end = 0;
	size_t n = 0;

	hmap_free(&s->h);
	free(s->inner);
	s->inner = NULL;
	for (size_t i = 0; i < s->upto; i++) {
		const struct sf_entry *e = &s->f->pre[i];
		uint64_t end = e->start + e->dur;

		/* tok_key holds 30 bits of a name: more names than that cannot
		 * be interned in memory anyway */
		if (e->pid == s->pid && e->name && e->name < nnames && e->name < (1u << 30)) {
			if (tok_id(&s->h, e->name, mode == TM_ANY_STREAM ? 0 : e->stream, role_of(s->role, i, mode),
				   &s->tok[n]) < 0)
				return -ENOMEM;
			s->start[n] = e->start;
			s->gap[n] = prev_end && e->start > prev_end ? (double)(e->start - prev_end) : 0;
			n++;
		}
		if (end > prev_end)
			prev_end = end;
	}
	s->n = n;
	if (!(s->inner = calloc(s->h.n + 1, 1)))
		return -ENOMEM;
	for (size_t i = 0; i < s->h.cap; i++)
		if (s->h.v[i].val)
			s->inner[s->h.v[i].val - 1] = (s->h.v[i].key & 3) == ROLE_INNER;
	return (long)n;
}

/* Runs the unit search on the tokens of one mode: 0 or -ENOMEM. */
static int try_mode(struct unit_search *s, int mode, struct step_period *per)
{
	long got = tokens(s, mode);

	if (got < 0)
		return -ENOMEM;
	/* every second occurrence of a token only on names and streams: the
	 * other modes' tokens are rarer already */
	return step_period_find(s->tok, s->start, s->gap, (size_t)got, (uint32_t)s->h.n, s->inner,
				mode == TM_PLAIN ? 2 : 1, per);
}

static int unit_found(const struct step_period *p)
{
	return p->tok != UINT32_MAX && p->confidence != CONF_LOW;
}

/* The finer unit n cuts the unit s into k >= 2 whole copies of itself.
 * Where the streams rotate at a pace that is not a whole number of
 * iterations (a pool of 32 streams, 3 taken each iteration: PyTorch's
 * side streams), the longer unit's stretches hold k or k + 1 iterations,
 * no whole multiple: on names alone the longer unit's extra kinds of
 * operation were only the same copies on other streams, and the finer
 * unit explains the run at least as well. */
static int whole_copies(const struct step_period *s, const struct step_period *n)
{
	double k = s->nseg ? round((double)n->nseg / (double)s->nseg) : 0;

	if (k >= 2 && fabs((double)n->nseg - k * (double)s->nseg) <= 0.05 * (double)n->nseg &&
	    fabs((double)s->ops - k * (double)n->ops) <= fmax(1, 0.01 * (double)s->ops) &&
	    n->confidence >= s->confidence)
		return 1;
	return n->ops && s->ops >= 2 * n->ops && n->nseg >= 2 * s->nseg && n->confidence >= s->confidence &&
	       n->share >= s->share - 0.05;
}

/* The unit of the prefix (f->per, f->mode), its tokens left in h. It is
 * found on names and streams, then looked at again where the evidence says
 * a token of that kind is not the program's step:
 *  - CUDA graphs: a unit cut inside a graph's launch (XLA's six identical
 *    layers in one launch make a unit of one layer) when its boundary lies
 *    inside launches in more than half of its occurrences. The operations a
 *    launch makes after its first then become tokens apart, which cannot
 *    start a step, and its first operation one apart from the same
 *    operation submitted alone (warm-up runs before capture).
 *  - Rotating streams: a loop that sends each iteration to the next of k
 *    streams (multi-buffering) repeats on names and streams only every k
 *    iterations. Where the same search on names alone finds a unit that
 *    cuts that one into k whole copies of itself, the finer one is the
 *    iteration.
 * Where the second search finds nothing, the first unit stays.
 * 0 or -ENOMEM. */
static int find_unit(struct unit_search *s)
{
	struct step_finder *f = s->f;
	const struct hmap *h = &s->h;
	struct step_period again;
	int mode = TM_PLAIN, streams = 0;
	uint32_t first_stream = 0, pid = s->pid;
	size_t upto = s->upto;

	f->mode = TM_PLAIN;
	if (try_mode(s, TM_PLAIN, &f->per) < 0)
		return -ENOMEM;
	if (!unit_found(&f->per))
		return 0;
	uint64_t key = 0;

	for (size_t i = 0; i < h->cap && !key; i++)
		if (h->v[i].val == (uint64_t)f->per.tok + 1)
			key = h->v[i].key;
	for (size_t i = 0; i < upto && streams < 2; i++)
		if (f->pre[i].pid == pid) {
			if (!streams++)
				first_stream = f->pre[i].stream;
			else if (f->pre[i].stream == first_stream)
				streams--;
		}
	if (inside_launches(f, pid, upto, (uint32_t)(key >> 34), (uint32_t)(key >> 2)) > 0.5)
		mode = TM_ROLES;
	else if (streams > 1)
		mode = TM_ANY_STREAM;
	else
		return 0;
	if (try_mode(s, mode, &again) < 0)
		return -ENOMEM;
	/* steps that vary replace no steady unit (steps_period.c's varying()) */
	if (unit_found(&again) && !(again.varying && !f->per.varying) &&
	    (mode == TM_ROLES || whole_copies(&f->per, &again))) {
		size_t len;

		f->per = again;
		f->mode = (uint8_t)mode;
		len = strlen(f->per.why);
		snprintf(f->per.why + len, sizeof(f->per.why) - len, "%s",
			 mode == TM_ROLES ? "; a CUDA graph's launch starts each step"
					  : "; on any stream: the loop sends each iteration to the next stream");
		return 0;
	}
	/* the tokens of the unit kept */
	return tokens(s, TM_PLAIN) < 0 ? -ENOMEM : 0;
}

/* Two spacings alike: within a tenth of the longer. */
static int alike(double x, double y)
{
	return fabs(x - y) <= 0.1 * fmax(x, y);
}

/* A unit of one operation (the same kernel on the same stream, again and
 * again) whose occurrences' spacings repeat every k of them and not every
 * one: one kernel launched k times an iteration on k shapes (a hand-written
 * MLP kernel, one launch a layer). Every k-th occurrence starts a step, from
 * the first; 0 or -ENOMEM. */
static int spacing_stride(struct unit_search *s)
{
	struct step_period *per = &s->f->per;
	double *d = NULL;
	size_t m = 0;
	uint64_t prev = 0;

	if (per->ops != 1 || per->stride != 1 || s->f->mode != TM_PLAIN)
		return 0;
	if (!(d = malloc((s->n + 1) * sizeof(*d))))
		return -ENOMEM;
	for (size_t i = 0; i < s->n; i++)
		if (s->tok[i] == per->tok) {
			if (prev)
				d[m++] = (double)(s->start[i] - prev);
			prev = s->start[i];
		}
	for (unsigned k = 1; k <= STRIDE_MAX && m >= 4 * (size_t)k; k++) {
		size_t same = 0;

		for (size_t i = 0; i + k < m; i++)
			same += (size_t)alike(d[i], d[i + k]);
		double share = (double)same / (double)(m - k);

		if (k == 1 && share >= 0.5)
			break; /* the spacings alike from one to the next: the operation is the step */
		if (k > 1 && share >= 0.9) {
			size_t len = strlen(per->why);

			per->stride = k;
			per->ops = k;
			per->nseg /= k;
			snprintf(per->why + len, sizeof(per->why) - len,
				 "; its spacings repeat every %u occurrences: %u launches of it make a step", k, k);
			break;
		}
	}
	free(d);
	return 0;
}

/* The prefix in time order (when it filled up: up to prefix_cut()); its
 * operations of process pid, as tokens, give the repeating unit
 * (find_unit). Keeps the boundary's starts in the whole prefix; a start
 * whose role the operation after the prefix decides is held. */
static void decide(struct trace *t, struct step_finder *f, uint32_t pid, int full)
{
	struct unit_search s = { .t = t, .f = f, .pid = pid };
	uint32_t *tname = NULL, *tstream = NULL;
	uint8_t *trole = NULL, *role = NULL;
	const struct hmap *h = &s.h;

	f->decided = 1;
	f->pid = pid;
	f->marker = 0;
	f->starts.n = 0;
	memset(&f->per, 0, sizeof(f->per));
	f->per.tok = UINT32_MAX;
	snprintf(f->per.why, sizeof(f->per.why), "out of memory while looking for steps");
	s.tok = malloc((f->npre + 1) * sizeof(*s.tok));
	s.start = malloc((f->npre + 1) * sizeof(*s.start));
	s.gap = malloc((f->npre + 1) * sizeof(*s.gap));
	if (!s.tok || !s.start || !s.gap || sort_prefix(f->pre, f->npre) < 0 || !(role = op_roles(f)))
		goto nomem;
	s.role = role;
	s.upto = full ? prefix_cut(f, pid) : f->npre;
	if (find_unit(&s) < 0)
		goto nomem;
	if (f->per.tok == UINT32_MAX || f->per.confidence == CONF_LOW)
		goto out;
	if (spacing_stride(&s) < 0)
		goto nomem;
	/* the boundary token's name and stream */
	tname = malloc(h->n * sizeof(*tname));
	tstream = malloc(h->n * sizeof(*tstream));
	trole = malloc(h->n);
	if (!tname || !tstream || !trole)
		goto nomem;
	for (size_t i = 0; i < h->cap; i++)
		if (h->v[i].val) {
			tname[h->v[i].val - 1] = (uint32_t)(h->v[i].key >> 34);
			tstream[h->v[i].val - 1] = (uint32_t)(h->v[i].key >> 2);
			trole[h->v[i].val - 1] = (uint8_t)(h->v[i].key & 3);
		}
	uint32_t mname = tname[f->per.tok];
	uint32_t mstream = f->mode == TM_ANY_STREAM ? ANY_STREAM : tstream[f->per.tok];
	uint8_t mrole = trole[f->per.tok];
	struct step_set ss = { 0 };

	f->marker_role = mrole;
	f->occ = 0;
	for (size_t j = 0; j < f->npre; j++) {
		const struct sf_entry *e = &f->pre[j];

		if (e->pid != pid || e->name != mname || (mstream != ANY_STREAM && e->stream != mstream))
			continue;
		if (f->occ++ % f->per.stride) /* not an occurrence that starts a step */
			continue;
		if (f->mode != TM_PLAIN && role[j] == ROLE_OPEN)
			hold_start(t, f, e->stream, e->start); /* a launch the prefix cut */
		else if (role_of(role, j, f->mode) == mrole && VEC_PUSH(f->starts, e->start) < 0)
			goto nomem;
	}
	steps_from_starts(&ss, f->starts.v, f->starts.n);
	if (ss.nomem)
		t->nomem = 1;
	else if (ss.steps.n >= 2) {
		f->marker = mname;
		f->marker_stream = mstream;
		f->marker_role = mrole;
	}
	free(ss.steps.v);
	goto out;
nomem: /* the analysis fails: never steps from part of the timeline */
	t->nomem = 1;
out:
	if (!f->marker)
		f->starts.n = 0;
	free(s.tok);
	free(s.start);
	free(s.gap);
	free(tname);
	free(tstream);
	free(s.inner);
	free(trole);
	free(role);
	hmap_free(&s.h);
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
		if (!f->marker || o->pid != f->pid ||
		    (f->marker_stream != ANY_STREAM && o->stream != f->marker_stream))
			return;
		if (f->mode == TM_PLAIN) {
			if (o->name == f->marker && f->occ++ % f->per.stride == 0 &&
			    VEC_PUSH(f->starts, o->start) < 0)
				t->nomem = 1;
			return;
		}
		/* by role, a start counts once the next operation of its stream
		 * shows whether it began a graph's launch */
		if (f->held.n)
			settle_held(t, f, o->stream, o->same_call);
		if (o->name == f->marker && !o->same_call)
			hold_start(t, f, o->stream, o->start);
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
	/* durations past 2.1 s are clipped: they only feed the idle gaps */
	uint64_t dur = o->end > o->start ? o->end - o->start : 0;
	struct sf_entry e = { .start = o->start, .dur = dur > INT32_MAX ? INT32_MAX : (uint32_t)dur,
			      .same_call = o->same_call, .name = o->name, .pid = o->pid, .stream = o->stream };

	f->pre[f->npre++] = e;
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
	/* a start still held has no operation after it: it was alone */
	for (size_t i = 0; f->marker && f->marker_role == ROLE_ALONE && i < f->held.cap; i++)
		if (f->held.v[i].val && VEC_PUSH(f->starts, f->held.v[i].val) < 0)
			t->nomem = 1;
	hmap_free(&f->held);
	/* starts read after the prefix came in file order */
	if (f->starts.n > 1)
		qsort(f->starts.v, f->starts.n, sizeof(*f->starts.v), cmp_u64);
}

void step_finder_free(struct step_finder *f)
{
	hmap_free(&f->held);
	free(f->pre);
	free(f->starts.v);
	memset(f, 0, sizeof(*f));
}
