/* C14: periodic stalls: every N steps one step runs long (validation,
 * checkpoints), and checkpoint / file writes: threads in state D while the
 * job wrote to storage (attribute.c's file_writes idle). */
#include "rule.h"

RULE(periodic, "C14.periodic-stall", "C14", 0, 80, ADV_C14_PERIODIC);

/* Median of the steps that do not run long, of one of their figures. */
static double normal_median(struct analysis *a, int what)
{
	double *x = malloc(a->steps.n * sizeof(*x)), m;
	size_t n = 0;

	if (!x) {
		if (a->steps.n)
			analysis_nomem(a, "measuring periodic steps");
		return 0;
	}
	for (size_t i = 0; i < a->steps.n; i++) {
		const struct step *s = &a->steps.v[i];

		if (!s->periodic)
			x[n++] = what == 0 ? (double)s->idle_ns : what == 1 ? (double)s->busy_ns : (double)s->nops;
	}
	m = quantile(x, n, 0.5);
	free(x);
	return m;
}

/* What the activities claim: the idle during each (its gaps, all moved to
 * the periodic cause) and the GPU's work while it ran (its copies, its
 * evaluation kernels), from the training thread's time in it. */
struct act_claim {
	double idle[ACT_N], busy[ACT_N], total;
	enum activity top;
	size_t free_steps; /* steps without any activity: the busy part's baseline */
};

static double median_busy_without(struct analysis *a, size_t *n)
{
	double *x = malloc((a->steps.n + 1) * sizeof(*x)), m;

	*n = 0;
	if (!x) {
		analysis_nomem(a, "measuring the activities");
		return 0;
	}
	for (size_t i = 0; i < a->steps.n; i++)
		if (!a->steps.v[i].acts)
			x[(*n)++] = (double)a->steps.v[i].busy_ns;
	m = quantile(x, *n, 0.5);
	free(x);
	return m;
}

/* The GPU work an activity adds: in the steps it ran in, the busy time
 * beyond a step without any activity (the median). Not the GPU's busy time
 * while the thread was in it: the first wait of an evaluation pass or of a
 * state dict's copy also waits for the training work queued before it. With
 * fewer than 3 steps free of activities, no busy part: the idle alone, a
 * floor. */
static struct act_claim activity_claims(struct analysis *a)
{
	struct act_claim c = { .top = ACT_NONE };
	size_t nfree = 0;
	double busy0 = has_steps(a) ? median_busy_without(a, &nfree) : 0;

	c.free_steps = nfree;
	/* No steps free of activities (the repeating unit holds them, or every
	 * step does): the GPU's work while the thread was in each, less one
	 * median step's work a run for what was queued before it began */
	for (int k = 1; nfree < C14_FREE_STEPS && k < ACT_N; k++) {
		const struct activity_stat *s = &a->act[k];
		double busy = s->wall_ns - s->idle_ns, tail = s->runs * (has_steps(a) ? (double)a->busy_ns / (double)has_steps(a) : 0);

		c.busy[k] = busy > tail ? busy - tail : 0;
	}
	for (size_t i = 0; nfree >= C14_FREE_STEPS && i < a->steps.n; i++) {
		const struct step *s = &a->steps.v[i];
		/* a step with both: the checkpoint's (the rarer, the heavier) */
		int k = s->acts & (1u << ACT_CHECKPOINT) ? ACT_CHECKPOINT : s->acts & (1u << ACT_EVAL) ? ACT_EVAL : 0;

		/* where it runs in most steps, the steps are its own (evaluation
		 * batches found as the step): their work is its work whole; else
		 * what it adds to a normal step */
		if (k && 2 * (size_t)a->act[k].steps > a->steps.n)
			c.busy[k] += (double)s->busy_ns;
		else if (k && (double)s->busy_ns > busy0)
			c.busy[k] += (double)s->busy_ns - busy0;
	}
	for (int k = 1; k < ACT_N; k++) {
		const struct activity_stat *s = &a->act[k];

		c.idle[k] = s->idle_ns;
		c.total += c.idle[k] + c.busy[k];
		if (c.idle[k] + c.busy[k] > (c.top ? c.idle[c.top] + c.busy[c.top] : 0))
			c.top = (enum activity)k;
	}
	return c;
}

/* What a snapshot's fix keeps: its bytes at the pinned rate (the link's
 * practical bandwidth, else C6_PINNED_RATIO times the rate they ran at) and
 * the host's time per operation for each copy call, none of it assumed
 * hidden: the next update waits for the copies. */
static double snapshot_kept_ns(const struct analysis *a)
{
	const struct op_stats *s = &a->ops;
	double link = main_gpu_link_gbs(a), rate = link > 0 ? link : 0; /* GB/s = bytes per ns */

	if (!(rate > 0) && s->ckpt_copy_ns > 0)
		rate = C6_PINNED_RATIO * s->ckpt_copy_bytes / s->ckpt_copy_ns;
	double bytes = rate > 0 ? s->ckpt_copy_bytes / rate : 0;
	double host = a->graph ? (double)s->ckpt_copies * a->graph->pace_ns : 0;

	return bytes + host;
}

static const char *act_where(const struct analysis *a, enum activity k, char *buf, size_t len)
{
	const struct activity_stat *s = &a->act[k];
	const char *fn = s->func < a->t->names.n ? a->t->names.v[s->func] : "?";
	/* the line to change: its call, else its own line or file */
	int called = s->call_file && s->call_file < a->t->names.n;
	const char *file = called ? a->t->names.v[s->call_file] : s->file < a->t->names.n ? a->t->names.v[s->file] : "";
	const char *slash = strrchr(file, '/'), *base = slash ? slash + 1 : file;
	unsigned line = called ? s->call_line : s->line;

	if (!s->func)
		return "";
	if (called)
		snprintf(buf, len, " in %s, called at %s:%u", fn, base, line);
	else if (line)
		snprintf(buf, len, " in %s (%s:%u)", fn, base, line);
	else
		snprintf(buf, len, " in %s (%s)", fn, base);
	return buf;
}

/* How many times an activity came: its runs (samples 20 ms or more apart
 * start a new one), but no more than the steps it fell in: a call the
 * sampler saw no Python in (os.fsync) splits one checkpoint in two runs. */
static unsigned act_times(const struct activity_stat *t)
{
	return t->steps && t->steps < t->runs ? t->steps : t->runs;
}

#define C14_FEW_TIMES 2 /* seen this many times or fewer: the evidence says its rate is uncertain */

/* How many times the periodic work came in the window: its rate, and so its
 * gain, is known to within one occurrence (the replay's range includes it,
 * fixes.c); with few of them the evidence says so. */
static void set_occurrences(const struct analysis *a, struct finding *f, unsigned n)
{
	const struct activity_stat *t = f->activity ? &a->act[f->activity] : NULL;
	/* its runs outside the window give its period: at that rate, how many
	 * times it comes in the window's steps */
	double e = t && n && t->runs_out && t->period > 0 ? (double)has_steps(a) / t->period : 0;

	f->occurrences = n;
	f->occ_expected = 0;
	if (e > n) { /* the window cut its period */
		char seen[32];

		snprintf(seen, sizeof(seen), n == 1 ? "once" : n == 2 ? "twice" : "%u times", n);
		f->occ_expected = e;
		ADDF(f->evidence, " It came %s in the %zu steps recorded, and every %.3g iterations over the "
		     "job's %llu (%u times, %u of them before the first step kept or after the last): at "
		     "that rate about %.1f times in those steps, which the gain counts; its range holds "
		     "one time fewer or more over the iterations.",
		     seen, has_steps(a), t->period, (unsigned long long)a->step_iterations, t->runs_whole,
		     t->runs_out, e);
		return;
	}
	if (n && n <= C14_FEW_TIMES && has_steps(a))
		ADDF(f->evidence, " It came %s in the %zu steps recorded: how often it comes is known only "
		     "to within one time (%s), and the gain's range says so; a longer recording (gpuwhy "
		     "record --duration) narrows it.", n == 1 ? "once" : "twice", has_steps(a),
		     n == 1 ? "from not again to twice as often" : "from half to one and a half times as often");
}

static void activity_finding(struct analysis *a, struct finding *f, const struct act_claim *ac,
			     double writes_apart)
{
	double idle = writes_apart, busy = 0;
	enum activity top = ac->top;
	char w[192], b1[32], b2[32];
	size_t n = has_steps(a);

	const struct activity_stat *t = &a->act[top];

	f->activity = (uint8_t)top;
	/* a checkpoint found by its copies alone: a snapshot to host memory,
	 * whose fix still copies the bytes (pinned, on a side stream) */
	int copied = top == ACT_CHECKPOINT && t->copies && !t->serializes && pct(a, writes_apart) < 0.5;
	/* ... or host work on the state it copies (statistics of every weight,
	 * logging): the fix does it less often or on the GPU, whole */
	int stats = copied && t->processes, snapshot = copied && !stats;
	/* ... or images, plots or sounds written out (samples every N steps):
	 * output, not a checkpoint */
	int outputs = top == ACT_CHECKPOINT && !copied && t->output_ns >= 0.5 * t->wall_ns;
	double kept = snapshot ? snapshot_kept_ns(a) : 0;

	for (int k = 1; k < ACT_N; k++) {
		idle += ac->idle[k];
		busy += ac->busy[k];
	}
	finding_set_gain(a, f, &(struct gain){ .idle_causes = IDLE_BIT(IDLE_PERIODIC) | IDLE_BIT(IDLE_WRITE),
					    .idle_ns = idle, .busy_set = BUSY_ALL,
					    .busy_ns = busy > kept ? busy - kept : 0, .busy_of_ns = busy,
					    .kept_ns = kept });

	char often[64] = "";

	if (n && act_times(t) > 1)
		snprintf(often, sizeof(often), " %u times in the %zu steps recorded", act_times(t), n);
	else if (n && act_times(t) == 1)
		snprintf(often, sizeof(often), " once in the %zu steps recorded", n);
	snprintf(f->title, sizeof(f->title), "%s%s%s: %.0f%% of the run",
		 top == ACT_EVAL ? "Evaluation inside the training loop"
		 : snapshot      ? "State copied to host memory"
		 : stats         ? "Host computation on copies of the model's state"
		 : outputs       ? "Images or plots written to files"
				 : "Checkpointing",
		 often,
		 act_where(a, top, w, sizeof(w)), pct(a, ac->idle[top] + ac->busy[top]));
	f->evidence[0] = 0;
	for (int k = 1; k < ACT_N; k++) {
		const struct activity_stat *s = &a->act[k];

		if (s->wall_ns <= 0)
			continue;
		ADDF(f->evidence, "%s%s%s: the training thread spent %s in it (%.0f%% of the run",
		     f->evidence[0] ? " " : "",
		     k == ACT_EVAL ? "Evaluation"
		     : snapshot    ? "The snapshot"
		     : stats       ? "The host computation"
		     : outputs     ? "Writing images or plots"
				   : "Checkpointing",
		     act_where(a, (enum activity)k, w, sizeof(w)), fmt_ns(b1, sizeof(b1), s->wall_ns),
		     pct(a, s->wall_ns));
		if (n)
			ADDF(f->evidence, ", %u time%s, in %u of %zu steps", act_times(s), act_times(s) == 1 ? "" : "s",
			     s->steps, n);
		ADDF(f->evidence, "); the GPU idled %s meanwhile (%.0f%% of the run: every gap it covers, "
		     "whatever the mechanism, synchronizations, copies and file writes included)",
		     fmt_ns(b2, sizeof(b2), ac->idle[k]), pct(a, ac->idle[k]));
		if (ac->busy[k] > 0 && ac->free_steps >= C14_FREE_STEPS)
			ADDF(f->evidence, " and worked %s more in its steps than in a step without it.",
			     fmt_ns(b1, sizeof(b1), ac->busy[k]));
		else if (ac->busy[k] > 0)
			ADDF(f->evidence, " and worked about %s for it (its time less the idle, less a step's "
			     "work a run for what was queued before it: too few steps without it to compare).",
			     fmt_ns(b1, sizeof(b1), ac->busy[k]));
		else if (replay_available(a)) /* the replay drops the work issued in it */
			ADDF(f->evidence, "; its own GPU work, issued while it ran, goes with it.");
		else
			ADDF(f->evidence, "; its own GPU work is not counted: the gain is a floor.");
	}
	if (snapshot) {
		const struct activity_stat *c = &a->act[ACT_CHECKPOINT];

		ADDF(f->evidence, " Its calls copied device memory to the host %u times in %u burst%s (%u a "
		     "burst) and serialized nothing: a snapshot of state, not a step's work.", c->copies,
		     c->copy_runs, c->copy_runs == 1 ? "" : "s", c->copy_runs ? c->copies / c->copy_runs : 0);
		if (kept > 0)
			ADDF(f->evidence, " The fix still copies them: %s at the pinned rate and a call's host "
			     "time each, %s, counted as kept.", fmt_bytes(b1, sizeof(b1), a->ops.ckpt_copy_bytes),
			     fmt_ns(b2, sizeof(b2), kept));
	}
	if (stats) {
		const struct activity_stat *c = &a->act[ACT_CHECKPOINT];

		ADDF(f->evidence, " Its calls copied device memory to the host %u times in %u burst%s (%u a "
		     "burst), and most of its time went to computing on the copies (statistics, metrics, "
		     "an average, logging): host work on the model's state, which the fix does less often or "
		     "on the GPU.",
		     c->copies, c->copy_runs, c->copy_runs == 1 ? "" : "s",
		     c->copy_runs ? c->copies / c->copy_runs : 0);
	}
	if (a->ops.ckpt_copies)
		ADDF(f->evidence, " %s device-to-host copies (%llu, %s, %s of GPU time) are counted here, not as "
		     "pageable copies.", stats ? "Its" : "The checkpoint's",
		     (unsigned long long)a->ops.ckpt_copies, fmt_bytes(b1, sizeof(b1), a->ops.ckpt_copy_bytes),
		     fmt_ns(b2, sizeof(b2), a->ops.ckpt_copy_ns));
	if (pct(a, writes_apart) >= 0.5)
		ADDF(f->evidence, " File writes outside it stalled the GPU %.0f%% of the run more.",
		     pct(a, writes_apart));
	if (outputs)
		ADDF(f->evidence, " %.0f%% of its time went to encoding and writing images, plots or sounds "
		     "(an image library's save, save_image, savefig): samples written out, not a checkpoint.",
		     100 * t->output_ns / t->wall_ns);
	SET_FIX(a, f, top == ACT_EVAL ? ADV_C14_EVAL
		      : snapshot    ? ADV_C14_SNAPSHOT
		      : stats       ? ADV_C14_STATS
		      : outputs     ? ADV_C14_OUTPUTS
				    : ADV_C14_WRITES);
	f->confidence = act_times(t) >= 2 ? CONF_HIGH : CONF_MEDIUM;
	set_occurrences(a, f, act_times(t));
}

/* The activity half or more of the long steps hold in the training thread's
 * stacks (activities.c), the checkpoint before the evaluation: the finding
 * names what the user runs; *held is how many of them hold it. */
static enum activity long_steps_activity(const struct analysis *a, unsigned *held)
{
	unsigned n = 0, ev = 0, ck = 0;

	for (size_t i = 0; i < a->steps.n; i++) {
		const struct step *s = &a->steps.v[i];

		n += s->periodic;
		ev += s->periodic && (s->acts & (1u << ACT_EVAL));
		ck += s->periodic && (s->acts & (1u << ACT_CHECKPOINT));
	}
	if (n && 2 * ck >= n && ck >= ev) {
		*held = ck;
		return ACT_CHECKPOINT;
	}
	if (n && 2 * ev >= n) {
		*held = ev;
		return ACT_EVAL;
	}
	return ACT_NONE;
}

static void activity_of_long_steps(const struct analysis *a, struct finding *f, enum activity act, unsigned n,
				   unsigned held, double longest, unsigned every, double share)
{
	char w[192], b1[32], b2[32];

	snprintf(f->evidence, sizeof(f->evidence),
		 "%u of %zu steps run long (up to %s against a median step of %s), recurring every "
		 "%u steps; in %u of them the training thread's stacks show the %s%s. It costs "
		 "%.0f%% of the run.",
		 n, a->steps.n, fmt_ns(b1, sizeof(b1), longest), fmt_ns(b2, sizeof(b2), a->step_median_ns), every,
		 held, act == ACT_EVAL ? "evaluation" : "checkpoint", act_where(a, act, w, sizeof(w)), share);
}

/* The long steps ran other code than the rest (their training thread's
 * stacks apart: attribute.c's same_code): the work they add is that code's
 * (a preview drawn from the model every 10 steps), whoever set the pace. */
static int long_steps_own_code(const struct analysis *a)
{
	return a->periodic_apart >= PERIODIC_STACKS_APART;
}

/* n periodic steps whose stall (idle and extra work) is claim: a periodic
 * stall, not a wait every N steps (C16's). Two long steps only (attribute.c's
 * mark_periodic) are one where the run's `periodic` idle (theirs, and any
 * activity's) is C14_MIN_PCT of it, or where they ran code of their own that
 * added GPU work (work, that much of it): two steps stalled by storage reads,
 * loaders or other cores keep their own causes and make none, while a pass of
 * GPU work every N steps (samples drawn from the model) keeps the GPU busy
 * and stalls the training all the same. */
static int periodic_stall(const struct analysis *a, unsigned n, double claim, double work)
{
	if (!n || periodic_is_wait(a) || pct(a, claim) < C14_MIN_PCT)
		return 0;
	return n > 2 || pct(a, (double)a->idle_by_cause[IDLE_PERIODIC]) >= C14_MIN_PCT ||
	       (long_steps_own_code(a) && pct(a, work) >= C14_MIN_PCT);
}

static void periodic_eval(struct analysis *a, struct finding *f)
{
	double extra = 0, longest = 0, idle = 0, work = 0, busy_of = 0, more_ops = 0;
	double writes = (double)a->idle_by_cause[IDLE_WRITE];
	/* file-write idle outside the periodic steps is not in their idle */
	double writes_apart = writes - (double)a->write_idle_periodic_ns;
	unsigned n = 0, first = 0, second = 0;
	int gpu_paced = gpu_set_the_pace(a);
	char b1[32], b2[32], b3[32], b4[32];

	if (!a->t->nops || (has_steps(a) < C14_MIN_STEPS && pct(a, writes + (double)a->site_ckpt_ns) < C14_MIN_PCT)) {
		/* without steps the run is cut in time windows, which are not
		 * steps: a long window is no periodic stall (file writes still
		 * count: they are measured, not inferred from step lengths) */
		f->assessed = 0;
		snprintf(f->why, sizeof(f->why), "needs at least %d detected steps%s", C14_MIN_STEPS,
			 a->step_window_ns ? " (none found with confidence)" : "");
		return;
	}
	double idle0 = normal_median(a, 0), busy0 = normal_median(a, 1), ops0 = normal_median(a, 2);

	for (size_t i = 0; i < a->steps.n; i++) {
		const struct step *s = &a->steps.v[i];
		double d = (double)(s->end - s->start);

		if (!s->periodic)
			continue;
		if (n == 0)
			first = (unsigned)i;
		else if (n == 1)
			second = (unsigned)i;
		n++;
		extra += d - a->step_median_ns;
		if (d > longest)
			longest = d;
		/* The stall: the long step's idle beyond a normal step's. Its extra
		 * busy time counts only as work a normal step does not run (more
		 * operations: a validation pass, a checkpoint's copies), at most the
		 * share of its busy time those operations take, and never where the
		 * GPU set the pace (a long step is then the GPU working, not
		 * waiting) unless the long steps ran code of their own. */
		idle += (double)s->idle_ns > idle0 ? (double)s->idle_ns - idle0 : 0;
		if ((!gpu_paced || long_steps_own_code(a)) && s->nops > ops0 && (double)s->busy_ns > busy0) {
			double w = (double)s->busy_ns - busy0;
			double share = (double)s->busy_ns * ((double)s->nops - ops0) / (double)s->nops;

			work += w < share ? w : share;
			busy_of += (double)s->busy_ns;
			more_ops += (double)s->nops - ops0;
		}
	}
	if (writes_apart < 0)
		writes_apart = 0;
	/* the activities (activities.c): checkpointing and evaluation as the
	 * user runs them, their gaps whatever the mechanism, their GPU work */
	struct act_claim ac = activity_claims(a);

	if (ac.total > idle + work && pct(a, ac.total) >= C14_MIN_PCT) {
		activity_finding(a, f, &ac, writes_apart);
		return;
	}
	/* a wait every N steps (a subprocess, a socket) is C16's, with the rest
	 * of those steps' idle (c16_wait.c) */
	int periodic = periodic_stall(a, n, idle + work, work);
	/* no periodic steps (or two long ones that make no stall), but the
	 * training thread's stacks show checkpoint serialization in its
	 * CPU-work gaps (sites.c, docs/RULES.md 6): that idle went to the
	 * periodic cause */
	double ser = n && (n > 2 || periodic) ? 0 : (double)a->site_ckpt_ns;
	/* the long steps' stall is mostly file writes: name them */
	int ckpt = (writes > 0 || ser > 0) && (!periodic || (double)a->write_idle_periodic_ns * 4 >= idle);

	if (!periodic && pct(a, writes + ser) < C14_MIN_PCT)
		return;
	if (!periodic)
		idle = work = busy_of = 0;
	/* the checkpoint's own copies (the state dict's, inside torch.save)
	 * go with it: copies a normal step does not make */
	if (!periodic && ser > 0 && a->ops.ckpt_copy_ns > 0) {
		work = a->ops.ckpt_copy_ns;
		busy_of = a->ops.ckpt_copy_ns;
	}
	finding_set_gain(a, f, &(struct gain){ .idle_causes = IDLE_BIT(IDLE_PERIODIC) | IDLE_BIT(IDLE_WRITE),
					    .idle_ns = idle + writes_apart + ser,
					    .busy_set = periodic ? BUSY_ALL : BUSY_COPIES,
					    .busy_ns = work, .busy_of_ns = busy_of });
	f->evidence[0] = 0;
	unsigned held = 0;
	enum activity act = periodic ? long_steps_activity(a, &held) : ACT_NONE;

	if (act != ACT_NONE) {
		char w[192];

		snprintf(f->title, sizeof(f->title), "Periodic %s every %u steps%s%s: %.0f%% of the run",
			 act == ACT_EVAL ? "evaluation" : "checkpoint", n > 1 ? second - first : 0,
			 act_where(a, act, w, sizeof(w)), ckpt && act == ACT_EVAL ? " (and checkpoint / file writes)" : "",
			 pct(a, idle + work + writes_apart));
		activity_of_long_steps(a, f, act, n, held, longest, n > 1 ? second - first : 0, pct(a, idle + work));
	} else if (periodic) {
		snprintf(f->title, sizeof(f->title), "Periodic %s every %u steps%s: %.0f%% of the run",
			 work > idle ? "extra work" : "stall", n > 1 ? second - first : 0,
			 ckpt ? " (checkpoint / file writes)" : "", pct(a, idle + work + writes_apart));
		snprintf(f->evidence, sizeof(f->evidence),
			 "%u of %zu steps run long (up to %s against a median step of %s), recurring every "
			 "%u steps: training stops for something periodic (validation, checkpointing, "
			 "logging) that costs %.0f%% of the run.",
			 n, a->steps.n, fmt_ns(b1, sizeof(b1), longest), fmt_ns(b2, sizeof(b2), a->step_median_ns),
			 n > 1 ? second - first : 0, pct(a, idle + work));
	}
	if (periodic) {
		ADDF(f->evidence, " Of that, %s is the GPU idle beyond a normal step's and %s GPU work a "
		     "normal step does not run (%.0f more operations per long step).",
		     fmt_ns(b3, sizeof(b3), idle), fmt_ns(b4, sizeof(b4), work), work > 0 ? more_ops / n : 0.0);
		if (gpu_paced && extra > idle)
			ADDF(f->evidence, " The host was blocked on a full GPU queue %.0f%% of the run: the GPU "
			     "set the pace, so the long steps' extra busy time is the GPU working, not a stall.",
			     pct(a, (double)a->queue_full_ns));
	} else if (ser > writes) {
		snprintf(f->title, sizeof(f->title), "Checkpoint serialization stalls the GPU: %.0f%% of the run",
			 pct(a, ser + writes_apart + work));
		snprintf(f->evidence, sizeof(f->evidence),
			 "The training thread's Python stacks show it serializing (torch.save, pickle, "
			 "np.save, h5py, safetensors) during %s of idle GPU time (%.0f%% of the run); "
			 "the sites listed with it name the lines.",
			 fmt_ns(b1, sizeof(b1), ser), pct(a, ser));
		if (work > 0)
			ADDF(f->evidence, " Its device-to-host copies (the state dict's: %llu copies, %s) "
			     "took %s of GPU time (%.0f%% of the run), counted here, not as pageable copies.",
			     (unsigned long long)a->ops.ckpt_copies,
			     fmt_bytes(b2, sizeof(b2), a->ops.ckpt_copy_bytes), fmt_ns(b3, sizeof(b3), work),
			     pct(a, work));
	} else {
		snprintf(f->title, sizeof(f->title), "Checkpoint / file writes stall the GPU: %.0f%% of the run",
			 pct(a, writes + ser));
	}
	if (writes > 0) {
		unsigned occ = a->write_occurrences ? a->write_occurrences : 1;

		ADDF(f->evidence,
		     "%sCheckpoint / file writes: in %u occurrence%s threads sat in uninterruptible "
		     "sleep (state D) while the job wrote %s per occurrence to storage (write_bytes) and "
		     "read nothing, for %.0f%% of the run (%s each).",
		     f->evidence[0] ? " " : "", occ, occ == 1 ? "" : "s",
		     fmt_bytes(b1, sizeof(b1), a->io_write_bytes / occ), pct(a, writes),
		     fmt_ns(b2, sizeof(b2), writes / occ));
	}
	SET_FIX(a, f, ckpt || act == ACT_CHECKPOINT ? ADV_C14_WRITES : act == ACT_EVAL ? ADV_C14_EVAL : ADV_C14_PERIODIC);
	f->confidence = n >= 3 || a->write_occurrences >= 3 ? CONF_HIGH : CONF_MEDIUM;
	set_occurrences(a, f, periodic ? n : writes > 0 ? a->write_occurrences : 0);
}
