/* Loads, analyzes and renders each recording. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../analyze/analyze.h"
#include "../util/json.h"
#include "../util/util.h"
#include "render.h"
#include "report.h"

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

		if (trace_load(&t, files[i], err, sizeof(err)) < 0) {
			gw_error("%s", err);
			trace_free(&t);
			ret = 1;
			continue;
		}
		analyze(&t, &a);
		if (t.damage && ret == 0)
			ret = 3;
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
