/* Whether the recording holds enough of the job to diagnose it: a job that
 * crashed at import, was killed before its loop, or ran a handful of steps
 * shows start-up work (module loading, weights copied in, autotuning) that a
 * rule would read as a bottleneck; one that ended in the loop's periodic
 * work, seen once after the steps, cannot say how often it comes. Such a
 * recording gets "too little to diagnose" with what was seen, and no finding
 * above info (docs/RULES.md, "Too little to diagnose"). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Fewer steps than this are start-up and noise, not a steady loop... */
#define MIN_STEPS_TO_DIAGNOSE 5
/* ... unless they hold this many operations over this long: each step is
 * then a long unit of a loop (a value read every 500 iterations makes the
 * 500 one step), not a few iterations after start-up */
#define LONG_STEPS_OPS 5000
#define LONG_STEPS_NS 1000000000ull
/* A job that failed (exit status not 0) after fewer steps than this ran
 * its first iterations, where kernels load, libraries are read from disk
 * and autotuning runs, and stopped: too few to tell its loop from its
 * start-up (a crash at a check after 9 iterations read as storage-bound) */
#define MIN_STEPS_IF_FAILED 20
/* A steady run shorter than this is a few kernels and a stop (a job that
 * crashed after its first GPU work), not a loop: too short to weigh idle
 * time in. */
#define MIN_STEADY_TO_DIAGNOSE_NS 100000000ull
/* ... and where the recording goes on this long after such steps, and ten
 * times as long as they took, they may be set-up work (a model's weights
 * copied in) and the job's loop never came or never got going: the reason
 * says so (a loader whose workers' thread pools took every core, killed
 * 46 s on with 3.4 ms of "steps" seen) */
#define TAIL_AFTER_SHORT_NS 1000000000ull

/* After the last step the training thread evaluated or wrote a checkpoint
 * (activities.c) for at least as long as all the steps took, while inside
 * them that activity held the GPU idle for under a tenth of it: the
 * recording ended in the loop's periodic work, seen once and not weighed.
 * How often it comes decides whether it, not what the steps show, is the
 * job's bottleneck, and one time cannot say (a final save, or one every N
 * steps). Returns what the thread did (in hook, for a hook), or NULL. */
#define TAIL_WEIGHED_SHARE 0.1
static const char *unweighed_tail(const struct analysis *a, double *ns, char *hook, size_t hook_len)
{
	static const struct {
		enum activity k;
		const char *what;
	} acts[] = { { ACT_EVAL, "evaluated" }, { ACT_CHECKPOINT, "wrote a checkpoint" } };

	for (size_t i = 0; i < sizeof(acts) / sizeof(acts[0]); i++) {
		*ns = acts[i].k == ACT_EVAL ? a->tail.eval_ns : a->tail.ckpt_ns;
		if (*ns >= (double)a->steady_ns && a->act[acts[i].k].idle_ns < TAIL_WEIGHED_SHARE * *ns)
			return acts[i].what;
	}
	/* ... or ran a framework's per-step hook that long (Lightning's
	 * on_train_batch_end writing samples every N steps): the loop's own
	 * work, which inside the steps ran only as the hook's usual check */
	*ns = a->tail.hook_ns;
	if (*ns >= (double)a->steady_ns) {
		snprintf(hook, hook_len, "ran the per-step hook %s",
			 a->tail.hook_func < a->t->names.n ? a->t->names.v[a->tail.hook_func] : "");
		return hook;
	}
	/* ... or, still inside the training loop's frame, ran a function of
	 * the user's that no step ran (an iteration's work every N steps: audio
	 * synthesized, samples drawn, a report), not the teardown after the
	 * loop; a slow iteration of the steps' own code is weighed in them */
	*ns = a->tail.loop_called_ns;
	if (a->tail.loop_called && *ns >= (double)a->steady_ns && a->tail.loop_func < a->t->names.n &&
	    a->tail.loop_file < a->t->names.n) {
		const char *file = a->t->names.v[a->tail.loop_file], *slash = strrchr(file, '/');

		snprintf(hook, hook_len, "ran %s (called at %s:%u, in none of the steps)",
			 a->t->names.v[a->tail.loop_func], slash ? slash + 1 : file, a->tail.loop_line);
		return hook;
	}
	*ns = 0;
	return NULL;
}

static int job_failed(const struct analysis *a, int *status)
{
	const char *v = trace_meta(a->t, "record.exit_status");

	*status = v ? atoi(v) : 0;
	return v && *status != 0;
}

/* It failed, and not because the user stopped it (Ctrl-C or a signal
 * gpuwhy passed on: record.signal), nor after the recording had stopped
 * (--duration, --max-size, --ring, --duty: the job ran on past the steps
 * recorded, so its status says nothing of them). */
static int failed_on_its_own(const struct analysis *a, int *status)
{
	const struct trace *t = a->t;

	return job_failed(a, status) && !trace_meta(t, "record.signal") && !trace_meta(t, "record.stopped_early") &&
	       !trace_meta(t, "record.ring_bytes") && !trace_meta(t, "record.duty_period_ms");
}

static int long_steps(const struct analysis *a, size_t n)
{
	uint64_t ops = 0;

	for (size_t i = 0; i < n && i < a->steps.n; i++)
		ops += a->steps.v[i].nops;
	return ops >= LONG_STEPS_OPS && a->steady_ns >= LONG_STEPS_NS;
}

void judge_sufficiency(struct analysis *a)
{
	char len[32], hook[256];
	const char *what;
	double tail_ns;
	int status;
	size_t n = has_steps(a);

	a->too_little = 0;
	a->too_little_why[0] = 0;
	if (!a->t->nops)
		return; /* no GPU data: a verdict of its own */
	snprintf(len, sizeof(len), "%.1f ms", (double)a->steady_ns / 1e6);
	if (a->steady_ns < MIN_STEADY_TO_DIAGNOSE_NS) {
		int k = snprintf(a->too_little_why, sizeof(a->too_little_why),
				 "the steady run lasts %s (at least %llu ms are needed)", len,
				 MIN_STEADY_TO_DIAGNOSE_NS / 1000000ull);

		if (n && a->tail.ns >= TAIL_AFTER_SHORT_NS && a->tail.ns >= 10.0 * (double)a->steady_ns && k > 0 &&
		    (size_t)k < sizeof(a->too_little_why))
			snprintf(a->too_little_why + k, sizeof(a->too_little_why) - (size_t)k,
				 "; the recording goes on for %.1f s after its last step%s: the steps found may "
				 "be set-up work, and the job's loop never got going while it was recorded",
				 a->tail.ns / 1e9, job_failed(a, &status) ? ", to the job's end with an error status" : "");
	} else if (n && n < MIN_STEPS_TO_DIAGNOSE && !long_steps(a, n))
		snprintf(a->too_little_why, sizeof(a->too_little_why),
			 "only %zu step%s found (at least %d are needed)", n, n == 1 ? "" : "s",
			 MIN_STEPS_TO_DIAGNOSE);
	else if (n && (what = unweighed_tail(a, &tail_ns, hook, sizeof(hook))))
		/* it did not come inside the n steps, so it comes after every n
		 * steps at the most often: the most it can weigh in the loop */
		snprintf(a->too_little_why, sizeof(a->too_little_why),
			 "after its %zu steps (%s) the training thread %s for %.1f s, seen once: how often "
			 "it comes decides the bottleneck (if it came after every %zu steps, the most "
			 "often these allow, it would be %.0f%% of the loop: up to %.1fx to gain)",
			 n, len, what, tail_ns / 1e9, n, 100.0 * tail_ns / (tail_ns + (double)a->steady_ns),
			 (tail_ns + (double)a->steady_ns) / (double)a->steady_ns);
	else if (!n && !a->step_user && job_failed(a, &status))
		snprintf(a->too_little_why, sizeof(a->too_little_why),
			 "the job ended with status %d before a repeating step was seen", status);
	else if (n && n < MIN_STEPS_IF_FAILED && !long_steps(a, n) && failed_on_its_own(a, &status))
		snprintf(a->too_little_why, sizeof(a->too_little_why),
			 "the job ended with status %d after %zu steps (%s): too few to tell its loop from its "
			 "start-up (kernels loaded, libraries read, autotuning)", status, n, len);
	a->too_little = a->too_little_why[0] != 0;
}
