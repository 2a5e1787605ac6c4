/* gpuwhy diff's outputs: terminal, JSON (schema gpuwhy.diff/1, docs/JSON.md)
 * and HTML, all formatting one struct diff. */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "../util/escape.h"
#include "../util/util.h"
#include "diff.h"
#include "html.h"
#include "render.h"

static const char *per_word(const struct diff *d)
{
	return d->side[0].steps && d->side[1].steps ? "step" : "second";
}

/* Change from before to after in percent of before ("+12%"); past +999%
 * as the ratio ("80x"), which a reader takes in at once; "-" without a
 * before. */
static const char *rel(char *b, size_t len, double before, double after)
{
	if (before > 0 && isfinite(after) && after / before >= 10.995)
		snprintf(b, len, "%.0fx", after / before);
	else if (before > 0 && isfinite(after))
		snprintf(b, len, "%+.0f%%", 100 * (after - before) / before);
	else
		snprintf(b, len, "-");
	return b;
}

static const char *ms(char *b, size_t len, double ns)
{
	if (ns <= 0)
		snprintf(b, len, "-");
	else
		fmt_ns(b, len, ns);
	return b;
}

/* 1 when an idle cause changed by at least DIFF_MIN_CHANGE of BEFORE's step
 * (of a second without steps): smaller changes are not marked better or
 * worse, whatever their percentage (45 ns -> 3.6 us in a 25 ms step). */
static int idle_change_counts(const struct diff *d, int c)
{
	const struct diff_side *b = &d->side[0], *a = &d->side[1];
	double unit = b->steps && a->steps ? b->step_mean_ns : 1e9;

	return fabs(a->idle_ns[c] - b->idle_ns[c]) >= DIFF_MIN_CHANGE * unit;
}

/* "4.00x for C1 (before)", "3.68x for C1+C14+C4 (before, combined)",
 * "none for C1+C4 together (before: 1.43x, 1.25x alone)" */
static const char *predicted_text(char *b, size_t len, const struct diff_predicted *p)
{
	if (p->speedup > 0) {
		snprintf(b, len, "%s%.2fx for %s (before%s)", p->capped ? ">= " : "", p->speedup, p->causes,
			 p->combined ? ", all its findings" : "");
		return b;
	}
	int k = snprintf(b, len, "none for %s together (before:", p->causes);

	for (size_t i = 0; i < p->n && k > 0 && (size_t)k < len; i++)
		k += snprintf(b + k, len - (size_t)k, "%s %.2fx", i ? "," : "", p->f[i]->speedup);
	if (k > 0 && (size_t)k < len)
		snprintf(b + k, len - (size_t)k, " alone)");
	return b;
}

/* ---- terminal ------------------------------------------------------------ */

/* What the prediction is set beside: the measured speed-up, or the
 * step-time ratio named as such where the steps do different work. */
static const char *measured_text(char *buf, size_t len, const struct diff *d)
{
	if (!(d->speedup > 0))
		snprintf(buf, len, "unknown");
	else if (d->programs_differ)
		snprintf(buf, len, "n/a (two different programs)");
	else if (d->work_unlike)
		snprintf(buf, len, "n/a (steps of unlike work: --batch B:A)");
	else
		snprintf(buf, len, "%.2fx", d->speedup);
	return buf;
}

static void term_summary(FILE *f, const struct diff *d, const char *bold, const char *off)
{
	const struct diff_side *b = &d->side[0], *a = &d->side[1];
	char x[32], y[32], p[256], m[64];
	/* a step-time ratio of steps that do different work is said first as
	 * what it is, not as a speed-up */
	int unlike = d->work_unlike;

	if (d->speedup > 0 && d->programs_differ) {
		char why[256];

		fprintf(f, "Step-time ratio: %s%.2fx%s (step time %s -> %s; median %.2fx), not a\n  ", bold,
			d->speedup, off, ms(x, sizeof(x), b->step_mean_ns), ms(y, sizeof(y), a->step_mean_ns),
			d->speedup_median);
		snprintf(why, sizeof(why), "speed-up: BEFORE and AFTER run different programs (%s and %s), so the "
			 "ratio compares two jobs, not a change to one", d->program[0], d->program[1]);
		fprint_wrapped(f, why, 2, 2);
	} else if (d->speedup > 0 && unlike)
		fprintf(f, "Step-time ratio: %s%.2fx%s (step time %s -> %s; median %.2fx), not a\n"
			   "  speed-up: AFTER's steps hold %.2fx BEFORE's GPU work (busy time per step);\n"
			   "  if the batch changed, --batch B:A (samples per step before and after)\n"
			   "  gives the measured speed-up in samples/s\n",
			bold, d->speedup, off, ms(x, sizeof(x), b->step_mean_ns), ms(y, sizeof(y), a->step_mean_ns),
			d->speedup_median, d->work_ratio);
	else if (d->speedup > 0 && d->by_samples)
		fprintf(f, "Measured speed-up: %s%.2fx%s in samples/s (%.0f -> %.0f; step time %s -> %s)\n", bold,
			d->speedup, off, b->samples_per_s, a->samples_per_s, ms(x, sizeof(x), b->step_mean_ns),
			ms(y, sizeof(y), a->step_mean_ns));
	else if (d->speedup > 0)
		fprintf(f, "Measured speed-up: %s%.2fx%s (step time %s -> %s; median %.2fx)\n", bold, d->speedup,
			off, ms(x, sizeof(x), b->step_mean_ns), ms(y, sizeof(y), a->step_mean_ns),
			d->speedup_median);
	else
		fprintf(f, "Measured speed-up: unknown (%s has no steps: the windows compare per second)\n",
			!b->steps ? "BEFORE" : "AFTER");
	if (d->pred.n) {
		const char *pt = predicted_text(p, sizeof(p), &d->pred), *mt = measured_text(m, sizeof(m), d);

		/* one line where it fits the 79 columns, else measured under it */
		fprintf(f, "  predicted %s%s/ measured %s\n", pt, strlen(pt) + strlen(mt) + 23 > 79 ? "\n    " : " ", mt);
	}
	if (d->job_speedup > 0) /* BEFORE's start-up finding: the next run's job */
		fprintf(f, "Job, start to exit: %.2fx (%s -> %s)\n  predicted %.2fx (%.2fx-%.2fx) by BEFORE's "
			   "start-up finding (a warm cache)\n", d->job_speedup, ms(x, sizeof(x), b->job_ns),
			ms(y, sizeof(y), a->job_ns), d->side[0].a->startup_finding.speedup,
			d->side[0].a->startup_finding.speedup_lo, d->side[0].a->startup_finding.speedup_hi);
	if (d->outlier_side >= 0) {
		const struct diff_side *o = &d->side[d->outlier_side];
		char n[320];

		snprintf(n, sizeof(n), "%s's mean step holds one step of %s (%.0f%% of its window, against a median "
			 "of %s): the median's ratio, %.2fx, is the typical step's", d->outlier_side ? "AFTER" : "BEFORE",
			 ms(x, sizeof(x), o->step_max_ns), 100 * o->step_max_ns / o->steady_ns,
			 ms(y, sizeof(y), o->step_median_ns), d->speedup_median);
		fputs("note: ", f);
		fprint_wrapped(f, n, 6, 6);
	}
	if (d->work_differs && !(unlike && d->speedup > 0) && !d->programs_differ)
		fprintf(f, "note: AFTER's steps hold %.2fx BEFORE's GPU work (busy time per step): if\n"
			   "      the batch changed, the step-time ratio is not the throughput ratio;\n"
			   "      give --batch B:A (samples per step before and after) for the ratio\n"
			   "      of samples/s\n",
			d->work_ratio);
	if (d->machines_differ) {
		char n[640];

		snprintf(n, sizeof(n), "BEFORE and AFTER ran on different machines (BEFORE: %s; AFTER: %s): "
			 "the ratio holds the machines' difference as well as the change's; record both on "
			 "one machine to measure the change alone", d->machine[0], d->machine[1]);
		fputs("note: ", f);
		fprint_wrapped(f, n, 6, 6);
	}
}

/* The label column: wide enough for every label shown, never cut. */
static int label_width(const struct diff *d)
{
	int w = 40;

	for (int c = 0; c < IDLE_NCAUSES; c++)
		if ((d->side[0].idle_ns[c] > 0 || d->side[1].idle_ns[c] > 0) &&
		    (int)strlen(idle_cause_name(c)) > w)
			w = (int)strlen(idle_cause_name(c));
	return w;
}

static void term_table(FILE *f, const struct diff *d, int w)
{
	const struct diff_side *b = &d->side[0], *a = &d->side[1];
	char x[32], y[32], z[32];

	fprintf(f, "\n  %-*s %10s %10s %8s\n", w, "", "before", "after", "change");
	fprintf(f, "  %-*s %10zu %10zu\n", w, "steps", b->steps, a->steps);
	fprintf(f, "  %-*s %10s %10s %8s\n", w, "step time (mean)", ms(x, sizeof(x), b->step_mean_ns),
		ms(y, sizeof(y), a->step_mean_ns), rel(z, sizeof(z), b->step_mean_ns, a->step_mean_ns));
	fprintf(f, "  %-*s %10s %10s %8s\n", w, "step time (median)", ms(x, sizeof(x), b->step_median_ns),
		ms(y, sizeof(y), a->step_median_ns), rel(z, sizeof(z), b->step_median_ns, a->step_median_ns));
	fprintf(f, "  %-*s %10s %10s %8s\n", w, "step time (p95)", ms(x, sizeof(x), b->step_p95_ns),
		ms(y, sizeof(y), a->step_p95_ns), rel(z, sizeof(z), b->step_p95_ns, a->step_p95_ns));
	fprintf(f, "  %-*s %10.1f %10.1f %8s\n", w, "steps/s", b->steps_per_s, a->steps_per_s,
		rel(z, sizeof(z), b->steps_per_s, a->steps_per_s));
	if (b->samples_per_s > 0)
		fprintf(f, "  %-*s %10.1f %10.1f %8s\n", w, "samples/s", b->samples_per_s, a->samples_per_s,
			rel(z, sizeof(z), b->samples_per_s, a->samples_per_s));
	fprintf(f, "  %-*s %10s %10s %7.2fx\n", w, "steady window", ms(x, sizeof(x), b->steady_ns),
		ms(y, sizeof(y), a->steady_ns), d->wall_ratio);
	fprintf(f, "  %-*s %9.0f%% %9.0f%% %+5.0f pt\n", w, "GPU busy", b->busy_pct, a->busy_pct,
		a->busy_pct - b->busy_pct);
	fprintf(f, "  %-*s %10.0f %10.0f %8s\n", w, "kernels per step", b->kernels_per_step,
		a->kernels_per_step, rel(z, sizeof(z), b->kernels_per_step, a->kernels_per_step));
	if (b->startup_ns > 0 || a->startup_ns > 0) /* a warm cache, fewer recompiles: the next run's */
		fprintf(f, "  %-*s %10s %10s %8s\n", w, "start-up (kept apart)", ms(x, sizeof(x), b->startup_ns),
			ms(y, sizeof(y), a->startup_ns), rel(z, sizeof(z), b->startup_ns, a->startup_ns));
	if (b->job_ns > 0 && a->job_ns > 0)
		fprintf(f, "  %-*s %10s %10s %8s\n", w, "job, start to exit", ms(x, sizeof(x), b->job_ns),
			ms(y, sizeof(y), a->job_ns), rel(z, sizeof(z), b->job_ns, a->job_ns));

	fprintf(f, "\nIdle per %s, by cause:\n", per_word(d));
	for (int c = 0; c < IDLE_NCAUSES; c++) {
		if (b->idle_ns[c] <= 0 && a->idle_ns[c] <= 0)
			continue;
		fprintf(f, "  %-*s %10s %10s %8s\n", w, idle_cause_name(c), ms(x, sizeof(x), b->idle_ns[c]),
			ms(y, sizeof(y), a->idle_ns[c]), rel(z, sizeof(z), b->idle_ns[c], a->idle_ns[c]));
	}
}

static void term_kernels(FILE *f, const struct diff *d)
{
	char x[32], y[32], z[32];

	fprintf(f, "\nKernels, largest change of time per %s first (%zu of %zu names):\n", per_word(d), d->nk,
		d->nk_total);
	if (d->nk)
		fprintf(f, "  %-32s %15s %15s %8s\n", "kernel: time per step x count", "before", "after", "change");
	for (size_t i = 0; i < d->nk; i++) {
		const struct diff_kernel *k = &d->k[i];
		char c0[48], c1[48];

		snprintf(c0, sizeof(c0), "%s x%llu", ms(x, sizeof(x), k->per_step[0]),
			 (unsigned long long)k->count[0]);
		snprintf(c1, sizeof(c1), "%s x%llu", ms(y, sizeof(y), k->per_step[1]),
			 (unsigned long long)k->count[1]);
		if (!k->count[0])
			snprintf(c0, sizeof(c0), "-");
		if (!k->count[1])
			snprintf(c1, sizeof(c1), "-");
		if (!k->count[0] || !k->count[1])
			snprintf(z, sizeof(z), "%s", k->count[0] ? "gone" : "new");
		else
			rel(z, sizeof(z), k->per_step[0], k->per_step[1]);
		/* a long name on a line of its own, its figures under it */
		if (strlen(k->name) > 32)
			fprintf(f, "  %s\n  %32s %15s %15s %8s\n", k->name, "", c0, c1, z);
		else
			fprintf(f, "  %-32s %15s %15s %8s\n", k->name, c0, c1, z);
	}
}

struct term_args {
	const struct diff *d;
	int color;
};

static void diff_text(FILE *f, const void *ctx)
{
	const struct diff *d = ((const struct term_args *)ctx)->d;
	int color = ((const struct term_args *)ctx)->color;
	const char *bold = color ? "\033[1m" : "", *off = color ? "\033[0m" : "";

	char eb[1024], ea[1024];

	fprintf(f, "%sgpuwhy diff%s\n  before: %s\n  after:  %s\n", bold, off,
		escape_line(eb, sizeof(eb), trace_shown(d->side[0].a->t)), escape_line(ea, sizeof(ea), trace_shown(d->side[1].a->t)));
	/* a side cut short or damaged is compared over the part read: said
	 * before any figure drawn from it */
	for (int i = 0; i < 2; i++)
		if (d->side[i].a->t->damage)
			fprintf(f, "  warning: %s (%s) is %s: it is compared over the part that was read\n",
				i ? "AFTER" : "BEFORE", escape_line(i ? ea : eb, sizeof(eb), trace_shown(d->side[i].a->t)),
				d->side[i].a->t->verdict.kind == GW_VERDICT_TRUNCATED ? "cut short" : "damaged");
	fputc('\n', f);
	term_summary(f, d, bold, off);
	term_table(f, d, label_width(d));
	term_kernels(f, d);
	fprintf(f, "\nFindings (warning and above):\n");
	if (!d->nf)
		fprintf(f, "  none on either side\n");
	for (size_t i = 0; i < d->nf; i++) {
		const struct diff_finding *e = &d->fd[i];
		const struct finding *fd = e->f[1] ? e->f[1] : e->f[0];

		char line[512];
		int col = fprintf(f, "  %-8s %-4s ", diff_state_name(e->state), e->cause);

		if (e->f[0] && e->f[1])
			snprintf(line, sizeof(line), "%s [%s -> %s]", fd->title, severity_label(e->f[0]->severity),
				 severity_label(e->f[1]->severity));
		else
			snprintf(line, sizeof(line), "%s [%s]", fd->title, severity_label(fd->severity));
		fprint_wrapped(f, line, col, col); /* under the title, within 78 columns */
	}
	fprintf(f, "\nVerdict: %s -> %s\n", d->side[0].a->facts.verdict, d->side[1].a->facts.verdict);
}

int render_diff_terminal(FILE *f, const struct diff *d, int color)
{
	struct term_args ta = { d, color };

	return gw_with_units(f, gw_utf8_locale(), diff_text, &ta);
}

/* ---- JSON ------------------------------------------------------------------ */

static void json_side(struct json *j, const char *key, const struct diff_side *s)
{
	const struct analysis *a = s->a;

	json_obj_begin(j, key);
	json_str(j, "file", trace_shown(a->t));
	/* the reader's verdict (docs/FORMAT.md "Damage"): "ok", "truncated" or
	 * "damaged"; the side is compared over the part read */
	json_str(j, "read", gw_verdict_name(&a->t->verdict));
	json_str(j, "cmdline", trace_meta(a->t, "target.cmdline"));
	json_str(j, "verdict", a->facts.verdict);
	json_u64(j, "steps", s->steps);
	json_dbl(j, "steady_s", s->steady_ns / 1e9);
	if (s->steps) {
		json_dbl(j, "step_mean_ms", s->step_mean_ns / 1e6);
		json_dbl(j, "step_median_ms", s->step_median_ns / 1e6);
		json_dbl(j, "step_p95_ms", s->step_p95_ns / 1e6);
		json_dbl(j, "steps_per_s", s->steps_per_s);
	} else {
		json_null(j, "step_mean_ms");
		json_null(j, "step_median_ms");
		json_null(j, "step_p95_ms");
		json_null(j, "steps_per_s");
	}
	if (s->samples_per_s > 0)
		json_dbl(j, "samples_per_s", s->samples_per_s);
	else
		json_null(j, "samples_per_s");
	json_dbl(j, "busy_pct", s->busy_pct);
	json_dbl(j, "idle_pct", s->idle_pct);
	json_obj_begin(j, "idle_ms");
	for (int c = 0; c < IDLE_NCAUSES; c++)
		json_dbl(j, idle_cause_id(c), s->idle_ns[c] / 1e6);
	json_obj_end(j);
	json_obj_begin(j, "idle_by_cause_pct");
	for (int c = 0; c < IDLE_NCAUSES; c++)
		json_dbl(j, idle_cause_id(c), s->idle_pct_cause[c]);
	json_obj_end(j);
	json_dbl(j, "kernels_per_step", s->kernels_per_step);
	json_dbl(j, "startup_s", s->startup_ns / 1e9);
	if (s->job_ns > 0)
		json_dbl(j, "job_s", s->job_ns / 1e9);
	else
		json_null(j, "job_s");
	if (a->combined_speedup > 0)
		json_dbl(j, "combined_speedup", a->combined_speedup);
	else
		json_null(j, "combined_speedup");
	json_obj_end(j);
}

static void json_finding(struct json *j, const char *key, const struct finding *f, double steady_ns)
{
	if (!f) {
		json_null(j, key);
		return;
	}
	json_obj_begin(j, key);
	json_str(j, "title", f->title);
	json_str(j, "severity", severity_name(f->severity));
	json_str(j, "severity_label", severity_label(f->severity));
	json_dbl(j, "saved_pct", steady_ns > 0 ? 100 * f->saved_ns / steady_ns : 0);
	json_dbl(j, "speedup", f->speedup);
	json_obj_end(j);
}

/* BEFORE's prediction for what AFTER fixed (struct diff_predicted), or null. */
static void json_predicted(struct json *j, const struct diff *d)
{
	const struct diff_predicted *p = &d->pred;

	if (!p->n) {
		json_null(j, "predicted");
		return;
	}
	json_obj_begin(j, "predicted");
	if (p->speedup > 0)
		json_dbl(j, "speedup", p->speedup);
	else
		json_null(j, "speedup");
	json_bool(j, "combined", p->combined);
	json_bool(j, "capped", p->capped);
	json_arr_begin(j, "findings");
	for (size_t i = 0; i < p->n; i++) {
		json_obj_begin(j, NULL);
		json_str(j, "rule", p->f[i]->rule_id);
		json_str(j, "cause", p->f[i]->cause);
		json_dbl(j, "speedup", p->f[i]->speedup);
		json_obj_end(j);
	}
	json_arr_end(j);
	json_obj_end(j);
}

void render_diff_json(struct json *j, const struct diff *d)
{
	json_obj_begin(j, NULL);
	json_str(j, "schema", "gpuwhy.diff/1");
	json_side(j, "before", &d->side[0]);
	json_side(j, "after", &d->side[1]);
	json_str(j, "per", per_word(d));
	json_str(j, "speedup_of", d->by_samples ? "samples_per_s" : "step_time");
	if (d->work_ratio > 0)
		json_dbl(j, "work_ratio", d->work_ratio);
	else
		json_null(j, "work_ratio");
	/* why the step-time ratio is no speed-up, or null */
	if (d->not_speedup)
		json_str(j, "not_a_speedup", d->programs_differ ? "different programs" : "unlike work");
	else
		json_null(j, "not_a_speedup");
	json_obj_begin(j, "machines"); /* what each ran on, and whether they differ */
	json_str(j, "before", d->machine[0]);
	json_str(j, "after", d->machine[1]);
	json_bool(j, "differ", d->machines_differ);
	json_obj_end(j);
	if (d->speedup > 0) {
		json_dbl(j, "speedup", d->speedup);
		json_dbl(j, "speedup_median", d->speedup_median);
	} else {
		json_null(j, "speedup");
		json_null(j, "speedup_median");
	}
	json_predicted(j, d);
	if (d->job_speedup > 0) {
		const struct startup_finding *sf = &d->side[0].a->startup_finding;

		json_obj_begin(j, "startup_predicted");
		json_dbl(j, "job_speedup", d->job_speedup);
		json_dbl(j, "predicted", sf->speedup);
		json_arr_begin(j, "predicted_range");
		json_dbl(j, NULL, sf->speedup_lo);
		json_dbl(j, NULL, sf->speedup_hi);
		json_arr_end(j);
		json_obj_end(j);
	} else {
		json_null(j, "startup_predicted");
	}
	json_dbl(j, "wall_ratio", d->wall_ratio);
	json_u64(j, "kernels_total", d->nk_total);
	json_arr_begin(j, "kernels");
	for (size_t i = 0; i < d->nk; i++) {
		const struct diff_kernel *k = &d->k[i];

		json_obj_begin(j, NULL);
		json_str(j, "name", k->name);
		json_dbl(j, "before_ms", k->ns[0] / 1e6);
		json_dbl(j, "after_ms", k->ns[1] / 1e6);
		json_dbl(j, "before_per_ms", k->per_step[0] / 1e6);
		json_dbl(j, "after_per_ms", k->per_step[1] / 1e6);
		json_u64(j, "before_count", k->count[0]);
		json_u64(j, "after_count", k->count[1]);
		json_obj_end(j);
	}
	json_arr_end(j);
	json_arr_begin(j, "findings");
	for (size_t i = 0; i < d->nf; i++) {
		const struct diff_finding *e = &d->fd[i];

		json_obj_begin(j, NULL);
		json_str(j, "rule", e->rule);
		json_str(j, "cause", e->cause);
		json_str(j, "state", diff_state_name(e->state));
		json_finding(j, "before", e->f[0], d->side[0].steady_ns);
		json_finding(j, "after", e->f[1], d->side[1].steady_ns);
		json_obj_end(j);
	}
	json_arr_end(j);
	json_obj_end(j);
}

/* ---- HTML ------------------------------------------------------------------ */

static void row(FILE *f, const char *label, const char *b, const char *a, const char *chg, int better)
{
	fprintf(f, "<tr><th>%s</th><td class=\"num\">%s</td><td class=\"num\">%s</td><td class=\"num%s\">%s</td></tr>\n",
		label, b, a, better > 0 ? " better" : better < 0 ? " worse" : "", chg);
}

/* Each side's time per step as one bar: busy, then idle by cause. */
static void compose_chart(FILE *f, const struct diff *d)
{
	struct chart c;
	double top = 0;
	const char *per = per_word(d);
	char yl[32];

	for (int s = 0; s < 2; s++) {
		double t = 0, per_n = d->side[s].steps ? (double)d->side[s].steps : d->side[s].steady_ns / 1e9;

		for (int k = 0; k < IDLE_NCAUSES; k++)
			t += d->side[s].idle_ns[k];
		t += per_n > 0 ? (double)d->side[s].a->busy_ns / per_n : 0;
		top = t > top ? t : top;
	}
	snprintf(yl, sizeof(yl), "ms per %s", per);
	chart_init(&c, 520, 280, 0, 2, 0, top / 1e6 * 1.08);
	chart_begin(f, &c, "diff-compose", "chart", "", yl);
	for (int s = 0; s < 2; s++) {
		const struct diff_side *sd = &d->side[s];
		double per_n = sd->steps ? (double)sd->steps : sd->steady_ns / 1e9, y = 0;
		double x0 = chart_x(&c, s + 0.2), x1 = chart_x(&c, s + 0.8);
		double v = per_n > 0 ? (double)sd->a->busy_ns / per_n / 1e6 : 0;

		fprintf(f, "<rect class=\"compose-bar\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
			   "fill=\"%s\"><title>GPU busy %.3g ms</title></rect>\n",
			x0, chart_y(&c, v), x1 - x0, chart_y(&c, 0) - chart_y(&c, v), BUSY_COLOR, v);
		y = v;
		for (int k = 0; k < IDLE_NCAUSES; k++) {
			v = sd->idle_ns[k] / 1e6;
			if (v <= 0)
				continue;
			fprintf(f, "<rect class=\"cause-bar\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
				   "fill=\"%s\"><title>%s %.3g ms</title></rect>\n",
				x0, chart_y(&c, y + v), x1 - x0, chart_y(&c, y) - chart_y(&c, y + v), cause_color(k),
				idle_cause_name(k), v);
			y += v;
		}
		fprintf(f, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%s</text>\n", (x0 + x1) / 2,
			c.h - c.bottom + 14, s ? "after" : "before");
	}
	chart_end(f);
	html_legend(f, BUSY_COLOR, "GPU busy");
	for (int k = 0; k < IDLE_NCAUSES; k++)
		if (d->side[0].idle_ns[k] > 0 || d->side[1].idle_ns[k] > 0)
			html_legend(f, cause_color(k), idle_cause_name(k));
}

/* The page's verdict: the speed-up measured, and BEFORE's prediction. */
static void page_summary(FILE *f, const struct diff *d)
{
	const struct diff_side *b = &d->side[0], *a = &d->side[1];
	char x[32], y[32];

	if (d->speedup > 0 && d->programs_differ) {
		fprintf(f, "<div class=\"verdict no-gpu-data\" id=\"diff-summary\" data-speedup=\"%.4f\">Step-time "
			   "ratio: <b>%.2fx</b> (step time %s &rarr; %s; median %.2fx), not a speed-up: BEFORE and "
			   "AFTER run different programs (", d->speedup, d->speedup, ms(x, sizeof(x), b->step_mean_ns),
			ms(y, sizeof(y), a->step_mean_ns), d->speedup_median);
		html_esc(f, d->program[0]);
		fputs(", ", f);
		html_esc(f, d->program[1]);
		fprintf(f, "). GPU busy %.0f%% &rarr; %.0f%%.</div>\n", b->busy_pct, a->busy_pct);
	} else if (d->speedup > 0 && d->work_unlike)
		fprintf(f, "<div class=\"verdict no-gpu-data\" id=\"diff-summary\" data-speedup=\"%.4f\">Step-time "
			   "ratio: <b>%.2fx</b> (step time %s &rarr; %s; median %.2fx), not a speed-up: AFTER's "
			   "steps hold %.2fx BEFORE's GPU work. GPU busy %.0f%% &rarr; %.0f%%.</div>\n",
			d->speedup, d->speedup, ms(x, sizeof(x), b->step_mean_ns), ms(y, sizeof(y), a->step_mean_ns),
			d->speedup_median, d->work_ratio, b->busy_pct, a->busy_pct);
	else if (d->speedup > 0 && d->by_samples)
		fprintf(f, "<div class=\"verdict %s\" id=\"diff-summary\" data-speedup=\"%.4f\">Measured speed-up: "
			   "<b>%.2fx</b> in samples/s (%.0f &rarr; %.0f; step time %s &rarr; %s). GPU busy %.0f%% "
			   "&rarr; %.0f%%.</div>\n",
			d->speedup >= 1 ? "healthy" : "bottlenecked", d->speedup, d->speedup, b->samples_per_s,
			a->samples_per_s, ms(x, sizeof(x), b->step_mean_ns), ms(y, sizeof(y), a->step_mean_ns),
			b->busy_pct, a->busy_pct);
	else if (d->speedup > 0)
		fprintf(f, "<div class=\"verdict %s\" id=\"diff-summary\" data-speedup=\"%.4f\">Measured speed-up: "
			   "<b>%.2fx</b> (step time %s &rarr; %s; median %.2fx). GPU busy %.0f%% &rarr; %.0f%%.</div>\n",
			d->speedup >= 1 ? "healthy" : "bottlenecked", d->speedup, d->speedup,
			ms(x, sizeof(x), b->step_mean_ns), ms(y, sizeof(y), a->step_mean_ns), d->speedup_median,
			b->busy_pct, a->busy_pct);
	else
		fprintf(f, "<div class=\"verdict no-gpu-data\" id=\"diff-summary\">Measured speed-up: unknown "
			   "(%s has no steps). GPU busy %.0f%% &rarr; %.0f%%.</div>\n",
			!b->steps ? "BEFORE" : "AFTER", b->busy_pct, a->busy_pct);
	if (d->pred.n) {
		char p[256];

		char m[64];

		fputs("<p id=\"diff-predicted\">predicted ", f);
		html_esc(f, predicted_text(p, sizeof(p), &d->pred));
		fputs(" / measured ", f);
		html_esc(f, measured_text(m, sizeof(m), d));
		fputs("</p>\n", f);
	}
	if (d->job_speedup > 0)
		fprintf(f, "<p id=\"diff-startup\">job, start to exit: %.2fx; BEFORE's start-up finding predicted "
			   "%.2fx (%.2fx-%.2fx) from a warm cache</p>\n", d->job_speedup,
			d->side[0].a->startup_finding.speedup, d->side[0].a->startup_finding.speedup_lo,
			d->side[0].a->startup_finding.speedup_hi);
	if (d->outlier_side >= 0) {
		const struct diff_side *o = &d->side[d->outlier_side];

		fprintf(f, "<p class=\"muted\" id=\"diff-outlier\">%s's mean step holds one step of %s (%.0f%% of its "
			   "window, against a median of %s): the median's ratio, %.2fx, is the typical step's.</p>\n",
			d->outlier_side ? "AFTER" : "BEFORE", ms(x, sizeof(x), o->step_max_ns),
			100 * o->step_max_ns / o->steady_ns, ms(y, sizeof(y), o->step_median_ns), d->speedup_median);
	}
	if (d->work_differs && !d->programs_differ)
		fprintf(f, "<p class=\"muted\" id=\"diff-work\">AFTER's steps hold %.2fx BEFORE's GPU work (busy time "
			   "per step): if the batch changed, the step-time ratio is not the throughput ratio; "
			   "<code>--batch B:A</code> (samples per step before and after) gives the ratio of "
			   "samples/s.</p>\n", d->work_ratio);
	if (d->machines_differ) {
		fputs("<p class=\"muted\" id=\"diff-machines\">BEFORE and AFTER ran on different machines (BEFORE: ", f);
		html_esc(f, d->machine[0]);
		fputs("; AFTER: ", f);
		html_esc(f, d->machine[1]);
		fputs("): the ratio holds the machines' difference as well as the change's.</p>\n", f);
	}

}

static void diff_page(FILE *f, const void *ctx)
{
	const struct diff *d = ctx;
	const struct diff_side *b = &d->side[0], *a = &d->side[1];
	const char *per = per_word(d);
	char x[32], y[32], z[32], title[1024];

	snprintf(title, sizeof(title), "gpuwhy diff: %s vs %s", trace_shown(b->a->t), trace_shown(a->a->t));
	html_begin(f, title);
	fputs("<h1>gpuwhy diff</h1>\n<table id=\"diff-files\">\n", f);
	for (int s = 0; s < 2; s++) {
		const char *cmd = trace_meta(d->side[s].a->t, "target.cmdline");

		fprintf(f, "<tr><th>%s</th><td class=\"mono\">", s ? "after" : "before");
		html_esc(f, trace_shown(d->side[s].a->t));
		if (cmd) {
			fputs("<br><span class=\"muted\">", f);
			html_esc(f, cmd);
			fputs("</span>", f);
		}
		fputs("</td></tr>\n", f);
	}
	fputs("</table>\n", f);
	page_summary(f, d);
	fputs("<h2>Side by side</h2>\n<table id=\"diff-table\"><tr><th></th><th class=\"num\">before</th>"
	      "<th class=\"num\">after</th><th class=\"num\">change</th></tr>\n", f);
	snprintf(x, sizeof(x), "%zu", b->steps);
	snprintf(y, sizeof(y), "%zu", a->steps);
	row(f, "steps", x, y, "", 0);
	{
		char v0[32], v1[32];

		row(f, "step time (mean)", ms(v0, sizeof(v0), b->step_mean_ns), ms(v1, sizeof(v1), a->step_mean_ns),
		    rel(z, sizeof(z), b->step_mean_ns, a->step_mean_ns), (a->step_mean_ns < b->step_mean_ns) -
		    (a->step_mean_ns > b->step_mean_ns));
		row(f, "step time (median)", ms(v0, sizeof(v0), b->step_median_ns),
		    ms(v1, sizeof(v1), a->step_median_ns), rel(z, sizeof(z), b->step_median_ns, a->step_median_ns),
		    (a->step_median_ns < b->step_median_ns) - (a->step_median_ns > b->step_median_ns));
		row(f, "step time (p95)", ms(v0, sizeof(v0), b->step_p95_ns), ms(v1, sizeof(v1), a->step_p95_ns),
		    rel(z, sizeof(z), b->step_p95_ns, a->step_p95_ns),
		    (a->step_p95_ns < b->step_p95_ns) - (a->step_p95_ns > b->step_p95_ns));
		snprintf(v0, sizeof(v0), "%.1f", b->steps_per_s);
		snprintf(v1, sizeof(v1), "%.1f", a->steps_per_s);
		row(f, "steps/s", v0, v1, rel(z, sizeof(z), b->steps_per_s, a->steps_per_s),
		    (a->steps_per_s > b->steps_per_s) - (a->steps_per_s < b->steps_per_s));
		if (b->samples_per_s > 0) {
			snprintf(v0, sizeof(v0), "%.1f", b->samples_per_s);
			snprintf(v1, sizeof(v1), "%.1f", a->samples_per_s);
			row(f, "samples/s", v0, v1, rel(z, sizeof(z), b->samples_per_s, a->samples_per_s),
			    (a->samples_per_s > b->samples_per_s) - (a->samples_per_s < b->samples_per_s));
		}
		snprintf(z, sizeof(z), "%.2fx", d->wall_ratio);
		row(f, "steady window", ms(v0, sizeof(v0), b->steady_ns), ms(v1, sizeof(v1), a->steady_ns), z, 0);
		snprintf(v0, sizeof(v0), "%.0f%%", b->busy_pct);
		snprintf(v1, sizeof(v1), "%.0f%%", a->busy_pct);
		snprintf(z, sizeof(z), "%+.0f pt", a->busy_pct - b->busy_pct);
		row(f, "GPU busy", v0, v1, z, (a->busy_pct > b->busy_pct + 0.5) - (a->busy_pct < b->busy_pct - 0.5));
		snprintf(v0, sizeof(v0), "%.0f", b->kernels_per_step);
		snprintf(v1, sizeof(v1), "%.0f", a->kernels_per_step);
		row(f, "kernels per step", v0, v1, rel(z, sizeof(z), b->kernels_per_step, a->kernels_per_step), 0);
		if (b->startup_ns > 0 || a->startup_ns > 0)
			row(f, "start-up (kept apart)", ms(v0, sizeof(v0), b->startup_ns),
			    ms(v1, sizeof(v1), a->startup_ns), rel(z, sizeof(z), b->startup_ns, a->startup_ns),
			    d->startup_better);
		if (b->job_ns > 0 && a->job_ns > 0)
			row(f, "job, start to exit", ms(v0, sizeof(v0), b->job_ns), ms(v1, sizeof(v1), a->job_ns),
			    rel(z, sizeof(z), b->job_ns, a->job_ns), 0);
		fputs("</table>\n", f);

		fprintf(f, "<h2>Time per %s: GPU busy and idle by cause</h2>\n", per);
		compose_chart(f, d);
		fprintf(f, "<table id=\"diff-idle\"><tr><th>idle per %s</th><th class=\"num\">before</th>"
			   "<th class=\"num\">after</th><th class=\"num\">change</th></tr>\n", per);
		for (int c = 0; c < IDLE_NCAUSES; c++) {
			if (b->idle_ns[c] <= 0 && a->idle_ns[c] <= 0)
				continue;
			row(f, idle_cause_name(c), ms(v0, sizeof(v0), b->idle_ns[c]), ms(v1, sizeof(v1), a->idle_ns[c]),
			    rel(z, sizeof(z), b->idle_ns[c], a->idle_ns[c]),
			    idle_change_counts(d, c) ? (a->idle_ns[c] < b->idle_ns[c]) - (a->idle_ns[c] > b->idle_ns[c]) : 0);
		}
		fputs("</table>\n", f);
	}

	fprintf(f, "<h2>Kernels, largest change of time per %s first</h2>\n<p class=\"muted\">%zu of %zu kernel "
		   "names; time per %s and count over the steady window.</p>\n<table id=\"diff-kernels\">"
		   "<tr><th>kernel</th><th class=\"num\">before</th><th class=\"num\">count</th>"
		   "<th class=\"num\">after</th><th class=\"num\">count</th><th class=\"num\">change</th></tr>\n",
		per, d->nk, d->nk_total, per);
	for (size_t i = 0; i < d->nk; i++) {
		const struct diff_kernel *k = &d->k[i];

		fputs("<tr class=\"kernel\"><td class=\"mono\">", f);
		html_esc(f, k->name);
		fprintf(f, "</td><td class=\"num\">%s</td><td class=\"num\">%llu</td><td class=\"num\">%s</td>"
			   "<td class=\"num\">%llu</td><td class=\"num\">%s</td></tr>\n",
			ms(x, sizeof(x), k->per_step[0]), (unsigned long long)k->count[0],
			ms(y, sizeof(y), k->per_step[1]), (unsigned long long)k->count[1],
			!k->count[0] ? "new" : !k->count[1] ? "gone" : rel(z, sizeof(z), k->per_step[0], k->per_step[1]));
	}
	fputs("</table>\n<h2>Findings (warning and above)</h2>\n<table id=\"diff-findings\">"
	      "<tr><th>state</th><th>cause</th><th>finding</th><th>before</th><th>after</th></tr>\n", f);
	for (size_t i = 0; i < d->nf; i++) {
		const struct diff_finding *e = &d->fd[i];
		const struct finding *fd = e->f[1] ? e->f[1] : e->f[0];

		fprintf(f, "<tr class=\"finding-change %s\"><td class=\"%s\">%s</td><td>", diff_state_name(e->state),
			e->state == DIFF_GONE ? "better" : e->state == DIFF_NEW ? "worse" : "",
			diff_state_name(e->state));
		html_esc(f, e->cause);
		fputs("</td><td>", f);
		html_esc(f, fd->title);
		for (int s = 0; s < 2; s++) {
			if (e->f[s])
				fprintf(f, "</td><td>%s, %.2fx", severity_label(e->f[s]->severity), e->f[s]->speedup);
			else
				fputs("</td><td>-", f);
		}
		fputs("</td></tr>\n", f);
	}
	if (!d->nf)
		fputs("<tr><td colspan=\"5\" class=\"muted\">none on either side</td></tr>\n", f);
	fprintf(f, "</table>\n<p class=\"muted\">verdict: %s &rarr; %s. gpuwhy %s.</p>\n", b->a->facts.verdict,
		a->a->facts.verdict, GPUWHY_VERSION);
	html_end(f);
}

/* The page is UTF-8: durations in µs. */
int render_diff_html(FILE *f, const struct diff *d)
{
	int r = gw_with_units(f, 1, diff_page, d);

	return ferror(f) ? -EIO : r;
}
