/* The HTML report (report --html): the terminal report's content and its
 * charts in one self-contained page. It formats struct analysis; the only
 * arithmetic here is binning long series into at most a few hundred points. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../analyze/analyze.h"
#include "../util/util.h"
#include "html.h"
#include "render.h"

#define MAX_BARS 300   /* per-step bars: steps are binned beyond this */
#define MAX_POINTS 600 /* points per line of the GPU charts */
#define HIST_BINS 40
#define HIST_CLIP_P95 3 /* the distribution's bins end at this many p95s when steps run longer */


/* The bin of x (0 <= x < 1 inside) among n, clamped in floating point
 * before the conversion: a damaged recording's times can put x anywhere,
 * NaN included, and converting an out-of-range double is undefined. */
static size_t bin_of(double x, size_t n)
{
	double k = x * (double)n;

	if (!(k > 0))
		return 0;
	return k >= (double)n ? n - 1 : (size_t)k;
}

static double pct(double part, double whole)
{
	return whole > 0 ? 100.0 * part / whole : 0;
}

static const char *gpu_name(const struct analysis *a, uint32_t d)
{
	const char *n = trace_gpu_name(a->t, d);

	return n ? n : "GPU";
}

/* Where the time axes start: the first GPU operation or NVML sample. */
static uint64_t origin(const struct analysis *a)
{
	uint64_t o = a->first_op;

	for (size_t i = 0; i < a->t->gpu_samples.n; i++)
		if (a->t->gpu_samples.v[i].gpu == a->main_dev) {
			if (!o || a->t->gpu_samples.v[i].ts < o)
				o = a->t->gpu_samples.v[i].ts;
			break;
		}
	return o ? o : a->t0;
}

static void header(FILE *f, const struct analysis *a)
{
	const struct trace *t = a->t;
	const char *cmd = trace_meta(t, "target.cmdline"), *st = trace_meta(t, "record.exit_status");
	char b1[32];

	fputs("<h1>gpuwhy report</h1>\n<div class=\"mono\" id=\"file\">", f);
	html_esc(f, trace_shown(t));
	fputs("</div>\n<table id=\"job\">\n", f);
	if (cmd) {
		fputs("<tr><th>job</th><td class=\"mono\">", f);
		html_esc(f, cmd);
		if (st && strcmp(st, "0")) {
			fputs(" (exit ", f);
			html_esc(f, st);
			fputs(")", f);
		}
		fputs("</td></tr>\n", f);
	}
	fprintf(f, "<tr><th>framework</th><td>%s%s", framework_name(a->framework),
		a->python[0] ? ", Python " : "");
	html_esc(f, a->python);
	fputs(" (from ", f);
	html_esc(f, a->framework_source);
	fputs(")</td></tr>\n", f);
	for (uint32_t d = 0; d < a->ndev && d < GW_MAX_GPUS; d++) {
		const struct device_summary *ds = &a->dev[d];

		if (!ds->window_ns)
			continue;
		fprintf(f, "<tr><th>GPU %u</th><td>", d);
		html_esc(f, gpu_name(a, d));
		fprintf(f, ": first to last operation %s, busy %.0f%% (kernels %.0f%%, copies %.0f%%, communication "
			   "%.0f%%)%s</td></tr>\n",
			fmt_ns(b1, sizeof(b1), (double)ds->window_ns),
			pct((double)ds->busy_ns, (double)ds->window_ns),
			pct((double)ds->kernel_ns, (double)ds->window_ns),
			pct((double)ds->copy_ns, (double)ds->window_ns),
			pct((double)ds->comm_ns, (double)ds->window_ns), d == a->main_dev ? " (main GPU)" : "");
	}
	fputs("</table>\n", f);
}

static void verdict(FILE *f, const struct analysis *a)
{
	const char *v = a->facts.verdict;
	char b1[32];

	fprintf(f, "<div class=\"verdict %s\" id=\"verdict\" data-verdict=\"%s\">", v, v);
	if (!a->t->nops) {
		fputs("No GPU timeline in this recording: nothing to judge.", f);
	} else if (a->too_little) {
		fputs("<b>Too little to diagnose</b>: ", f);
		html_esc(f, a->too_little_why);
		fputs(". Record more of the job's loop for a diagnosis.", f);
	} else if (!strcmp(v, "healthy")) {
		char once[320];

		fprintf(f, "<b>No significant bottleneck</b>: GPU %u busy %.0f%% of the steady run (%s).",
			a->main_dev, pct((double)a->busy_ns, (double)a->steady_ns),
			fmt_ns(b1, sizeof(b1), (double)a->steady_ns));
		if (tail_once_text(once, sizeof(once), a)) {
			fputc(' ', f);
			html_esc(f, once);
		}
	} else
		fprintf(f, "<b>Bottlenecked</b>: GPU %u busy %.0f%% of the steady run (%s).", a->main_dev,
			pct((double)a->busy_ns, (double)a->steady_ns),
			fmt_ns(b1, sizeof(b1), (double)a->steady_ns));
	char chosen[160] = "Fixing every finding below at warning and above";

	if (a->combined_chosen)
		combined_causes_text(chosen, sizeof(chosen), a, "Fixing ");
	if (a->combined_chosen && !(a->combined_speedup > 1))
		fprintf(f, " %s: no gain the replay can give.", chosen);
	else if (a->combined_speedup > 0 && (!strcmp(v, "bottlenecked") || a->combined_chosen))
		fprintf(f, " %s: %s%.2fx faster %s%s.", chosen,
			a->combined_capped ? "at least " : "about ", a->combined_speedup,
			a->combined_batch > 0 ? "per sample, with the batch larger as C3 says" : "overall",
			a->combined_capped ? " (capped)" : "");
	fputs("</div>\n", f);
	if (a->warnings.n || a->py_note[0]) {
		fputs("<ul id=\"warnings\">\n", f);
		for (size_t i = 0; i < a->warnings.n; i++) {
			fputs("<li>warning: ", f);
			html_esc(f, a->warnings.v[i]);
			fputs("</li>\n", f);
		}
		if (a->py_note[0]) {
			fputs("<li class=\"muted\">note: ", f);
			html_esc(f, a->py_note);
			fputs("</li>\n", f);
		}
		fputs("</ul>\n", f);
	}
}

static void idle_split(FILE *f, const struct analysis *a)
{
	double share[IDLE_NCAUSES];
	const char *label[IDLE_NCAUSES], *color[IDLE_NCAUSES];
	int order[IDLE_NCAUSES], n = 0;
	char b1[32];

	if (!a->idle_ns)
		return;
	for (int c = 0; c < IDLE_NCAUSES; c++)
		if (a->idle_by_cause[c])
			order[n++] = c;
	for (int i = 0; i < n; i++) /* largest first, as the terminal report */
		for (int k = i + 1; k < n; k++)
			if (a->idle_by_cause[order[k]] > a->idle_by_cause[order[i]]) {
				int x = order[i];

				order[i] = order[k];
				order[k] = x;
			}
	fprintf(f, "<h2 id=\"idle\">Idle time: %.0f%% of the steady run on GPU %u, by cause</h2>\n",
		pct((double)a->idle_ns, (double)a->steady_ns), a->main_dev);
	for (int i = 0; i < n; i++) {
		share[i] = (double)a->idle_by_cause[order[i]] / (double)a->idle_ns;
		label[i] = idle_cause_label(a, order[i]);
		color[i] = cause_color(order[i]);
	}
	html_split_bar(f, "idle-split", share, label, color, n);
	/* shares of the run beside shares of the idle: the findings give theirs
	 * of the run; idle intervals per step, where there are steps */
	fprintf(f, "<table id=\"idle-table\"><tr><th>cause</th><th class=\"num\">share of the run</th>"
		"<th class=\"num\">share of idle</th><th class=\"num\">time</th><th class=\"num\">idle "
		"intervals%s</th></tr>\n", has_steps(a) ? " per step" : "");
	for (int i = 0; i < n; i++) {
		fprintf(f, "<tr class=\"cause\" data-cause=\"%s\"><td>", idle_cause_id(order[i]));
		html_legend(f, color[i], label[i]);
		fprintf(f, "</td><td class=\"num\">%.1f%%</td><td class=\"num\">%.1f%%</td><td class=\"num\">%s</td>",
			pct((double)a->idle_by_cause[order[i]], (double)a->steady_ns), 100 * share[i],
			fmt_ns(b1, sizeof(b1), (double)a->idle_by_cause[order[i]]));
		if (has_steps(a))
			fprintf(f, "<td class=\"num\">%.1f</td></tr>\n",
				(double)a->gaps_by_cause[order[i]] / (double)has_steps(a));
		else
			fprintf(f, "<td class=\"num\">%llu</td></tr>\n", (unsigned long long)a->gaps_by_cause[order[i]]);
	}
	fputs("</table>\n", f);
	if (a->facts.periodic_busy_ns > 0)
		fprintf(f, "<p class=\"muted\" id=\"periodic-busy\">The C14 finding's share of the run counts "
			"%.1f%% of the run idle and %.1f%% of the run busy with the periodic work itself, which "
			"is not in this split.</p>\n",
			pct(a->facts.periodic_idle_ns, (double)a->steady_ns),
			pct(a->facts.periodic_busy_ns, (double)a->steady_ns));
	{
		char text[512];

		if (compile_text(text, sizeof(text), a)) {
			fputs("<p class=\"muted\" id=\"compiling\">Compiling: ", f);
			html_esc(f, text);
			fputs(".</p>\n", f);
		}
	}
}

static void finding_html(FILE *f, const struct analysis *a, const struct finding *fd, int rank)
{
	char b1[32], text[512];
	const char *per = has_steps(a) ? "per step" : "over the run";

	if (!fd->assessed) {
		fputs("<section class=\"finding not-assessed\" data-rule=\"", f);
		html_esc(f, fd->rule_id);
		fputs("\"><span class=\"sev\">not assessed</span> ", f);
		html_esc(f, fd->cause);
		fputs(": ", f);
		html_esc(f, fd->why);
		fputs("</section>\n", f);
		return;
	}
	fprintf(f, "<section class=\"finding %s\" id=\"finding-%d\" data-rule=\"", severity_name(fd->severity),
		rank);
	html_esc(f, fd->rule_id);
	fprintf(f, "\">\n<h3><span class=\"sev %s\">%s</span>", severity_name(fd->severity),
		severity_label(fd->severity));
	html_esc(f, fd->title);
	fputs(" (", f);
	html_esc(f, fd->cause);
	fputs(")</h3>\n<div class=\"gain\">gain: ", f);
	if (fd->saved_ns > 0 && finding_batch(fd) > 0)
		fprintf(f, "%s%.3gx faster per sample at x%.0f the batch (%.3gx-%.3gx)",
			fd->capped ? "&ge; " : "", fd->speedup, finding_batch(fd), fd->speedup_lo, fd->speedup_hi);
	else if (fd->saved_ns > 0)
		fprintf(f, "%s%s %s, %s%.2fx faster overall%s", fd->capped ? "&ge; " : "",
			fmt_ns(b1, sizeof(b1), has_steps(a) ? fd->per_step_ns : fd->saved_ns), per,
			fd->capped ? "&ge; " : "", fd->speedup, fd->capped ? " (capped)" : "");
	else if (fd->claim.idle_ns + fd->claim.busy_ns > 0)
		fputs("none beyond the findings that count the same time", f);
	else
		fputs("not quantified", f);
	fprintf(f, " (confidence %s)", confidence_name(fd->confidence));
	if (fd->unblock_x > 0)
		fprintf(f, "; with the %s fix it keeps from working: %.2fx (%.2fx-%.2fx)", fd->unblock_cause,
			fd->unblock_x, fd->unblock_lo, fd->unblock_hi);
	fputs("</div>\n", f);
	if (fd->nsites) {
		fputs("<ul class=\"sites\">\n", f);
		for (unsigned i = 0; i < fd->nsites; i++) {
			const struct finding_site *fs = &fd->sites[i];

			finding_site_text(text, sizeof(text), a, fs);
			fputs("<li class=\"site\">at <span class=\"mono\">", f);
			html_esc(f, text);
			fputs("</span>", f);
			if (fs->exact)
				fprintf(f, ": %llu call%s, %.1f ms waited (%.0f%% of the waits)",
					(unsigned long long)fs->calls, fs->calls == 1 ? "" : "s", fs->value / 1e6,
					100.0 * fs->share);
			else if (fs->launching)
				fprintf(f, " (%.0f%% of the time launching work)", 100.0 * fs->share);
			else if (fs->launched)
				fprintf(f, " (launched %.0f%% of the FP32/FP64 matrix kernels' time)", 100.0 * fs->share);
			else if (fs->staging)
				fprintf(f, " (%.0f%% of the time in pageable copies)", 100.0 * fs->share);
			else {
				uint8_t cls = finding_site_class(a, fs);

				fprintf(f, " (%.0f%% of this idle%s%s)", 100.0 * fs->share, cls ? ": " : "",
					site_class_name(cls));
			}
			fputs("</li>\n", f);
		}
		if (backward_text(text, sizeof(text), fd, " ")) {
			fputs("<li class=\"site\">", f);
			html_esc(f, text);
			fputs("</li>\n", f);
		}
		fputs("</ul>\n", f);
	}
	fputs("<div class=\"fix\"><b>fix:</b> ", f);
	html_esc(f, fd->fix);
	fputs("</div>\n<details class=\"evidence\" open><summary>evidence</summary>", f);
	html_esc(f, fd->evidence);
	struct strbuf bt = { 0 };

	if (finding_batch(fd) > 0 && batch_text(&bt, fd) == 0) {
		fputs(" Batch: ", f);
		html_esc(f, bt.s);
	}
	sb_free(&bt);
	fputs("</details>\n</section>\n", f);
}

/* The start-up finding (rules/startup.c): the next run's gain, after the
 * steps'. */
static void startup_html(FILE *f, const struct analysis *a)
{
	const struct startup_finding *sf = &a->startup_finding;
	char b1[32], b2[32];

	if (!sf->shown)
		return;
	fprintf(f, "<section class=\"finding info\" id=\"startup-finding\" data-rule=\"startup\">\n"
		   "<h3><span class=\"sev info\">%s</span>Start-up, for the next run: ", severity_label(SEV_INFO));
	html_esc(f, sf->title);
	fprintf(f, "</h3>\n<div class=\"gain\">gain: %s of %s if the next run starts from a warm cache: the "
		   "job, start to exit, %.2fx faster (%.2fx-%.2fx)</div>\n", fmt_ns(b1, sizeof(b1), sf->saved_ns),
		fmt_ns(b2, sizeof(b2), sf->job_ns), sf->speedup, sf->speedup_lo, sf->speedup_hi);
	if (a->startup.compile_file) {
		fputs("<ul class=\"sites\">\n<li class=\"site\">at <span class=\"mono\">", f);
		html_esc(f, a->t->names.v[a->startup.compile_file]);
		fprintf(f, ":%u</span> (the line that compiled most)</li>\n</ul>\n", a->startup.compile_line);
	}
	fputs("<div class=\"fix\"><b>fix:</b> ", f);
	html_esc(f, sf->fix);
	fputs("</div>\n<details class=\"evidence\" open><summary>evidence</summary>", f);
	html_esc(f, sf->evidence);
	fputs("</details>\n</section>\n", f);
}

static void findings(FILE *f, const struct analysis *a)
{
	int rank = 0;

	fprintf(f, "<h2 id=\"findings\">Findings, largest gain first</h2>\n");
	for (size_t i = 0; i < a->findings.n; i++)
		if (a->findings.v[i].assessed)
			finding_html(f, a, &a->findings.v[i], ++rank);
	if (!rank)
		fprintf(f, "<p class=\"muted\">No finding%s.</p>\n", a->startup_finding.shown ? " about the steps" : "");
	startup_html(f, a);
	for (size_t i = 0; i < a->findings.n; i++)
		if (!a->findings.v[i].assessed)
			finding_html(f, a, &a->findings.v[i], 0);
}

/* The step (or window) a gap falls in, by time, when the analysis did not
 * give it one (time windows). */
static size_t step_of(const struct analysis *a, const struct gap *g)
{
	size_t lo = 0, hi = a->steps.n;

	if (g->step != UINT32_MAX)
		return g->step;
	if (has_steps(a))
		return SIZE_MAX; /* outside every step */
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (a->steps.v[mid].start <= g->start)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0 || g->start >= a->steps.v[lo - 1].end)
		return SIZE_MAX;
	return lo - 1;
}

static void step_time_charts(FILE *f, const struct analysis *a, uint64_t org)
{
	size_t n = a->steps.n, nb = n < MAX_BARS ? n : MAX_BARS;
	double *x = calloc(nb, sizeof(double)), *mean = calloc(nb, sizeof(double)),
	       *mx = calloc(nb, sizeof(double)), *d = calloc(n, sizeof(double));
	struct chart c;
	double ymax = 0;
	char label[96];

	if (!x || !mean || !mx || !d)
		goto out;
	for (size_t b = 0; b < nb; b++) {
		size_t s0 = b * n / nb, s1 = (b + 1) * n / nb;

		for (size_t s = s0; s < s1; s++) {
			double ms = (double)(a->steps.v[s].end - a->steps.v[s].start) / 1e6;

			mean[b] += ms / (double)(s1 - s0);
			mx[b] = ms > mx[b] ? ms : mx[b];
		}
		x[b] = (double)(a->steps.v[(s0 + s1) / 2].start - org) / 1e9;
		ymax = mx[b] > ymax ? mx[b] : ymax;
	}
	fputs("<h3>Step time over the run</h3>\n", f);
	chart_init(&c, 900, 220, (double)(a->steps.v[0].start - org) / 1e9,
		   (double)(a->steps.v[n - 1].end - org) / 1e9, 0, ymax * 1.05);
	chart_begin(f, &c, "step-time", "chart", "seconds since the first GPU operation or NVML sample", "step time (ms)");
	if (nb < n)
		chart_path(f, &c, x, mx, nb, "series max", "#e0a0a0", "longest step in each bin");
	snprintf(label, sizeof(label), "%s", nb < n ? "mean step time per bin of steps" : "step time");
	chart_path(f, &c, x, mean, nb, "series", "#1d70b8", label);
	chart_end(f);
	html_legend(f, "#1d70b8", label);
	if (nb < n) {
		snprintf(label, sizeof(label), "longest step of each bin (%zu steps a bin)", (n + nb - 1) / nb);
		html_legend(f, "#e0a0a0", label);
	}

	/* distribution: linear bins up to the longest step, or to HIST_CLIP_P95
	 * x the p95 when a few long steps would squeeze the rest into one bin */
	for (size_t s = 0; s < n; s++)
		d[s] = (double)(a->steps.v[s].end - a->steps.v[s].start) / 1e6;
	{
		double hi = a->step_max_ns / 1e6, p95 = a->step_p95_ns / 1e6;
		unsigned cnt[HIST_BINS] = { 0 }, top = 0;
		int clipped = p95 > 0 && hi > HIST_CLIP_P95 * p95;
		char clip[96] = "";

		if (clipped) {
			hi = HIST_CLIP_P95 * p95;
			snprintf(clip, sizeof(clip), "; steps longer than %dx the p95 are counted in the last bin",
				 HIST_CLIP_P95);
		}
		if (hi <= 0)
			hi = 1;
		for (size_t s = 0; s < n; s++) {
			cnt[bin_of(d[s] / hi, HIST_BINS)]++;
		}
		for (int k = 0; k < HIST_BINS; k++)
			top = cnt[k] > top ? cnt[k] : top;
		fprintf(f, "<h3>Step time distribution</h3>\n<p class=\"muted\">median %.3g ms, p95 %.3g ms, "
			   "shortest %.3g ms, longest %.3g ms%s</p>\n",
			a->step_median_ns / 1e6, p95, a->step_min_ns / 1e6, a->step_max_ns / 1e6,
			clip);
		chart_init(&c, 900, 200, 0, hi, 0, top * 1.05);
		chart_begin(f, &c, "step-hist", "chart", "step time (ms)", "steps");
		for (int k = 0; k < HIST_BINS; k++) {
			double x0 = chart_x(&c, hi * k / HIST_BINS), x1 = chart_x(&c, hi * (k + 1) / HIST_BINS);

			if (!cnt[k])
				continue;
			fprintf(f, "<rect class=\"hbar\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
				   "fill=\"#1d70b8\"><title>%.3g-%.3g%s ms: %u steps</title></rect>\n",
				x0 + 0.5, chart_y(&c, cnt[k]), x1 - x0 - 1 > 0.5 ? x1 - x0 - 1 : 0.5,
				chart_y(&c, 0) - chart_y(&c, cnt[k]), hi * k / HIST_BINS, hi * (k + 1) / HIST_BINS,
				clipped && k == HIST_BINS - 1 ? "+" : "", cnt[k]);
		}
		chart_end(f);
	}
out:
	free(x);
	free(mean);
	free(mx);
	free(d);
}

/* Per step (or bin of steps, or time window): GPU busy and the idle time of
 * each cause, stacked, in ms per step. */
static void step_bars(FILE *f, const struct analysis *a)
{
	size_t n = a->steps.n, nb = n < MAX_BARS ? n : MAX_BARS;
	double (*bin)[IDLE_NCAUSES + 1] = calloc(nb, sizeof(*bin));
	int used[IDLE_NCAUSES] = { 0 };
	const char *unit = has_steps(a) ? "step" : "window";
	struct chart c;
	double ymax = 0;
	char yl[64];

	if (!bin)
		return;
	/* bin of step s: the b with b*n/nb <= s < (b+1)*n/nb */
	for (size_t s = 0; s < n; s++)
		bin[s * nb / n][IDLE_NCAUSES] += (double)a->steps.v[s].busy_ns;
	for (size_t i = 0; i < a->gaps.n; i++) {
		const struct gap *g = &a->gaps.v[i];
		size_t s = step_of(a, g);

		if (s >= n || g->cause >= IDLE_NCAUSES)
			continue;
		used[g->cause] = 1;
		if (has_steps(a)) { /* a step holds its gaps whole */
			bin[s * nb / n][g->cause] += (double)(g->end - g->start);
			continue;
		}
		/* a long gap is split over the time windows it spans, as the
		 * windows' idle time is (attribute.c) */
		for (size_t k = s; k < n && a->steps.v[k].start < g->end; k++) {
			uint64_t s0 = a->steps.v[k].start > g->start ? a->steps.v[k].start : g->start;
			uint64_t s1 = a->steps.v[k].end < g->end ? a->steps.v[k].end : g->end;

			if (s1 > s0)
				bin[k * nb / n][g->cause] += (double)(s1 - s0);
		}
	}
	for (size_t b = 0; b < nb; b++) {
		size_t s0 = (b * n + nb - 1) / nb, s1 = ((b + 1) * n + nb - 1) / nb;
		double tot = 0;

		for (int k = 0; k <= IDLE_NCAUSES; k++) {
			bin[b][k] /= 1e6 * (double)(s1 > s0 ? s1 - s0 : 1);
			tot += bin[b][k];
		}
		ymax = tot > ymax ? tot : ymax;
	}
	fprintf(f, "<h3>Each %s: GPU busy and idle by cause</h3>\n", unit);
	if (nb < n)
		fprintf(f, "<p class=\"muted\">%zu %ss in %zu bars: each bar is the mean of its %ss.</p>\n", n,
			unit, nb, unit);
	snprintf(yl, sizeof(yl), "ms per %s", unit);
	chart_init(&c, 900, 260, 0, (double)n, 0, ymax * 1.05);
	chart_begin(f, &c, "step-bars", "chart", has_steps(a) ? "step" : "time window", yl);
	fprintf(f, "<g class=\"bars\" data-bins=\"%zu\" data-steps=\"%zu\">\n", nb, n);
	for (size_t b = 0; b < nb; b++) {
		size_t s0 = (b * n + nb - 1) / nb, s1 = ((b + 1) * n + nb - 1) / nb;
		double x0 = chart_x(&c, (double)s0), x1 = chart_x(&c, (double)s1), y = 0;
		double w = x1 - x0 > 1.5 ? x1 - x0 - 0.5 : x1 - x0;

		char range[64];

		if (s1 - s0 > 1)
			snprintf(range, sizeof(range), "%ss %zu-%zu (mean)", unit, s0 + 1, s1);
		else
			snprintf(range, sizeof(range), "%s %zu", unit, s0 + 1);
		fprintf(f, "<g class=\"stepbar\"><title>%s: busy %.3g ms", range, bin[b][IDLE_NCAUSES]);
		for (int k = 0; k < IDLE_NCAUSES; k++)
			if (bin[b][k] > 0)
				fprintf(f, ", %s %.3g ms", idle_cause_id(k), bin[b][k]);
		fputs("</title>", f);
		for (int k = IDLE_NCAUSES; k >= 0; k--) { /* busy at the bottom */
			double v = bin[b][k];

			if (v <= 0)
				continue;
			fprintf(f, "<rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.2f\" fill=\"%s\"/>", x0,
				chart_y(&c, y + v), w, chart_y(&c, y) - chart_y(&c, y + v),
				k == IDLE_NCAUSES ? BUSY_COLOR : cause_color(k));
			y += v;
		}
		fputs("</g>\n", f);
	}
	fputs("</g>\n", f);
	chart_end(f);
	html_legend(f, BUSY_COLOR, "GPU busy");
	for (int k = 0; k < IDLE_NCAUSES; k++)
		if (used[k])
			html_legend(f, cause_color(k), idle_cause_name(k));
	free(bin);
}

static void steps_section(FILE *f, const struct analysis *a, uint64_t org)
{
	char b1[32], b2[32];

	fputs("<h2 id=\"steps\">Steps</h2>\n<table id=\"steps-table\">\n", f);
	if (has_steps(a)) {
		fprintf(f, "<tr><th>steps</th><td>%zu, found %s (confidence %s)</td></tr>\n", a->steps.n,
			a->step_user				 ? "as asked"
			: !strcmp(a->step_source, "nvtx")	 ? "from NVTX ranges"
			: !strcmp(a->step_source, "optimizer") ? "from the optimizer's updates (each ends with one)"
								 : "as the repeating unit of the GPU operations",
			a->step_user ? "user" : confidence_name((enum confidence)a->step_confidence));
		fprintf(f, "<tr><th>%s</th><td class=\"mono\">",
			!strcmp(a->step_source, "optimizer") ? "each ends with" : "each starts with");
		html_esc(f, strcmp(a->step_source, "nvtx") && a->step_marker_name
				    ? analysis_kname(a, a->step_marker_name, KNAME_SHORT)
				    : a->step_marker);
		fprintf(f, "</td></tr>\n<tr><th>iterations</th><td>%llu in the whole run, start-up included "
			   "(your loop's count",
			(unsigned long long)a->step_iterations);
		if (a->steps_long_every)
			fprintf(f, ", or about %llu if an iteration spans %u of them: every %u steps one runs "
				   "long with the same code", (unsigned long long)a->step_iterations_if_long,
				a->steps_long_every, a->steps_long_every);
		fputc(')', f);
		if (a->step_iterations > a->steps.n)
			fprintf(f, "; the %zu steps are those whole in the steady window (not the last, "
				   "unfinished one, nor long warm-up or final ones)",
				a->steps.n);
		fputs("</td></tr>\n", f);
		fprintf(f, "<tr><th>step time</th><td>median %s, p95 %s, mean ",
			fmt_ns(b1, sizeof(b1), a->step_median_ns), fmt_ns(b2, sizeof(b2), a->step_p95_ns));
		fprintf(f, "%s</td></tr>\n", fmt_ns(b1, sizeof(b1), a->facts.step_mean_ns));
		char same[320];

		if (steps_same_code_text(same, sizeof(same), a)) {
			fputs("<tr><th>long steps</th><td>", f);
			html_esc(f, same);
			fputs("</td></tr>\n", f);
		}
		if (a->facts.untraced_step_shown) { /* the step the gains are of */
			char text[256];

			untraced_text(text, sizeof(text), a);
			fputs("<tr><th>the step the gains are of</th><td>", f);
			html_esc(f, text);
			fputs("</td></tr>\n", f);
		}
		fprintf(f, "<tr><th>start-up</th><td>%s before step 1 (kept apart)", fmt_ns(b1, sizeof(b1),
												  (double)a->startup_ns));
		for (int k = 0; k < 2; k++) {
			char text[700];

			if (k ? startup_once_text(text, sizeof(text), a) : startup_parts_text(text, sizeof(text), a)) {
				fputs("; ", f);
				html_esc(f, text);
			}
		}
		fputs("</td></tr>\n", f);
		if (a->facts.tail_shown)
			fprintf(f, "<tr><th>after the last step</th><td>%s (kept apart)%s</td></tr>\n",
				fmt_ns(b1, sizeof(b1), a->tail.ns),
				a->facts.tail_eval_again   ? "; the training thread ran the steps' evaluation "
							     "(C14's finding) there again"
				: a->facts.tail_eval_shown ? "; the training thread evaluated there: seen once, "
							     "no gain claimed"
				: a->facts.tail_ckpt_shown ? "; the training thread serialized a checkpoint there: "
							     "seen once, no gain claimed"
							   : "");
		fputs("<tr><th>how</th><td>", f);
		html_esc(f, a->step_why);
		fputs("</td></tr>\n</table>\n", f);
		step_time_charts(f, a, org);
	} else {
		fputs("<tr><th>steps</th><td>none found with confidence (", f);
		html_esc(f, a->step_why[0] ? a->step_why : "no repeating NVTX range or operation pattern");
		fputs(")", f);
		if (a->step_window_ns)
			fprintf(f, "; analysed in %s windows", fmt_ns(b1, sizeof(b1), (double)a->step_window_ns));
		fputs("</td></tr>\n</table>\n", f);
	}
	if (a->steps.n)
		step_bars(f, a);
}

/* A line of the GPU charts: the mean of the valid samples in each of at
 * most MAX_POINTS bins over [lo, hi]; NaN where a bin has none. */
struct series {
	double x[MAX_POINTS], y[MAX_POINTS];
	unsigned cnt[MAX_POINTS];
	size_t n;
	int any;
	double max;
};

static void series_init(struct series *s, size_t n)
{
	memset(s, 0, sizeof(*s));
	s->n = n;
}

static void series_add(struct series *s, double lo, double hi, double t, double v)
{
	size_t k = hi > lo ? bin_of((t - lo) / (hi - lo), s->n) : 0;

	s->y[k] += v;
	s->cnt[k]++;
	s->any = 1;
}

static void series_done(struct series *s, double lo, double hi)
{
	for (size_t k = 0; k < s->n; k++) {
		s->x[k] = lo + (hi - lo) * ((double)k + 0.5) / (double)s->n;
		s->y[k] = s->cnt[k] ? s->y[k] / s->cnt[k] : NAN;
		if (s->cnt[k] && s->y[k] > s->max)
			s->max = s->y[k];
	}
}

static void gpu_section(FILE *f, const struct analysis *a, uint64_t org)
{
	const struct trace *t = a->t;
	enum { SM, MEM, POWER, UTIL, GSM, TENSOR, DRAM, NS };
	static const char *const names[NS] = { "SM clock", "memory clock", "power", "utilization (NVML)",
					       "SM activity (GPM)", "tensor pipes (GPM)",
					       "DRAM bandwidth (GPM)" };
	static const char *const colors[NS] = { "#1d70b8", "#7f5539", "#d62828", "#4c9a2a",
						"#1d70b8", "#9d4edd", "#f4a261" };
	struct series *s = calloc(NS, sizeof(*s));
	double lo = 0, hi = 0, plimit = 0;
	size_t nsamp = 0, npts;
	int first = 1;
	struct chart c;

	fputs("<h2 id=\"gpu\">The GPU over time</h2>\n", f);
	if (!s)
		return;
	for (size_t i = 0; i < t->gpu_samples.n; i++) {
		const struct gpu_samp *g = &t->gpu_samples.v[i];
		double ts = ((double)g->ts - (double)org) / 1e9;

		if (g->gpu != a->main_dev)
			continue;
		lo = first || ts < lo ? ts : lo;
		hi = first || ts > hi ? ts : hi;
		first = 0;
		nsamp++;
	}
	for (size_t i = 0; i < t->gpm_samples.n; i++) {
		const struct gpm_samp *g = &t->gpm_samples.v[i];
		double ts = ((double)g->ts - (double)org) / 1e9;

		if (g->gpu != a->main_dev)
			continue;
		lo = first || ts < lo ? ts : lo;
		hi = first || ts > hi ? ts : hi;
		first = 0;
		nsamp++;
	}
	if (!nsamp) {
		fprintf(f, "<p class=\"muted\" id=\"gpu-none\">No NVML or GPM sample of GPU %u in this recording.</p>\n",
			a->main_dev);
		free(s);
		return;
	}
	npts = nsamp < MAX_POINTS ? nsamp : MAX_POINTS;
	for (int k = 0; k < NS; k++)
		series_init(&s[k], npts);
	for (size_t i = 0; i < t->gpu_samples.n; i++) {
		const struct gpu_samp *g = &t->gpu_samples.v[i];
		double ts = ((double)g->ts - (double)org) / 1e9;

		if (g->gpu != a->main_dev)
			continue;
		if (g->valid & GW_VALID_BIT(GW_GPU_SMCLK, GW_GPU_VALID))
			series_add(&s[SM], lo, hi, ts, g->sm_mhz);
		if (g->valid & GW_VALID_BIT(GW_GPU_MEMCLK, GW_GPU_VALID))
			series_add(&s[MEM], lo, hi, ts, g->mem_mhz);
		if (g->valid & GW_VALID_BIT(GW_GPU_POWER_MW, GW_GPU_VALID))
			series_add(&s[POWER], lo, hi, ts, g->power_mw / 1e3);
		if (g->valid & GW_VALID_BIT(GW_GPU_UTIL, GW_GPU_VALID))
			series_add(&s[UTIL], lo, hi, ts, g->util);
	}
	for (size_t i = 0; i < t->gpm_samples.n; i++) {
		const struct gpm_samp *g = &t->gpm_samples.v[i];
		double ts = ((double)g->ts - (double)org) / 1e9;

		if (g->gpu != a->main_dev)
			continue;
		if (g->valid & GW_VALID_BIT(GW_GPM_SM_UTIL, GW_GPM_VALID))
			series_add(&s[GSM], lo, hi, ts, g->sm_util);
		if (g->valid & GW_VALID_BIT(GW_GPM_TENSOR, GW_GPM_VALID))
			series_add(&s[TENSOR], lo, hi, ts, g->tensor);
		if (g->valid & GW_VALID_BIT(GW_GPM_DRAM, GW_GPM_VALID))
			series_add(&s[DRAM], lo, hi, ts, g->dram);
	}
	for (int k = 0; k < NS; k++)
		series_done(&s[k], lo, hi);
	for (size_t i = 0; i < t->gpus.n; i++)
		if (t->gpus.v[i].index == a->main_dev && t->gpus.v[i].power_limit_mw)
			plimit = t->gpus.v[i].power_limit_mw / 1e3;
	fprintf(f, "<p class=\"muted\">GPU %u (", a->main_dev);
	html_esc(f, gpu_name(a, a->main_dev));
	fprintf(f, "): %zu samples, shown as %zu points a line; the steady window is shaded.</p>\n", nsamp,
		npts);

	/* clocks */
	if (s[SM].any || s[MEM].any) {
		double ymax = s[SM].max > s[MEM].max ? s[SM].max : s[MEM].max;

		fputs("<h3>Clocks</h3>\n", f);
		chart_init(&c, 900, 200, lo, hi, 0, ymax * 1.1);
		chart_begin(f, &c, "gpu-clocks", "chart", "seconds since the first GPU operation or NVML sample", "MHz");
	} else {
		goto power;
	}
	fprintf(f, "<rect x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"#f3f7fb\"/>\n",
		chart_x(&c, ((double)a->t0 - (double)org) / 1e9), c.top,
		chart_x(&c, ((double)a->t1 - (double)org) / 1e9) - chart_x(&c, ((double)a->t0 - (double)org) / 1e9),
		c.h - c.top - c.bottom);
	for (int k = SM; k <= MEM; k++)
		if (s[k].any)
			chart_path(f, &c, s[k].x, s[k].y, s[k].n, "series", colors[k], names[k]);
	chart_end(f);
	for (int k = SM; k <= MEM; k++)
		if (s[k].any)
			html_legend(f, colors[k], names[k]);
power:
	if (s[POWER].any) {
		double ymax = s[POWER].max > plimit ? s[POWER].max : plimit;

		fputs("<h3>Power</h3>\n", f);
		chart_init(&c, 900, 200, lo, hi, 0, ymax * 1.1);
		chart_begin(f, &c, "gpu-power", "chart", "seconds since the first GPU operation or NVML sample", "W");
		if (plimit > 0)
			fprintf(f, "<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#999\" "
				   "stroke-dasharray=\"4 3\"><title>power limit %.0f W</title></line>\n",
				c.left, c.w - c.right, chart_y(&c, plimit), chart_y(&c, plimit), plimit);
		chart_path(f, &c, s[POWER].x, s[POWER].y, s[POWER].n, "series", colors[POWER], names[POWER]);
		chart_end(f);
		html_legend(f, colors[POWER], names[POWER]);
		if (plimit > 0)
			html_legend(f, "#999", "power limit");
	}
	if (s[UTIL].any || s[GSM].any || s[TENSOR].any || s[DRAM].any) {
		fputs("<h3>Activity</h3>\n", f);
		chart_init(&c, 900, 200, lo, hi, 0, 100);
		chart_begin(f, &c, "gpu-activity", "chart", "seconds since the first GPU operation or NVML sample", "%");
		for (int k = UTIL; k < NS; k++)
			if (s[k].any)
				chart_path(f, &c, s[k].x, s[k].y, s[k].n, "series", colors[k], names[k]);
		chart_end(f);
		for (int k = UTIL; k < NS; k++)
			if (s[k].any)
				html_legend(f, colors[k], names[k]);
	}
	free(s);
}

static void page(FILE *f, const void *ctx)
{
	const struct analysis *a = ctx;
	char title[512];
	uint64_t org = origin(a);

	snprintf(title, sizeof(title), "gpuwhy report: %s", trace_shown(a->t));
	html_begin(f, title);
	header(f, a);
	verdict(f, a);
	if (a->t->nops)
		idle_split(f, a);
	findings(f, a);
	if (a->t->nops)
		steps_section(f, a, org);
	gpu_section(f, a, org);
	fprintf(f, "<p class=\"muted\">gpuwhy %s. The terminal (<span class=\"mono\">gpuwhy report</span>) "
		   "and JSON (<span class=\"mono\">--json</span>) reports hold the same findings.</p>\n",
		GPUWHY_VERSION);
	html_end(f);
}

/* The page is UTF-8: durations in µs. */
int render_html(FILE *f, const struct analysis *a)
{
	int r = gw_with_units(f, 1, page, a);

	return ferror(f) ? -EIO : r;
}
