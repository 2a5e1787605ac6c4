/* Activities: what the training thread's code was doing, as a user would
 * change it in their code (docs/RULES.md section 7). A checkpoint stalls the
 * GPU by serialization, by the state dict's device-to-host copies, by
 * synchronizations and by file writes; an evaluation pass inside the loop by
 * its own kernels, launches and `.item()` calls. Each mechanism alone is a
 * part; the fix (checkpoint less often or off the thread, validate less
 * often) removes the activity, so its gaps, whatever their mechanism, are
 * the activity's, and its saving is its time.
 *
 * From the training thread's Python samples over the steady window:
 * - checkpointing: a stack in serialization (torch.save, pickle, np.save,
 *   h5py, safetensors: sites.c's class), or in the user function that holds
 *   those calls when it takes at most half of the run (the `save()` a loop
 *   calls every N steps, with its os.fsync and its metrics file);
 * - evaluation: a stack with an evaluation frame: the user's own
 *   (validation_step, evaluate, validate, eval_*, *_eval...) or a library's
 *   evaluation loop (Lightning's evaluation_loop.py, transformers' Trainer
 *   evaluate / evaluation_loop / prediction_step), or a user function run
 *   without gradients (decorated with @torch.no_grad() or
 *   @torch.inference_mode(): previews sampled from the model, a probe) that
 *   is on the stack in at most half of the steps and reads its results on
 *   the host; counted only when the job
 *   also trains (a job that only evaluates has nothing to do less often). */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define ACT_GAP_SHARE 0.5   /* an activity decides a gap it covers at least half of */
#define ACT_MIN_GAP_NS SHORT_GAP_NS /* ... and only a gap this long: not a launch gap (section 3) */
#define HOLDER_MAX_SHARE 0.5 /* a holder function takes at most this share of the run */
#define EVAL_MIN_TRAIN 0.05  /* evaluation counts when the rest is >= 5% of the run */
/* a user's function named as an evaluation is one where it issues GPU work
 * for at least this share of its time: an evaluation runs the model; one
 * that only computes on the host (BasicSR's SSIM filter `_filter_valid`) is
 * the training step's own host work, whatever its name */
#define EVAL_MIN_LAUNCH 0.05
#define MAX_CANDIDATES 16
#define RUN_APART_NS 20000000ull /* samples of an activity this far apart are two runs */
#define COPY_BURST 32 /* device-to-host copies a run of a state snapshot makes, at least */
#define COPY_HOLDER_MAX_SHARE 0.9 /* ... whose function takes at most this share of the run */
#define PROCESS_SHARE 0.5 /* ... and computes on what it copied for more of its time: statistics */

const char *activity_name(enum activity k)
{
	static const char *const n[ACT_N] = { "", "checkpointing", "evaluation" };

	return (unsigned)k < ACT_N ? n[k] : "";
}

/* A user function named as an evaluation, or run without gradients, with
 * the driving thread's time under it over the steady window and the part of
 * it issuing GPU work. */
struct eval_fn {
	uint32_t file, func;
	double ns, launch_ns;
	uint8_t grad_free; /* found by its decorator, not by its name */
	/* ... and in at most half of the steps, reading GPU values on the host
	 * (a copy to it, a synchronization): an evaluation */
	uint8_t grad_free_eval;
};

struct act_pass {
	struct py_holds cur;   /* the driving thread's samples, for the gaps */
	VEC(uint8_t) node_act; /* per trace.py_nodes: activity + 1, 0 = not yet */
	uint32_t holder_file, holder_func; /* the checkpoint's holder function, 0: none */
	int eval_counts;
	struct eval_fn evals[MAX_CANDIDATES]; /* eval_fns(): the user's evaluation-named functions */
	unsigned nevals;
	size_t call_cursor; /* asleep time: the training thread's calls, by end */
};

typedef void (*act_fn)(struct analysis *a, struct act_pass *ap, uint32_t node, uint8_t state, uint64_t s,
		       uint64_t e, void *ctx);

struct each_ctx {
	struct analysis *a;
	struct act_pass *ap;
	act_fn fn;
	void *ctx;
};

static void each_one(void *ctx, uint32_t node, uint8_t state, uint64_t s, uint64_t e)
{
	struct each_ctx *c = ctx;

	c->fn(c->a, c->ap, node, state, s, e, c->ctx);
}

/* Calls fn for every sample of thread th holding in [t0, t1), clipped. */
static void each_hold(struct analysis *a, struct act_pass *ap, const struct py_thread *th, uint64_t t0,
		      uint64_t t1, act_fn fn, void *ctx)
{
	struct py_holds c;
	struct each_ctx ec = { a, ap, fn, ctx };

	holds_init(&c, a->t, th);
	holds_over(&c, t0, t1, each_one, &ec);
}

static const char *nm(const struct analysis *a, uint32_t i)
{
	return i < a->t->names.n ? a->t->names.v[i] : "";
}

static int starts(const char *s, const char *p)
{
	return !strncmp(s, p, strlen(p));
}

/* An evaluation frame: the user's own function by its name, or a library's
 * evaluation loop. */
static int eval_frame(const char *file, const char *func, int library)
{
	static const struct {
		const char *file, *funcs[4];
	} libs[] = {
		{ "loops/evaluation_loop.py", { "", NULL } }, /* Lightning: any function */
		{ "transformers/trainer.py", { "evaluate", "evaluation_loop", "prediction_step", NULL } },
	};
	const char *dot = strrchr(func, '.'), *b = dot ? dot + 1 : func;
	char low[64];
	size_t i;

	if (library) {
		for (i = 0; i < sizeof(libs) / sizeof(libs[0]); i++) {
			if (!strstr(file, libs[i].file))
				continue;
			for (size_t k = 0; k < 4 && libs[i].funcs[k]; k++)
				if (!*libs[i].funcs[k] || !strcmp(b, libs[i].funcs[k]))
					return 1;
		}
		return 0;
	}
	for (i = 0; b[i] && i < sizeof(low) - 1; i++)
		low[i] = (char)tolower((unsigned char)b[i]);
	low[i] = 0;
	return starts(low, "validat") || starts(low, "evaluat") || starts(low, "eval_") ||
	       starts(low, "val_") || !strcmp(low, "eval") || !strcmp(low, "test_step") ||
	       strstr(low, "_eval") || strstr(low, "_valid") || strstr(low, "_evaluat");
}

/* Whether stack node n's function was entered through torch's context
 * decorator (torch/utils/_contextlib.py): @torch.no_grad(),
 * @torch.inference_mode(). */
static int grad_free_call(const struct analysis *a, uint32_t n)
{
	const struct trace *t = a->t;
	uint32_t p = n < t->py_nodes.n ? t->py_nodes.v[n].parent : 0, fr;

	if (!p || p >= t->py_nodes.n || (fr = t->py_nodes.v[p].frame) >= t->py_frames.n)
		return 0;
	const char *file = nm(a, t->py_frames.v[fr].file), *func = nm(a, t->py_frames.v[fr].func);
	const char *dot = strrchr(func, '.');

	return strstr(file, "torch/utils/_contextlib.py") && !strcmp(dot ? dot + 1 : func, "decorate_context");
}

/* A training framework's hook that its loop calls at every step: a frame
 * of a function by that name, the user's override of it (Lightning's
 * Callback and LightningModule, transformers' TrainerCallback). Work under
 * it after the last step is the loop's own, not the teardown after it. */
static int step_hook(const char *func)
{
	static const char *const hooks[] = { "on_train_batch_end",    "on_train_batch_start",
					     "on_before_backward",    "on_after_backward",
					     "on_before_optimizer_step", "on_before_zero_grad",
					     "on_step_begin",         "on_step_end",
					     "on_substep_end",        NULL };
	const char *dot = strrchr(func, '.'), *b = dot ? dot + 1 : func;

	for (int i = 0; hooks[i]; i++)
		if (!strcmp(b, hooks[i]))
			return 1;
	return 0;
}

/* The outermost frame of the stack in a step hook's function, or 0. */
static uint32_t hook_frame(const struct analysis *a, uint32_t node)
{
	const struct trace *t = a->t;
	uint32_t out = 0;

	for (uint32_t n = node, d = 0; n && n < t->py_nodes.n && d < 4096; d++) {
		uint32_t fr = t->py_nodes.v[n].frame;

		if (fr < t->py_frames.n && step_hook(nm(a, t->py_frames.v[fr].func)))
			out = fr;
		n = t->py_nodes.v[n].parent;
	}
	return out;
}

/* eval_fns()'s entry of a user function, -1 (NULL) where it has none. */
static int eval_index(const struct act_pass *ap, const struct py_frame_rec *f)
{
	for (unsigned i = 0; ap && i < ap->nevals; i++)
		if (ap->evals[i].file == f->file && ap->evals[i].func == f->func)
			return (int)i;
	return -1;
}

static const struct eval_fn *eval_slot(const struct act_pass *ap, const struct py_frame_rec *f)
{
	int i = eval_index(ap, f);

	return i < 0 ? NULL : &ap->evals[i];
}

/* Whether a user function named as an evaluation issued GPU work for
 * EVAL_MIN_LAUNCH of its time (one eval_fns() did not see, or past its
 * table, counts as before: by its name). */
static int eval_runs_gpu(const struct act_pass *ap, const struct py_frame_rec *f)
{
	const struct eval_fn *e = eval_slot(ap, f);

	return !e || e->launch_ns >= EVAL_MIN_LAUNCH * e->ns;
}

/* A user's frame (node n's) of an evaluation: its function named as one
 * (checked for GPU work where `gpu`), or run without gradients where eval_fns()
 * measured it: issuing GPU work, and not in most steps (an EMA update or a
 * step function under @torch.no_grad() runs every step). */
static int user_eval(const struct analysis *a, const struct act_pass *ap, uint32_t n, const struct py_frame_rec *f,
		     int gpu)
{
	const char *file = nm(a, f->file);
	const struct eval_fn *e;

	if (file[0] == '<')
		return 0;
	if (eval_frame(file, nm(a, f->func), 0))
		return !gpu || eval_runs_gpu(ap, f);
	return (e = eval_slot(ap, f)) && e->grad_free_eval && e->launch_ns >= EVAL_MIN_LAUNCH * e->ns &&
	       grad_free_call(a, n);
}

/* The innermost user frame of a stack, or 0; with eval_only, of the user's
 * own evaluation function (validation_step, evaluate: what the user would
 * run less often), 0 where only a library's evaluation loop holds it. */
static uint32_t user_frame(const struct analysis *a, const struct act_pass *ap, uint32_t node, int eval_only)
{
	const struct trace *t = a->t;

	for (uint32_t n = node, d = 0; n && n < t->py_nodes.n && d < 4096; d++) {
		uint32_t fr = t->py_nodes.v[n].frame;

		if (fr < t->py_frames.n) {
			const struct py_frame_rec *f = &t->py_frames.v[fr];

			if (!sites_is_library(nm(a, f->file)) && (!eval_only || user_eval(a, ap, n, f, 0)))
				return fr;
		}
		n = t->py_nodes.v[n].parent;
	}
	return 0;
}

static void add_eval_fn(struct analysis *a, struct act_pass *ap, uint32_t node, uint8_t state, uint64_t s,
			uint64_t e, void *ctx)
{
	const struct trace *t = a->t;
	int launching = -1;

	(void)state;
	(void)ctx;
	for (uint32_t n = node, d = 0; n && n < t->py_nodes.n && d < 4096; d++, n = t->py_nodes.v[n].parent) {
		uint32_t fr = t->py_nodes.v[n].frame;

		if (fr >= t->py_frames.n)
			continue;
		const struct py_frame_rec *f = &t->py_frames.v[fr];
		const char *file = nm(a, f->file);
		struct eval_fn *ev;
		int named;

		if (sites_is_library(file) || file[0] == '<')
			continue;
		named = eval_frame(file, nm(a, f->func), 0);
		if (!named && !grad_free_call(a, n))
			continue;
		if (launching < 0)
			launching = sites_node_launches(a, node);
		int i = eval_index(ap, f);

		if (i >= 0) {
			ev = &ap->evals[i];
		} else {
			if (ap->nevals == MAX_CANDIDATES)
				continue;
			ev = &ap->evals[ap->nevals++];
			*ev = (struct eval_fn){ .file = f->file, .func = f->func, .grad_free = (uint8_t)!named };
		}
		ev->ns += (double)(e - s);
		if (launching)
			ev->launch_ns += (double)(e - s);
	}
}

static long fn_step_count(struct analysis *a, struct act_pass *ap, const struct py_thread *th, uint32_t file,
			  uint32_t func, long *sampled);
static int on_stack(const struct analysis *a, uint32_t node, uint32_t file, uint32_t func, uint32_t line);

/* Whether the thread, under function (file, func), read GPU values on the
 * host in the steady window: a device-to-host copy or a synchronization. */
static int reads_under(const struct analysis *a, const struct py_thread *th, uint32_t file, uint32_t func)
{
	const struct trace *t = a->t;

	for (size_t i = 0; i < t->calls.n; i++) {
		const struct host_call *hc = &t->calls.v[i];

		if (hc->pid == th->pid && hc->tid == th->tid && hc->py_stack && hc->start >= a->t0 &&
		    hc->end <= a->t1 && (hc->cls == HC_SYNC || (hc->cls == HC_MEMCPY && hc->copy_dir == COPY_DTOH)) &&
		    on_stack(a, hc->py_stack, file, func, 0))
			return 1;
	}
	return 0;
}

/* The user's evaluation-named functions, and those run without gradients,
 * on the driving thread's stacks over the steady window, with the time each
 * spent issuing GPU work. Of the latter, an evaluation is one in at most
 * half of the steps (an EMA update or an optimizer's step under
 * @torch.no_grad() runs in every step) that reads what it computed on the
 * host (a metric, a preview, a probe's accuracy: what the user looks at); a
 * pass whose results stay on the GPU feeds the training (a reinforcement
 * learner's rollout, run every N updates). */
static void eval_fns(struct analysis *a, struct act_pass *ap, const struct py_thread *th)
{
	ap->nevals = 0;
	each_hold(a, ap, th, a->t0, a->t1, add_eval_fn, NULL);
	for (unsigned i = 0; i < ap->nevals; i++) {
		struct eval_fn *e = &ap->evals[i];
		long in_steps;

		if (!e->grad_free)
			continue;
		in_steps = has_steps(a) ? fn_step_count(a, ap, th, e->file, e->func, NULL) : -1;
		e->grad_free_eval = in_steps >= 0 && 2 * (size_t)in_steps <= a->steps.n &&
				    reads_under(a, th, e->file, e->func);
	}
}

static enum activity classify(struct analysis *a, struct act_pass *ap, uint32_t node)
{
	const struct trace *t = a->t;
	int eval = 0;

	if (sites_node_class(a, node) == SC_SERIALIZE)
		return ACT_CHECKPOINT;
	for (uint32_t n = node, d = 0; n && n < t->py_nodes.n && d < 4096; d++) {
		uint32_t fr = t->py_nodes.v[n].frame;

		if (fr < t->py_frames.n) {
			const struct py_frame_rec *f = &t->py_frames.v[fr];
			const char *file = nm(a, f->file);

			if (ap->holder_func && f->file == ap->holder_file && f->func == ap->holder_func)
				return ACT_CHECKPOINT;
			int lib = sites_is_library(file);

			eval |= lib ? eval_frame(file, nm(a, f->func), 1) : user_eval(a, ap, n, f, 1);
		}
		n = t->py_nodes.v[n].parent;
	}
	return eval ? ACT_EVAL : ACT_NONE;
}

static enum activity node_activity(struct analysis *a, struct act_pass *ap, uint32_t node)
{
	size_t n = a->t->py_nodes.n;

	if (!node || node >= n)
		return ACT_NONE;
	if (ap->node_act.n < n) {
		size_t old = ap->node_act.n;

		if (vec_grow_((void **)&ap->node_act.v, &ap->node_act.cap, n, 1) < 0) {
			analysis_nomem(a, "finding the activities");
			return ACT_NONE;
		}
		memset(ap->node_act.v + old, 0, n - old);
		ap->node_act.n = n;
	}
	if (!ap->node_act.v[node])
		ap->node_act.v[node] = (uint8_t)(1 + classify(a, ap, node));
	enum activity k = (enum activity)(ap->node_act.v[node] - 1);

	return k == ACT_EVAL && !ap->eval_counts ? ACT_NONE : k;
}

/* ---- the checkpoint's holder function ---------------------------------- */

struct candidate {
	uint32_t file, func;
	double ns;
};
struct candidates {
	struct candidate c[MAX_CANDIDATES];
	unsigned n;
};

static void add_serializing(struct analysis *a, struct act_pass *ap, uint32_t node, uint8_t state,
			    uint64_t s, uint64_t e, void *ctx)
{
	struct candidates *cs = ctx;
	uint32_t fr;

	(void)ap;
	(void)state;
	if (sites_node_class(a, node) != SC_SERIALIZE || !(fr = user_frame(a, NULL, node, 0)))
		return;
	const struct py_frame_rec *f = &a->t->py_frames.v[fr];

	for (unsigned i = 0; i < cs->n; i++)
		if (cs->c[i].file == f->file && cs->c[i].func == f->func) {
			cs->c[i].ns += (double)(e - s);
			return;
		}
	if (cs->n < MAX_CANDIDATES)
		cs->c[cs->n++] = (struct candidate){ f->file, f->func, (double)(e - s) };
}

struct presence {
	uint32_t file, func;
	double ns, serialize_ns; /* on the stack; and serializing under it */
	double process_ns;       /* ... computing, metrics or logging under it */
	double launch_ns, all_launch_ns; /* launching work under it, and the thread's in all */
};

/* Whether function (file, func) is on the stack at node; at that line
 * where line is not 0. */
static int on_stack(const struct analysis *a, uint32_t node, uint32_t file, uint32_t func, uint32_t line)
{
	const struct trace *t = a->t;

	for (uint32_t n = node, d = 0; n && n < t->py_nodes.n && d < 4096; d++) {
		uint32_t fr = t->py_nodes.v[n].frame;
		const struct py_frame_rec *f = fr < t->py_frames.n ? &t->py_frames.v[fr] : NULL;

		if (f && f->file == file && f->func == func && (!line || f->line == line))
			return 1;
		n = t->py_nodes.v[n].parent;
	}
	return 0;
}

static void add_presence(struct analysis *a, struct act_pass *ap, uint32_t node, uint8_t state,
			 uint64_t s, uint64_t e, void *ctx)
{
	struct presence *p = ctx;

	(void)ap;
	(void)state;
	int launching = sites_node_launches(a, node);

	p->all_launch_ns += launching ? (double)(e - s) : 0;
	if (!on_stack(a, node, p->file, p->func, 0))
		return;
	p->ns += (double)(e - s);
	p->launch_ns += launching ? (double)(e - s) : 0;
	enum site_class c = sites_node_class(a, node);

	if (c == SC_SERIALIZE)
		p->serialize_ns += (double)(e - s);
	else if (c == SC_HOSTCALC || c == SC_CALLBACK || c == SC_METRIC || c == SC_LOG)
		p->process_ns += (double)(e - s);
}

/* The steps in which a function is on the driving thread's stack, by the
 * step each sample starts in (a 100 Hz sample can span steps shorter than
 * 10 ms: such a function is counted in fewer steps than it ran in). */
struct fn_steps {
	uint32_t file, func;
	uint8_t *seen; /* per step: 1 a sample on it, 2 any sample */
	size_t cursor, n, sampled;
};

static void add_fn_step(struct analysis *a, struct act_pass *ap, uint32_t node, uint8_t state, uint64_t s,
			uint64_t e, void *ctx)
{
	struct fn_steps *p = ctx;
	uint32_t i;

	(void)ap;
	(void)state;
	(void)e;
	if ((i = step_at(a, s, &p->cursor)) == UINT32_MAX)
		return;
	if (!(p->seen[i] & 2)) {
		p->seen[i] |= 2;
		p->sampled++;
	}
	if (!(p->seen[i] & 1) && on_stack(a, node, p->file, p->func, 0)) {
		p->seen[i] |= 1;
		p->n++;
	}
}

/* In how many steps a function is on the driving thread's stack, and in
 * *sampled (where not NULL) how many steps hold a sample at all; -1 when
 * memory runs out. */
static long fn_step_count(struct analysis *a, struct act_pass *ap, const struct py_thread *th, uint32_t file,
			  uint32_t func, long *sampled)
{
	struct fn_steps fs = { .file = file, .func = func, .seen = calloc(a->steps.n + 1, 1) };

	if (!fs.seen) {
		analysis_nomem(a, "finding the activities");
		return -1;
	}
	each_hold(a, ap, th, a->t0, a->t1, add_fn_step, &fs);
	free(fs.seen);
	if (sampled)
		*sampled = (long)fs.sampled;
	return (long)fs.n;
}

/* The user function that holds the serialization calls, where it is not
 * the training loop's own function: its other work (os.fsync, a metrics
 * file, the device-to-host copies of what it saves, .item() of the loss) is
 * the checkpoint's too. A function that takes at most half of the run is
 * not the loop's; one that takes more is, unless it holds half of the
 * thread's launching work or more (the loop's or the step's own function
 * launches the step's work; a checkpoint launches none of it), or, where the
 * thread's samples show no launching at all, it is in more than half of
 * the steps that hold a sample: a checkpoint of a second in a recording of
 * two takes most of the run in one step. (JAX's thread waits in the
 * checkpoint's device_get for the steps it queued: its save() can be on the
 * stack in most steps and most of the run.) */
static void find_holder(struct analysis *a, struct act_pass *ap, const struct py_thread *th)
{
	struct candidates cs = { .n = 0 };
	unsigned best = 0;

	each_hold(a, ap, th, a->t0, a->t1, add_serializing, &cs);
	if (!cs.n)
		return;
	for (unsigned i = 1; i < cs.n; i++)
		if (cs.c[i].ns > cs.c[best].ns)
			best = i;
	struct presence p = { .file = cs.c[best].file, .func = cs.c[best].func };

	each_hold(a, ap, th, a->t0, a->t1, add_presence, &p);
	if (p.ns > HOLDER_MAX_SHARE * (double)a->steady_ns) {
		long sampled = 0, in_steps;

		/* the step's own function holds the step's launching work */
		if (p.all_launch_ns > 0 && p.launch_ns > HOLDER_MAX_SHARE * p.all_launch_ns)
			return;
		if (!(p.all_launch_ns > 0)) { /* no launching sampled: by the steps it is in */
			in_steps = has_steps(a) ? fn_step_count(a, ap, th, p.file, p.func, &sampled) : -1;
			if (in_steps < 0 || 2 * in_steps > sampled)
				return;
		}
	}
	ap->holder_file = p.file;
	ap->holder_func = p.func;
}

/* Without serialization on the stacks: the user function whose calls copy
 * device memory to the host in bursts a normal step does not make (a
 * roll-back snapshot of the state dict through .cpu(), the model copied to
 * the host to be saved later). At least COPY_BURST copies in each step it
 * copies in, and in at most half of the steps (a check of a value every
 * step copies a few each step: C9's), and the function is not the
 * loop's own (it is off the stack for a tenth of the run at least: the
 * bursts already say it does not run every step, and a snapshot may well
 * take most of the run); copies under an evaluation frame are the
 * evaluation's (its outputs, batch by batch). The copies are measured by the
 * calls that made them (cudaMemcpy*, by correlation id with their copy's
 * direction), not by names. A function that then computes on what it copied
 * for most of its time (histograms and norms of every weight, metrics,
 * logging) is periodic host work on the model's state, not a snapshot. */
struct copy_candidate {
	uint32_t file, func;
	unsigned copies, runs, steps; /* runs: bursts in consecutive steps */
	uint32_t last_step;
	size_t cursor;
};

static void find_copy_holder(struct analysis *a, struct act_pass *ap, const struct py_thread *th)
{
	struct copy_candidate c[MAX_CANDIDATES];
	const struct trace *t = a->t;
	unsigned n = 0, best = MAX_CANDIDATES;

	if (!a->steps.n || a->step_window_ns) /* "not every step" needs steps */
		return;
	for (size_t i = 0; i < t->calls.n; i++) {
		const struct host_call *hc = &t->calls.v[i];
		uint32_t fr;
		unsigned k;

		if (hc->pid != th->pid || hc->tid != th->tid || hc->cls != HC_MEMCPY || hc->copy_dir != COPY_DTOH ||
		    !hc->py_stack || hc->start < a->t0 || hc->end > a->t1 || !(fr = user_frame(a, NULL, hc->py_stack, 0)))
			continue;
		if (node_activity(a, ap, hc->py_stack) == ACT_EVAL)
			continue;
		const struct py_frame_rec *f = &t->py_frames.v[fr];

		for (k = 0; k < n && (c[k].file != f->file || c[k].func != f->func); k++)
			;
		if (k == n) {
			if (n == MAX_CANDIDATES)
				continue;
			c[n++] = (struct copy_candidate){ .file = f->file, .func = f->func };
		}
		uint32_t st = step_at(a, hc->start, &c[k].cursor);

		if (st != UINT32_MAX && (!c[k].steps || st != c[k].last_step)) {
			if (!c[k].steps || st > c[k].last_step + 1)
				c[k].runs++;
			c[k].steps++;
			c[k].last_step = st;
		}
		c[k].copies++;
	}
	for (unsigned k = 0; k < n; k++) {
		if (!c[k].runs || c[k].copies < COPY_BURST * c[k].steps || 2 * c[k].steps > a->steps.n)
			continue;
		if (best == MAX_CANDIDATES || c[k].copies > c[best].copies)
			best = k;
	}
	if (best == MAX_CANDIDATES)
		return;
	struct presence p = { .file = c[best].file, .func = c[best].func };

	each_hold(a, ap, th, a->t0, a->t1, add_presence, &p);
	if (p.ns <= COPY_HOLDER_MAX_SHARE * (double)a->steady_ns) {
		ap->holder_file = p.file;
		ap->holder_func = p.func;
		a->act[ACT_CHECKPOINT].copies = c[best].copies;
		a->act[ACT_CHECKPOINT].copy_runs = c[best].runs;
		a->act[ACT_CHECKPOINT].serializes = p.serialize_ns > 0;
		a->act[ACT_CHECKPOINT].processes = !(p.serialize_ns > 0) && p.process_ns > PROCESS_SHARE * p.ns;
		/* the node cache was filled without the holder */
		if (ap->node_act.n)
			memset(ap->node_act.v, 0, ap->node_act.n);
	}
}

int activities_copy_holder_on(const struct analysis *a, uint32_t node)
{
	const struct activity_stat *s = &a->act[ACT_CHECKPOINT];

	return s->copies && s->func && on_stack(a, node, s->file, s->func, 0);
}

/* ---- the activities' time ---------------------------------------------- */

struct walls {
	double ns[ACT_N];
	uint32_t where[ACT_N]; /* a node of it, for its user frame */
	double where_ns[ACT_N];
	uint64_t last_end[ACT_N], apart;
	uint32_t runs[ACT_N];
};

/* [s, e) less the training thread's synchronize and copy calls in it (a
 * blocking CUDA wait sleeps too, and is C9's). */
static double outside_calls(const struct analysis *a, struct act_pass *ap, uint64_t s, uint64_t e)
{
	const struct trace *t = a->t;
	double in = 0;
	size_t i = ap->call_cursor;

	while (i < t->calls.n && t->calls.v[i].end <= s)
		i++;
	ap->call_cursor = i;
	for (; i < t->calls.n && t->calls.v[i].start < e; i++) {
		const struct host_call *c = &t->calls.v[i];

		if (c->pid != a->main_pid || c->tid != a->main_tid || (c->cls != HC_SYNC && c->cls != HC_MEMCPY))
			continue;
		uint64_t x = c->start > s ? c->start : s, y = c->end < e ? c->end : e;

		if (y > x)
			in += (double)(y - x);
	}
	return (double)(e - s) > in ? (double)(e - s) - in : 0;
}

/* A decorator's or wrapper's frame between a function and its caller
 * (@torch.no_grad(), functools.wraps): the call stays the user's. */
static int pass_through(const char *file)
{
	static const char *const w[] = { "contextlib.py", "functools.py", NULL };
	const char *slash = strrchr(file, '/'), *base = slash ? slash + 1 : file;

	for (int i = 0; w[i]; i++)
		if (!strcmp(base, w[i]) || (base[0] == '_' && !strcmp(base + 1, w[i])))
			return 1;
	return 0;
}

/* Inner to outer: the outermost frame of activity k in the stack (an
 * evaluation frame; the checkpoint's holder function, else the innermost
 * user frame), returned, and in *call the first user frame outside it, the
 * line that called it; 0 where none. */
static uint32_t activity_frame(struct analysis *a, const struct act_pass *ap, uint32_t node, enum activity k,
			       int direct, uint32_t *call)
{
	const struct trace *t = a->t;
	uint32_t in = 0, caller = 0;
	int framework = 0;

	for (uint32_t n = node, d = 0; n && n < t->py_nodes.n && d < 4096; d++) {
		uint32_t fr = t->py_nodes.v[n].frame;

		if (fr < t->py_frames.n) {
			const struct py_frame_rec *f = &t->py_frames.v[fr];
			const char *file = nm(a, f->file);
			int lib = sites_is_library(file) || file[0] == '<';
			int mine = k == ACT_EVAL ? (lib ? eval_frame(file, nm(a, f->func), 1) : user_eval(a, ap, n, f, 0))
				   : ap && ap->holder_func ? f->file == ap->holder_file && f->func == ap->holder_func
							   : !lib && !in;

			if (mine) {
				in = fr;
				caller = 0;
				framework = 0;
			} else if (in && !lib && !caller) {
				caller = fr;
			} else if (in && lib && !caller && !pass_through(file)) {
				framework = 1;
			}
		}
		n = t->py_nodes.v[n].parent;
	}
	/* called by a framework (Lightning's loop, a Trainer): the user's line
	 * outside it starts the whole run, not the activity (where `direct`
	 * asks the call to be the user's own) */
	*call = in && (!direct || !framework) ? caller : 0;
	return in;
}

/* Asleep where C16 counts it (sites.c): in the user's own code or a
 * standard-library wait, not under a framework that dispatches the GPU's
 * work (autograd's backward sleeps on the main thread while its own thread
 * launches; JAX blocks on its runtime threads). */
static int asleep_elsewhere(struct analysis *a, uint32_t node)
{
	enum site_class c = sites_node_class(a, node);

	return c == SC_NONE || c == SC_WAIT;
}

static void add_wall(struct analysis *a, struct act_pass *ap, uint32_t node, uint8_t state, uint64_t s,
		     uint64_t e, void *ctx)
{
	struct walls *w = ctx;
	enum activity k = node_activity(a, ap, node);

	/* asleep anywhere but in a CUDA call or a framework's dispatch: in its
	 * own code or a wait of the standard library */
	if (state == GW_PYSTATE_SLEEP && asleep_elsewhere(a, node))
		a->asleep_ns += outside_calls(a, ap, s, e);
	if (state == GW_PYSTATE_SLEEP && sites_waits_other(a, node, s, e))
		a->other_wait_ns += outside_calls(a, ap, s, e);

	w->ns[k] += (double)(e - s);
	if (k == ACT_NONE)
		return;
	if (k == ACT_CHECKPOINT && sites_node_writes_output(a, node))
		a->act[k].output_ns += (double)(e - s);
	if (!w->runs[k] || s > w->last_end[k] + w->apart)
		w->runs[k]++;
	w->last_end[k] = e;
	/* the steps it ran in are the GPU's: marked by its gaps (activities_gap) */
	if ((double)(e - s) > w->where_ns[k]) {
		w->where_ns[k] = (double)(e - s);
		w->where[k] = node;
	}
}

/* ---- the start-up ------------------------------------------------------ */

static int compiling(const char *file)
{
	static const char *const c[] = { "jax/_src/compiler.py", "jax/_src/interpreters/pxla.py",
					 "jax/_src/interpreters/mlir.py", "jaxlib/xla_client", "torch/_inductor/",
					 "torch/_dynamo/", "torch/_functorch/", "triton/compiler/",
					 "triton/runtime/", "cupy/cuda/compiler.py", "torch/utils/cpp_extension.py",
					 "numba/core/", NULL };

	for (int i = 0; c[i]; i++)
		if (strstr(file, c[i]))
			return 1;
	return 0;
}

/* Time per user frame (the line that compiled, that called an
 * evaluation), up to MAX_CANDIDATES of them; the first ones seen win. */
struct frame_tally {
	struct {
		uint32_t frame;
		double ns;
	} c[MAX_CANDIDATES];
	unsigned n;
};

static void tally_add(struct frame_tally *ft, uint32_t frame, double ns)
{
	unsigned i;

	for (i = 0; i < ft->n && ft->c[i].frame != frame; i++)
		;
	if (i < ft->n)
		ft->c[i].ns += ns;
	else if (ft->n < MAX_CANDIDATES) {
		ft->c[ft->n].frame = frame;
		ft->c[ft->n++].ns = ns;
	}
}

/* The start-up's compiling: the user's lines, and the time in each
 * compiler a persistent cache keeps. */
struct startup_tally {
	struct frame_tally lines;
	double by_cache[STARTUP_CACHE_N];
};

/* The frame with the most time, or NULL. */
static const struct py_frame_rec *tally_best(const struct analysis *a, const struct frame_tally *ft)
{
	unsigned best = 0;

	for (unsigned i = 1; i < ft->n; i++)
		if (ft->c[i].ns > ft->c[best].ns)
			best = i;
	return ft->n ? &a->t->py_frames.v[ft->c[best].frame] : NULL;
}

/* A compiler whose output a persistent cache keeps between runs, so that a
 * warm start skips it (tests/gpu/startup_cache.sh measured that for XLA's
 * and CuPy's; torch.compile's warm starts saved no time measured well
 * enough to claim): enum startup_cache, or 0. */
static int cached_compiler(const char *file)
{
	if (strstr(file, "jax/_src/compiler.py") || strstr(file, "jaxlib/xla_client"))
		return STARTUP_CACHE_XLA;
	if (strstr(file, "cupy/cuda/compiler.py"))
		return STARTUP_CACHE_CUPY;
	return 0;
}

/* A framework's operation run for the first time in the start-up: PyTorch's
 * modules, autograd, optimizers, its CUDA set-up (GPU libraries set up,
 * kernels loaded on first use, cudnn.benchmark's autotuning). */
static int first_op(const char *file)
{
	static const char *const c[] = { "torch/nn/", "torch/autograd/", "torch/_tensor.py", "torch/optim/",
					 "torch/functional.py", "torch/cuda/", "torch/amp/", NULL };

	for (int i = 0; c[i]; i++)
		if (strstr(file, c[i]))
			return 1;
	return 0;
}

static void add_startup_hold(struct analysis *a, struct act_pass *ap, uint32_t node, uint8_t state,
			     uint64_t s, uint64_t e, void *ctx)
{
	struct startup_tally *ss = ctx;
	const struct trace *t = a->t;
	int comp = 0, imp = 0, cached = 0, op = 0;
	uint32_t user = 0;

	(void)ap;
	(void)state;
	for (uint32_t n = node, d = 0; n && n < t->py_nodes.n && d < 4096; d++) {
		uint32_t fr = t->py_nodes.v[n].frame;
		const char *file = fr < t->py_frames.n ? nm(a, t->py_frames.v[fr].file) : "";

		comp |= compiling(file);
		op |= first_op(file);
		if (!cached)
			cached = cached_compiler(file);
		imp |= !strncmp(file, "<frozen importlib", 17);
		if (!user && fr < t->py_frames.n && !sites_is_library(file) && file[0] != '<')
			user = fr;
		n = t->py_nodes.v[n].parent;
	}
	if (comp && !imp) { /* importing a compiler's modules is importing */
		a->startup.compile_ns += (double)(e - s);
		if (user)
			tally_add(&ss->lines, user, (double)(e - s));
		if (cached) {
			a->startup.cache_ns += (double)(e - s);
			ss->by_cache[cached] += (double)(e - s);
		}
	} else if (imp) {
		a->startup.import_ns += (double)(e - s);
	} else if (sites_node_starts_workers(a, node)) {
		a->startup.workers_ns += (double)(e - s);
	} else if (op) {
		a->startup.first_ops_ns += (double)(e - s);
	}
}

static void add_startup(struct analysis *a, const struct py_thread *th, uint64_t t0, uint64_t t1)
{
	struct startup_tally ss = { .lines.n = 0 };
	const struct py_frame_rec *f;

	each_hold(a, NULL, th, t0, t1, add_startup_hold, &ss);
	a->startup.cache_kind = ss.by_cache[STARTUP_CACHE_CUPY] > ss.by_cache[STARTUP_CACHE_XLA]
					? STARTUP_CACHE_CUPY
				: ss.by_cache[STARTUP_CACHE_XLA] > 0 ? STARTUP_CACHE_XLA
								     : STARTUP_CACHE_NONE;
	if ((f = tally_best(a, &ss.lines))) {
		a->startup.compile_file = f->file;
		a->startup.compile_func = f->func;
		a->startup.compile_line = f->line;
	}
}

struct tail_tallies {
	struct frame_tally eval, ckpt, hook;
	/* inside the loop: by the loop's line that called the work, the
	 * function it called that the steps did not run (0: none) */
	struct {
		uint32_t call, func;
		double ns;
	} loop[MAX_CANDIDATES];
	unsigned nloop;
	struct hmap steady_fns, seen_nodes; /* (file, func) on the steps' stacks; nodes walked */
};

static uint64_t fn_key(const struct py_frame_rec *f)
{
	return (uint64_t)f->file << 32 | f->func;
}

/* The functions on the driving thread's stacks in the steady window: what
 * the steps ran (a node's ancestors are walked once). */
static void add_steady_fns(struct analysis *a, struct act_pass *ap, uint32_t node, uint8_t state, uint64_t s,
			   uint64_t e, void *ctx)
{
	struct tail_tallies *ts = ctx;
	const struct trace *t = a->t;

	(void)ap;
	(void)state;
	(void)s;
	(void)e;
	for (uint32_t n = node; n && n < t->py_nodes.n && !hmap_get(&ts->seen_nodes, n); n = t->py_nodes.v[n].parent) {
		uint32_t fr = t->py_nodes.v[n].frame;

		if (hmap_put(&ts->seen_nodes, n, 1) < 0 ||
		    (fr < t->py_frames.n && hmap_put(&ts->steady_fns, fn_key(&t->py_frames.v[fr]), 1) < 0)) {
			analysis_nomem(a, "finding the activities");
			return;
		}
	}
}

static void any_below_loop(struct analysis *a, struct act_pass *ap, uint32_t node, uint8_t state, uint64_t s,
			   uint64_t e, void *ctx)
{
	(void)ap;
	(void)state;
	(void)s;
	(void)e;
	*(int *)ctx |= sites_below_loop(a, node) != 0;
}

/* The tail's time below the loop's frame, by the loop's line above it and
 * the outermost user function under it that the steps never ran (where
 * the iteration's extra work is: a synthesis, a sampler, a report). */
static void add_tail_loop(struct analysis *a, struct tail_tallies *ts, uint32_t node, uint32_t below, double ns)
{
	const struct trace *t = a->t;
	uint32_t call = t->py_nodes.v[below].frame, func = 0;
	unsigned i;

	for (uint32_t n = node; n && n < t->py_nodes.n && n != below; n = t->py_nodes.v[n].parent) {
		uint32_t fr = t->py_nodes.v[n].frame, up = t->py_nodes.v[n].parent;
		const struct py_frame_rec *f = fr < t->py_frames.n ? &t->py_frames.v[fr] : NULL;

		if (f && f->file < t->names.n && !sites_is_library(t->names.v[f->file]) &&
		    !hmap_get(&ts->steady_fns, fn_key(f)) && up < t->py_nodes.n) {
			call = t->py_nodes.v[up].frame; /* outermost so far: its caller's line */
			func = f->func;
		}
	}
	for (i = 0; i < ts->nloop && (ts->loop[i].call != call || ts->loop[i].func != func); i++)
		;
	if (i < ts->nloop)
		ts->loop[i].ns += ns;
	else if (ts->nloop < MAX_CANDIDATES) {
		ts->loop[i].call = call;
		ts->loop[i].func = func;
		ts->loop[i].ns = ns;
		ts->nloop++;
	}
}

static void add_tail_hold(struct analysis *a, struct act_pass *ap, uint32_t node, uint8_t state,
			  uint64_t s, uint64_t e, void *ctx)
{
	struct tail_tallies *ts = ctx;
	uint32_t caller, ev = activity_frame(a, ap, node, ACT_EVAL, 0, &caller), in;

	(void)state;
	if ((in = sites_below_loop(a, node))) {
		a->tail.loop_ns += (double)(e - s);
		add_tail_loop(a, ts, node, in, (double)(e - s));
	}
	if ((in = hook_frame(a, node))) {
		a->tail.hook_ns += (double)(e - s);
		tally_add(&ts->hook, in, (double)(e - s));
	}
	if (ev) {
		a->tail.eval_ns += (double)(e - s);
		tally_add(&ts->eval, caller ? caller : ev, (double)(e - s));
	} else if (sites_node_class(a, node) == SC_SERIALIZE) {
		/* the user's line that calls the save: the caller of the
		 * innermost user frame, where that frame is a save function */
		in = activity_frame(a, NULL, node, ACT_CHECKPOINT, 0, &caller);
		a->tail.ckpt_ns += (double)(e - s);
		if (in)
			tally_add(&ts->ckpt, caller ? caller : in, (double)(e - s));
	}
}

/* The tail after the last step: what the driving thread evaluated or
 * serialized there (ap: the steady window's evaluation functions, where
 * known, for those run without gradients). */
static void add_tail(struct analysis *a, struct act_pass *ap, const struct py_thread *th, uint64_t t1,
		     uint64_t end)
{
	struct tail_tallies ts = { .eval.n = 0, .ckpt.n = 0, .hook.n = 0, .nloop = 0 };
	const struct py_frame_rec *f;

	int below = 0;

	/* what the steps ran is looked up only where the tail is in the loop */
	each_hold(a, ap, th, t1, end, any_below_loop, &below);
	if (below && a->t0 < t1)
		each_hold(a, ap, th, a->t0, t1, add_steady_fns, &ts);
	each_hold(a, ap, th, t1, end, add_tail_hold, &ts);
	hmap_free(&ts.steady_fns);
	hmap_free(&ts.seen_nodes);
	if ((f = tally_best(a, &ts.eval))) {
		a->tail.eval_file = f->file;
		a->tail.eval_line = f->line;
	}
	if ((f = tally_best(a, &ts.ckpt))) {
		a->tail.ckpt_file = f->file;
		a->tail.ckpt_line = f->line;
	}
	if ((f = tally_best(a, &ts.hook)))
		a->tail.hook_func = f->func;
	unsigned best = 0;

	for (unsigned i = 1; i < ts.nloop; i++)
		if (ts.loop[i].ns > ts.loop[best].ns)
			best = i;
	if (ts.nloop && ts.loop[best].call < a->t->py_frames.n) {
		f = &a->t->py_frames.v[ts.loop[best].call];
		a->tail.loop_file = f->file;
		a->tail.loop_line = f->line;
		a->tail.loop_func = ts.loop[best].func ? ts.loop[best].func : f->func;
		a->tail.loop_called = ts.loop[best].func != 0;
		a->tail.loop_called_ns = a->tail.loop_called ? ts.loop[best].ns : 0;
	}
}

/* The line that called activity k: the first user frame outside its
 * outermost frame, called directly from the user's code, where that
 * function is the activity's own: on the stack in at most half of the
 * steps (a checkpoint written inline in the loop's step function is called
 * by the loop's `step(i)`, which runs every step: no call of its own). Its
 * share of the run cannot tell: an activity may take most of the run. */
static void activity_call(struct analysis *a, struct act_pass *ap, const struct py_thread *th, enum activity k,
			  uint32_t where)
{
	struct activity_stat *s = &a->act[k];
	uint32_t call = 0, in;

	if (!where || !has_steps(a) || !(in = activity_frame(a, ap, where, k, 1, &call)) || !call)
		return;
	long in_steps = fn_step_count(a, ap, th, a->t->py_frames.v[in].file, a->t->py_frames.v[in].func, NULL);

	if (in_steps < 0 || 2 * (size_t)in_steps > a->steps.n)
		return;
	s->call_file = a->t->py_frames.v[call].file;
	s->call_func = a->t->py_frames.v[call].func;
	s->call_line = a->t->py_frames.v[call].line;
}

/* ---- the activity's runs outside the steady window ---------------------- */

/* Whether the stack at node holds activity s's own site: the line that
 * calls it where known (the loop's `evaluate()`: a final evaluation after
 * the loop is called elsewhere), else its function. */
static int holds_site(const struct analysis *a, uint32_t node, const struct activity_stat *s)
{
	return s->call_line ? on_stack(a, node, s->call_file, s->call_func, s->call_line)
			    : s->func && on_stack(a, node, s->file, s->func, 0);
}

/* The runs of each activity from about one step before the loop's first
 * iteration (the host issues ahead of the GPU; what came earlier is
 * set-up, a sanity check) to the thread's last sample (a last save may
 * follow the GPU's last operation): those that hold its site, when each
 * began and how many lie outside the window. */
struct site_runs {
	uint64_t start[ACT_N], last_end[ACT_N], first[ACT_N], last[ACT_N];
	uint8_t open[ACT_N], held[ACT_N];
	uint32_t runs[ACT_N], out[ACT_N];
	uint64_t t0, t1;
};

static void close_run(struct site_runs *o, int k)
{
	if (o->open[k] && o->held[k]) {
		if (!o->runs[k]++)
			o->first[k] = o->start[k];
		o->last[k] = o->start[k];
		uint64_t s = o->start[k], e = o->last_end[k];

		/* outside: more of it before or after the window than in it */
		o->out[k] += e <= o->t0 || s >= o->t1 || (s < o->t0 && o->t0 - s > e - o->t0) ||
			     (e > o->t1 && e - o->t1 > o->t1 - s);
	}
	o->open[k] = o->held[k] = 0;
}

static void add_site_run(struct analysis *a, struct act_pass *ap, uint32_t node, uint8_t state, uint64_t s,
			 uint64_t e, void *ctx)
{
	struct site_runs *o = ctx;
	enum activity k = node_activity(a, ap, node);

	(void)state;
	if (k == ACT_NONE || !a->act[k].runs)
		return;
	if (o->open[k] && s > o->last_end[k] + RUN_APART_NS)
		close_run(o, k);
	if (!o->open[k]) {
		o->open[k] = 1;
		o->start[k] = s;
	}
	if (!o->held[k])
		o->held[k] = (uint8_t)holds_site(a, node, &a->act[k]);
	o->last_end[k] = e;
}

/* The iterations begun by time t (the main GPU's clock). */
static size_t iteration_at(const struct analysis *a, uint64_t t)
{
	size_t lo = 0, hi = a->x->iter_starts.n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (a->x->iter_starts.v[mid] <= t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Each activity's runs outside the window, and where it ran twice or more,
 * the iterations between its runs (fixes.c: its rate where the window cuts
 * its period). */
static void runs_outside(struct analysis *a, struct act_pass *ap, const struct py_thread *th)
{
	struct site_runs o;
	uint64_t med = (uint64_t)a->step_median_ns, it0 = a->x->iter_starts.n ? a->x->iter_starts.v[0] : 0;

	if (!it0)
		return;
	memset(&o, 0, sizeof(o));
	o.t0 = a->t0;
	o.t1 = a->t1;
	each_hold(a, ap, th, it0 > med ? it0 - med : 0, UINT64_MAX, add_site_run, &o);
	for (int k = 1; k < ACT_N; k++) {
		close_run(&o, k);
		a->act[k].runs_out = o.out[k];
		a->act[k].runs_whole = o.runs[k];
		if (o.runs[k] >= 2) {
			size_t i0 = iteration_at(a, o.first[k]), i1 = iteration_at(a, o.last[k]);

			a->act[k].period = i1 > i0 ? (double)(i1 - i0) / (o.runs[k] - 1) : 0;
		}
	}
}

struct act_pass *activities_begin(struct analysis *a)
{
	const struct py_thread *th = a->t->py_samples ? sites_driving_thread(a) : NULL;
	struct act_pass *ap;
	struct walls w;

	memset(a->act, 0, sizeof(a->act));
	memset(&a->startup, 0, sizeof(a->startup));
	a->tail.eval_ns = 0;
	a->tail.eval_file = a->tail.eval_line = 0;
	a->tail.ckpt_ns = 0;
	a->tail.ckpt_file = a->tail.ckpt_line = 0;
	a->tail.hook_ns = 0;
	a->tail.hook_func = 0;
	a->tail.loop_ns = 0;
	a->tail.loop_file = a->tail.loop_func = a->tail.loop_line = 0;
	a->tail.loop_called = 0;
	a->tail.loop_called_ns = 0;
	a->asleep_ns = 0;
	a->other_wait_ns = 0;
	if (th && th->n && a->t0 > a->first_op)
		add_startup(a, th, a->first_op, a->t0);
	if (!th || !th->n || a->t1 <= a->t0 || !(ap = calloc(1, sizeof(*ap)))) {
		if (th && th->n && a->t1 > a->t0)
			analysis_nomem(a, "finding the activities");
		if (th && th->n && a->tail.ns > 0)
			add_tail(a, NULL, th, a->t1, a->last_op);
		return NULL;
	}
	/* evaluation counts only beside training: measure it as if it did */
	ap->eval_counts = 1;
	eval_fns(a, ap, th);
	if (a->tail.ns > 0)
		add_tail(a, ap, th, a->t1, a->last_op);
	find_holder(a, ap, th);
	if (!ap->holder_func)
		find_copy_holder(a, ap, th);
	memset(&w, 0, sizeof(w));
	w.apart = RUN_APART_NS;
	each_hold(a, ap, th, a->t0, a->t1, add_wall, &w);
	if (w.ns[ACT_EVAL] > 0 && (double)a->steady_ns - w.ns[ACT_EVAL] < EVAL_MIN_TRAIN * (double)a->steady_ns) {
		/* a job that only evaluates: no activity to do less often */
		ap->eval_counts = 0;
		w.ns[ACT_EVAL] = 0;
		w.runs[ACT_EVAL] = 0;
	}
	for (int k = 1; k < ACT_N; k++) {
		/* an evaluation is named by the user's evaluation function
		 * (validation_step), not by the model code it runs */
		uint32_t ev = k == ACT_EVAL && w.where[k] ? user_frame(a, ap, w.where[k], 1) : 0;
		uint32_t fr = ev ? ev : w.where[k] ? user_frame(a, ap, w.where[k], 0) : 0;

		a->act[k].wall_ns = w.ns[k];
		a->act[k].runs = w.runs[k];
		if (k == ACT_CHECKPOINT && ap->holder_func) {
			a->act[k].file = ap->holder_file;
			a->act[k].func = ap->holder_func;
		} else if (fr) {
			a->act[k].file = a->t->py_frames.v[fr].file;
			a->act[k].func = a->t->py_frames.v[fr].func;
		}
		/* its line, where the innermost user frame is in its function */
		if (fr && a->t->py_frames.v[fr].file == a->act[k].file && a->t->py_frames.v[fr].func == a->act[k].func)
			a->act[k].line = a->t->py_frames.v[fr].line;
		activity_call(a, ap, th, (enum activity)k, w.where[k]);
	}
	runs_outside(a, ap, th);
	holds_init(&ap->cur, a->t, th);
	return ap;
}

/* Causes an activity does not decide: measured elsewhere (storage, cores,
 * loaders, other GPUs) or set by the environment. */
static int act_overrides(int cause)
{
	return cause != IDLE_IO && cause != IDLE_OVERSUB && cause != IDLE_DATA_WAIT && cause != IDLE_COMM &&
	       cause != IDLE_LAUNCH_BLOCKING;
}

struct gap_ctx {
	struct analysis *a;
	struct act_pass *ap;
	double ns[ACT_N];
};

static void add_gap_hold(void *ctx, uint32_t node, uint8_t state, uint64_t s, uint64_t e)
{
	struct gap_ctx *g = ctx;

	(void)state;
	g->ns[node_activity(g->a, g->ap, node)] += (double)(e - s);
}

int activities_gap(struct analysis *a, struct act_pass *ap, int cause, uint32_t step, uint64_t ga,
		   uint64_t gb)
{
	struct gap_ctx g = { a, ap, { 0 } };
	double *ns = g.ns, len = (double)(gb - ga);

	if (!ap || gb <= ga)
		return cause;
	/* a gap this short is the GPU's own spacing between kernels it had
	 * queued (the host may be far ahead then, in other code): no
	 * activity's; the cursor still moves on */
	holds_over(&ap->cur, ga, gb - ga < ACT_MIN_GAP_NS ? ga : gb, add_gap_hold, &g);
	if (gb - ga < ACT_MIN_GAP_NS)
		return cause;
	for (int k = 1; k < ACT_N; k++) {
		if (ns[k] < ACT_GAP_SHARE * len)
			continue;
		if (!act_overrides(cause))
			return cause;
		a->act[k].idle_ns += len;
		/* the GPU's step it ran in (the host runs ahead: its samples
		 * fall in earlier steps than the work they issue) */
		if (step < a->steps.n && !a->step_window_ns && !(a->steps.v[step].acts & (1u << k))) {
			a->steps.v[step].acts |= (uint8_t)(1u << k);
			a->act[k].steps++;
		}
		return IDLE_PERIODIC;
	}
	return cause;
}

/* The training thread's samples, for the replay's graph: what it was doing
 * (activity, site class) and whether it slept. */
static void add_graph_hold(struct analysis *a, struct act_pass *ap, uint32_t node, uint8_t state, uint64_t s,
			   uint64_t e, void *ctx)
{
	(void)ctx;
	int asleep = state == GW_PYSTATE_SLEEP;

	depgraph_host(a, s, e, node_activity(a, ap, node), sites_node_class(a, node), asleep,
		      sites_node_optimizer(a, node), asleep && sites_waits_other(a, node, s, e));
}

void activities_end(struct analysis *a, struct act_pass *ap)
{
	if (!ap)
		return;
	if (a->graph && ap->cur.th)
		each_hold(a, ap, ap->cur.th, a->t0, a->t1, add_graph_hold, NULL);
	free(ap->node_act.v);
	free(ap);
}
