/* The terminal report: fits 80 columns, the top findings on one screen,
 * colour only on a TTY, -v for the full evidence. */
#include <stdlib.h>
#include <string.h>

#include "../analyze/analyze.h"
#include "../util/escape.h"
#include "../util/util.h"
#include "render.h"

#define WIDTH 78

struct style {
	const char *bold, *red, *yellow, *dim, *green, *off;
};

static double pct(double part, double whole)
{
	return whole > 0 ? 100.0 * part / whole : 0;
}

/* A name cut to fit one line. */
static const char *short_name(const char *n, char *buf, size_t len)
{
	snprintf(buf, len, "%.52s%s", n, strlen(n) > 52 ? "..." : "");
	return buf;
}

static void header(FILE *f, const struct analysis *a, const struct style *s)
{
	const struct trace *t = a->t;
	const char *cmd = trace_meta(t, "target.cmdline"), *st = trace_meta(t, "record.exit_status");
	char b1[32], b2[32], esc[1024];

	/* the path and the command line stay on their lines, whatever they hold */
	fprintf(f, "%sgpuwhy report%s: %s\n", s->bold, s->off, escape_line(esc, sizeof(esc), trace_shown(t)));
	/* a recording cut short or damaged: said before any figure drawn from
	 * it (the warning at the end says what was lost) */
	if (t->damage) {
		char w[192];

		snprintf(w, sizeof(w), "the recording is %s (the warning at the end says how): the figures below "
			 "cover the part that was read", t->verdict.kind == GW_VERDICT_TRUNCATED ? "cut short" : "damaged");
		fprintf(f, "  warning: ");
		fprint_wrapped(f, w, 11, 11);
	}
	if (cmd) {
		fprintf(f, "  job: ");
		char line[256];

		snprintf(line, sizeof(line), "%.200s%s", escape_line(esc, sizeof(esc), cmd),
			 strlen(esc) > 200 ? "..." : "");
		if (st && strcmp(st, "0"))
			snprintf(line + strlen(line), sizeof(line) - strlen(line), " (exit %s)", st);
		fprint_wrapped(f, line, 7, 7);
	}
	if (a->framework != FW_UNKNOWN)
		fprintf(f, "  Framework: %s%s%s (from %s)\n", framework_name(a->framework),
			a->python[0] ? ", Python " : "", a->python, a->framework_source);
	else
		fprintf(f, "  Framework: unknown%s%s (fixes in general terms)\n",
			a->python[0] ? ", Python " : "", a->python);
	for (uint32_t d = 0; d < a->ndev && d < GW_MAX_GPUS; d++) {
		const struct device_summary *ds = &a->dev[d];
		const char *name = trace_gpu_name(t, d);

		if (!ds->window_ns)
			continue;
		if (!name)
			name = "GPU";
		if (d == a->main_dev && a->steady_ns)
			fprintf(f, "  GPU %u (%s): busy %s%.0f%%%s of the steady run (%s)\n", d, name, s->bold,
				pct((double)a->busy_ns, (double)a->steady_ns), s->off,
				fmt_ns(b2, sizeof(b2), (double)a->steady_ns));
		else if (a->steady_ns && !a->windows.n && a->t1 > a->t0)
			fprintf(f, "  GPU %u (%s): busy %.0f%% of the same window\n", d, name,
				pct((double)ds->steady_busy_ns, (double)(a->t1 - a->t0)));
		else
			fprintf(f, "  GPU %u (%s)\n", d, name);
		fprintf(f, "    from its first to its last operation, %s: busy %.0f%% (kernels %.0f%%, copies %.0f%%, "
			   "communication %.0f%%)\n",
			fmt_ns(b1, sizeof(b1), (double)ds->window_ns),
			pct((double)ds->busy_ns, (double)ds->window_ns),
			pct((double)ds->kernel_ns, (double)ds->window_ns),
			pct((double)ds->copy_ns, (double)ds->window_ns),
			pct((double)ds->comm_ns, (double)ds->window_ns));
		if (d == a->main_dev && a->facts.gpu_paced)
			fprintf(f, "    host blocked on a full GPU queue %.0f%% of the time: the GPU set the pace\n",
				pct((double)a->queue_full_ns, (double)a->steady_ns));
	}
}

/* How the steps were found, in words. */
static const char *step_source_words(const struct analysis *a, char *buf, size_t len)
{
	if (a->step_user)
		snprintf(buf, len, "as asked (%s)", a->step_why);
	else if (!strcmp(a->step_source, "nvtx"))
		snprintf(buf, len, "from NVTX ranges");
	else if (!strcmp(a->step_source, "optimizer"))
		snprintf(buf, len, "from the optimizer's updates");
	else
		snprintf(buf, len, "a repeating unit of %u operation%s", a->step_ops, a->step_ops == 1 ? "" : "s");
	return buf;
}

/* A recorded file name (a string id) without its folders. */
static const char *file_base(const struct analysis *a, uint32_t id)
{
	const char *file = id < a->t->names.n ? a->t->names.v[id] : "", *slash = strrchr(file, '/');

	return slash ? slash + 1 : file;
}

/* One part of the tail: what the training thread did there, where, and
 * why no gain is claimed. */
static void tail_part(FILE *f, const struct analysis *a, const char *what, double ns, uint32_t file,
		      uint32_t line, int again)
{
	char b[32], msg[512];
	size_t n = (size_t)snprintf(msg, sizeof(msg), "of it the training thread %s %s", what,
				    fmt_ns(b, sizeof(b), ns));

	if (file && n < sizeof(msg))
		n += (size_t)snprintf(msg + n, sizeof(msg) - n, " (at %s:%u)", file_base(a, file), line);
	if (n < sizeof(msg) && again)
		snprintf(msg + n, sizeof(msg) - n, ": the same evaluation as inside the steps (C14's finding), run "
			 "again after the last one");
	else if (n < sizeof(msg))
		snprintf(msg + n, sizeof(msg) - n, ": seen once, after the steps, so how often it comes is not "
			 "known and no gain is claimed; a longer recording shows it inside the loop");
	fputs("    ", f);
	fprint_wrapped(f, msg, 4, 4);
}

/* After the last step, where it is a tenth of the steady window or more:
 * how long, and an evaluation or a checkpoint the training thread ran there. */
static void tail_parts(FILE *f, const struct analysis *a)
{
	const struct tail_parts *p = &a->tail;
	char b1[32];

	if (!a->facts.tail_shown)
		return;
	fprintf(f, "  after the last step (kept apart): %s\n", fmt_ns(b1, sizeof(b1), p->ns));
	if (a->facts.tail_eval_shown)
		tail_part(f, a, "evaluated", p->eval_ns, p->eval_file, p->eval_line, a->facts.tail_eval_again);
	if (a->facts.tail_ckpt_shown)
		tail_part(f, a, "serialized a checkpoint for", p->ckpt_ns, p->ckpt_file, p->ckpt_line, 0);
}

/* The start-up's parts (render_startup.c), where facts.c says. */
static void startup_parts(FILE *f, const struct analysis *a)
{
	char msg[700];

	if (startup_parts_text(msg, sizeof(msg), a)) {
		fputs("    ", f);
		fprint_wrapped(f, msg, 4, 4);
	}
	if (startup_once_text(msg, sizeof(msg), a)) {
		fputs("    ", f);
		fprint_wrapped(f, msg, 4, 4);
	}
}

static void steps_section(FILE *f, const struct analysis *a, int verbose)
{
	char b1[32], b2[32], b3[32], b4[32], nm[80], src[600];

	if (!has_steps(a)) {
		char line[700];

		if (a->step_user)
			snprintf(line, sizeof(line), "Steps: none, as asked (%s)", a->step_why);
		else
			snprintf(line, sizeof(line), "Steps: none found with confidence (%s)",
				 a->step_why[0] ? a->step_why : "no repeating NVTX range or operation pattern");
		fputc('\n', f);
		if (a->step_window_ns) {
			snprintf(line + strlen(line), sizeof(line) - strlen(line), "; analysed in %s windows",
				 fmt_ns(b1, sizeof(b1), (double)a->step_window_ns));
			fprint_wrapped(f, line, 2, 0);
			if (a->facts.windows_busy_n)
				fprintf(f, "  %zu windows: GPU busy median %.0f%%, lowest %.0f%%; no per-step figures\n",
					a->facts.windows_busy_n, a->facts.window_busy_median_pct,
					a->facts.window_busy_lowest_pct);
		} else {
			snprintf(line + strlen(line), sizeof(line) - strlen(line), "; figures cover the whole run.");
			fprint_wrapped(f, line, 2, 0);
		}
		return;
	}
	fprintf(f, "\nSteps: %zu, %s", a->steps.n, step_source_words(a, src, sizeof(src)));
	if (a->step_user)
		fputc('\n', f);
	else
		fprintf(f, " (confidence %s)\n", confidence_name((enum confidence)a->step_confidence));
	fprintf(f, "  %s %s\n",
		!strcmp(a->step_source, "nvtx")	       ? "each starts with range"
		: !strcmp(a->step_source, "optimizer") ? "each ends with the optimizer's update"
						       : "each starts with operation",
		short_name(strcmp(a->step_source, "nvtx") && a->step_marker_name
				   ? analysis_kname(a, a->step_marker_name, KNAME_SHORT) : a->step_marker,
			   nm, sizeof(nm)));
	{
		char line[256];
		int n = a->steps_long_every
				? snprintf(line, sizeof(line), "%llu iterations seen in the whole run, start-up "
					   "included (your loop's count, or about %llu if an iteration spans %u "
					   "of them: below)", (unsigned long long)a->step_iterations,
					   (unsigned long long)a->step_iterations_if_long, a->steps_long_every)
				: snprintf(line, sizeof(line), "%llu iterations seen in the whole run, start-up "
					   "included (your loop's count)", (unsigned long long)a->step_iterations);

		if (a->step_iterations > a->steps.n && n > 0 && (size_t)n < sizeof(line))
			snprintf(line + n, sizeof(line) - (size_t)n, "; the %zu steps are those whole in the "
				 "steady window (not the last, unfinished one, nor long warm-up or final ones)",
				 a->steps.n);
		fputs("  ", f);
		fprint_wrapped(f, line, 4, 2);
	}
	if (verbose && a->step_why[0] && !a->step_user) {
		fprintf(f, "  how: ");
		fprint_wrapped(f, a->step_why, 7, 7);
	}
	fprintf(f, "  step time: median %s, p95 %s (spread %.2fx), mean %s\n",
		fmt_ns(b1, sizeof(b1), a->step_median_ns), fmt_ns(b2, sizeof(b2), a->step_p95_ns),
		a->step_median_ns > 0 ? a->step_p95_ns / a->step_median_ns : 0,
		fmt_ns(b3, sizeof(b3), a->facts.step_mean_ns));
	char same[320];

	if (steps_same_code_text(same, sizeof(same), a)) {
		fputs("  ", f);
		fprint_wrapped(f, same, 4, 2);
	}
	/* the gains are of the run without gpuwhy: say so where the step is */
	if (a->facts.untraced_step_shown) {
		char line[256];

		untraced_text(line, sizeof(line), a);
		fputs("  ", f);
		fprint_wrapped(f, line, 4, 2);
	}
	fprintf(f, "  start-up before step 1 (kept apart): %s", fmt_ns(b3, sizeof(b3), (double)a->startup_ns));
	if (a->warmup_steps)
		fprintf(f, ", with %u warm-up step%s (%.0fx the median or longer, or mostly compiling: "
			"compilation, autotuning)",
			a->warmup_steps, a->warmup_steps == 1 ? "" : "s", STEP_WARMUP_FACTOR);
	fputc('\n', f);
	startup_parts(f, a);
	tail_parts(f, a);
	fprintf(f, "  per step on average: GPU busy %s, idle %s\n",
		fmt_ns(b1, sizeof(b1), (double)a->busy_ns / (double)a->steps.n),
		fmt_ns(b4, sizeof(b4), (double)a->idle_ns / (double)a->steps.n));
}

static void idle_section(FILE *f, const struct analysis *a, const struct style *s)
{
	int order[IDLE_NCAUSES], n = 0;

	if (!a->idle_ns)
		return;
	fprintf(f, "\nIdle time (%s%.0f%%%s of the steady run on GPU %u), by cause, in %% of the run:\n",
		s->bold, pct((double)a->idle_ns, (double)a->steady_ns), s->off, a->main_dev);
	for (int c = 0; c < IDLE_NCAUSES; c++)
		if (a->idle_by_cause[c])
			order[n++] = c;
	for (int i = 0; i < n; i++) /* largest first */
		for (int k = i + 1; k < n; k++)
			if (a->idle_by_cause[order[k]] > a->idle_by_cause[order[i]]) {
				int x = order[i];

				order[i] = order[k];
				order[k] = x;
			}
	double small = 0;
	int nsmall = 0;

	for (int i = 0; i < n; i++) {
		/* shares of the run, as the findings give theirs */
		double p = pct((double)a->idle_by_cause[order[i]], (double)a->steady_ns);
		int bar = (int)(p / 5 + 0.5);
		char name[64];

		if (p < 0.5) { /* summed on a line of their own: the split adds up */
			small += p;
			nsmall++;
			continue;
		}
		snprintf(name, sizeof(name), "%s ", idle_cause_label(a, order[i]));
		fprintf(f, "  %-48.48s%5.1f%%  ", name, p);
		for (int b = 0; b < bar; b++)
			fputc('#', f);
		fputc('\n', f);
	}
	if (nsmall && small >= 0.05) {
		char name[64];

		snprintf(name, sizeof(name), "%d other cause%s, each under 0.5%% ", nsmall, nsmall == 1 ? "" : "s");
		fprintf(f, "  %-48.48s%5.1f%%\n", name, small);
	}
	if (a->facts.periodic_claimed_by) {
		char line[256];

		snprintf(line, sizeof(line), "(the periodic stalls are the long steps that recur; the %s finding "
			 "below says what they hold)", a->facts.periodic_claimed_by);
		fputs("  ", f);
		fprint_wrapped(f, line, 3, 2);
	}
	{
		char text[512], line[528];

		if (compile_text(text, sizeof(text), a)) {
			snprintf(line, sizeof(line), "(compiling: %s)", text);
			fputs("  ", f);
			fprint_wrapped(f, line, 3, 2);
		}
	}
	if (a->facts.periodic_busy_ns > 0) {
		char line[256];

		snprintf(line, sizeof(line), "(the C14 finding's share of the run counts %.1f%% of the run idle "
			 "and %.1f%% of the run busy with the periodic work itself, which is not in this split)",
			 pct(a->facts.periodic_idle_ns, (double)a->steady_ns),
			 pct(a->facts.periodic_busy_ns, (double)a->steady_ns));
		fputs("  ", f);
		fprint_wrapped(f, line, 3, 2);
	}
}

/* How the gains were made: the replay of the steady window, and how
 * closely it gives back the recording as it ran (docs/RULES.md section 4). */
static void replay_line(FILE *f, const struct analysis *a, const struct style *s, int verbose)
{
	const struct replay_facts *r = &a->replay;
	char b1[32], b2[32], b3[32], line[512];

	if (!a->replay_used)
		return;
	if (a->replay_uncertain) {
		fprintf(f, "\n%swarning:%s ", s->yellow, s->off);
		snprintf(line, sizeof(line), "the replay of the steady window misses the recording by %.1f%%: "
			 "the predicted gains are uncertain.", 100 * r->err);
		fprint_wrapped(f, line, 9, 9);
	} else if (verbose) {
		snprintf(line, sizeof(line), "Gains: the steady window replayed with each fix applied (%s "
			 "replayed as it ran against %s recorded, an error of %.2f%%; %llu operations, %llu "
			 "waits of the host, the host's own time %s per operation).",
			 fmt_ns(b1, sizeof(b1), r->replayed_ns), fmt_ns(b2, sizeof(b2), r->recorded_ns),
			 100 * r->err, (unsigned long long)r->ops, (unsigned long long)r->waits,
			 fmt_ns(b3, sizeof(b3), r->pace_ns));
		fputc('\n', f);
		fprint_wrapped(f, line, 2, 0);
		if (r->blocking_ns > 0) {
			char why[192] = ", as the job's blocking copies between device buffers took beyond theirs.";

			if (!(r->blocking_copies_ns > 0)) /* no copy measured it: the gaps' bound */
				snprintf(why, sizeof(why), ", what the shortest gaps between two kernels hold (no "
					 "blocking copy between device buffers measured it).");
			else if (r->blocking_ns < r->blocking_copies_ns) /* capped */
				snprintf(why, sizeof(why), ": the job's blocking copies between device buffers took %s "
					 "beyond theirs, capped at what the shortest gaps between two kernels hold.",
					 fmt_ns(b2, sizeof(b2), r->blocking_copies_ns));
			snprintf(line, sizeof(line), "Each blocking launch holds the host %s beyond its kernel's run%s",
				 fmt_ns(b1, sizeof(b1), r->blocking_ns), why);
			fputs("  ", f);
			fprint_wrapped(f, line, 2, 2);
		}
	}
}

struct term_args {
	const struct analysis *a;
	int verbose, color;
};

/* The start-up finding (rules/startup.c): the next run's gain, apart from
 * the findings of the steps. */
static void startup_block(FILE *f, const struct analysis *a, const struct style *s, int verbose)
{
	const struct startup_finding *sf = &a->startup_finding;
	const struct startup_parts *p = &a->startup;
	char b1[32], b2[32], line[256];

	if (!sf->shown)
		return;
	fprintf(f, "\nStart-up, for the next run of this job:\n");
	int col = fprintf(f, "  %s[%s]%s ", s->dim, severity_label(SEV_INFO), s->off) -
		  (int)strlen(s->dim) - (int)strlen(s->off);
	fputs(s->bold, f);
	fprint_wrapped(f, sf->title, 4, col);
	fputs(s->off, f);
	snprintf(line, sizeof(line), "%s of %s if the next run starts from a warm cache: the job, start to "
		 "exit, %.2fx faster (%.2fx-%.2fx)", fmt_ns(b1, sizeof(b1), sf->saved_ns),
		 fmt_ns(b2, sizeof(b2), sf->job_ns), sf->speedup, sf->speedup_lo, sf->speedup_hi);
	fprintf(f, "    gain: ");
	fprint_wrapped(f, line, 10, 10);
	if (p->compile_file)
		fprintf(f, "    at %s:%u (the line that compiled most)\n", file_base(a, p->compile_file),
			p->compile_line);
	if (verbose) {
		fprintf(f, "    evidence: ");
		fprint_wrapped(f, sf->evidence, 14, 14);
	}
	fprintf(f, "    fix: ");
	fprint_wrapped(f, sf->fix, 9, 9);
}

/* A finding's gain line: per sample at a batch factor (with the factors
 * under -v), a floor at the cap, the replay's range, or why there is none. */
static void term_gain(FILE *f, const struct analysis *a, const struct finding *fd, int verbose)
{
	char b1[32];
	const char *per = has_steps(a) ? "per step" : "over the run";

	if (fd->saved_ns > 0 && finding_batch(fd) > 0) { /* per sample, at a batch factor */
		struct strbuf bt = { 0 };

		fprintf(f, "    gain: %s%.3gx faster per sample at x%.0f the batch (%.3gx-%.3gx, "
			"confidence %s)\n", fd->capped ? ">= " : "", fd->speedup, finding_batch(fd),
			fd->speedup_lo, fd->speedup_hi, confidence_name(fd->confidence));
		if (verbose && batch_text(&bt, fd) == 0) {
			fprintf(f, "    batch: ");
			fprint_wrapped(f, bt.s, 11, 11);
		}
		sb_free(&bt);
	} else if (fd->saved_ns > 0 && fd->capped) { /* the 95% cap: a floor, not an estimate */
		fprintf(f, "    gain: >= %s %s, >= %.3gx faster overall (capped, confidence %s)\n",
			fmt_ns(b1, sizeof(b1), has_steps(a) ? fd->per_step_ns : fd->saved_ns), per,
			fd->speedup, confidence_name(fd->confidence));
	} else if (fd->saved_ns > 0 && fd->replayed) { /* the replay's range beside it */
		fprintf(f, "    gain: %s %s, %.2fx faster overall (%.2fx-%.2fx, confidence %s)\n",
			fmt_ns(b1, sizeof(b1), has_steps(a) ? fd->per_step_ns : fd->saved_ns), per,
			fd->speedup, fd->speedup_lo, fd->speedup_hi, confidence_name(fd->confidence));
	} else if (fd->saved_ns > 0) {
		fprintf(f, "    gain: %s %s, %.2fx faster overall (confidence %s)\n",
			fmt_ns(b1, sizeof(b1), has_steps(a) ? fd->per_step_ns : fd->saved_ns), per,
			fd->speedup, confidence_name(fd->confidence));
	} else if (fd->claim.idle_ns + fd->claim.busy_ns > 0) {
		fprintf(f, "    gain: none beyond the findings that count the same time (confidence %s)\n",
			confidence_name(fd->confidence));
	} else {
		fprintf(f, "    gain: not quantified (confidence %s)\n", confidence_name(fd->confidence));
	}
	if (fd->unblock_x > 0)
		fprintf(f, "          with the %s fix it keeps from working: %.2fx (%.2fx-%.2fx)\n",
			fd->unblock_cause, fd->unblock_x, fd->unblock_lo, fd->unblock_hi);
}

/* "Fixing all of the above: about 2.42x faster overall (...)": the combined
 * replay of the findings at warning and above (under -v, with info ones
 * listed too, the line says which it fixes), or of those --fixes named. */
static void term_combined(FILE *f, const struct analysis *a, const struct style *s, int warned, int shown)
{
	char chosen[160], b1[32];
	const char *all = warned < shown ? "Fixing all the findings at warning and above" : "Fixing all of the above";

	if (a->combined_chosen) {
		combined_causes_text(chosen, sizeof(chosen), a, "Fixing ");
		all = chosen;
		if (!(a->combined_speedup > 1))
			fprintf(f, "\n%s: no gain the replay can give.\n", all);
	}
	if (a->combined_speedup > 1 && (warned > 1 || a->combined_chosen)) {
		/* "saves S of T": S alone read as a step time. T is the time the
		 * speed-up is of (speed-up = T / (T - S)) */
		double n = has_steps(a) ? (double)has_steps(a) : 1, S = a->combined_saved_ns / n,
		       T = a->facts.untraced_step_ns;
		char bt[32];

		fmt_ns(b1, sizeof(b1), S);
		fmt_ns(bt, sizeof(bt), T);
		if (a->combined_batch > 0) /* per sample: no time saved per step */
			fprintf(f, "\n%s: %s%s%.3gx%s faster per sample at x%.0f the batch "
				"(%.3gx-%.3gx%s).\n", all, a->combined_capped ? ">= " : "about ", s->bold,
				a->combined_speedup, s->off, a->combined_batch, a->combined_lo, a->combined_hi,
				a->combined_capped ? "; capped" : "");
		else if (a->combined_capped)
			fprintf(f, "\n%s: %s>= %.3gx%s faster overall (capped; saves >= %s of %s %s).\n",
				all, s->bold, a->combined_speedup, s->off, b1, bt,
				has_steps(a) ? "per step" : "over the run");
		else if (a->combined_replayed)
			fprintf(f, "\n%s: about %s%.2fx%s faster overall (%.2fx-%.2fx; saves %s "
				"of %s %s).\n", all, s->bold, a->combined_speedup, s->off, a->combined_lo, a->combined_hi,
				b1, bt, has_steps(a) ? "per step" : "over the run");
		else
			fprintf(f, "\n%s: about %s%.2fx%s faster overall (saves %s of %s %s).\n",
				all, s->bold, a->combined_speedup, s->off, b1, bt,
				has_steps(a) ? "per step" : "over the run");
	}
}

static void report_text(FILE *f, const void *ctx)
{
	const struct term_args *ta = ctx;
	const struct analysis *a = ta->a;
	int verbose = ta->verbose, color = ta->color;
	static const struct style plain = { "", "", "", "", "", "" };
	static const struct style ansi = { "\033[1m", "\033[31m", "\033[33m", "\033[2m", "\033[32m",
					   "\033[0m" };
	const struct style *s = color ? &ansi : &plain;
	int shown = 0, warned = 0, not_assessed = 0, max_shown = verbose ? 100 : 5;

	header(f, a, s);
	if (verbose && trace_meta(a->t, "cupti.path")) { /* the CUPTI the injection library used */
		const char *v = trace_meta(a->t, "cupti.version"), *src = trace_meta(a->t, "cupti.source");

		/* where the injection library found it: a place, or "already loaded" */
		int loaded = src && !strncmp(src, "already", 7);

		fprintf(f, "  CUPTI: %s, %s (%s%s)\n", v ? v : "?", trace_meta(a->t, "cupti.path"),
			loaded ? "" : "from ", src ? src : "?");
	}
	if (a->t->nops) {
		steps_section(f, a, verbose);
		idle_section(f, a, s);
		replay_line(f, a, s, verbose);
	}
	fprintf(f, "\n");
	if (a->too_little) {
		char msg[512];

		snprintf(msg, sizeof(msg), "%s. Record more of the job's loop (a longer run, or more steps) "
			 "for a diagnosis%s.", a->too_little_why,
			 verbose ? "; what was seen is listed below as info" : "");
		fprintf(f, "%sToo little to diagnose%s: ", s->yellow, s->off);
		fprint_wrapped(f, msg, 2, 24);
	} else if (a->facts.healthy) {
		char once[320];

		fprintf(f, "%sNo significant bottleneck%s: GPU %u busy %.0f%% of the steady run.\n",
			s->green, s->off, a->main_dev, pct((double)a->busy_ns, (double)a->steady_ns));
		if (tail_once_text(once, sizeof(once), a)) {
			fputs("  ", f);
			fprint_wrapped(f, once, 2, 2);
		}
	}
	for (size_t i = 0; i < a->findings.n; i++) {
		const struct finding *fd = &a->findings.v[i];

		if (!fd->assessed) {
			not_assessed++;
			continue;
		}
		if (fd->severity == SEV_INFO && !verbose)
			continue;
		if (shown == 0)
			fprintf(f, "Findings, largest gain first (C1, C14...: the cause's code, man gpuwhy CAUSES):\n");
		warned += fd->severity >= SEV_WARN;
		if (++shown > max_shown)
			continue;
		const char *sc = fd->severity == SEV_HIGH ? s->red : fd->severity == SEV_WARN ? s->yellow : s->dim;

		char title[256];
		int col = fprintf(f, "\n%2d. %s[%s]%s ", shown, sc, severity_label(fd->severity), s->off) - 1 -
			  (int)strlen(sc) - (int)strlen(s->off);

		snprintf(title, sizeof(title), "%s (%s)", fd->title, fd->cause);
		fputs(s->bold, f);
		fprint_wrapped(f, title, 4, col);
		fputs(s->off, f);
		term_gain(f, a, fd, verbose);
		term_sites(f, a, fd, verbose);
		if (verbose) {
			fprintf(f, "    evidence: ");
			fprint_wrapped(f, fd->evidence, 14, 14);
		}
		fprintf(f, "    fix: ");
		fprint_wrapped(f, fd->fix, 9, 9);
	}
	term_combined(f, a, s, warned, shown);
	if (a->facts.quiet_n && !verbose) {
		const struct finding *q = &a->findings.v[a->facts.quiet_best];
		const char *left_out = shown ? " and left out of the findings above" : "";
		char msg[512];

		if (a->facts.quiet_n > 1)
			snprintf(msg, sizeof(msg), "%u less certain gains, each under 5%% of the run at the low end "
				 "of its range, are listed as info by gpuwhy report -v%s; the largest: %s (%s), about "
				 "%.2fx (%.2fx-%.2fx).", a->facts.quiet_n, left_out, q->title, q->cause, q->speedup,
				 q->speedup_lo, q->speedup_hi);
		else
			snprintf(msg, sizeof(msg), "A less certain gain, under 5%% of the run at the low end of its "
				 "range, is listed as info by gpuwhy report -v%s: %s (%s), about %.2fx (%.2fx-%.2fx).",
				 left_out, q->title, q->cause, q->speedup, q->speedup_lo, q->speedup_hi);
		fprintf(f, "\n");
		fprint_wrapped(f, msg, 0, 0);
	}
	if (shown > max_shown)
		fprintf(f, "\n(%d more findings: gpuwhy report -v)\n", shown - max_shown);
	else if (shown && !verbose)
		fprintf(f, "\n(evidence for each finding: gpuwhy report -v)\n");
	startup_block(f, a, s, verbose);
	if (!shown && !verbose && a->startup_finding.shown)
		fprintf(f, "\n(its evidence: gpuwhy report -v)\n");
	if (not_assessed && verbose) {
		fprintf(f, "\nNot assessed:\n");
		for (size_t i = 0; i < a->findings.n; i++)
			if (!a->findings.v[i].assessed)
				fprintf(f, "  %-5s %s\n", a->findings.v[i].cause, a->findings.v[i].why);
	} else if (not_assessed) {
		fprintf(f, "%s%d rule%s could not be assessed with this recording (-v says why).%s\n", s->dim,
			not_assessed, not_assessed > 1 ? "s" : "", s->off);
	}
	if (a->py_note[0])
		fprintf(f, "%snote: %s%s\n", s->dim, a->py_note, s->off);
	for (size_t i = 0; i < a->warnings.n; i++) {
		fprintf(f, "%swarning:%s ", s->yellow, s->off);
		fprint_wrapped(f, a->warnings.v[i], 9, 9);
	}
}

int render_terminal(FILE *f, const struct analysis *a, int verbose, int color)
{
	struct term_args ta = { a, verbose, color };

	return gw_with_units(f, gw_utf8_locale(), report_text, &ta);
}

/* "Fixing C1, C6 and C14 (--fixes)": the findings in the combined replay,
 * after prefix, where a user chose them. */
void combined_causes_text(char *buf, size_t len, const struct analysis *a, const char *prefix)
{
	size_t n = 0, k = 0, used;
	int w;

	for (size_t i = 0; i < a->findings.n; i++)
		n += a->findings.v[i].in_combined != 0;
	w = snprintf(buf, len, "%s", prefix);
	used = w > 0 && (size_t)w < len ? (size_t)w : 0;
	for (size_t i = 0; i < a->findings.n && used < len; i++) {
		if (!a->findings.v[i].in_combined)
			continue;
		k++;
		w = snprintf(buf + used, len - used, "%s%s", k == 1 ? "" : k == n ? " and " : ", ",
			     a->findings.v[i].cause);
		used += w > 0 ? (size_t)w : 0;
	}
	if (used < len)
		snprintf(buf + used, len - used, "%s(--fixes)", n ? " " : "nothing ");
}
