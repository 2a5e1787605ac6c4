/* The replay (docs/RULES.md section 4): the steady window's graph run again
 * as queues, the host as one and each stream as one, with a fix applied.
 *
 * The host walks its events in the order it made them: issuing an
 * operation, waiting in a call. Between two events it did its own work, as
 * long as in the recording less what the fix takes out (an activity's time,
 * the lateness a cause's gaps hold). An operation starts when the host has
 * issued it (plus the launch latency), its stream is free (plus the spacing
 * it kept) and the operation of another stream it waited for has ended; it
 * lasts as long as recorded, times the fix's factor for its family. A wait
 * ends when the operation it waited for ends in the replay, as long after
 * as it returned in the recording; a wait the fix makes non-blocking costs
 * its call only. Replaying with nothing changed must give back the window
 * as recorded: depgraph.c measures how well it does (the replay's error). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define STREAM_SPACING_NS 1000.0 /* the GPU's own spacing before an operation the host was late for */
#define SLOTS 64
/* a copy stream's queue in the replay, one a direction (CUPTI's stream ids
 * are small: these are none of them) */
#define ASIDE_HTOD (UINT32_MAX - 1)
#define ASIDE_DTOH (UINT32_MAX - 2)

/* Removed host time before a point, over sorted disjoint intervals: the
 * cursor only moves forward. */
struct removed {
	const struct dg_host *v;
	size_t n, i;
	double acc; /* the whole intervals before i */
	const struct sim_fix *f;
	int acts_only;
};

static int takes(const struct removed *r, const struct dg_host *h)
{
	const struct sim_fix *f = r->f;

	if (h->alloc && f->allocs && !r->acts_only)
		return 1;
	if (h->alloc == DG_ALLOC_UNHELD) /* no sample says what else the thread did there */
		return 0;
	/* kernels built on first use: paid once, out of every replay but the
	 * recording's (as gpuwhy's own cost is) */
	if (h->gap == IDLE_COMPILE && !f->keep_compile && !r->acts_only)
		return 1;
	if (h->act != ACT_NONE && (f->acts & (1u << h->act)))
		return 1;
	if (r->acts_only)
		return 0;
	if (f->optimizer && h->optim)
		return 1;
	/* the training thread's own time inside a gap that it spent on the
	 * CPU or waiting for input, all of it, where the fix takes those gaps
	 * (other causes are decided from the whole process, a storage read
	 * say, while the thread may have been launching: late_removed() takes
	 * their part); so is its time inside a `periodic` gap, where it issues
	 * the work itself (periodic_host) */
	if ((h->gap == IDLE_HOST_COMPUTE || h->gap == IDLE_DATA_WAIT) && (f->gap_causes & IDLE_BIT(h->gap)) &&
	    !(f->gap_frac[h->gap] > 0))
		return 1;
	if (h->gap == IDLE_PERIODIC && f->periodic_host && (f->gap_causes & IDLE_BIT(IDLE_PERIODIC)))
		return 1;
	/* input code in a gap given to storage (a file loaded from it, the
	 * loaders' reads) is C2's: moving the code leaves the reads to wait on */
	if (h->cls == SC_INPUT && h->gap == IDLE_IO && !(f->gap_causes & IDLE_BIT(IDLE_IO)))
		return 0;
	/* asleep in its own code or a standard-library wait (C16's, as
	 * sites.c decides it), not in a framework's dispatch: autograd's
	 * backward sleeps on the main thread while its own threads launch */
	return (h->cls && (f->host_classes & (1u << h->cls))) ||
	       (f->asleep && h->asleep && (h->cls == SC_NONE || h->cls == SC_WAIT)) || (f->other && h->other);
}

static void skip_to(struct removed *r, double t)
{
	while (r->i < r->n && (double)r->v[r->i].end <= t) {
		if (takes(r, &r->v[r->i]))
			r->acc += (double)(r->v[r->i].end - r->v[r->i].start);
		r->i++;
	}
}

static double removed_before(struct removed *r, double t)
{
	skip_to(r, t);
	if (r->i < r->n && (double)r->v[r->i].start < t && takes(r, &r->v[r->i]))
		return r->acc + (t - (double)r->v[r->i].start);
	return r->acc;
}

static int inside(struct removed *r, double t)
{
	skip_to(r, t);
	return r->i < r->n && (double)r->v[r->i].start <= t && takes(r, &r->v[r->i]);
}

static double factor(double x)
{
	return x > 0 && isfinite(x) ? x : 1;
}

/* The host's lateness before o that the fix takes out. */
static double late_removed(const struct analysis *a, const struct sim_fix *f, const struct dg_op *o)
{
	double late, rr = 0;

	if (!(o->flags & DG_HOST_BOUND) || o->cause >= IDLE_NCAUSES)
		return 0; /* the host was ahead: its time there is not known to be launching */
	late = (double)o->late;
	if (o->cause == IDLE_COMPILE && !f->keep_compile) /* built once: out, as takes() says */
		return late;
	if (f->gap_causes & IDLE_BIT(o->cause))
		rr = late * (f->gap_frac[o->cause] > 0 ? f->gap_frac[o->cause] : 1);
	else if (f->input_after_sync > 0 && o->cause == IDLE_SYNC && (o->flags & DG_HTOD))
		rr = late * f->input_after_sync;
	if (o->cause == IDLE_LAUNCH_OVERHEAD) {
		if (f->pace_ns > 0 && late - f->pace_ns > rr)
			rr = late - f->pace_ns;
		/* gpuwhy's own cost, out of every replay but the recording's */
		if (!f->keep_trace) {
			const struct depgraph *g = a->graph;
			double own = g->trace_more.n ? (double)hmap_get(&g->trace_more, (uint64_t)(o - g->ops.v)) : 0;
			/* a graph's own figure is measured per operation; the far
			 * end scales the estimate per launch */
			double per = g->trace_ns * factor(f->trace_scale), c = own > per ? own : per;

			c = late < c ? late : c;

			rr = c > rr ? c : rr;
		}
	}
	return rr;
}

/* The replay's state: the host's clock, the streams' queues, each
 * operation's end (-1: the fix removed it). */
struct sim {
	const struct analysis *a;
	const struct depgraph *g;
	const struct sim_fix *f;
	struct removed rt, ra; /* host time taken out; the activities' alone */
	struct removed rin;    /* the input's host work (a batch fix repeats it k times) */
	double H, tau, r_tau;  /* the host's clock; the recording's time it stands for; removed by then */
	double in_tau;         /* input work by tau */
	double k;              /* the batch factor (1: none) */
	double busy_all;       /* the recorded operations' time */
	double maxend, busy_cut;
	double rated;          /* the replayed time of operations the fix runs at a new rate */
	double *end;
	struct {
		uint32_t stream;
		int used;
		double free;
	} slot[SLOTS];
};

/* The stream's slot (linear probing), or SLOTS when all are taken. */
static unsigned slot_of(struct sim *s, uint32_t stream)
{
	unsigned h = stream % SLOTS, j;

	for (j = 0; j < SLOTS && s->slot[h].used && s->slot[h].stream != stream; j++)
		h = (h + 1) % SLOTS;
	return j < SLOTS ? h : SLOTS;
}

/* An operation with a batch k times larger. C3 replays it only where the
 * batch is too small to fill the GPU: a kernel whose grid already gives
 * every SM a block there works on the model (weights, optimizer state), not
 * on the batch, and keeps its time, as does an optimizer's update; a
 * smaller one grows until its blocks fill a wave (as many as fit on the SMs
 * at once), then in proportion. A host transfer of more than a value
 * carries k times the bytes. */
static double batch_grow(const struct sim *s, const struct dg_op *o)
{
	if (o->kind == OP_KERNEL) {
		double fill = (double)o->size / DG_WAVE;

		if (!o->size)
			return s->k; /* the SMs unknown: all of it grows */
		/* kept: an optimizer's update, and a kernel with a block for every
		 * SM (not DG_SMALL) */
		if (!s->f->batch_all_grow && (o->params || !(o->flags & DG_SMALL)))
			return 1;
		return (s->k * fill > 1 ? s->k * fill : 1) / (fill > 1 ? fill : 1);
	}
	/* host transfers carry the batch; device-to-device copies and memsets
	 * (gradient buckets, zeroed buffers) follow the model */
	return o->kind == OP_MEMCPY && o->host && o->size > BATCH_VALUE_BYTES ? s->k : 1;
}

/* A copy C6's fix moves to a copy stream (pinned memory, non_blocking, as
 * its advice says): it starts once issued and its direction's queue is
 * free, a device-to-host copy also once its stream's work before it (which
 * wrote its data) ended; the next operation of its stream waits for a
 * host-to-device copy (it reads the input), not for one back to the host. */
static void sim_copy_aside(struct sim *s, size_t i, double d2)
{
	const struct dg_op *o = &s->g->ops.v[i];
	int htod = (o->flags & DG_HTOD) != 0;
	unsigned h = slot_of(s, o->stream), e = slot_of(s, htod ? ASIDE_HTOD : ASIDE_DTOH);
	double ready = e < SLOTS && s->slot[e].used ? s->slot[e].free : 0, st;

	if (!htod && h < SLOTS && s->slot[h].used && s->slot[h].free > ready)
		ready = s->slot[h].free;
	st = s->H + (double)s->g->lat_ns;
	st = ready > st ? ready : st;
	s->end[i] = st + d2;
	s->maxend = s->end[i] > s->maxend ? s->end[i] : s->maxend;
	s->busy_cut += (double)(o->end - o->start) - d2;
	if (e < SLOTS) {
		s->slot[e].stream = htod ? ASIDE_HTOD : ASIDE_DTOH;
		s->slot[e].used = 1;
		s->slot[e].free = s->end[i];
	}
	if (htod && h < SLOTS && (!s->slot[h].used || s->slot[h].free < s->end[i])) {
		s->slot[h].stream = o->stream;
		s->slot[h].used = 1;
		s->slot[h].free = s->end[i];
	}
}

static void sim_op(struct sim *s, size_t i)
{
	const struct dg_op *o = &s->g->ops.v[i];
	const struct sim_fix *f = s->f;
	double d = (double)(o->end - o->start), d2, ready = 0, st, lat = (double)s->g->lat_ns;
	unsigned h;

	s->busy_all += d;
	if ((f->acts && !f->acts_keep_ops && inside(&s->ra, (double)dg_iss(o))) || /* the activity's own work */
	    (f->read_work && o->read_work) || /* values no longer read: not computed */
	    (f->merge_copies && o->merged) || /* copied with the first of its run */
	    (f->attention && o->attn)) { /* computed on chip by a fused attention */
		s->end[i] = -1;
		s->busy_cut += d;
		return;
	}
	d2 = o->kind == OP_KERNEL ? d * factor(f->scale[o->cls < KC_NCLASSES ? o->cls : 0]) : d;
	if (o->flags & DG_SMALL)
		d2 *= factor(f->small_scale);
	if (o->flags & DG_PAGEABLE)
		d2 *= factor(f->pageable_scale);
	if (o->f64)
		d2 *= factor(f->f64_scale[o->cls == KC_ELEMENTWISE]);
	if ((o->f32 || (f->f32_untyped && o->untyped)) && o->cls == KC_ELEMENTWISE)
		d2 *= factor(f->f32_scale);
	if (o->flags & DG_PINNED_BIG)
		d2 *= factor(f->pinned_scale);
	if (s->k > 1)
		d2 *= batch_grow(s, o);
	if (d2 != d)
		s->rated += d2;
	if (f->copies_aside && o->kind == OP_MEMCPY && o->host && (o->flags & DG_PAGEABLE)) {
		sim_copy_aside(s, i, d2);
		return;
	}
	h = slot_of(s, o->stream);
	if (h < SLOTS && s->slot[h].used) {
		double sp = (double)o->late;

		/* the GPU's own spacing; none inside a launched graph */
		if (o->flags & DG_HOST_BOUND)
			sp = f->pace_ns > 0 ? 0 : sp < STREAM_SPACING_NS ? sp : STREAM_SPACING_NS;
		ready = s->slot[h].free + (o->dep != UINT32_MAX ? 0 : sp);
	}
	if (o->dep != UINT32_MAX && o->dep < i && s->end[o->dep] >= 0) {
		double r2 = s->end[o->dep] + (double)(o->start - s->g->ops.v[o->dep].end);

		ready = r2 > ready ? r2 : ready;
	}
	if (o->flags & DG_OWN) /* the call's host work before its copy; none from pinned memory */
		st = s->H + ((o->flags & DG_PAGEABLE) && f->pageable_scale > 0 ? lat : (double)o->lead);
	else
		st = s->H + ((double)o->lead < lat ? (double)o->lead : lat);
	st = ready > st ? ready : st;
	s->end[i] = st + d2;
	s->maxend = s->end[i] > s->maxend ? s->end[i] : s->maxend;
	s->busy_cut += d - d2;
	if (h < SLOTS) {
		s->slot[h].stream = o->stream;
		s->slot[h].used = 1;
		s->slot[h].free = s->end[i];
	}
}

/* A wait for a copy C6's fix moves aside no longer blocks: the host does
 * not wait for its input to arrive, nor for values back it does not
 * process before its next work (fixes.c decides that from the window). */
static int copy_aside_unblocked(const struct sim *s, const struct dg_wait *w, size_t ops_done)
{
	const struct dg_op *o;

	if (!s->f->copies_aside || w->op == UINT32_MAX || w->op >= ops_done)
		return 0;
	o = &s->g->ops.v[w->op];
	if (o->kind != OP_MEMCPY || !o->host || !(o->flags & DG_PAGEABLE))
		return 0;
	return (o->flags & DG_HTOD) || s->f->copies_back_free;
}

static void sim_wait(struct sim *s, const struct dg_wait *w, size_t ops_done)
{
	double dur = (double)(w->end - w->start), call = dur < WAIT_CALL_NS ? dur : WAIT_CALL_NS;
	int dropped = w->act != ACT_NONE && (s->f->acts & (1u << w->act));

	if (dropped || (s->f->waits & (1u << w->kind)) || copy_aside_unblocked(s, w, ops_done)) {
		if (!(s->f->waits_gone & (1u << w->kind)))
			s->H += call;
	} else if (w->op != UINT32_MAX && w->op < ops_done) {
		const struct dg_op *o = &s->g->ops.v[w->op];

		if (s->end[w->op] < 0) { /* what it waited for is gone */
			s->H += call;
		} else {
			double base = o->end <= w->start ? dur : call;
			double back = s->end[w->op] + ((double)w->end - (double)o->end);

			s->H = s->H + base > back ? s->H + base : back;
		}
	} else {
		s->H += dur; /* waited for nothing the graph holds: as long as it did */
	}
	s->tau = (double)w->end;
	s->r_tau = removed_before(&s->rt, s->tau); /* nothing to take out while it waited */
	s->in_tau = removed_before(&s->rin, s->tau);
}

/* The host's own time up to event time ev, less what the fix takes out. */
static void sim_host(struct sim *s, double ev, const struct dg_op *o, int drop)
{
	double r_ev, seg, rem;

	if (ev < s->tau)
		ev = s->tau;
	r_ev = removed_before(&s->rt, ev);
	seg = ev - s->tau;
	rem = r_ev - s->r_tau;
	if (o) {
		double rr = late_removed(s->a, s->f, o);

		rem = rr > rem ? rr : rem;
		/* a chain fused: the host issues its kernels as one; a value no
		 * longer read: its issuing goes with it */
		if ((s->f->fuse_chains && (o->flags & DG_FUSED)) || (s->f->read_work && o->read_work) ||
		    (s->f->attention && o->attn) || (s->f->merge_copies && o->merged))
			rem = seg;
	}
	if (drop) /* the host's time before a wait the fix removes with its work */
		rem = seg;
	rem = rem < seg ? (rem > 0 ? rem : 0) : seg;
	s->H += seg - rem;
	if (s->k > 1) { /* the input's host work, or the wait for it, k times over */
		double in_ev = removed_before(&s->rin, ev), more = in_ev - s->in_tau;

		if (o && (o->flags & DG_HOST_BOUND) && o->cause == IDLE_DATA_WAIT &&
		    !(s->f->gap_causes & IDLE_BIT(IDLE_DATA_WAIT)) && (double)o->late > more)
			more = (double)o->late;
		if (s->f->host_classes & (1u << SC_INPUT))
			more = 0; /* moved off the thread: the floor holds its cost */
		s->H += (s->k - 1) * (more < seg ? more : seg);
		s->in_tau = in_ev;
	}
	s->tau = ev;
	s->r_tau = r_ev;
}

int simulate(const struct analysis *a, const struct sim_fix *f, struct sim_result *res)
{
	const struct depgraph *g = a->graph;
	size_t n = g ? g->ops.n : 0, m = g ? g->waits.n : 0, i = 0, k = 0;
	struct sim s;
	struct sim_fix input_only = { 0 };

	memset(res, 0, sizeof(*res));
	if (!n)
		return 0;
	memset(&s, 0, sizeof(s));
	s.a = a;
	s.g = g;
	s.f = f;
	s.rt = (struct removed){ g->host.v, g->host.n, 0, 0, f, 0 };
	s.ra = s.rt;
	s.ra.acts_only = 1;
	s.k = f->batch > 1 ? f->batch : 1;
	input_only.host_classes = 1u << SC_INPUT;
	input_only.gap_causes = IDLE_BIT(IDLE_IO); /* every input's host work, files loaded included */
	input_only.keep_compile = 1;               /* ... and no compiler's */
	s.rin = (struct removed){ g->host.v, g->host.n, 0, 0, &input_only, 0 };
	s.end = malloc(n * sizeof(*s.end));
	if (!s.end)
		return -ENOMEM;
	s.H = s.tau = (double)(m && g->waits.v[0].start < dg_iss(&g->ops.v[0]) ? g->waits.v[0].start
										  : dg_iss(&g->ops.v[0]));
	s.r_tau = removed_before(&s.rt, s.tau);
	s.in_tau = removed_before(&s.rin, s.tau);
	/* the host's events in the order it made them: an issue, a wait */
	while (i < n || k < m) {
		if (i < n && (k >= m || dg_iss(&g->ops.v[i]) <= g->waits.v[k].start)) {
			sim_host(&s, (double)dg_iss(&g->ops.v[i]), &g->ops.v[i], 0);
			sim_op(&s, i++);
		} else {
			const struct dg_wait *w = &g->waits.v[k++];
			/* a copy call between two kernels of a chain (a scalar
			 * operand: a larger copy ends the chain) becomes the fused
			 * kernel's argument: the call and the host's time before
			 * it go, as before the chain's kernels */
			const struct dg_op *fused = f->fuse_chains && i < n && (g->ops.v[i].flags & DG_FUSED) &&
							    (w->kind == DW_COPY || w->kind == DW_COPY_PAGEABLE)
							    ? &g->ops.v[i] : NULL;

			/* the call that read a value no longer read: the host's
			 * time before it went with the work it read */
			int drop = f->read_work && w->op < n && g->ops.v[w->op].read_work;
			/* a merged copy's call is not made: its time goes too */
			int merged = f->merge_copies && w->merged;

			sim_host(&s, (double)w->start, fused, drop || merged);
			if (fused || merged) {
				s.tau = (double)w->end;
				s.r_tau = removed_before(&s.rt, s.tau);
				s.in_tau = removed_before(&s.rin, s.tau);
			} else {
				sim_wait(&s, w, i);
			}
		}
	}
	free(s.end);
	res->T = (s.maxend > s.H ? s.maxend : s.H) - (double)a->t0 - f->cut_ns;
	if (f->floor_step_ns > 0 && has_steps(a) && res->T < f->floor_step_ns * s.k * (double)has_steps(a))
		res->T = f->floor_step_ns * s.k * (double)has_steps(a);
	res->busy_cut = s.busy_cut + f->cut_ns;
	res->rated = s.rated;
	if (s.k > 1) { /* per sample: the window's samples took T / k */
		res->T /= s.k;
		res->rated /= s.k;
		res->busy_cut = s.busy_all - (s.busy_all - res->busy_cut) / s.k;
	}
	return 0;
}

void sim_fix_merge(struct sim_fix *into, const struct sim_fix *f)
{
	for (int c = 0; c < IDLE_NCAUSES; c++) { /* the larger share of each cause (0 counts as 1) */
		double mine = into->gap_causes & IDLE_BIT(c) ? factor(into->gap_frac[c]) : 0;
		double theirs = f->gap_causes & IDLE_BIT(c) ? factor(f->gap_frac[c]) : 0;

		into->gap_frac[c] = mine > theirs ? mine : theirs;
	}
	into->gap_causes |= f->gap_causes;
	into->acts |= f->acts;
	into->acts_keep_ops |= f->acts_keep_ops;
	into->periodic_host |= f->periodic_host;
	into->read_work |= f->read_work;
	into->merge_copies |= f->merge_copies;
	into->optimizer |= f->optimizer;
	into->allocs |= f->allocs;
	into->host_classes |= f->host_classes;
	into->asleep |= f->asleep;
	into->other |= f->other;
	into->fuse_chains |= f->fuse_chains;
	into->attention |= f->attention;
	if (f->input_after_sync > into->input_after_sync)
		into->input_after_sync = f->input_after_sync;
	into->waits |= f->waits;
	into->waits_gone |= f->waits_gone;
	for (int c = 0; c < KC_NCLASSES; c++)
		into->scale[c] = factor(into->scale[c]) * factor(f->scale[c]);
	into->small_scale = factor(into->small_scale) * factor(f->small_scale);
	into->pageable_scale = factor(into->pageable_scale) * factor(f->pageable_scale);
	into->copies_aside |= f->copies_aside;
	into->copies_back_free |= f->copies_back_free;
	for (int k = 0; k < 2; k++)
		into->f64_scale[k] = factor(into->f64_scale[k]) * factor(f->f64_scale[k]);
	into->f32_scale = factor(into->f32_scale) * factor(f->f32_scale);
	into->f32_untyped |= f->f32_untyped;
	into->pinned_scale = factor(into->pinned_scale) * factor(f->pinned_scale);
	into->cut_ns += f->cut_ns;
	if (f->pace_ns > 0 && (into->pace_ns <= 0 || f->pace_ns < into->pace_ns))
		into->pace_ns = f->pace_ns;
	if (f->floor_step_ns > into->floor_step_ns)
		into->floor_step_ns = f->floor_step_ns;
	if (f->batch > into->batch)
		into->batch = f->batch;
	if (f->uncertainty > into->uncertainty)
		into->uncertainty = f->uncertainty;
	into->rate |= f->rate;
}
