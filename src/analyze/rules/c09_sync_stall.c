/* C9: host synchronizations (.item(), prints, host checks) drain the queue. */
#include "rule.h"

RULE(sync_stall, "C9.sync-stall", "C9", NEED_TIMELINE, 20, ADV_C9_SYNC);

/* The main process's synchronizing calls in the steady window. */
struct sync_calls {
	uint64_t syncs, frees;
	double host_wait, alloc; /* the training thread inside them; in allocations */
	int waits;               /* host-call records: host_wait is known */
	/* its syncs and device-to-host copies made inside a module's forward or
	 * compiled code (a .item() is one of each: the larger count is the
	 * number of places), but for the library checks torch.compile skips */
	uint64_t in_model_syncs, in_model_copies;
};

static void scan_calls(const struct analysis *a, struct sync_calls *k)
{
	const struct trace *t = a->t;
	uint64_t syncs = 0, frees = 0, in_model_syncs = 0, in_model_copies = 0;
	double host_wait = 0, alloc = 0;
	int waits = 0;

	for (size_t i = 0; i < t->calls.n; i++) {
		const struct host_call *c = &t->calls.v[i];

		if (c->pid != a->main_pid || c->end <= a->t0 || c->start >= a->t1)
			continue;
		syncs += c->cls == HC_SYNC && c->start >= a->t0 && c->end <= a->t1;
		/* frees synchronize too (names.c): counted apart, they name the habit */
		frees += c->cls == HC_SYNC && c->start >= a->t0 && c->end <= a->t1 && c->name < t->names.n &&
			 strstr(t->names.v[c->name], "Free");
		/* the training thread blocked in a sync or a (possibly blocking) copy,
		 * in traced time (duty cycling leaves the rest out of every figure) */
		if (c->tid == a->main_tid && c->py_stack && c->start >= a->t0 && c->end <= a->t1 &&
		    (c->cls == HC_SYNC || (c->cls == HC_MEMCPY && c->copy_dir == COPY_DTOH)) &&
		    (sites_stack_has(a, c->py_stack, "torch/nn/modules/module.py") ||
		     sites_stack_has(a, c->py_stack, "torch/_dynamo/")) &&
		    !sites_sync_compile_skips(a, c->py_stack)) {
			in_model_syncs += c->cls == HC_SYNC;
			in_model_copies += c->cls == HC_MEMCPY;
		}
		if (c->tid == a->main_tid && (c->cls == HC_SYNC || c->cls == HC_MEMCPY) &&
		    traced(a, c->start, c->end)) {
			uint64_t s = c->start > a->t0 ? c->start : a->t0, e = c->end < a->t1 ? c->end : a->t1;

			host_wait += (double)(e - s);
			waits = 1;
		}
		/* allocations of the training thread: after a free, the memory is
		 * allocated again (cudaMalloc), host work the frees cause */
		if (c->tid == a->main_tid && c->cls == HC_ALLOC && traced(a, c->start, c->end)) {
			uint64_t s = c->start > a->t0 ? c->start : a->t0, e = c->end < a->t1 ? c->end : a->t1;

			if (e > s)
				alloc += (double)(e - s);
		}
	}
	*k = (struct sync_calls){ syncs, frees, host_wait, alloc, waits, in_model_syncs, in_model_copies };
}

/* The GPU work between two reads that is only elementwise work and
 * reductions feeds the next read (depgraph.c): a statistic per tensor, a
 * norm per parameter. Read every N steps, it is computed every N steps,
 * and the replayed gain takes it out with the reads. */
static void read_work_note(const struct analysis *a, struct finding *f, double steps)
{
	char b1[32];

	if (replay_available(a) && a->graph->read_work_ns >= READ_WORK_SHOWN * (double)a->busy_ns)
		ADDF(f->evidence, " Between one read and the next the GPU ran only elementwise work and "
		     "reductions, %s per step (%.0f operations, reads included): they compute the values "
		     "read, so read every N steps they run every N steps too (counted in the gain; kept "
		     "on the GPU every step, they stay).",
		     fmt_ns(b1, sizeof(b1), a->graph->read_work_ns / steps), (double)a->graph->read_work_n / steps);
}

/* Syncs inside the model, or two reads a step or more, keep CUDA graphs
 * and torch.compile (the launch-bound fixes) from working whole: the
 * finding says so and is ranked before them. */
static void blocks_note(const struct analysis *a, struct finding *f, const struct sync_calls *k, double steps)
{
	uint64_t in_model;

	/* Inside the model (a boolean mask's nonzero, `if x.any():` in a
	 * forward, a guard in a compiled block) every step: CUDA graphs cannot
	 * capture a step that synchronizes, and torch.compile breaks its graph
	 * there, so the launch-bound findings' fixes wait for these. */
	in_model = k->in_model_syncs > k->in_model_copies ? k->in_model_syncs : k->in_model_copies;
	if (has_steps(a) && in_model >= has_steps(a)) {
		f->blocks[0] = "C4";
		f->blocks[1] = "C10";
		ADDF(f->evidence, " %.1f of them per step are made inside the model (a module's forward "
		     "or compiled code: data-dependent shapes, Python control flow on GPU values): CUDA "
		     "graphs cannot capture a step that synchronizes and torch.compile breaks its graph "
		     "at each, so they also keep a launch-bound fix from working: fix them first.",
		     (double)in_model / steps);
	} else if (has_steps(a) && a->sync_read_gaps >= 2 * has_steps(a)) {
		/* Two reads a step or more (a solver's step sizes as Python
		 * floats): a capture can run from one read to the next, so one
		 * read a step leaves the whole step to a CUDA graph, but two
		 * split it wherever it starts. An allocator's frees do not count
		 * (c9_torch_empty_cache: CUDA graphs measured 4.3x with them in
		 * the loop). */
		f->blocks[0] = "C4";
		f->blocks[1] = "C10";
		ADDF(f->evidence, " The GPU waits on %.1f reads per step: a CUDA graph cannot hold a "
		     "read from the GPU, so they split the step into separate captures with the host's "
		     "wait between them, and they keep a launch-bound fix from working whole: fix "
		     "them first.", (double)a->sync_read_gaps / steps);
	}
}

static void sync_stall_eval(struct analysis *a, struct finding *f)
{
	double idle = (double)a->idle_by_cause[IDLE_SYNC];
	uint64_t gaps = a->gaps_by_cause[IDLE_SYNC], small_dtoh;
	struct sync_calls k;
	char b1[32], b2[32];

	if (pct(a, idle) < C9_MIN_PCT)
		return;
	scan_calls(a, &k);
	uint64_t syncs = k.syncs, frees = k.frees;
	double host_wait = k.host_wait, alloc = k.alloc;
	int waits = k.waits;

	small_dtoh = a->ops.small_dtoh;
	double steps = has_steps(a) ? (double)has_steps(a) : 1;

	/* A sync serializes the host's work after it with the GPU's work before it;
	 * removing it overlaps them again, which saves at most the smaller part,
	 * and never more than the training thread spent waiting: its own work
	 * (Python, data, launches) still has to fit in the step. Without host-call
	 * records (another tool held CUPTI) that last bound is unknown. */
	/* Where the training thread computed a metric on the host after the
	 * synchronization (sklearn, scipy, torchmetrics on CPU tensors) or
	 * logged, that work is the activity the user changes: done every N
	 * steps or on the GPU, it goes away with its wait, so its idle is saved
	 * whole; the bounds hold for the rest. */
	const double *cls = a->site_class_ns[IDLE_SYNC];
	/* numeric code and the user's own code on the values read, in gaps
	 * that send nothing back to the GPU, in the function that read them at
	 * the read's line or after (a numpy top-k of a score matrix): the GPU's
	 * results processed on the host, the same activity (sites.c). The next
	 * step's own CPU work, or work that ends in a host-to-device copy (the
	 * next input: C1's), stays. */
	double post = a->py_thread_samples ? a->site_sync_post_ns : 0;
	double logged = cls[SC_METRIC] + cls[SC_LOG];

	logged = a->py_thread_samples ? logged : 0;
	double host_metric = logged + post;
	int metric = host_metric >= 0.5 * idle;
	int processing = metric && post > logged; /* results processed more than logged */

	if (host_metric > idle)
		host_metric = idle;
	double rest = idle - host_metric;
	double saved = rest < (double)a->busy_ns ? rest : (double)a->busy_ns;
	unsigned causes = IDLE_BIT(IDLE_SYNC);

	/* frees every step: the allocations that follow them go with the
	 * syncs (the bounded gain, the evidence and the replay's fix alike) */
	f->allocs_again = frees && frees >= has_steps(a) && alloc > 0;
	if (waits) {
		/* With the syncs gone the host runs ahead of the GPU, so a step
		 * takes what the slower side needs: the GPU's work, or the host's
		 * own (the run less its waits). That overlap also hides the launch
		 * gaps the drained queue left after each sync (C4's idle, drawn on
		 * after the sync idle: C9 settles first). */
		double removed = host_wait + (f->allocs_again ? alloc : 0);
		double T = steady_untraced_ns(a), H = T > removed ? T - removed : 0;
		double after = (double)a->busy_ns > H ? (double)a->busy_ns : H;
		double overlap = T > after ? T - after : 0, launch = launch_idle_untraced(a);

		saved = overlap < rest + launch ? overlap : rest + launch;
		if (saved > rest)
			causes |= IDLE_BIT(IDLE_LAUNCH_OVERHEAD);
	}
	saved += host_metric;
	/* a host metric is done every N steps: its host work goes with the syncs */
	finding_set_gain(a, f, &(struct gain){ .idle_causes = causes, .idle_ns = saved,
					    .host_classes = metric ? 1u << SC_METRIC | 1u << SC_HOSTCALC |
									 1u << SC_CALLBACK | 1u << SC_LOG
								   : 0 });

	/* most of that work in a host callback of the compiled step */
	int callback = processing && a->site_callback_ns >= 0.5 * post;

	snprintf(f->title, sizeof(f->title),
		 callback     ? "A host callback in the step makes the GPU wait for Python: %.0f%% of the run"
		 : processing ? "The host processes GPU results while the GPU waits: %.0f%% of the run"
		 : metric   ? "Host-side metrics and logging of GPU values stall the GPU: %.0f%% of the run"
			    : "Host synchronizations stall the GPU: %.0f%% of the run",
		 pct(a, idle));
	if (callback)
		snprintf(f->evidence, sizeof(f->evidence),
			 "The GPU waited %s per step (%.1f waits) for host callbacks of the compiled step "
			 "(jax.pure_callback, io_callback, jax.debug.print: their operands copied to the "
			 "host, their answers copied back): the training thread was in them, or in the "
			 "step's run waiting for them, %s per step (the sites below).",
			 fmt_ns(b1, sizeof(b1), idle / steps), (double)(syncs ? syncs : gaps) / steps,
			 fmt_ns(b2, sizeof(b2), a->site_callback_ns / steps));
	else
		snprintf(f->evidence, sizeof(f->evidence),
			 "%.1f synchronizations per step, each followed by %s of GPU idle while the host "
			 "queued new work; %.1f small device-to-host copies (<= %u KiB) per step, the "
			 "signature of %s.",
			 (double)(syncs ? syncs : gaps) / steps, fmt_ns(b1, sizeof(b1), gaps ? idle / (double)gaps : 0),
			 (double)small_dtoh / steps, SMALL_COPY_BYTES >> 10,
			 a->framework == FW_TORCH ? ".item(), print(tensor) or a host-side check on a GPU value"
			 : a->framework == FW_JAX ? "float(x), x.item() or a host-side check on a device array"
						  : "reading a GPU value on the host (a scalar, a check, a print)");
	if (frees)
		ADDF(f->evidence, " %.1f of the synchronizations per step free device or pinned memory "
		     "(cudaFree, cudaFreeHost: %s), which waits for the whole GPU; the memory is then "
		     "allocated again.",
		     (double)frees / steps,
		     a->framework == FW_TORCH ? "torch.cuda.empty_cache() in the loop, or a caching "
						"allocator that cannot hold the step's memory"
					      : "memory freed and allocated every step");
	if (f->allocs_again)
		ADDF(f->evidence, " Allocating it again took the training thread %s per step (cudaMalloc), "
		     "counted with the syncs' saving.", fmt_ns(b1, sizeof(b1), alloc / steps));
	if (waits) {
		char b3[32];
		size_t len = strlen(f->evidence);

		snprintf(f->evidence + len, sizeof(f->evidence) - len,
			 " The training thread waited %s per step inside synchronizing calls and "
			 "worked %s per step itself: with the syncs gone its work overlaps the GPU's, "
			 "so a step takes at least that long.",
			 fmt_ns(b2, sizeof(b2), host_wait / steps),
			 fmt_ns(b3, sizeof(b3), ((double)a->steady_ns - host_wait) / steps));
	}
	read_work_note(a, f, steps);
	if (!callback) /* a JAX step's callbacks: no CUDA graph or compile to keep from working */
		blocks_note(a, f, &k, steps);
	if (processing && !callback)
		ADDF(f->evidence, " After them the training thread worked on the values it read for %s "
		     "per step (numeric, its own code or framework ops on CPU tensors, sending nothing "
		     "back to the GPU: the sites below), while the GPU had nothing queued.",
		     fmt_ns(b1, sizeof(b1), post / steps));
	SET_FIX(a, f, processing ? ADV_C9_POST : ADV_C9_SYNC);
	f->confidence = CONF_HIGH;
}
