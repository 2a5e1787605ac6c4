/* Each finding's fix as an edit of the graph, and the gains the replay
 * gives (docs/RULES.md section 4): the predicted speed-up is the replayed
 * window before over after, the combined one a single replay with every
 * fix applied. Where a rule's fix changes work the graph does not place
 * (a clock, a link), its claimed busy part scales the family of operations
 * it names. */
#include <math.h>
#include <string.h>

#include "internal.h"

#define REPLAY_UNCERTAIN 0.10 /* a replay that misses the recording by more is uncertain */
#define BATCH_MAX_FACTOR 256  /* the largest batch factor replayed */
#define BATCH_KNEE 1.10       /* doubling the batch again adds less per sample: the GPU is full */
#define OPTIM_SHARE 0.25      /* of C4's launch wait in an optimizer's step: its own replay */
#define BEYOND_OWN_PTS 3.0    /* a gain this many points of the run past its own idle: said why */
/* values copied back to pageable memory are processed where the host's
 * time after those copies, to its next operation, is this much in code that
 * works on values (c9_tv_retrieval_numpy_topk's numpy top-k on the scores it
 * read: processed; c6_hf_distill_logits_cpu's logits kept for a writer: no
 * such code at all) */
#define VALUES_PROCESSED_SHARE 0.2

static int is(const struct finding *f, const char *cause)
{
	return f->cause && !strcmp(f->cause, cause);
}

/* 1 - part / whole, for a family's durations: its claimed saving spread
 * over all of its operations' time in the window. */
static double keep(double part, double whole)
{
	if (!(whole > 0) || !(part > 0))
		return 1;
	return part >= whole ? 1e-3 : 1 - part / whole;
}

/* The share of a shared cause's idle a finding claims (launch gaps: C10
 * and C11 say why some of them are there). */
static double share_of(const struct analysis *a, const struct finding *f, enum idle_cause c)
{
	double pool = gain_pool(a, c), want = f->claim.idle_ns;

	if (!(pool > 0) || !(want > 0))
		return 0;
	return want >= pool ? 1 : want / pool;
}

/* The training thread's time in code of these site classes (the graph's
 * host segments from its samples). */
static double host_class_ns(const struct analysis *a, unsigned classes)
{
	double ns = 0;

	for (size_t i = 0; classes && a->graph && i < a->graph->host.n; i++)
		if (classes & (1u << a->graph->host.v[i].cls))
			ns += (double)(a->graph->host.v[i].end - a->graph->host.v[i].start);
	return ns;
}

/* The training thread's time from each return of a blocking copy of
 * pageable memory back to the host to its next operation issued, in all
 * (*after) and in code that processes values (*processing: numeric work,
 * metrics, logging, serialization), from its samples. */
static void after_dtoh_copies(const struct depgraph *g, double *after, double *processing)
{
	const unsigned proc = 1u << SC_HOSTCALC | 1u << SC_CALLBACK | 1u << SC_METRIC | 1u << SC_LOG |
			      1u << SC_SERIALIZE;
	size_t h = 0;

	*after = *processing = 0;
	for (size_t i = 0; i < g->waits.n; i++) { /* waits and host segments in time order */
		const struct dg_wait *w = &g->waits.v[i];
		uint64_t next = UINT64_MAX;

		if (w->kind != DW_COPY_DTOH || w->op == UINT32_MAX || !(g->ops.v[w->op].flags & DG_PAGEABLE))
			continue;
		for (size_t j = w->op + 1; j < g->ops.n && next == UINT64_MAX; j++)
			if (dg_iss(&g->ops.v[j]) >= w->end)
				next = dg_iss(&g->ops.v[j]);
		if (next == UINT64_MAX)
			continue;
		*after += (double)(next - w->end);
		while (h < g->host.n && g->host.v[h].end <= w->end)
			h++;
		for (size_t j = h; j < g->host.n && g->host.v[j].start < next; j++) {
			const struct dg_host *x = &g->host.v[j];
			uint64_t s = x->start > w->end ? x->start : w->end, e = x->end < next ? x->end : next;

			if (e > s && (proc & (1u << x->cls)))
				*processing += (double)(e - s);
		}
	}
}

/* Moved to loader workers, the input's CPU work still has to be done: the
 * workers' CPU time and the training thread's input code per step, over
 * the cores the job may use beside the training thread. */
static double input_floor(const struct analysis *a)
{
	double main, workers, input = 0, win = (double)(a->t1 - a->t0);
	unsigned cores = a->cpus_allowed > 1 ? a->cpus_allowed - 1 : 1;

	if (!has_steps(a) || !(win > 0))
		return 0;
	cpu_cores_split(a, a->t0, a->t1, &main, &workers);
	for (size_t i = 0; a->graph && i < a->graph->host.n; i++)
		if (a->graph->host.v[i].cls == SC_INPUT)
			input += (double)(a->graph->host.v[i].end - a->graph->host.v[i].start);
	return (workers * win + input) / (double)has_steps(a) / cores;
}

/* Of the training thread's time in sync gaps a host-to-device copy ends,
 * the share in its own or numeric code (C1's title counts that much): the
 * rest launches or stages the next work, which C1's fix leaves. */
static double own_after_sync(const struct analysis *a)
{
	const double *sy = a->site_sync_to_htod_ns;
	double all = 0;

	for (int c = 0; c < SC_NCLASSES; c++)
		all += sy[c];
	return all > 0 ? (sy[SC_NONE] + sy[SC_HOSTCALC]) / all : 0;
}

/* C8's transformation: bf16 autocast (docs/RULES.md section 4). */
static void c8_fix(const struct analysis *a, struct sim_fix *x)
{
	const struct op_stats *s = &a->ops;

	/* the rule's claim, FP32 and TF32 each at its own rate */
	x->scale[KC_MATMUL_FP32] = 1 / c8_speedup(a, KC_MATMUL_FP32);
	x->scale[KC_MATMUL_TF32] = 1 / c8_speedup(a, KC_MATMUL_TF32);
	/* FP64 data: its matrix work at the tensor cores' 16-bit rate, its
	 * other kernels on doubles with the bytes bf16 autocast moves */
	if (c8_on_doubles(a)) {
		x->scale[KC_MATMUL_FP64] = 1 / c8_speedup(a, KC_MATMUL_FP64);
		x->f64_scale[0] = C8_F64_OTHER_SCALE;
		x->f64_scale[1] = C8_F64_ELEMENTWISE_SCALE;
	}
	/* FP32 activations: under autocast the matrix products write 16-bit
	 * outputs, so the elementwise kernels after them move half the bytes
	 * (norms, softmax and losses stay in float32) */
	x->f32_scale = C8_F32_ELEMENTWISE_SCALE;
	/* ... and, where the job's matrix work is FP32 with almost no 16-bit
	 * tensor-core kernels, the elementwise kernels whose names say no type
	 * (XLA's fusions, Triton's): the job computes in float32 throughout */
	x->f32_untyped = s->class_ns[KC_MATMUL_TC] < C8_TC16_FEW * matmul_ns(s->class_ns);
	x->uncertainty = 0.25;
}

/* The C4 advice's first remedy for the job's framework compiles its steps
 * into fused kernels (rules/advice.c: JAX's jax.jit, TensorFlow's XLA,
 * CuPy's cupy.fuse), rather than capturing the same kernels in a graph. */
static int compile_fuses(const struct analysis *a)
{
	return a->framework == FW_JAX || a->framework == FW_TF || a->framework == FW_CUPY;
}

/* A fix that sets a new rate rather than taking recorded work or waits out
 * (struct sim_fix's rate): for the window (a graph's pace, a batch, a fused
 * loop or chains: what the step becomes), or for the operations it changes
 * alone (copies at the pinned rate or the link's, matrix work at the tensor
 * cores', kernels at the clocks' speed; chains that are mostly a foreach
 * optimizer's update, which its fused version replaces in place). */
static int sets_rate(const struct analysis *a, const struct finding *f)
{
	static const char *const window[] = { "C3", "C4", "C10" }, *const ops[] = { "C6", "C8", "C12", "C13" };
	double ew = a->ops.class_ns[KC_ELEMENTWISE];

	if (is(f, "C11"))
		return ew > 0 && a->ops.foreach_ns >= C11_FOREACH_FUSED * ew ? RATE_OPS : RATE_WINDOW;
	for (size_t i = 0; i < sizeof(window) / sizeof(window[0]); i++)
		if (is(f, window[i]))
			return RATE_WINDOW;
	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
		if (is(f, ops[i]))
			return RATE_OPS;
	return 0;
}

/* C9: the syncs no longer block; host metrics every N steps. */
static void c9_fix(const struct analysis *a, const struct finding *f, struct sim_fix *x)
{
	const struct gain *g = &f->claim;

	/* read every N steps, or kept on the GPU: the reads' calls are not
	 * made, where a wait made non-blocking still costs its call. Every
	 * synchronization and small copy back of the training thread's goes:
	 * where the job needs some values each step (a server's results), the
	 * gain is an upper bound */
	x->waits = 1u << DW_SYNC | 1u << DW_COPY_SMALL;
	x->waits_gone = x->waits;
	/* memory freed every step (empty_cache: its frees are syncs) is
	 * allocated again: with the frees gone, so are the allocations */
	x->allocs = f->allocs_again;
	/* read every N steps, the values computed only to be read are
	 * computed every N steps too */
	x->read_work = 1;
	/* the host's work after each sync stays, unless it is the metric
	 * the advice moves to every N steps */
	x->host_classes = g->host_classes;
	if (g->host_classes) {
		x->gap_causes = g->idle_causes & IDLE_BIT(IDLE_SYNC);
		/* the values are not needed on the host before the next
		 * step: the copies that read them back stop blocking */
		x->waits |= 1u << DW_COPY_DTOH;
	}
	/* a runtime's thread issues the work, the Python thread reads the
	 * values (JAX): the graph's host is the issuing thread, and the
	 * Python thread's work after each read (the next batch) overlaps
	 * its launching once the read goes, at most as fast as that
	 * thread's own CPU time a step, less the work the fix removes */
	const struct py_thread *py = sites_driving_thread(a);

	if (py && py->tid != a->main_tid && has_steps(a)) {
		double cpu = thread_cpu_ns(a, py->pid, py->tid, a->t0, a->t1) - host_class_ns(a, x->host_classes);

		x->gap_causes |= IDLE_BIT(IDLE_SYNC);
		x->floor_step_ns = cpu > 0 ? cpu / (double)has_steps(a) : 0;
	}
}

int fix_of_finding(const struct analysis *a, const struct finding *f, struct sim_fix *x)
{
	const struct gain *g = &f->claim;
	const struct op_stats *s = &a->ops;

	memset(x, 0, sizeof(*x));
	x->uncertainty = 0.2;
	if (is(f, "C1")) { /* the input's work, and numeric helpers, leave the training thread */
		/* the gaps it waited for input or worked on the CPU in; after a
		 * sync, the host computation its stacks show and the work that
		 * ends in a host-to-device copy (the next input); the rest is
		 * the loop issuing the next step */
		x->gap_causes = g->idle_causes & (IDLE_BIT(IDLE_DATA_WAIT) | IDLE_BIT(IDLE_HOST_COMPUTE));
		x->host_classes = g->host_classes;
		x->input_after_sync = (g->idle_causes & IDLE_BIT(IDLE_SYNC)) ? own_after_sync(a) : 0;
		/* input prepared in another thread of the process moves to worker
		 * processes: the training thread stops waiting for it (its queue,
		 * the interpreter lock) */
		x->other = a->other_wait_idle_ns > 0;
		x->floor_step_ns = input_floor(a); /* loader workers share the cores */
		x->uncertainty = 0.3;
	} else if (is(f, "C2") || is(f, "C7")) {
		x->gap_causes = g->idle_causes;
		x->uncertainty = 0.3;
	} else if (is(f, "C3")) { /* a batch k times larger: the same host work a step, fuller grids */
		if (!f->batch_n)
			return 0;
		x->batch = f->batch_k[f->batch_at];
		x->uncertainty = 0.3;
	} else if (is(f, "C4")) { /* one graph launch for the step's kernels */
		x->pace_ns = GRAPH_PACE_NS;
		x->gap_causes = IDLE_BIT(IDLE_LAUNCH_OVERHEAD);
		x->uncertainty = 0.25;
		/* where the advice's first remedy compiles the step (jax.jit, XLA,
		 * cupy.fuse), the compiler fuses the elementwise chains too: one
		 * kernel a chain, C11's saving (PyTorch's first is a CUDA graph,
		 * which keeps every kernel) */
		if (compile_fuses(a)) {
			double chain_busy = s->chain.saved - s->chain.gaps;

			x->fuse_chains = 1;
			x->scale[KC_ELEMENTWISE] = keep(chain_busy, s->class_ns[KC_ELEMENTWISE]);
		}
	} else if (is(f, "C5")) { /* launches stop waiting; the host's work between them stays */
		x->waits = 1u << DW_LAUNCH;
		x->uncertainty = 0.2;
	} else if (is(f, "C6")) { /* pinned buffers: the copies at the pinned rate, no staging,
				   * on a copy stream that overlaps compute (sim_copy_aside) */
		double after, processing;

		x->gap_causes = IDLE_BIT(IDLE_PAGEABLE);
		x->pageable_scale = keep(g->busy_ns, g->busy_of_ns);
		/* values copied back and not processed before the next work
		 * (a cache, a writer's queue) need no wait: an event later */
		after_dtoh_copies(a->graph, &after, &processing);
		x->copies_aside = 1;
		x->copies_back_free = processing < VALUES_PROCESSED_SHARE * after;
	} else if (is(f, "C12") && g->idle_ns > 0) { /* one copy for each run of small copies */
		x->merge_copies = 1;
		x->uncertainty = 0.2;
	} else if (is(f, "C12") && g->busy_ns > 0) { /* the big pinned copies at the link's rate */
		x->pinned_scale = keep(g->busy_ns, g->busy_of_ns);
		x->uncertainty = 0.2;
	} else if (is(f, "C8")) {
		c8_fix(a, x);
	} else if (is(f, "C9")) { /* the syncs no longer block; host metrics every N steps */
		c9_fix(a, f, x);
	} else if (is(f, "C10")) { /* one fused kernel for the loop */
		x->gap_causes = IDLE_BIT(IDLE_LAUNCH_OVERHEAD);
		x->gap_frac[IDLE_LAUNCH_OVERHEAD] = share_of(a, f, IDLE_LAUNCH_OVERHEAD);
		x->small_scale = keep(g->busy_ns, g->busy_of_ns);
		x->uncertainty = 0.3;
	} else if (is(f, "C11")) { /* one pass over the chains' bytes, one launch each */
		x->fuse_chains = 1;
		x->gap_causes = g->idle_ns > 0 ? IDLE_BIT(IDLE_LAUNCH_OVERHEAD) : 0;
		x->gap_frac[IDLE_LAUNCH_OVERHEAD] = share_of(a, f, IDLE_LAUNCH_OVERHEAD);
		/* attention fused: its inner kernels go (sim_op); the chains'
		 * saving over the elementwise kernels outside it */
		x->attention = g->busy_set & BUSY_OTHER ? 1 : 0;
		x->scale[KC_ELEMENTWISE] = x->attention
			? keep(g->busy_ns - s->attn_ns, s->class_ns[KC_ELEMENTWISE] - s->attn_ew_ns)
			: keep(g->busy_ns, s->class_ns[KC_ELEMENTWISE]);
		x->uncertainty = 0.3;
	} else if (is(f, "C13")) {
		for (int c = 0; c < KC_NCLASSES; c++)
			x->scale[c] = keep(g->busy_ns, (double)a->busy_ns);
		x->uncertainty = 0.3;
	} else if (is(f, "C14")) { /* the activity goes: its time, its GPU work, its waits */
		for (int k = 1; k < ACT_N; k++)
			if (a->act[k].wall_ns > 0 && a->act[k].idle_ns > 0)
				x->acts |= 1u << k;
		x->gap_causes = IDLE_BIT(IDLE_PERIODIC) | IDLE_BIT(IDLE_WRITE);
		/* a runtime's thread issues the work, the Python thread runs the
		 * activity (JAX): what that thread issued meanwhile holds the
		 * steps queued before the activity began, so the activity's work
		 * is the finding's (its steps' work beyond a normal step's) */
		int runtime_issues = a->py_site_tid && a->py_site_tid != a->main_tid;

		x->acts_keep_ops = x->acts && runtime_issues;
		/* the training thread's own time in the periodic gaps goes, where
		 * it is the thread that issues the work */
		x->periodic_host = !runtime_issues;
		if (!x->acts || x->acts_keep_ops) /* long steps' extra work, without stacks to place it */
			x->cut_ns = g->busy_ns; /* the claim's: net of what the fix keeps */
		else
			x->cut_ns = -g->kept_ns; /* what the fix still does (a snapshot's copies) */
		x->uncertainty = 0.2;
	} else if (is(f, "C15") && g->idle_causes & IDLE_BIT(IDLE_COMM)) {
		/* collectives on the GPU (NCCL), overlapped: the host-staged ones' gaps go */
		x->gap_causes = IDLE_BIT(IDLE_COMM);
		x->uncertainty = 0.4;
	} else if (is(f, "C15")) {
		x->scale[KC_COMM] = keep(g->busy_ns, s->class_ns[KC_COMM]);
		x->uncertainty = 0.3;
	} else if (is(f, "C16")) { /* the thread no longer sleeps or waits elsewhere */
		x->asleep = 1;
		/* the waits' gaps go; the launch gaps after them go only where the
		 * thread, awake, gets ahead of the GPU, which the replay decides */
		x->gap_causes = g->idle_causes & IDLE_BIT(IDLE_WAIT);
	} else {
		return 0;
	}
	x->rate = sets_rate(a, f);
	return 1;
}

/* A fix replayed with gpuwhy's estimated own cost taken out of the launch
 * gaps (the figures), and for the range's two ends with none taken out and
 * with its cost on the jobs where it cost most taken out (TRACE_COST_HIGH_NS:
 * measured, that cost is 0.5 to 9.6 us a launch), each against the window
 * replayed alike. */
struct replayed {
	double Tb, Tf, Tb0, Tf0, Tbh, Tfh, busy_cut, rated;
};

static double trace_high_scale(void)
{
	return (double)TRACE_COST_HIGH_NS / (double)TRACE_COST_PER_LAUNCH_NS;
}

static int replay_fix(const struct analysis *a, const struct sim_fix *x, struct replayed *out)
{
	struct sim_fix x0 = *x, xh = *x;
	struct sim_result r, r0, rh = { 0 };

	x0.keep_trace = 1;
	xh.trace_scale = trace_high_scale();
	if (simulate(a, x, &r) < 0 || simulate(a, &x0, &r0) < 0 ||
	    (a->replay_base_hi_ns > 0 && simulate(a, &xh, &rh) < 0))
		return -ENOMEM;
	out->Tb = a->replay_base_ns;
	out->Tb0 = a->replay_base0_ns;
	out->Tbh = a->replay_base_hi_ns;
	out->Tf = r.T;
	out->Tf0 = r0.T;
	out->Tfh = rh.T;
	out->busy_cut = r.busy_cut;
	out->rated = r.rated;
	return 0;
}

static double clamp01(double x)
{
	return x < 1 ? (x > 0 ? x : 0) : 1;
}

/* What the doubt of a fix's assumptions is a share of, in shares of the
 * window before it, for a window left of `ratio`: all of it where the fix
 * sets the rate of the whole step (the work in it runs at an assumed
 * speed); the replayed time of the operations it runs at a new rate and
 * what it removes, where it sets the rate of those operations alone; what
 * it removes, where it takes recorded work or waits out. Never more than
 * the window left (removed work may have overlapped; what stays was
 * recorded). */
static double doubted(const struct replayed *p, int rate, double ratio)
{
	double ops = rate & RATE_OPS ? clamp01(p->rated / p->Tb) : 0;
	double part = rate & RATE_WINDOW ? 1 : ops + (1 - ratio);

	return part < ratio ? part : ratio;
}

/* The replayed gain into f's figures, kept within the same bounds as a
 * bounded one: saved = idle part + busy part, at most 95% of T. The range:
 * the window after the fix, both ends of gpuwhy's own cost, widened by the
 * replay's error and the fix's assumptions (u) over what they concern
 * (doubted). */
static void set_replayed(const struct analysis *a, struct finding *f, const struct replayed *p, double u,
			 int rate, double batch)
{
	double T = steady_untraced_ns(a), lim = gain_limit_batch(a, batch), ratio, ratio0, saved, busy, idle;

	if (!(p->Tb > 0) || !(p->Tb0 > 0) || !(T > 0))
		return;
	ratio = clamp01(p->Tf / p->Tb);
	ratio0 = clamp01(p->Tf0 / p->Tb0);
	saved = T * (1 - ratio);
	f->capped = 0;
	if (saved > lim) {
		saved = lim;
		f->capped = 1;
	}
	busy = p->busy_cut * T / p->Tb;
	busy = busy < saved ? (busy > 0 ? busy : 0) : saved;
	busy = busy < (double)a->busy_ns ? busy : (double)a->busy_ns;
	idle = saved - busy;
	if (idle > (double)a->idle_ns) { /* the replay's idle cannot exceed the run's */
		idle = (double)a->idle_ns;
		saved = idle + busy;
	}
	f->saved_ns = saved;
	f->idle_ns = idle;
	f->busy_ns = busy;
	f->speedup = T > saved ? T / (T - saved) : 1.0;
	double rlo = ratio < ratio0 ? ratio : ratio0, rhi = ratio > ratio0 ? ratio : ratio0;

	if (p->Tbh > 0 && p->Tfh > 0) {
		double ratioh = clamp01(p->Tfh / p->Tbh);

		rlo = ratioh < rlo ? ratioh : rlo;
		rhi = ratioh > rhi ? ratioh : rhi;
	}
	double after_lo = rlo - u * doubted(p, rate, rlo), after_hi = clamp01(rhi + u * doubted(p, rate, rhi));
	double hi = T * (1 - after_lo), lo = T * (1 - after_hi);

	hi = hi < lim ? hi : lim;
	lo = lo < saved ? lo : saved;
	hi = hi > saved ? hi : saved;
	f->speedup_lo = T > lo ? T / (T - lo) : 1.0;
	f->least_saved_ns = lo > 0 ? lo : 0;
	f->speedup_hi = T > hi ? T / (T - hi) : f->speedup;
	f->per_step_ns = has_steps(a) ? saved / (double)has_steps(a) : 0;
	f->replayed = 1;
	/* a range that reaches no gain at all is no high confidence in the gain */
	if (f->speedup_lo < 1.005 && f->confidence == CONF_HIGH)
		f->confidence = CONF_MEDIUM;
	if (f->shared_note && f->shared_note < sizeof(f->evidence)) /* no idle went elsewhere */
		f->evidence[f->shared_note] = 0;
	f->severity = gain_severity(a, f);
}

/* The per-sample speed-up with a batch k times larger: the replay's window
 * over the replayed one (0: out of memory). */
static double batch_speedup(const struct analysis *a, double k, int all_grow)
{
	struct sim_fix x;
	struct sim_result r;

	memset(&x, 0, sizeof(x));
	x.batch = k;
	x.batch_all_grow = all_grow;
	if (simulate(a, &x, &r) < 0)
		return 0;
	return r.T > 0 ? a->replay_base_ns / r.T : 1;
}

/* A batch fix replayed at 2, 4, ... 256 times the batch. The figures take
 * the first factor that doubling again improves by less than BATCH_KNEE
 * (the GPU is then full), else the largest, among those the memory in use
 * allows (if everything in it grew with the batch; at least 2x). */
static int batch_curve(const struct analysis *a, struct finding *f)
{
	double used, total;
	unsigned n = 0, fit = 0;

	main_gpu_mem(a, &used, &total);
	f->batch_mem_k = used > 0 && total > 0 ? total / used : 0;
	for (double k = 2; k <= BATCH_MAX_FACTOR && n < BATCH_POINTS; k *= 2, n++) {
		f->batch_k[n] = k;
		f->batch_x[n] = batch_speedup(a, k, 0);
		if (!(f->batch_x[n] > 0))
			return -ENOMEM;
		if (!n || !(f->batch_mem_k > 0) || k <= f->batch_mem_k)
			fit = n;
	}
	f->batch_n = n;
	f->batch_at = fit;
	for (unsigned i = 0; i < fit; i++)
		if (f->batch_x[i + 1] < BATCH_KNEE * f->batch_x[i]) {
			f->batch_at = i;
			break;
		}
	f->batch_lo = n ? batch_speedup(a, f->batch_k[f->batch_at], 1) : 0;
	return n && !(f->batch_lo > 0) ? -ENOMEM : 0;
}

/* The batch fix's range reaches down to what it gives if every kernel's
 * grid grew with the batch (kernels the replay keeps as the model's may
 * work on the batch after all). */
static void batch_range(const struct analysis *a, struct finding *f)
{
	double T = steady_untraced_ns(a), lo = f->batch_lo, saved;

	if (!(lo > 0) || !(T > 0))
		return;
	saved = T * (1 - 1 / (lo > 1 ? lo : 1));
	saved = saved < gain_limit_batch(a, finding_batch(f)) ? saved : gain_limit_batch(a, finding_batch(f));
	lo = T / (T - saved);
	if (lo < f->speedup_lo) {
		f->speedup_lo = lo > 1 ? lo : 1;
		f->least_saved_ns = T * (1 - 1 / f->speedup_lo);
		f->severity = gain_severity(a, f);
	}
	/* the host's work a step stays: per sample, k times at most */
	if (f->speedup_hi > finding_batch(f) && f->speedup <= finding_batch(f))
		f->speedup_hi = finding_batch(f);
}

/* A speed-up q = T / (T - saved) of a window that would hold x T more of
 * the work the fix removes: (T + x T) / (T - saved). */
static double stretched(double q, double x)
{
	return q * (1 + x);
}

/* The share of the activities' time the finding's own activity holds (the
 * fix removes every activity's: fix_of_finding). */
static double activity_share(const struct analysis *a, const struct finding *f)
{
	double all = 0;

	for (int k = 1; k < ACT_N; k++)
		if (a->act[k].wall_ns > 0 && a->act[k].idle_ns > 0)
			all += a->act[k].wall_ns;
	return all > 0 && f->activity < ACT_N ? a->act[f->activity].wall_ns / all : 0;
}

/* A periodic finding whose activity the window holds fewer times than its
 * rate over the job's iterations says (occ_expected, from its runs before
 * the first step kept or after the last): at that rate the window would
 * hold (r - 1) times more of the activity's time, r = expected / seen, all
 * of it saved. Each speed-up q becomes q + g (q - 1), g = (r - 1) x the
 * activity's share of what the fix removes, the figures those of that
 * share of the run: as much of the run as the activity takes at its rate. */
static void at_job_rate(const struct analysis *a, struct finding *f)
{
	double T = steady_untraced_ns(a), lim = gain_limit(a), g, q, lo, hi, saved, k;

	if (!(f->occ_expected > f->occurrences) || !f->occurrences || !(T > 0) ||
	    !(f->saved_ns > 0) || f->capped)
		return;
	g = (f->occ_expected / f->occurrences - 1) * activity_share(a, f);
	if (!(g > 0))
		return;
	q = stretched(f->speedup, g * (1 - 1 / f->speedup));
	lo = stretched(f->speedup_lo, g * (1 - 1 / f->speedup_lo));
	hi = stretched(f->speedup_hi, g * (1 - 1 / f->speedup_hi));
	saved = T * (1 - 1 / q);
	if (saved > lim) {
		saved = lim;
		f->capped = 1;
	}
	k = saved / f->saved_ns;
	f->rate_extra_ns = g * f->saved_ns;
	f->busy_ns *= k;
	f->idle_ns *= k;
	if (f->busy_ns > (double)a->busy_ns) /* no more of either than the window holds */
		f->busy_ns = (double)a->busy_ns;
	if (f->idle_ns > (double)a->idle_ns)
		f->idle_ns = (double)a->idle_ns;
	f->saved_ns = f->busy_ns + f->idle_ns;
	f->speedup = T / (T - f->saved_ns);
	f->speedup_lo = lo < f->speedup ? lo : f->speedup;
	f->speedup_hi = hi > f->speedup ? (hi < T / (T - lim) ? hi : T / (T - lim)) : f->speedup;
	f->least_saved_ns = T * (1 - 1 / f->speedup_lo);
	f->per_step_ns = has_steps(a) ? f->saved_ns / (double)has_steps(a) : 0;
	f->severity = gain_severity(a, f);
}

/* A periodic finding's work came n times in the window (or over the job's
 * iterations, where its rate came from them): at its true rate it might
 * have come once fewer or once more (the window cuts its period), so the
 * saving, the work's time per step, lies between (n - 1) / n and (n + 1) / n
 * of what was seen, and the range holds both ends. */
static void occurrence_range(const struct analysis *a, struct finding *f)
{
	double T = steady_untraced_ns(a), s = f->speedup, lim = gain_limit(a);
	double n = f->occ_expected > 0 ? a->act[f->activity].runs_whole : f->occurrences;

	if (!(T > 0) || !(s > 1) || !f->occurrences)
		return;
	double lo = 1 + (s - 1) * (n - 1) / n, hi = 1 + (s - 1) * (n + 1) / n;
	double hi_saved = T * (1 - 1 / hi);

	if (hi_saved > lim)
		hi = T / (T - lim);
	if (lo < f->speedup_lo)
		f->speedup_lo = lo;
	if (hi > f->speedup_hi)
		f->speedup_hi = hi;
	if (f->speedup_lo < 1.005 && f->confidence == CONF_HIGH)
		f->confidence = CONF_MEDIUM;
}

/* A part of a finding's fix replayed alone (x: against the window replayed
 * without gpuwhy's cost), as a speed-up of the run the gains are of, within
 * the gains' limit and at most the finding's own. */
static int replay_part(const struct analysis *a, const struct finding *f, const struct sim_fix *x, double *speedup)
{
	double T = steady_untraced_ns(a), lim = gain_limit(a), ratio, saved;
	struct sim_result r;

	if (simulate(a, x, &r) < 0)
		return -ENOMEM;
	ratio = r.T > 0 ? r.T / a->replay_base_ns : 1;
	saved = T * (1 - (ratio < 1 ? ratio : 1));
	saved = saved < lim ? saved : lim;
	*speedup = T / (T - saved);
	if (*speedup > f->speedup)
		*speedup = f->speedup;
	return 0;
}

/* C4's remedies differ in reach: a CUDA graph or compiled step takes every
 * launch gap away (the figures), a foreach or fused optimizer only the
 * optimizer's. Where the training thread spent OPTIM_SHARE or more of the
 * launch wait in an optimizer's step, that step's host time is replayed
 * away alone (its kernels stay, issued back to back) and the evidence says
 * what it gives. */
static int optimizer_part(const struct analysis *a, struct finding *f)
{
	double sited = 0, T = steady_untraced_ns(a);
	struct sim_fix x;

	for (int c = 0; c < SC_NCLASSES; c++)
		sited += a->site_class_ns[IDLE_LAUNCH_OVERHEAD][c];
	f->optim_share = sited > 0 ? a->site_optim_ns[IDLE_LAUNCH_OVERHEAD] / sited : 0;
	if (f->optim_share < OPTIM_SHARE || !(a->replay_base_ns > 0) || !(T > 0))
		return 0;
	memset(&x, 0, sizeof(x));
	x.optimizer = 1;
	if (replay_part(a, f, &x, &f->optim_x) < 0) /* a part of what the whole step's graph removes */
		return -ENOMEM;
	size_t l = strlen(f->evidence);

	snprintf(f->evidence + l, sizeof(f->evidence) - l,
		 " %.0f%% of the wait placed in the code came while the training thread was in an optimizer's "
		 "update: %s takes that part away alone, at most about %.2fx (replayed without the update's host "
		 "time, its kernels issued back to back); the figures are for the whole step in one graph.",
		 100 * f->optim_share,
		 a->framework == FW_JAX ? "the update inside the jitted step (jax.jit over the whole step)"
		 : a->framework == FW_TORCH ? "an optimizer that launches a few kernels for all parameters "
					      "(foreach=True, fused=True, or the step compiled)"
					    : "an update that launches a few kernels for all parameters",
		 f->optim_x);
	return 0;
}

/* C8's advice runs the matrix work in bf16 under autocast (the figures), or
 * at least allows TF32, a one-line change that keeps every tensor in FP32.
 * Where FP32 matrix kernels are the larger part of the matrix time (not
 * TF32 or FP64 ones) on a GPU with TF32 (Ampere on), they are replayed at
 * the TF32 rate alone (half the bf16 one), nothing else changed, and the
 * evidence says what that gives. */
static int tf32_part(const struct analysis *a, struct finding *f)
{
	const double *c = a->ops.class_ns;
	double T = steady_untraced_ns(a), kf = c8_speedup(a, KC_MATMUL_FP32);
	struct sim_fix x;

	f->tf32_x = 0;
	if (main_gpu_cc(a) < C8_TC_CC || !(kf > C8_SPEEDUP_TF32) || c[KC_MATMUL_FP32] <= c[KC_MATMUL_TF32] ||
	    c[KC_MATMUL_FP32] <= c[KC_MATMUL_FP64] || !(a->replay_base_ns > 0) || !(T > 0))
		return 0;
	memset(&x, 0, sizeof(x));
	x.scale[KC_MATMUL_FP32] = C8_SPEEDUP_TF32 / kf;
	if (replay_part(a, f, &x, &f->tf32_x) < 0) /* a part of what bf16 gives */
		return -ENOMEM;
	size_t l = strlen(f->evidence);

	snprintf(f->evidence + l, sizeof(f->evidence) - l,
		 " Allowing TF32 alone (%s), every tensor left in FP32, runs these matrix kernels on the "
		 "tensor cores at half the bf16 rate: about %.2fx (replayed); the figures are for bf16.",
		 a->framework == FW_JAX ? TF32_SETTING_JAX
		 : a->framework == FW_CUPY ? TF32_SETTING_CUPY
		 : a->framework == FW_TORCH ? TF32_SETTING_TORCH
					    : "TF32 math mode in cuBLAS",
		 f->tf32_x);
	return 0;
}

/* A finding that claims idle time alone, whose replayed saving is more
 * than that idle by BEYOND_OWN_PTS points of the run or more: its evidence
 * says where the rest comes from, so that its title's share and its gain
 * do not read as a contradiction. With the fix applied in the replay the
 * host issues what follows sooner (its work taken off, its waits gone), and
 * gaps counted under other causes (launch gaps after it) shrink too. */
static void beyond_own_idle(const struct analysis *a, struct finding *f)
{
	/* shares of the steady window, as the title's and JSON's saved_pct;
	 * its own idle as the report's split shows it: its causes' whole idle,
	 * not the part of it its gain was bounded to (a figure the report does
	 * not print, which read as a contradiction beside the split's) */
	double T = (double)a->steady_ns, own = 0;

	for (int c = 0; c < IDLE_NCAUSES; c++)
		if (f->claim.idle_causes & IDLE_BIT(c))
			own += (double)a->idle_by_cause[c];

	if (!(T > 0) || f->claim.busy_ns > 0 || !(own > 0) || f->capped ||
	    100 * (f->saved_ns - own) / T < BEYOND_OWN_PTS)
		return;
	size_t l = strlen(f->evidence);

	snprintf(f->evidence + l, sizeof(f->evidence) - l,
		 " Its gain, %.0f%% of the run, is more than the %.0f%% idle counted under it: in the replay, "
		 "with this fixed, the training thread issues what follows sooner, so idle counted under other "
		 "causes shrinks with it.",
		 100 * f->saved_ns / T, 100 * own / T);
}

void replay_gains(struct analysis *a)
{
	double t0 = replay_cpu_now();
	struct depgraph *g = a->graph;
	struct sim_fix none, x;
	struct sim_result base;
	struct replayed p;

	a->replay_used = 0;
	if (!replay_available(a))
		return;
	memset(&none, 0, sizeof(none));
	if (simulate(a, &none, &base) < 0 || !(base.T > 0)) {
		analysis_nomem(a, "replaying the steady window");
		return;
	}
	a->replay_base_ns = base.T;
	a->replay_base_hi_ns = 0;
	none.keep_trace = 1; /* gpuwhy's cost kept (the range's near end), compiling out */
	if (simulate(a, &none, &base) < 0) {
		analysis_nomem(a, "replaying the steady window");
		return;
	}
	a->replay_base0_ns = base.T;
	none.keep_trace = 0;
	if (a->trace_cost_ns > 0) {
		none.trace_scale = trace_high_scale();
		if (simulate(a, &none, &base) < 0) {
			analysis_nomem(a, "replaying the steady window");
			return;
		}
		a->replay_base_hi_ns = base.T;
	}
	for (size_t i = 0; i < a->findings.n; i++) {
		struct finding *f = &a->findings.v[i];

		if (!f->assessed || !f->title[0])
			continue;
		if (is(f, "C3") && batch_curve(a, f) < 0) {
			analysis_nomem(a, "replaying the steady window");
			return;
		}
		if (!fix_of_finding(a, f, &x))
			continue;
		if (replay_fix(a, &x, &p) < 0) {
			analysis_nomem(a, "replaying the steady window");
			return;
		}
		set_replayed(a, f, &p, x.uncertainty + g->err, x.rate, x.batch);
		if (!f->replayed)
			continue;
		if (x.batch > 1)
			batch_range(a, f);
		at_job_rate(a, f);
		occurrence_range(a, f);
		if (x.batch <= 1)
			beyond_own_idle(a, f);
		if ((is(f, "C4") && optimizer_part(a, f) < 0) || (is(f, "C8") && tf32_part(a, f) < 0)) {
			analysis_nomem(a, "replaying the steady window");
			return;
		}
	}
	a->replay_used = 1;
	a->replay_uncertain = g->err > REPLAY_UNCERTAIN;
	a->replay = (struct replay_facts){ g->recorded_ns, g->replayed_ns, g->err, g->pace_ns, g->ops.n,
					   g->waits.n, g->build_cpu_ns + replay_cpu_now() - t0,
					   (double)g->blocking_ns, (double)g->blocking_copies_ns };
}

/* A finding whose cause keeps other findings' fixes from working (syncs
 * inside the model: no CUDA graph, compiled graphs broken at each) gains
 * little alone where the host's launching, not its waits, sets the pace;
 * what it is worth is what it lets those fixes do: its fix and theirs
 * replayed together, said beside its own gain (docs/RULES.md section 4). */
void replay_unblocked(struct analysis *a)
{
	for (size_t i = 0; a->replay_used && i < a->findings.n; i++) {
		struct finding *f = &a->findings.v[i];
		struct sim_fix both, x;
		struct replayed r;
		const char *first = NULL;

		f->unblock_x = f->unblock_lo = f->unblock_hi = 0;
		f->unblock_cause = NULL;
		if (!f->replayed || !f->blocks[0] || f->severity < SEV_WARN || a->too_little ||
		    !fix_of_finding(a, f, &both))
			continue;
		for (size_t k = 0; k < a->findings.n; k++) {
			const struct finding *g = &a->findings.v[k];

			if (k == i || !g->replayed || g->severity < SEV_WARN || !finding_blocks(f, g->cause) ||
			    !fix_of_finding(a, g, &x))
				continue;
			sim_fix_merge(&both, &x);
			first = first ? first : g->cause;
		}
		if (!first)
			continue;
		if (replay_fix(a, &both, &r) < 0) {
			analysis_nomem(a, "replaying the steady window");
			return;
		}
		struct finding c;

		memset(&c, 0, sizeof(c));
		set_replayed(a, &c, &r, both.uncertainty + a->graph->err, both.rate, both.batch);
		if (!c.replayed || c.speedup <= f->speedup)
			continue;
		f->unblock_x = c.speedup;
		f->unblock_lo = c.speedup_lo;
		f->unblock_hi = c.speedup_hi;
		f->unblock_cause = first;
		size_t l = strlen(f->evidence);

		snprintf(f->evidence + l, sizeof(f->evidence) - l,
			 " With them gone, the fix of %s can work: the two replayed together, about %.2fx "
			 "(%.2fx-%.2fx).", first, c.speedup, c.speedup_lo, c.speedup_hi);
	}
}

/* 1 if cause is one of the comma list's names. */
static int named(const char *list, const char *cause)
{
	size_t n = strlen(cause);

	for (const char *p = list; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
		if (!strncmp(p, cause, n) && (p[n] == ',' || !p[n]))
			return 1;
	return 0;
}

/* Every warning-or-above finding's fix at once, or every fix of the
 * findings named in `only` (report --fixes): one replay. A fix that keeps a
 * throughput of its own (loader workers) may bind harder than the others'
 * result: the combination without such fixes is replayed too, and the
 * faster of the two kept, never slower than the best fix alone (a user
 * applies the fixes that help). */
static void combine(struct analysis *a, const char *only)
{
	double t0 = replay_cpu_now();

	struct sim_fix x, all, nofloor;
	struct replayed r, r2;
	const struct finding *best = NULL;
	int floors = 0, merged = 0;

	memset(&all, 0, sizeof(all));
	memset(&nofloor, 0, sizeof(nofloor));
	for (size_t i = 0; i < a->findings.n; i++) {
		struct finding *f = &a->findings.v[i];

		f->in_combined = 0;
		if (!f->replayed || (only ? !named(only, f->cause) : f->severity < SEV_WARN) ||
		    !fix_of_finding(a, f, &x))
			continue;
		f->in_combined = 1;
		sim_fix_merge(&all, &x);
		if (x.floor_step_ns > 0)
			floors = 1;
		else
			sim_fix_merge(&nofloor, &x);
		if (!best || f->saved_ns > best->saved_ns)
			best = f;
		merged++;
	}
	a->combined_replayed = 1;
	a->combined_saved_ns = a->combined_speedup = a->combined_lo = a->combined_hi = 0;
	a->combined_capped = 0;
	a->combined_batch = 0;
	if (!merged)
		return;
	if (replay_fix(a, &all, &r) < 0 || (floors && replay_fix(a, &nofloor, &r2) < 0)) {
		analysis_nomem(a, "replaying the steady window");
		return;
	}
	double u = all.uncertainty;
	int rate = all.rate;

	if (floors && r2.Tf < r.Tf) {
		r = r2;
		u = nofloor.uncertainty;
		rate = nofloor.rate;
	}
	struct finding c;
	double extra = 0, T = steady_untraced_ns(a);

	memset(&c, 0, sizeof(c));
	set_replayed(a, &c, &r, u + a->graph->err, rate, all.batch);
	/* the periodic activities at their rate over the job's iterations, as
	 * in their own figures (at_job_rate) */
	for (size_t i = 0; i < a->findings.n; i++)
		if (a->findings.v[i].in_combined)
			extra += a->findings.v[i].rate_extra_ns;
	if (extra > 0 && T > 0 && c.speedup > 1 && !c.capped) {
		double lim = T / (T - gain_limit(a));

		c.speedup = stretched(c.speedup, extra / T);
		c.speedup_lo = stretched(c.speedup_lo, extra / T);
		c.speedup_hi = stretched(c.speedup_hi, extra / T);
		c.capped = c.speedup >= lim;
		c.speedup = c.speedup < lim ? c.speedup : lim;
		c.speedup_lo = c.speedup_lo < c.speedup ? c.speedup_lo : c.speedup;
		c.speedup_hi = c.speedup_hi < lim ? c.speedup_hi : lim;
		c.saved_ns = T * (1 - 1 / c.speedup);
	}
	/* one fix: its own figures, which hold what its finding's replay adds
	 * (the activity at the job's rate, the optimizer's part) */
	int from_best = best && (best->saved_ns > c.saved_ns || merged == 1);

	if (from_best)
		c = *best;
	a->combined_saved_ns = c.saved_ns;
	a->combined_speedup = c.speedup;
	a->combined_lo = c.speedup_lo;
	a->combined_hi = c.speedup_hi;
	a->combined_capped = c.capped;
	a->combined_batch = from_best ? finding_batch(best) : all.batch > 1 ? all.batch : 0;
	a->replay.cpu_ns += replay_cpu_now() - t0;
}

void replay_combined(struct analysis *a)
{
	a->combined_chosen = 0;
	combine(a, NULL);
}

int analysis_combine(struct analysis *a, const char *causes, char *err, size_t len)
{
	if (!a->replay_used) {
		snprintf(err, len, "--fixes: this report has no replayed gains to combine (its window could not be "
			 "replayed: report -v says why)");
		return -EINVAL;
	}
	/* every name must be a replayed finding of this report */
	for (const char *p = causes; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL) {
		size_t n = strcspn(p, ",");
		int found = 0;

		for (size_t i = 0; i < a->findings.n && !found; i++)
			found = a->findings.v[i].replayed && strlen(a->findings.v[i].cause) == n &&
				!strncmp(a->findings.v[i].cause, p, n);
		if (!found) {
			char have[256] = "";
			size_t used = 0;

			for (size_t i = 0; i < a->findings.n && used < sizeof(have); i++)
				if (a->findings.v[i].replayed) {
					int k = snprintf(have + used, sizeof(have) - used, "%s%s", used ? ", " : "",
							 a->findings.v[i].cause);

					used += k > 0 ? (size_t)k : 0;
				}
			snprintf(err, len, "--fixes %.*s: no finding of this report with a replayed gain has that cause "
				 "(%s%s)", (int)n, p, used ? "its findings with one: " : "none has one",
				 used ? have : "");
			return -EINVAL;
		}
	}
	combine(a, causes);
	a->combined_chosen = 1;
	return a->err_msg[0] ? -ENOMEM : 0;
}
