/* libFuzzer target: the recording reader and the whole report on top of it
 * (load, analyze with its second reading of the file, JSON, terminal and trace
 * rendering). Built with -DGW_FUZZING,
 * which skips chunk CRCs so that mutations reach the decoders. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "analyze/analyze.h"
#include "report/render.h"
#include "util/json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static FILE *sink;
	char path[64], err[256];
	struct trace t;
	struct analysis a;
	int fd = memfd_create("gwfuzz", 0);

	if (fd < 0)
		return 0;
	if (write(fd, data, size) != (ssize_t)size) {
		close(fd);
		return 0;
	}
	if (!sink)
		sink = fopen("/dev/null", "w");
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	/* odd sizes also keep the operations (the timeline export's path) */
	if (trace_load_flags(&t, path, size % 2 ? TRACE_KEEP_OPS : 0, err, sizeof(err)) == 0) {
		struct json j;

		analyze(&t, &a, ANALYZE_KEEP_GAPS);
		json_init(&j, sink, 1);
		render_json(&j, &a);
		render_terminal(sink, &a, 1, 0);
		/* a small event limit, so that the dropping path runs too */
		struct render_trace_stats st;

		render_trace(sink, &a, size % 3 ? 0 : 64, &st);
		render_html(sink, &a);
		analysis_free(&a);
	}
	trace_free(&t);
	close(fd);
	return 0;
}
