/* What the fuzz targets do with a recording once they have one: load it
 * from a descriptor (odd sizes also keep the operations: the timeline
 * export's path), analyze it and render every output into /dev/null (the
 * trace with a small event limit one time in three, so that the dropping
 * path runs too). */
#ifndef GPUWHY_FUZZ_COMMON_H
#define GPUWHY_FUZZ_COMMON_H

#include <stdio.h>

#include "analyze/analyze.h"
#include "analyze/export.h"
#include "report/render.h"
#include "util/json.h"

static void fuzz_report_fd(int fd, size_t size)
{
	static FILE *sink;
	char path[64], err[256];
	struct trace t;
	struct analysis a;

	if (!sink)
		sink = fopen("/dev/null", "w");
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	if (trace_load_flags(&t, path, size % 2 ? TRACE_KEEP_OPS : 0, err, sizeof(err)) == 0) {
		struct json j;
		struct render_trace_stats st;
		struct trace_export x;

		analyze(&t, &a, ANALYZE_KEEP_GAPS);
		json_init(&j, sink, 1);
		render_json(&j, &a);
		render_terminal(sink, &a, 1, 0);
		trace_export_read(&t, &x);
		render_trace(sink, &a, &x, size % 3 ? 0 : 64, &st);
		trace_export_free(&x);
		render_html(sink, &a);
		analysis_free(&a);
	}
	trace_free(&t);
}

#endif
