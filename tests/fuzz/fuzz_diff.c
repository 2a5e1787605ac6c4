/* libFuzzer target: gpuwhy diff. One input holds two recordings: split at
 * the second file header ("GPUWHY\x1a\n" after the first byte), or in halves
 * when there is none. Each is loaded and analysed as cmd_diff does, the
 * comparison computed (src/report/diff.c) and rendered to the terminal
 * (colour on and off), JSON and HTML. The input's size picks the options
 * (--steps, --batch, --top), as tests/cli replays them
 * (tests/fuzz/diff_split.py). Built with -DGW_FUZZING, which skips chunk
 * CRCs so that mutations reach the decoders. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "analyze/analyze.h"
#include "report/diff.h"
#include "util/json.h"

static const char *const steps_opt[] = { NULL, "none", "nvtx:step", "kernel:gemm" };
static const double batch_opt[][2] = { { 0, 0 }, { 32, 32 }, { 32, 64 } };
static const size_t top_opt[] = { 15, 0, 3 };

/* One side: loaded and analysed, or 0 (nothing to free). */
static int side(const uint8_t *data, size_t size, const char *steps, struct trace *t,
		struct analysis *a)
{
	char path[64], err[256];
	int fd = memfd_create("gwfuzz-diff", 0), ok = 0;

	if (fd < 0)
		return 0;
	if (write(fd, data, size) == (ssize_t)size) {
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		if (trace_load_flags(t, path, 0, err, sizeof(err)) == 0) {
			/* -EINVAL: a --steps NAME the recording lacks (diff exits 2) */
			if (analyze_steps(t, a, 0, steps) == -EINVAL)
				analysis_free(a);
			else
				ok = 1;
		}
		if (!ok)
			trace_free(t);
	}
	close(fd);
	return ok;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static FILE *sink;
	const uint8_t *second = size > 1 ? memmem(data + 1, size - 1, "GPUWHY\x1a\n", 8) : NULL;
	size_t split = second ? (size_t)(second - data) : size / 2;
	const char *steps = steps_opt[size % 4];
	struct trace t[2];
	struct analysis a[2];
	struct diff d;

	if (!sink)
		sink = fopen("/dev/null", "w");
	if (!side(data, split, steps, &t[0], &a[0]))
		return 0;
	if (side(data + split, size - split, steps, &t[1], &a[1])) {
		if (diff_compute(&d, &a[0], &a[1], batch_opt[size / 4 % 3], top_opt[size / 12 % 3]) == 0) {
			struct json j;

			render_diff_terminal(sink, &d, 0);
			render_diff_terminal(sink, &d, 1);
			json_init(&j, sink, 1);
			render_diff_json(&j, &d);
			json_done(&j);
			render_diff_html(sink, &d);
			diff_free(&d);
		}
		analysis_free(&a[1]);
		trace_free(&t[1]);
	}
	analysis_free(&a[0]);
	trace_free(&t[0]);
	return 0;
}
