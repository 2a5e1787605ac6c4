/* The timeline export (report --trace) on SYNTHETIC recordings built with
 * the writer: launch -> kernel arrows by correlation id, host calls that
 * overlap without nesting moved to their own track, nested ones kept,
 * counter tracks, and times from the recording's earliest time (a second
 * GPU that starts before the main one once wrapped to ts = 1.84e16 us). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analyze/export.h"
#include "report/render.h"
#include "synth.h"
#include "t.h"

static size_t count(const char *s, const char *what)
{
	size_t n = 0;

	for (const char *p = s; (p = strstr(p, what)); p += strlen(what))
		n++;
	return n;
}

static void api(struct gw_writer *w, uint64_t start, uint64_t end, uint64_t tid, uint64_t corr,
		const char *name)
{
	uint64_t v[GW_API_NF] = { start, end, 0, tid, corr, gw_intern(w, name), 1, 0 };

	gw_emit(w, GW_REC_API, v, GW_API_NF);
}

static void test_trace_tracks_and_flows(void)
{
	char path[] = "/tmp/gw-trace-XXXXXX";
	struct gw_writer w;
	struct trace t;
	struct analysis a;
	struct render_trace_stats st;
	char err[256], *out = NULL;
	size_t len = 0;
	int fd = mkstemp(path);
	const uint64_t t0 = 5000000000ull;

	close(fd);
	fd = synth_begin(&w, path, 100, 81559, 700000);
	gw_emit_meta(&w, "record.start_ns", "4000000000");
	/* GPU 1: a copy before GPU 0's first kernel */
	uint64_t cp[GW_MEMCPY_NF] = { t0 - 500000, t0 - 400000, 1, 1, 3, 1 << 20, 1, 1, 9, 0 };

	gw_emit(&w, GW_REC_MEMCPY, cp, GW_MEMCPY_NF);
	/* 40 steps of a launch and its kernel (correlation ids 1..40, as
	 * synth_kernel numbers them), 100 us apart */
	for (unsigned i = 0; i < 40; i++) {
		uint64_t at = t0 + i * 100000ull;

		api(&w, at - 20000, at - 15000, 100, i + 1, "cudaLaunchKernel");
		synth_kernel(&w, at, 50000, "_Z6kernelPf", 64);
	}
	/* thread 101: calls that overlap without nesting, and one nested */
	api(&w, t0, t0 + 30000, 101, 0, "cudaMalloc");
	api(&w, t0 + 20000, t0 + 60000, 101, 0, "cudaMallocHost");
	api(&w, t0 + 25000, t0 + 28000, 101, 0, "cudaGetDevice");
	uint64_t g[GW_GPU_NF] = { t0 + 1000000, 0, 0xff, 1980, 2619, 0, 350000, 40, 1000, 80, 10 };

	gw_emit(&w, GW_REC_GPU, g, GW_GPU_NF);
	gw_flush(&w);
	gw_writer_free(&w);
	close(fd);

	CHECK(trace_load_flags(&t, path, TRACE_KEEP_OPS, err, sizeof(err)) == 0, "load: %s", err);
	analyze(&t, &a, ANALYZE_KEEP_GAPS);
	FILE *m = open_memstream(&out, &len);

	struct trace_export x;

	trace_export_read(&t, &x);
	render_trace(m, &a, &x, 0, &st);
	fclose(m);
	CHECK(out && st.events > 80 && !st.dropped, "trace written (%llu events)",
	      (unsigned long long)st.events);
	if (!out)
		goto done;
	CHECK(count(out, "\"ph\":\"s\"") == 40 && count(out, "\"ph\":\"f\",\"bp\":\"e\"") == 40,
	      "a flow from each launch to its kernel: %zu starts, %zu ends", count(out, "\"ph\":\"s\""),
	      count(out, "\"ph\":\"f\""));
	CHECK(strstr(out, "\"otherData\":{") && strstr(out, "\"time_zero_ns\":4000000000,"),
	      "ts 0 is the recording's start");
	/* the copy on GPU 1 at 1 s - 0.5 ms after the start: exact, not wrapped */
	CHECK(strstr(out, "\"cat\":\"memcpy\",\"ph\":\"X\",\"ts\":999500.000,\"dur\":100.000,\"pid\":4194305,"),
	      "GPU 1's early copy at ts 999500.000 us: %.200s",
	      strstr(out, "\"memcpy\"") ? strstr(out, "\"memcpy\"") : "none");
	CHECK(strstr(out, "\"cat\":\"kernel\",\"ph\":\"X\",\"ts\":1000000.000,\"dur\":50.000,\"pid\":4194304,"),
	      "the first kernel at exactly 1 s");
	CHECK(strstr(out, "thread 101: CUDA calls (overlapping, 2)"),
	      "cudaMallocHost, overlapping cudaMalloc, on a second track");
	CHECK(!strstr(out, "(overlapping, 3)"), "the nested call stays on a track of its own thread");
	CHECK(strstr(out, "\"name\":\"SM clock (MHz)\",\"ph\":\"C\",\"ts\":1001000.000,\"pid\":4194304,\"args\":{\"value\":1980}") &&
	      strstr(out, "\"name\":\"power (W)\",\"ph\":\"C\"") &&
	      strstr(out, "\"name\":\"GPU utilization (%)\",\"ph\":\"C\""),
	      "NVML readings as counters");
	CHECK(count(out, "\"args\":{\"name\":\"kernel(float*)\",") == 1, "the demangled name once per kernel name");
	/* each kernel's launch, as synth_kernel recorded it (grid 64x1x1, block
	 * 256x1x1, stream 7, correlation ids 1..40, 32 registers) */
	CHECK(count(out, "\"stream\":7,\"grid\":\"64x1x1\",\"block\":\"256x1x1\",\"correlation\":") == 40,
	      "the kernels' launch in their args: %zu", count(out, "\"grid\":\"64x1x1\""));
	CHECK(strstr(out, "\"correlation\":40,\"registers_per_thread\":32,\"shared_memory_bytes\":0}"),
	      "correlation, registers, shared memory");
	free(out);
	out = NULL;

	/* past the limit: the shortest kernels go, the steps and idle stay */
	m = open_memstream(&out, &len);
	render_trace(m, &a, &x, a.gaps.n + a.steps.n + 3 + 1 + 20, &st); /* room for 20 kernels */
	fclose(m);
	CHECK(out && st.dropped == 20 && count(out, "\"cat\":\"step\"") == a.steps.n &&
	      count(out, "\"cat\":\"idle\"") == a.gaps.n && count(out, "\"cat\":\"memcpy\"") == 1,
	      "limit: %llu kernels left out, steps %zu/%zu, idle %zu/%zu", (unsigned long long)st.dropped,
	      out ? count(out, "\"cat\":\"step\"") : 0, a.steps.n, out ? count(out, "\"cat\":\"idle\"") : 0,
	      a.gaps.n);
done:
	free(out);
	trace_export_free(&x);
	analysis_free(&a);
	trace_free(&t);
	unlink(path);
}

int main(void)
{
	test_trace_tracks_and_flows();
	T_DONE();
}
