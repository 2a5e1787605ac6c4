/* gpuwhy diff: two recordings of a job side by side (src/report/diff.c). */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../analyze/analyze.h"
#include "../job/report_job.h"
#include "../report/diff.h"
#include "../report/report.h"
#include "../util/args.h"
#include "../util/escape.h"
#include "../util/json.h"
#include "../util/outfile.h"
#include "../util/util.h"
#include "cmds.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: gpuwhy diff [--json[=OUT]] [--html OUT] [--force] [--fail-if-slower PCT]\n"
		   "                   [--batch N[:M]] [--top N] [--steps HOW] [--color WHEN]\n"
		   "                   BEFORE.gwr AFTER.gwr | BEFORE_DIR AFTER_DIR\n\n"
		   "Compare two recordings of a job, e.g. before and after a fix: the measured\n"
		   "speed-up (BEFORE's step time / AFTER's, the steady window's mean step), step\n"
		   "time, throughput, GPU busy, idle time per step by cause, kernel time and count\n"
		   "per kernel name (largest change first), and the findings gone, new or changed.\n\n"
		   "Two folders are two jobs' rank recordings (gpuwhy report DIR): the job's step\n"
		   "time, each rank's step, busy and wait in collectives, and the cross-rank\n"
		   "findings gone, new or the same (--json: schema gpuwhy.jobdiff/1).\n\n"
		   "options:\n"
		   "      --json[=OUT]  machine-readable (schema gpuwhy.diff/1, docs/JSON.md);\n"
		   "                    with OUT into that new file\n"
		   "      --html OUT    also write the comparison as one self-contained HTML page\n"
		   "                    (of two recordings; of two jobs' folders, name one rank's\n"
		   "                    file of each)\n"
		   "                    ('-' for stdout; an existing OUT is not overwritten)\n"
		   "      --force       replace an existing OUT (as gpuwhy report --force: a\n"
		   "                    regular file only, never a recording compared)\n"
		   "      --fail-if-slower PCT\n"
		   "                    exit with status 4 when AFTER's step time is more than PCT\n"
		   "                    percent longer than BEFORE's (a CI gate)\n"
		   "      --batch N[:M] samples per step (N: both; N:M: BEFORE's and AFTER's, when\n"
		   "                    the fix changed the batch): samples/s, and the speed-up\n"
		   "                    as the ratio of samples/s\n"
		   "      --top N       kernel names to list (default %d)\n"
		   "      --steps HOW   how to find steps in both (see gpuwhy report --help)\n"
		   "      --color WHEN  auto (default: on a terminal), always, never\n"
		   "  -h, --help        this help\n\n"
		   "Output files are made with mode 0600 (see gpuwhy report --help).\n\n"
		   "exit status: 0 compared; 1 a recording could not be read, or the --json or\n"
		   "--html file not written; 2 bad arguments, or a --steps NAME a recording lacks; 3 a\n"
		   "recording was damaged (compared up to the damage); 4 AFTER slower than\n"
		   "BEFORE by more than PCT (--fail-if-slower); 5 --fail-if-slower could not\n"
		   "judge: a recording has no steps, or the step-time ratio is no speed-up (two\n"
		   "programs, or steps of unlike work without --batch). Where several apply, the lowest non-zero\n"
		   "wins: a damaged recording (3) gates nothing, as its steps are partly lost.\n",
		DIFF_TOP_DEFAULT);
}

/* A number argument: 0, or -1 (said why). */
static int number(const char *opt, const char *s, double lo, double *out)
{
	char *end;
	double v = strtod(s, &end);

	if (end == s || *end || !(v >= lo) || v > 1e12) {
		gw_error("%s wants a number of at least %g, not '%s'", opt, lo, s);
		return -1;
	}
	*out = v;
	return 0;
}

static int load(const char *path, struct trace *t, struct analysis *a, const char *steps, int *loaded)
{
	char err[512];

	*loaded = 0;
	if (trace_load_flags(t, path, 0, err, sizeof(err)) < 0) {
		gw_error("%s", err);
		trace_free(t);
		return 1;
	}
	if (analyze_steps(t, a, 0, steps && strcmp(steps, "auto") ? steps : NULL) == -EINVAL) {
		gw_error("%s: %s", path, a->step_why);
		analysis_free(a);
		trace_free(t);
		return 2;
	}
	*loaded = 1;
	if (t->damage) /* compared over the part read: said here as well as in the output */
		gw_warn("%s: %s", path, t->damage);
	return t->damage ? 3 : 0;
}

/* The --json report and the --html page of the comparison, for
 * outfile_write (never written over the recordings compared). */
static int json_file(FILE *f, const void *d)
{
	struct json j;

	json_init(&j, f, 1);
	render_diff_json(&j, d);
	json_done(&j);
	return 0;
}

static int html_page(FILE *f, const void *d)
{
	return render_diff_html(f, d);
}

/* --color's argument: 0, or -1 after saying why. */
static int color_arg(const char *s, int *color)
{
	if (!strcmp(s, "always") || !strcmp(s, "never") || !strcmp(s, "auto")) {
		*color = !strcmp(s, "always") ? 1 : !strcmp(s, "never") ? 0 : -1;
		return 0;
	}
	gw_error("--color wants auto, always or never, not '%s'", s);
	return -1;
}

/* The two operands: two recordings, or two folders of one job's rank
 * recordings. 1 after saying what is wrong. */
static int operands_refused(int n, char **args)
{
	if (n != 2) {
		gw_error("diff compares two recordings: gpuwhy diff BEFORE.gwr AFTER.gwr");
		return 1;
	}
	if (job_is_dir(args[0]) != job_is_dir(args[1])) {
		gw_error("diff compares two recordings, or two folders of one job's rank recordings: %s is a "
			 "folder and %s is not", job_is_dir(args[0]) ? args[0] : args[1],
			 job_is_dir(args[0]) ? args[1] : args[0]);
		return 1;
	}
	return 0;
}

/* --fail-if-slower PCT: 0 passed, 4 AFTER slower by more than PCT, 5 no
 * judgement (a side without steps, or a ratio that is no speed-up). */
static int gate_slower(const struct diff *d, double fail_pct, const char *before, const char *after)
{
	if (d->speedup <= 0) {
		gw_error("--fail-if-slower: %s has no steps, so its step time is unknown",
			 !d->side[0].steps ? before : after);
		return 5;
	}
	if (d->not_speedup) { /* the ratio the comparison calls no speed-up gates nothing */
		gw_error("--fail-if-slower: %s, so their step-time ratio is no speed-up%s",
			 d->programs_differ ? "BEFORE and AFTER run different programs"
					    : "AFTER's steps hold over 1.5x BEFORE's GPU work",
			 d->programs_differ ? "" : " (give --batch B:A for the ratio of samples/s)");
		return 5;
	}
	if ((1 / d->speedup - 1) * 100 > fail_pct) {
		gw_error("AFTER is %.1f%% slower than BEFORE (step time %.3f ms -> %.3f ms), more than the %g%% allowed",
			 (1 / d->speedup - 1) * 100, d->side[0].step_mean_ns / 1e6, d->side[1].step_mean_ns / 1e6,
			 fail_pct);
		return 4;
	}
	return 0;
}

int cmd_diff(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "json", optional_argument, 0, 'j' }, { "html", required_argument, 0, 'H' },
		{ "fail-if-slower", required_argument, 0, 'F' },
		{ "batch", required_argument, 0, 'b' }, { "top", required_argument, 0, 'n' },
		{ "steps", required_argument, 0, 's' }, { "color", required_argument, 0, 'c' },
		{ "colour", required_argument, 0, 'c' }, { "force", no_argument, 0, 'O' },
		{ "help", no_argument, 0, 'h' }, { 0, 0, 0, 0 },
	};
	const char *html = NULL, *steps = NULL, *json_out = NULL;
	double fail_pct = -1, batch[2] = { 0, 0 }, top = DIFF_TOP_DEFAULT;
	int c, json = 0, color = -1, ret = 0, r[2] = { 0, 0 }, loaded[2] = { 0, 0 };
	unsigned force = 0;
	struct trace t[2];
	struct analysis a[2];
	struct diff d;

	optind = 1;
	while ((c = gw_getopt(argc, argv, "h", longopts, "jH")) != -1) {
		switch (c) {
		case 'j':
			json = 1;
			json_out = optarg;
			break;
		case 'H': html = optarg; break;
		case 'O': force = OUTFILE_FORCE; break;
		case 'F':
			if (number("--fail-if-slower", optarg, 0, &fail_pct) < 0)
				return 2;
			break;
		case 'b':
		{
			char *colon = strchr(optarg, ':');

			if (colon)
				*colon = 0;
			if (number("--batch", optarg, 1, &batch[0]) < 0 ||
			    number("--batch", colon ? colon + 1 : optarg, 1, &batch[1]) < 0)
				return 2;
			if (colon)
				*colon = ':';
		}
			break;
		case 'n':
			if (number("--top", optarg, 0, &top) < 0)
				return 2;
			break;
		case 's':
			if (!report_steps_spec_ok(optarg)) {
				gw_error("--steps wants auto, none, nvtx:NAME or kernel:NAME, not '%s'", optarg);
				return 2;
			}
			steps = optarg;
			break;
		case 'c':
			if (color_arg(optarg, &color) < 0)
				return 2;
			break;
		case 'h': usage(stdout); return 0;
		default:
			fprintf(stderr, "'gpuwhy diff --help' lists the options\n");
			return 2;
		}
	}
	if (operands_refused(argc - optind, argv + optind))
		return 2;
	if (job_is_dir(argv[optind]) && job_is_dir(argv[optind + 1])) /* two jobs' folders of ranks */
		return job_diff_dirs(argv[optind], argv[optind + 1],
				     &(struct job_diff_opts){ json, json_out, force, fail_pct, steps, color, html });
	if (html && json_out && strcmp(html, "-") && !strcmp(html, json_out)) {
		gw_error("%s is named for two outputs: give each its own file", html);
		return 2;
	}
	if (html && json && !strcmp(html, "-") && (!json_out || !strcmp(json_out, "-"))) {
		gw_error("--html - and --json would both write to stdout: give one a file name");
		return 2;
	}
	if (color < 0)
		color = gw_color_auto(STDOUT_FILENO);
	for (int i = 0; i < 2; i++) {
		r[i] = load(argv[optind + i], &t[i], &a[i], steps, &loaded[i]);
		if (!loaded[i]) {
			if (i && loaded[0]) {
				analysis_free(&a[0]);
				trace_free(&t[0]);
			}
			return r[i];
		}
		if (r[i])
			ret = r[i];
	}
	if (diff_compute(&d, &a[0], &a[1], batch, (size_t)top) < 0) {
		gw_error("out of memory comparing the recordings");
		ret = 1;
		goto out;
	}
	const char *inputs[] = { argv[optind], argv[optind + 1], NULL };

	if (html && outfile_write(html, force, inputs, "HTML comparison", html_page, &d) < 0)
		ret = 1;
	if (json) {
		if (outfile_write(json_out ? json_out : "-", OUTFILE_GZIP_BY_NAME | force, inputs, "comparison",
				  json_file, &d) < 0)
			ret = 1;
	} else if (!html || strcmp(html, "-")) {
		/* what the recordings hold reaches the terminal escaped */
		FILE *term = term_filter_open(stdout, color);

		if (!term) {
			gw_error("out of memory");
			ret = 1;
		} else {
			if (render_diff_terminal(term, &d, color) < 0) {
				gw_error("out of memory while writing the comparison: durations above are in "
					 "us, not µs");
				ret = 1;
			}
			if (fclose(term) != 0 && !ret)
				ret = 1;
		}
	}
	fflush(stdout);
	if (fail_pct >= 0 && ret == 3)
		gw_warn("--fail-if-slower not judged: a recording is damaged, so its steps are partly lost (exit 3)");
	if (fail_pct >= 0 && !ret)
		ret = gate_slower(&d, fail_pct, argv[optind], argv[optind + 1]);
	diff_free(&d);
out:
	for (int i = 0; i < 2; i++) {
		analysis_free(&a[i]);
		trace_free(&t[i]);
	}
	return ret;
}
