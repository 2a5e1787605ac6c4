/* Loads, analyzes and renders each recording. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../analyze/analyze.h"
#include "../util/json.h"
#include "../util/outfile.h"
#include "../util/util.h"
#include "render.h"
#include "report.h"

/* Writes the timeline next to the report; with several files, FILE.N. */
static void write_trace(const char *out, const struct analysis *a, int index)
{
	char path[4096];
	FILE *f;
	int r;

	if (index >= 0)
		snprintf(path, sizeof(path), "%s.%d", out, index);
	else
		snprintf(path, sizeof(path), "%s", out);
	f = fopen(path, "w");
	if (!f) {
		gw_error("cannot write %s: %s", path, strerror(errno));
		return;
	}
	r = render_trace(f, a);
	if (fclose(f) != 0)
		r = -2;
	if (r == -1) {
		gw_warn("no GPU timeline in %s: %s not written", a->t->path, path);
		unlink(path);
	} else if (r == -2) {
		gw_error("writing %s failed", path);
	} else {
		gw_note("timeline written to %s (open it in https://ui.perfetto.dev)%s", path,
			r == 1 ? "; truncated at 2 million events" : "");
	}
}

/* Writes the HTML page; 0, or -1 (said why). */
static int write_html(const char *out, const struct analysis *a)
{
	const char *inputs[] = { a->t->path, NULL };
	struct outfile o;
	int r = outfile_open(&o, out, 0, inputs);

	if (r < 0) {
		gw_error("cannot write %s: %s", out, outfile_strerror(r));
		return -1;
	}
	r = render_html(o.f, a);
	if (r < 0)
		outfile_abort(&o);
	else
		r = outfile_commit(&o);
	if (r < 0) {
		gw_error("writing %s failed: %s", out, outfile_strerror(r));
		return -1;
	}
	if (strcmp(out, "-"))
		gw_note("HTML report written to %s", out);
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

int report_steps_spec_ok(const char *s)
{
	return !strcmp(s, "auto") || !strcmp(s, "none") || (!strncmp(s, "nvtx:", 5) && s[5]) ||
	       (!strncmp(s, "kernel:", 7) && s[7]);
}

int report_files(const char **files, int n, const struct report_opts *o)
{
	struct json j;
	int ret = 0;
	int color = o->color < 0 ? isatty(STDOUT_FILENO) && !getenv("NO_COLOR") : o->color;

	if (o->json && n > 1) {
		json_init(&j, stdout, 1);
		json_arr_begin(&j, NULL);
	}
	for (int i = 0; i < n; i++) {
		struct trace t;
		struct analysis a;
		char err[512];

		check_memory(files[i], o->trace_out != NULL || o->html_out != NULL);
		/* only the timeline export needs every operation in memory */
		if (trace_load_flags(&t, files[i],
				     (o->trace_out ? TRACE_KEEP_OPS : 0) | (o->html_out ? TRACE_KEEP_SAMPLES : 0),
				     err, sizeof(err)) < 0) {
			gw_error("%s", err);
			trace_free(&t);
			ret = 1;
			continue;
		}
		if (analyze_steps(&t, &a, o->trace_out || o->html_out ? ANALYZE_KEEP_GAPS : 0,
				  o->steps && strcmp(o->steps, "auto") ? o->steps : NULL) == -EINVAL) {
			gw_error("%s: %s", files[i], a.step_why);
			analysis_free(&a);
			trace_free(&t);
			ret = 2;
			continue;
		}
		if (t.damage && ret == 0)
			ret = 3;
		if (o->trace_out)
			write_trace(o->trace_out, &a, n > 1 ? i : -1);
		if (o->html_out && write_html(o->html_out, &a) < 0)
			ret = ret ? ret : 1;
		if (o->html_out && !strcmp(o->html_out, "-")) { /* the page is the output */
			analysis_free(&a);
			trace_free(&t);
			continue;
		}
		if (o->json) {
			if (n == 1)
				json_init(&j, stdout, 1);
			render_json(&j, &a);
			if (n == 1)
				json_done(&j);
		} else {
			if (i)
				putchar('\n');
			render_terminal(stdout, &a, o->verbose, color);
		}
		analysis_free(&a);
		trace_free(&t);
	}
	if (o->json && n > 1) {
		json_arr_end(&j);
		json_done(&j);
	}
	fflush(stdout);
	return ret;
}
