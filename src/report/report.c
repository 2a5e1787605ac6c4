/* Loads, analyzes and renders each recording. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../analyze/analyze.h"
#include "../analyze/export.h"
#include "../util/escape.h"
#include "../util/json.h"
#include "../util/outfile.h"
#include "../util/util.h"
#include "render.h"
#include "report.h"

/* The timeline next to the report; with several files, FILE.N. Through
 * util/outfile: never over an existing file or an input, nothing left
 * under the name when there is no timeline or a write fails. 0, or 1
 * after saying why it was not written. */
/* An output's file for recording number index of several (OUT.N), or its
 * own name (index < 0, or standard output). */
static const char *output_name(char *buf, size_t len, const char *out, int index)
{
	snprintf(buf, len, index >= 0 && strcmp(out, "-") ? "%s.%d" : "%s", out, index);
	return buf;
}

static int write_trace(const char *out, const struct analysis *a, int index, unsigned force)
{
	const char *inputs[2] = { a->t->path, NULL };
	struct render_trace_stats st;
	struct trace_export x;
	struct outfile of;
	char path[4096];
	int r;

	output_name(path, sizeof(path), out, index);
	if (!a->t->ops.n) {
		gw_warn("no GPU timeline in %s: %s not written", trace_shown(a->t), path);
		return 0;
	}
	r = outfile_open(&of, path, OUTFILE_GZIP_BY_NAME | force, inputs);
	if (r < 0) {
		gw_error("cannot write the timeline to %s: %s", path, outfile_strerror(r));
		return 1;
	}
	/* counters, launch arguments and flows: a failed reading loses only
	 * those, and what it gathered until then is drawn */
	(void)trace_export_read(a->t, &x);
	/* GPUWHY_TRACE_LIMIT: another event limit (the tests use a small one) */
	render_trace(of.f, a, &x,
		     getenv("GPUWHY_TRACE_LIMIT") ? strtoull(getenv("GPUWHY_TRACE_LIMIT"), NULL, 10) : 0, &st);
	trace_export_free(&x);
	r = outfile_commit(&of);
	if (r < 0) {
		gw_error("writing the timeline to %s failed: %s", path, outfile_strerror(r));
		return 1;
	}
	if (st.dropped || st.dropped_other)
		gw_warn("timeline written to %s (open it in https://ui.perfetto.dev); past %llu events "
			"the %llu shortest kernels and %llu host calls or Python frames were left out "
			"(steps, idle intervals, copies and synchronizations are all there)", path,
			(unsigned long long)st.limit, (unsigned long long)st.dropped,
			(unsigned long long)st.dropped_other);
	else
		gw_note("timeline written to %s (open it in https://ui.perfetto.dev)", path);
	return 0;
}

static int html_page(FILE *f, const void *a)
{
	return render_html(f, a);
}

/* Writes the HTML page; 0, or -1 (said why). */
static int write_html(const char *out, const struct analysis *a, int index, unsigned force)
{
	const char *inputs[] = { a->t->path, NULL };

	(void)index; /* one recording: a page has no FILE.N */
	return outfile_write(out, force, inputs, "HTML report", html_page, a) < 0 ? -1 : 0;
}

/* ---- the outputs ------------------------------------------------------- */

/* What an output needs of the loading and the analysis, and how it takes
 * standard output. */
enum out_needs {
	OUT_OPS = 1,          /* every GPU operation kept (TRACE_KEEP_OPS) */
	OUT_SAMPLES = 2,      /* every NVML and GPM sample kept (TRACE_KEEP_SAMPLES) */
	OUT_GAPS = 4,         /* every idle interval kept (ANALYZE_KEEP_GAPS); the memory note */
	OUT_ONE = 8,          /* of one recording only */
	OUT_ONE_STDOUT = 16,  /* ... when on standard output (a file is written per recording) */
	OUT_TERM_STDERR = 32, /* on standard output, it sends the terminal report to stderr */
	OUT_TERM_NONE = 64,   /* on standard output (without --json), it is the only output */
};

enum { OUT_JSON, OUT_TRACE, OUT_HTML, OUT_N };

/* An output per recording: path (with several recordings, index >= 0 for
 * FILE.N where the output has one each, else -1); 0, or nonzero after
 * saying why it was not written. */
typedef int (*out_write_fn)(const char *path, const struct analysis *a, int index, unsigned force);
static int write_trace(const char *out, const struct analysis *a, int index, unsigned force);
static int write_html(const char *out, const struct analysis *a, int index, unsigned force);

/* The outputs, in the order they are checked and written. At most one of
 * them has standard output (the terminal report takes it when none does):
 * the first that clashes with one before it is refused with `clash`. */
static const struct output {
	const char *name;
	unsigned needs;      /* enum out_needs */
	const char *several; /* the error for several recordings (OUT_ONE, OUT_ONE_STDOUT) */
	const char *clash;   /* the outputs that clash on standard output, in words */
	out_write_fn write;  /* per recording; NULL: one stream for all, report_files() (JSON) */
} outputs[OUT_N] = {
	[OUT_JSON] = { "json", 0, NULL, NULL, NULL },
	[OUT_TRACE] = { "trace", OUT_OPS | OUT_GAPS | OUT_ONE_STDOUT | OUT_TERM_STDERR,
			"--trace - takes one recording (several would write one file each)",
			"--trace - and --json", write_trace },
	[OUT_HTML] = { "html", OUT_SAMPLES | OUT_GAPS | OUT_ONE | OUT_TERM_NONE,
		       "--html writes the page of one recording: name one file",
		       "--html - and --json or --trace -", write_html },
};

/* Each output's path as asked for: NULL (not asked), "-" (standard output)
 * or a file name. */
static void output_paths(const struct report_opts *o, const char *path[OUT_N])
{
	path[OUT_JSON] = o->json ? (o->json_out ? o->json_out : "-") : NULL;
	path[OUT_TRACE] = o->trace_out;
	path[OUT_HTML] = o->html_out;
}

static int is_stdout(const char *path)
{
	return path && !strcmp(path, "-");
}

/* What the outputs asked for need, ORed (enum out_needs). */
static unsigned outputs_need(const struct report_opts *o)
{
	const char *path[OUT_N];
	unsigned needs = 0;

	output_paths(o, path);
	for (int k = 0; k < OUT_N; k++)
		if (path[k])
			needs |= outputs[k].needs;
	return needs;
}

/* The output on standard output, OUT_N when none (the terminal report). */
static int stdout_owner(const struct report_opts *o)
{
	const char *path[OUT_N];

	output_paths(o, path);
	for (int k = 0; k < OUT_N; k++)
		if (is_stdout(path[k]))
			return k;
	return OUT_N;
}

int report_outputs_check(const struct report_opts *o, int nfiles, char *why, size_t len)
{
	const char *path[OUT_N];

	output_paths(o, path);
	/* two outputs under one name: the second would fail after the first was
	 * written (or, with --force, replace it) */
	for (int k = 0; k < OUT_N; k++)
		for (int l = 0; l < k; l++)
			if (path[k] && path[l] && !is_stdout(path[k]) && !strcmp(path[k], path[l])) {
				snprintf(why, len, "%s is named for two outputs: give each its own file", path[k]);
				return -1;
			}
	for (int k = 0, on_stdout = 0; k < OUT_N; k++) {
		if (!path[k])
			continue;
		if (nfiles > 1 && ((outputs[k].needs & OUT_ONE) ||
				   ((outputs[k].needs & OUT_ONE_STDOUT) && is_stdout(path[k])))) {
			snprintf(why, len, "%s", outputs[k].several);
			return -1;
		}
		if (is_stdout(path[k]) && on_stdout++) {
			snprintf(why, len, "%s both want standard output: give one a file name", outputs[k].clash);
			return -1;
		}
	}
	/* what the output's name would refuse, before any work (a recording
	 * named where an output's file goes: `--html old.gwr`): the name, or
	 * with several recordings each NAME.N of an output written per
	 * recording (the JSON is one array under the name) */
	for (int k = 0; k < OUT_N; k++) {
		int per = nfiles > 1 && outputs[k].write;

		for (int i = 0; path[k] && !is_stdout(path[k]) && i < (per ? nfiles : 1); i++) {
			char name[4096];
			int r;

			output_name(name, sizeof(name), path[k], per ? i : -1);
			r = outfile_check(name, o->force ? OUTFILE_FORCE : 0, NULL);
			if (r < 0) {
				snprintf(why, len, "cannot write the --%s output to %s: %s (nothing was written)",
					 outputs[k].name, name, outfile_strerror(r));
				return -2;
			}
		}
	}
	return 0;
}

int report_memory_note(char *msg, size_t len, const char *path, uint64_t file_bytes,
		       uint64_t avail, int trace)
{
	double need = (double)file_bytes *
		      (trace ? REPORT_MEMORY_PER_FILE_BYTE_TRACE : REPORT_MEMORY_PER_FILE_BYTE);

	if (!avail || need <= (double)avail)
		return 0;
	snprintf(msg, len,
		 "%s is %.1f GB: its report needs about %.1f GB of memory and %.1f GB are available, "
		 "so it may be stopped for lack of memory. %s",
		 path, (double)file_bytes / 1e9, need / 1e9, (double)avail / 1e9,
		 trace ? "--trace holds every GPU operation: leave it out, or use a larger machine"
		       : "Free memory or use a larger machine; record long jobs with --duty or --ring");
	return 1;
}

/* Says before loading when a recording may not fit in memory. */
static void check_memory(const char *path, int trace)
{
	uint64_t total, avail;
	struct stat st;
	char msg[1024];

	if (stat(path, &st) == 0 && gw_meminfo(&total, &avail) == 0 &&
	    report_memory_note(msg, sizeof(msg), path, (uint64_t)st.st_size, avail, trace))
		gw_warn("%s", msg);
}

int report_fail_on_parse(const char *s)
{
	if (!strcmp(s, "warning"))
		return 1 + SEV_WARN;
	/* "high": the JSON's name for critical, and --fail-on's before */
	if (!strcmp(s, "critical") || !strcmp(s, "high"))
		return 1 + SEV_HIGH;
	return 0;
}

int report_steps_spec_ok(const char *s)
{
	return !strcmp(s, "auto") || !strcmp(s, "none") || (!strncmp(s, "nvtx:", 5) && s[5]) ||
	       (!strncmp(s, "kernel:", 7) && s[7]);
}

/* Severity of the worst assessed finding, -1 when none. */
static int worst_severity(const struct analysis *a)
{
	int w = -1;

	for (size_t i = 0; i < a->findings.n; i++)
		if (a->findings.v[i].assessed && (int)a->findings.v[i].severity > w)
			w = (int)a->findings.v[i].severity;
	return w;
}

int report_files(const char **files, int n, const struct report_opts *o)
{
	struct json j;
	struct outfile jo = { 0 };
	FILE *out = stdout, *term = NULL;
	int ret = 0, failed_gate = 0, r;
	int color = o->color < 0 ? gw_color_auto(STDOUT_FILENO) : o->color;
	unsigned force = o->force ? OUTFILE_FORCE : 0, needs = outputs_need(o);
	int owner = stdout_owner(o);
	const char *path[OUT_N];

	output_paths(o, path);
	if (o->json && o->json_out) {
		const char **inputs = calloc((size_t)n + 1, sizeof(*inputs));

		if (!inputs)
			return 1;
		memcpy(inputs, files, (size_t)n * sizeof(*inputs));
		r = outfile_open(&jo, o->json_out, OUTFILE_GZIP_BY_NAME | force, inputs);
		free(inputs);
		if (r < 0) {
			gw_error("cannot write the report to %s: %s", o->json_out, outfile_strerror(r));
			return 1;
		}
		out = jo.f;
	} else if (owner < OUT_N && (outputs[owner].needs & OUT_TERM_STDERR)) {
		/* the timeline has standard output: the report goes to stderr */
		out = stderr;
		color = o->color < 0 ? gw_color_auto(STDERR_FILENO) : o->color;
	}
	if (!o->json) {
		/* what the recording holds reaches the terminal escaped */
		term = term_filter_open(out, color);
		if (!term) {
			gw_error("out of memory");
			return 1;
		}
	}
	if (o->json && n > 1) {
		json_init(&j, out, 1);
		json_arr_begin(&j, NULL);
	}
	for (int i = 0; i < n; i++) {
		struct trace t;
		struct analysis a;
		char err[512];

		check_memory(files[i], (needs & OUT_GAPS) != 0);
		/* only the timeline export needs every operation in memory */
		if (trace_load_flags(&t, files[i],
				     (needs & OUT_OPS ? TRACE_KEEP_OPS : 0) | (needs & OUT_SAMPLES ? TRACE_KEEP_SAMPLES : 0),
				     err, sizeof(err)) < 0) {
			gw_error("%s", err);
			trace_free(&t);
			ret = 1;
			continue;
		}
		size_t ranks = trace_gpu_ranks(&t);

		/* the ranks of one job, in a file that can be read again: the job report */
		if (ranks >= 2 && o->job_if_ranks && n == 1 && !t.spooled) {
			trace_free(&t);
			if (jo.f)
				outfile_abort(&jo);
			if (term)
				fclose(term);
			return REPORT_WANTS_JOB;
		}
		if (ranks >= 2)
			gw_note("%s holds %zu ranks of one job: gpuwhy report --job FILE reports each, and the "
				"causes across them%s", files[i], ranks, t.spooled ? " (save it to a file first)" : "");
		int aret = analyze_steps(&t, &a, needs & OUT_GAPS ? ANALYZE_KEEP_GAPS : 0,
					 o->steps && strcmp(o->steps, "auto") ? o->steps : NULL);

		if (aret < 0) { /* a bad --steps, or a resource limit: never a verdict */
			gw_error("%s: %s", files[i], aret == -EINVAL ? a.step_why
					  : a.err_msg[0] ? a.err_msg : strerror(-aret));
			analysis_free(&a);
			trace_free(&t);
			ret = aret == -EINVAL ? 2 : 1;
			continue;
		}
		if (o->fixes && (aret = analysis_combine(&a, o->fixes, err, sizeof(err))) < 0) {
			gw_error("%s: %s", files[i], aret == -EINVAL ? err : a.err_msg[0] ? a.err_msg : strerror(-aret));
			analysis_free(&a);
			trace_free(&t);
			ret = aret == -EINVAL ? 2 : 1;
			continue;
		}
		if (gw_verdict_exit(&t.verdict) && ret == 0)
			ret = gw_verdict_exit(&t.verdict);
		if (o->fail_on && worst_severity(&a) >= o->fail_on - 1)
			failed_gate = 1;
		for (int k = 0; k < OUT_N; k++)
			if (path[k] && outputs[k].write && outputs[k].write(path[k], &a, n > 1 ? i : -1, force) &&
			    !ret)
				ret = 1;
		if (owner < OUT_N && (outputs[owner].needs & OUT_TERM_NONE) && !o->json) { /* it is the output */
			analysis_free(&a);
			trace_free(&t);
			continue;
		}
		if (o->json) {
			if (n == 1)
				json_init(&j, out, 1);
			render_json(&j, &a);
			if (n == 1)
				json_done(&j);
		} else {
			if (i)
				fputc('\n', term);
			if (render_terminal(term, &a, o->verbose, color) < 0) {
				gw_error("%s: out of memory while writing the report: durations above are "
					 "in us, not µs", files[i]);
				ret = 1;
			}
		}
		if (kname_cache_failed(a.knames)) { /* the report stands, less some kernel names */
			gw_error("%s: out of memory while naming kernels: some names above are shown as "
				 "recorded", files[i]);
			ret = 1;
		}
		/* bench/replay.sh: what the replay cost (never in a report: it varies) */
		if (getenv("GPUWHY_TIME_REPLAY") && a.replay_used)
			fprintf(stderr, "gpuwhy: replay %.1f ms CPU\n", a.replay.cpu_ns / 1e6);
		analysis_free(&a);
		trace_free(&t);
	}
	if (o->json && n > 1) {
		json_arr_end(&j);
		json_done(&j);
	}
	if (term && fclose(term) != 0 && !ret)
		ret = 1; /* standard output's error is said at exit (main.c) */
	if (jo.f) {
		r = outfile_commit(&jo);
		if (r < 0) {
			gw_error("writing the report to %s failed: %s", o->json_out, outfile_strerror(r));
			if (!ret)
				ret = 1;
		} else if (!jo.is_stdout) {
			gw_note("report written to %s", o->json_out);
		}
	}
	fflush(stdout);
	if (!ret && failed_gate)
		ret = REPORT_EXIT_FAIL_ON;
	return ret;
}
