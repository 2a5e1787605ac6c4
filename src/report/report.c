/* Loads, analyzes and renders each recording. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../analyze/analyze.h"
#include "../util/json.h"
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

		check_memory(files[i], o->trace_out != NULL);
		/* only the timeline export needs every operation in memory */
		if (trace_load_flags(&t, files[i], o->trace_out ? TRACE_KEEP_OPS : 0, err,
				     sizeof(err)) < 0) {
			gw_error("%s", err);
			trace_free(&t);
			ret = 1;
			continue;
		}
		int aret = analyze_steps(&t, &a, o->trace_out ? ANALYZE_KEEP_GAPS : 0,
					 o->steps && strcmp(o->steps, "auto") ? o->steps : NULL);

		if (aret < 0) { /* a bad --steps, or a resource limit: never a verdict */
			gw_error("%s: %s", files[i], aret == -EINVAL ? a.step_why
					  : a.err_msg[0] ? a.err_msg : strerror(-aret));
			analysis_free(&a);
			trace_free(&t);
			ret = aret == -EINVAL ? 2 : 1;
			continue;
		}
		if (t.damage && ret == 0)
			ret = 3;
		if (o->trace_out)
			write_trace(o->trace_out, &a, n > 1 ? i : -1);
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
		if (kname_cache_failed(a.knames)) { /* the report stands, less some kernel names */
			gw_error("%s: out of memory while naming kernels: some names above are shown as "
				 "recorded", files[i]);
			ret = 1;
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
