/* The start-up's parts in words, for the terminal and the HTML report:
 * what the training thread did (compiling, importing, the model's first
 * operations) and the GPU's kernels that never run again, as facts.c
 * chose them (a tenth of the start-up or more each); and, beside the step
 * time, long steps that are the loop's own work; beside a verdict of no
 * bottleneck, a checkpoint or an evaluation seen once after the steps. */
#include <stdio.h>
#include <string.h>

#include "../util/util.h"
#include "render.h"

static const char *base(const struct analysis *a, uint32_t id)
{
	const char *file = id < a->t->names.n ? a->t->names.v[id] : "", *slash = strrchr(file, '/');

	return slash ? slash + 1 : file;
}

int startup_parts_text(char *msg, size_t len, const struct analysis *a)
{
	const struct startup_parts *p = &a->startup;
	unsigned said = a->facts.startup_said;
	char b1[32];
	size_t n = 0;

	msg[0] = 0;
	if (!(said & (SAID_COMPILE | SAID_IMPORT | SAID_FIRST_OPS | SAID_WORKERS)))
		return 0;
	n += (size_t)snprintf(msg + n, len - n, "of it the training thread");
	if (said & SAID_COMPILE) {
		n += (size_t)snprintf(msg + n, len - n, " compiled for %s", fmt_ns(b1, sizeof(b1), p->compile_ns));
		if (p->compile_file && n < len)
			n += (size_t)snprintf(msg + n, len - n, " (at %s:%u)", base(a, p->compile_file), p->compile_line);
	}
	if ((said & SAID_IMPORT) && n < len)
		n += (size_t)snprintf(msg + n, len - n, "%s imported modules for %s", said & SAID_COMPILE ? "," : "",
				      fmt_ns(b1, sizeof(b1), p->import_ns));
	if ((said & SAID_FIRST_OPS) && n < len)
		n += (size_t)snprintf(msg + n, len - n, "%s ran the model's first operations for %s (where GPU "
				      "libraries are set up, kernels loaded and autotuned)",
				      said & (SAID_COMPILE | SAID_IMPORT) ? "," : "",
				      fmt_ns(b1, sizeof(b1), p->first_ops_ns));
	if ((said & SAID_WORKERS) && n < len)
		n += (size_t)snprintf(msg + n, len - n, "%s started worker processes for %s (a DataLoader's "
				      "iterator starts its workers, and each epoch again without "
				      "persistent_workers=True)",
				      said & (SAID_COMPILE | SAID_IMPORT | SAID_FIRST_OPS) ? "," : "",
				      fmt_ns(b1, sizeof(b1), p->workers_ns));
	if (a->facts.startup_cache_said && n < len)
		snprintf(msg + n, len - n, ": a persistent compilation cache would keep %s of it%s",
			 fmt_ns(b1, sizeof(b1), p->cache_ns),
			 a->startup_finding.shown ? " (the start-up finding below)" : " for the next run");
	return 1;
}

int startup_once_text(char *msg, size_t len, const struct analysis *a)
{
	const struct startup_parts *p = &a->startup;
	char b1[32];

	msg[0] = 0;
	if (!(a->facts.startup_said & SAID_ONCE))
		return 0;
	snprintf(msg, len, "the GPU spent %s of it on %llu kernels (%u names) that never run after it: tried "
		 "once (autotuning's candidates) or one-off set-up", fmt_ns(b1, sizeof(b1), p->once_ns),
		 (unsigned long long)p->once_kernels, p->once_names);
	return 1;
}

int steps_same_code_text(char *msg, size_t len, const struct analysis *a)
{
	char b[32];

	msg[0] = 0;
	if (!a->steps_long_every)
		return 0;
	snprintf(msg, len, "every %u steps one runs long (up to %s) with the training thread in the same code "
		 "as in the others: the loop's own work, not a periodic stall (an iteration of your loop may "
		 "span %u of these steps)", a->steps_long_every, fmt_ns(b, sizeof(b), a->steps_long_max_ns),
		 a->steps_long_every);
	return 1;
}

int tail_once_text(char *msg, size_t len, const struct analysis *a)
{
	char b[32];
	int ck = a->facts.tail_ckpt_shown && a->tail.ckpt_ns >= a->tail.eval_ns;

	msg[0] = 0;
	if (!ck && (!a->facts.tail_eval_shown || a->facts.tail_eval_again))
		return 0;
	snprintf(msg, len, "After the last step the training thread %s for %s, seen once: how often it "
		 "comes is not known; a longer recording weighs it.", ck ? "serialized a checkpoint" : "evaluated",
		 fmt_ns(b, sizeof(b), ck ? a->tail.ckpt_ns : a->tail.eval_ns));
	return 1;
}

void untraced_text(char *msg, size_t len, const struct analysis *a)
{
	double T = (double)a->steady_ns, c = (double)a->idle_by_cause[IDLE_COMPILE];
	int trace = (double)a->trace_cost_ns >= TRACE_COST_SHOWN * T, built = c >= COMPILE_SHOWN * T;
	char b[32], tr[96] = "", bu[96] = "";

	if (trace || !built)
		snprintf(tr, sizeof(tr), "gpuwhy's own tracing cost (an estimated %.0f%% of the run)",
			 T > 0 ? 100.0 * (double)a->trace_cost_ns / T : 0);
	if (built) /* paid once: a longer run pays it no more */
		snprintf(bu, sizeof(bu), "the kernels built on first use (%.0f%%, paid once)", T > 0 ? 100.0 * c / T : 0);
	snprintf(msg, len, "without %s%s%s: a mean step of about %s; the gains below are of that run", tr,
		 tr[0] && bu[0] ? " and " : "", bu, fmt_ns(b, sizeof(b), a->facts.untraced_step_ns));
}

int compile_text(char *msg, size_t len, const struct analysis *a)
{
	char st[224] = "";

	msg[0] = 0;
	if (!a->facts.compile_shown)
		return 0;
	if (a->facts.compile_site != SIZE_MAX)
		site_text(st, sizeof(st), a, &a->sites.v[a->facts.compile_site]);
	snprintf(msg, len, "the training thread built kernels for %.1f%% of the run%s%s%s; built once on first "
		 "use, they cost the next steps nothing, and no finding counts them; were it every step, it would "
		 "be recompiling: keep the shapes and dtypes it sees fixed",
		 a->steady_ns ? 100.0 * (double)a->idle_by_cause[IDLE_COMPILE] / (double)a->steady_ns : 0, st[0] ? " (at " : "", st,
		 st[0] ? ")" : "");
	return 1;
}
