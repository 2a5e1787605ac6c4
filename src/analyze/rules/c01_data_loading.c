/* C1: the input pipeline cannot keep up; the GPU waits between steps. */
#include "rule.h"

RULE(data_loading, "C1.data-loading", "C1", NEED_TIMELINE | NEED_PROC, 60, ADV_C1_MAIN_THREAD);

/* The evidence's start: how many gaps (n, ns) of C1's idle (c1) the
 * training thread spent so; the rest says how. */
static void gaps_lead(struct finding *f, const struct analysis *a, uint64_t n, double ns, double c1)
{
	snprintf(f->evidence, sizeof(f->evidence),
		 "In %llu idle interval%s that add%s up to %.0f%% of the run (of the %.0f%% this finding counts)",
		 (unsigned long long)n, n == 1 ? "" : "s", n == 1 ? "s" : "", pct(a, ns), pct(a, c1));
}

/* C1's idle (c1) mostly the training thread starting worker processes
 * again (sites.c): an epoch's DataLoader without persistent workers. */
static void restarts_found(struct analysis *a, struct finding *f, double c1, const char *nworkers, unsigned workers)
{
	/* the training thread itself started the workers (fork,
	 * forkserver, spawn) and waited for them to come up */
	snprintf(f->title, sizeof(f->title),
		 "Loader workers are started again during the loop: %.0f%% of the run waits for them",
		 pct(a, c1));
	gaps_lead(f, a, a->worker_start_gaps, a->worker_start_idle_ns, c1);
	ADDF(f->evidence,
	     " the training thread was starting worker processes (multiprocessing's process creation, "
	     "under the lines listed with it) and the GPU waited for them to come up and make their "
	     "first batches. A DataLoader without persistent_workers=True starts its workers at every "
	     "epoch (each new iterator)%s. %s helper process%s in the process tree.",
	     a->restart_steps ? "; the last step, which held a restart, is counted in the steady window "
				"because the loop ran on after it" : "",
	     nworkers, workers == 1 ? "" : "es");
	SET_FIX(a, f, ADV_C1_RESTART);
	f->confidence = CONF_MEDIUM;
}

/* C1's idle (c1) mostly the training thread awake in a receive from
 * another process (sites.c): the batches' copy out of a pipe is its own. */
static void pipe_found(struct analysis *a, struct finding *f, double c1, const char *nworkers, unsigned workers)
{
	/* awake in the receive: the copy out of the pipe is the thread's */
	snprintf(f->title, sizeof(f->title),
		 "Batches are copied out of a pipe on the training thread: %.0f%% of the run", pct(a, c1));
	gaps_lead(f, a, a->pipe_recv_gaps, a->pipe_recv_idle_ns, c1);
	ADDF(f->evidence,
	     " the training thread was on its CPU receiving from another process (multiprocessing's "
	     "connection or queue: reading the pickled batch out of the pipe and unpickling it), not "
	     "asleep waiting for it: the message's size, not the producers, set that time. %s helper "
	     "process%s in the process tree.",
	     nworkers, workers == 1 ? "" : "es");
	SET_FIX(a, f, ADV_C1_PIPE);
	f->confidence = CONF_MEDIUM;
}

static void data_loading_eval(struct analysis *a, struct finding *f)
{
	double wait = (double)a->idle_by_cause[IDLE_DATA_WAIT];
	double host = (double)a->idle_by_cause[IDLE_HOST_COMPUTE];
	unsigned workers = 0;
	uint64_t n = a->gaps_by_cause[IDLE_DATA_WAIT] + a->gaps_by_cause[IDLE_HOST_COMPUTE];
	uint64_t boundary = a->gaps_at_step_start[IDLE_DATA_WAIT] +
			    a->gaps_at_step_start[IDLE_HOST_COMPUTE];

	/* CPU work of the training thread's own after a synchronization
	 * returned, in gaps that end in a host-to-device copy (stepping an
	 * environment on the actions it read, then its observation to the
	 * GPU): that work, not the wait, set those gaps' length, and it made
	 * the next input. They stay the sync's in the idle split; C9 draws on
	 * them first (removing the sync overlaps them where the work does not
	 * need its result), and what C9 cannot save this finding can: the work
	 * done faster or elsewhere. Work after a sync that sends nothing back
	 * processed the values read: C9's. */
	const double *sy = a->site_sync_to_htod_ns;
	double after_sync = a->py_thread_samples ? sy[SC_NONE] + sy[SC_HOSTCALC] : 0;

	if (after_sync > (double)a->idle_by_cause[IDLE_SYNC])
		after_sync = (double)a->idle_by_cause[IDLE_SYNC];
	if (pct(a, wait + host + after_sync) < FINDING_MIN_PCT)
		return;
	for (size_t i = 0; i < a->t->procs.n; i++) {
		const struct proc_info *p = &a->t->procs.v[i];

		/* alive in the steady window: not a compiler's subprocess of the
		 * start-up (JAX runs ptxas hundreds of times); other GPU ranks are
		 * not loaders */
		workers += p->pid != a->main_pid && !p->is_target && !p->has_cuda && p->first_ts < a->t1 &&
			   (!p->exit_ts || p->exit_ts > a->t0);
	}
	finding_set_gain(a, f, &(struct gain){ .idle_causes = IDLE_BIT(IDLE_DATA_WAIT) | IDLE_BIT(IDLE_HOST_COMPUTE) |
							    (after_sync > 0 ? IDLE_BIT(IDLE_SYNC) : 0),
					    .idle_ns = wait + host + after_sync,
					    /* input code and numeric helpers leave the training thread */
					    .host_classes = 1u << SC_INPUT | 1u << SC_HOSTCALC });
	/* With stacks, the training thread's own CPU work is input preparation
	 * when input code covers it (DataLoader, decoders, tokenizers,
	 * transforms); else it is other work on that thread (numeric helpers,
	 * bookkeeping), which DataLoader advice does not fix. */
	const double *cls = a->site_class_ns[IDLE_HOST_COMPUTE];
	double sited = 0;

	for (int c = 0; c < SC_NCLASSES; c++)
		sited += cls[c];
	/* gaps the host ended with an input copy, having issued nothing in
	 * them (sites.c): its own code there prepared that input */
	int made_input = a->input_copy_gaps && a->input_copy_idle_ns >= 0.5 * host;
	int other_work = host >= wait && a->py_thread_samples && sited >= 0.5 * host &&
			 cls[SC_INPUT] < 0.5 * sited && !made_input;

	if (after_sync > wait + host)
		snprintf(f->title, sizeof(f->title),
			 "The next input is prepared on the training thread after each read of GPU values: "
			 "%.0f%% of the run", pct(a, wait + host + after_sync));
	else if (other_work)
		snprintf(f->title, sizeof(f->title),
			 "CPU work on the training thread stalls the GPU: %.0f%% of the run", pct(a, wait + host));
	else
		snprintf(f->title, sizeof(f->title), "Data loading starves the GPU: %.0f%% of the run waits for input",
			 pct(a, wait + host));
	char per_step[64] = "", nworkers[32] = "No", b1[32];

	if (has_steps(a))
		snprintf(per_step, sizeof(per_step), " (%.1f per step%s)", (double)n / (double)has_steps(a),
			 boundary * 2 > n ? ", most right before a step starts" : "");
	if (workers)
		snprintf(nworkers, sizeof(nworkers), "%u", workers);
	if (after_sync > wait + host) {
		snprintf(f->evidence, sizeof(f->evidence),
			 "After each read of GPU values (a synchronization) the training thread worked on "
			 "the CPU in its own or numeric code, then sent the result to the GPU (a "
			 "host-to-device copy ends those gaps): it prepared the next input while the GPU "
			 "waited, %s per step, %.0f%% of the run (the sites listed with it). Removing the reads (C9) "
			 "lets that work overlap the GPU's; done in loader workers or faster, it goes.",
			 fmt_ns(b1, sizeof(b1), has_steps(a) ? after_sync / (double)has_steps(a) : after_sync),
			 pct(a, after_sync));
		/* input code (a tokenizer, decoders): the loader's advice; the
		 * thread's own or numeric code (an environment's physics): take
		 * it off the thread or vectorize it */
		SET_FIX(a, f, sy[SC_INPUT] >= 0.5 * after_sync ? ADV_C1_MAIN_THREAD : ADV_C1_HOST_WORK);
		f->confidence = CONF_MEDIUM;
		return;
	}
	if (a->worker_start_idle_ns >= 0.5 * (wait + host)) {
		restarts_found(a, f, wait + host, nworkers, workers);
		return;
	}
	if (a->pipe_recv_idle_ns >= 0.5 * (wait + host)) {
		pipe_found(a, f, wait + host, nworkers, workers);
		return;
	}
	if (a->other_wait_idle_ns >= 0.5 * (wait + host)) {
		/* a thread of the training process makes the input: threads of
		 * one process run Python by turns (the GIL), so it slows the
		 * loop's launches as well as its queue */
		snprintf(f->evidence, sizeof(f->evidence),
			 "%llu idle intervals%s add up to %.0f%% of the run; during %.0f%% of the run the "
			 "training thread was asleep outside its CUDA calls (on a queue, or waiting for "
			 "Python's interpreter lock, the GIL, in its own launching code) while another "
			 "thread of its process (thread %u) ran input code or the user's own Python: the "
			 "sites listed with it. Threads of one Python process run Python by turns, so work "
			 "done in a thread slows the loop that launches the GPU's work as well as what it "
			 "feeds; in worker processes it runs beside the loop. %s helper process%s "
			 "(data-loader workers) in the process tree.",
			 (unsigned long long)n, per_step, pct(a, wait + host), pct(a, a->other_wait_ns),
			 a->other_tid, nworkers, workers == 1 ? "" : "es");
		SET_FIX(a, f, ADV_C1_MAIN_THREAD);
		f->confidence = n >= 3 ? CONF_HIGH : CONF_MEDIUM;
		return;
	}
	snprintf(f->evidence, sizeof(f->evidence),
		 "%llu idle intervals%s add up to %.0f%% of the run; during them %s. %s helper "
		 "process%s (data-loader workers) in the process tree.",
		 (unsigned long long)n, per_step, pct(a, wait + host),
		 other_work ? "the training thread itself was busy on the CPU, in code that is not input "
			      "preparation (its stacks: the sites listed with it)"
		 : host >= wait ? a->framework == FW_TORCH
					? "the training thread itself was busy on the CPU (preparing data on "
					  "the main thread, as with num_workers=0)"
					: "the training thread itself was busy on the CPU (preparing data on "
					  "the main thread)"
			      : "the loader workers were busy on the CPU while the training thread waited",
		 nworkers, workers == 1 ? "" : "es");
	if (made_input)
		ADDF(f->evidence, " %llu of them end with a host-to-device copy, the training thread on its "
		     "CPU in its own code until then and issuing nothing to the GPU: it prepared that input.",
		     (unsigned long long)a->input_copy_gaps);
	SET_FIX(a, f, other_work ? ADV_C1_HOST_WORK : workers == 0 || host >= wait ? ADV_C1_MAIN_THREAD : ADV_C1_WORKERS);
	f->confidence = n >= 3 ? CONF_HIGH : CONF_MEDIUM;
}
