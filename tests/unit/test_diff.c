/* gpuwhy diff and the HTML pages on SYNTHETIC recordings built with the
 * writer: two runs of one made-up loop, the second with steps exactly half
 * as long (a known 2x), compared; and the pages rendered into memory. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analyze/analyze.h"
#include "format/format.h"
#include "report/diff.h"
#include "report/render.h"
#include "t.h"
#include "synth.h"

#define US 1000ull
#define MS 1000000ull

static char path[2][64] = { "/tmp/gw-test-diff-a-XXXXXX", "/tmp/gw-test-diff-b-XXXXXX" };

/* Synthetic: 200 steps of a 3 ms GEMM, 8 x 20 us elementwise kernels and a
 * host gap of `gap` (the launch-bound part a fix removes); NVML samples
 * every 20 ms. The command line holds markup the pages must escape. */
static void write_run(const char *p, uint64_t gap, int elementwise)
{
	struct gw_writer w;
	uint64_t ts = 1000 * MS;
	int fd = synth_begin(&w, p, 100, 81920, 700000);

	gw_emit_meta(&w, "target.cmdline", "python train.py --tag '<script>alert(1)</script>' & more");
	for (int s = 0; s < 200; s++) {
		synth_kernel(&w, ts, 3 * MS, "big_gemm", 1024);
		ts += 3 * MS + 5 * US;
		for (int k = 0; k < elementwise; k++) {
			synth_kernel(&w, ts, 20 * US, "ew_add", 512);
			ts += 20 * US + 5 * US;
		}
		ts += gap;
	}
	for (uint64_t t = 1000 * MS; t < ts; t += 20 * MS) {
		uint64_t v[GW_GPU_NF] = { t, 0, 0xff, 1980, 3200, 0, 500000, 50, 1000, 90, 30 };

		gw_emit(&w, GW_REC_GPU, v, GW_GPU_NF);
	}
	gw_flush(&w);
	gw_writer_free(&w);
	close(fd);
}

static int load(int i, struct trace *t, struct analysis *a, unsigned tflags, unsigned aflags)
{
	char err[256];
	int r = trace_load_flags(t, path[i], tflags, err, sizeof(err));

	CHECK(r == 0, "load %s: %s", path[i], err);
	if (r == 0)
		analyze(t, a, aflags);
	return r;
}

static size_t count(const char *hay, const char *needle)
{
	size_t n = 0;

	for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

static void test_diff_2x(void)
{
	struct trace t[2];
	struct analysis a[2];
	struct diff d;
	const struct diff_kernel *ew = NULL, *gemm = NULL;
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

	/* before: 3 ms GEMM + 8 x 25 us + 2.8 ms gap = 6 ms; after: 3 ms, no gap
	 * (8 x 25 us of the GEMM's time given back so the step is exactly half) */
	write_run(path[0], 2800 * US - 5 * US, 8);
	write_run(path[1], 0, 0);
	if (load(0, &t[0], &a[0], 0, 0) || load(1, &t[1], &a[1], 0, 0))
		return;
	CHECK(has_steps(&a[0]) > 150 && has_steps(&a[1]) > 150, "steps %zu %zu", has_steps(&a[0]),
	      has_steps(&a[1]));
	CHECK(diff_compute(&d, &a[0], &a[1], (double[]){ 32, 32 }, 10) == 0, "diff computed");
	CHECK(fabs(d.speedup - 2.0) < 0.01, "speed-up %.4f, made 2.0", d.speedup);
	CHECK(fabs(d.speedup_median - 2.0) < 0.02, "median speed-up %.4f", d.speedup_median);
	CHECK(fabs(d.side[0].step_mean_ns - 6 * MS) < 10 * US, "before step %.0f ns", d.side[0].step_mean_ns);
	CHECK(fabs(d.side[1].samples_per_s / d.side[0].samples_per_s - 2.0) < 0.01, "samples/s %.1f -> %.1f",
	      d.side[0].samples_per_s, d.side[1].samples_per_s);
	CHECK(fabs(d.side[0].samples_per_s - 32 * 1e9 / (6 * MS)) < 1, "samples/s = batch x steps/s (%.1f)",
	      d.side[0].samples_per_s);
	for (size_t i = 0; i < d.nk; i++) {
		if (!strcmp(d.k[i].name, "ew_add"))
			ew = &d.k[i];
		if (!strcmp(d.k[i].name, "big_gemm"))
			gemm = &d.k[i];
	}
	CHECK(d.nk_total == 2 && ew && gemm, "two kernel names (%zu)", d.nk_total);
	if (ew && gemm) {
		CHECK(ew == &d.k[0], "the elementwise kernels changed most");
		CHECK(fabs(ew->per_step[0] - 160 * US) < 1 * US && ew->count[1] == 0, "elementwise %.0f ns/step, "
		      "%llu after", ew->per_step[0], (unsigned long long)ew->count[1]);
		CHECK(fabs(gemm->per_step[0] - 3 * MS) < 1 * US && fabs(gemm->per_step[1] - 3 * MS) < 1 * US,
		      "GEMM 3 ms per step on both sides (%.0f, %.0f)", gemm->per_step[0], gemm->per_step[1]);
		CHECK(gemm->count[0] >= 150 && gemm->count[1] >= 150 && ew->count[0] == 8 * gemm->count[0],
		      "counts: GEMM %llu, elementwise %llu", (unsigned long long)gemm->count[0],
		      (unsigned long long)ew->count[0]);
	}
	CHECK(d.side[0].busy_pct < 60 && d.side[1].busy_pct > 95, "busy %.0f%% -> %.0f%%", d.side[0].busy_pct,
	      d.side[1].busy_pct);
	/* idle per step: the 2.795 ms gap and 9 launch gaps of 5 us, then one
	 * (within 1%: the steady window ends with the last step's kernels) */
	{
		double idle[2] = { 0, 0 };

		for (int s = 0; s < 2; s++)
			for (int c = 0; c < IDLE_NCAUSES; c++)
				idle[s] += d.side[s].idle_ns[c];
		CHECK(fabs(idle[0] / (2840 * US) - 1) < 0.01 && fabs(idle[1] / (5 * US) - 1) < 0.01,
		      "idle per step %.0f -> %.0f ns", idle[0], idle[1]);
	}

	/* the diff page: escaped, one row per kernel and finding */
	f = open_memstream(&buf, &len);
	CHECK(render_diff_html(f, &d) == 0, "diff page rendered");
	fclose(f);
	CHECK(!strstr(buf, "<script>alert") && strstr(buf, "&lt;script&gt;alert(1)&lt;/script&gt;"),
	      "diff page escapes the command line");
	CHECK(count(buf, "<tr class=\"kernel\"") == d.nk, "kernel rows %zu", count(buf, "<tr class=\"kernel\""));
	CHECK(count(buf, "<tr class=\"finding-change") == d.nf, "finding rows");
	{
		const char *p = strstr(buf, "data-speedup=\"");
		double v = p ? atof(p + 14) : 0;

		CHECK(fabs(v - d.speedup) < 1e-3, "summary's speed-up %.4f", v);
	}
	free(buf);
	buf = NULL;

	/* --fail-if-slower's arithmetic: AFTER vs BEFORE swapped is 100% slower */
	diff_free(&d);
	CHECK(diff_compute(&d, &a[1], &a[0], (double[]){ 0, 0 }, 10) == 0, "swapped");
	CHECK(fabs((1 / d.speedup - 1) * 100 - 100) < 1, "swapped: %.1f%% slower", (1 / d.speedup - 1) * 100);
	CHECK(d.side[0].samples_per_s == 0, "no batch: samples/s unknown");
	diff_free(&d);
	for (int i = 0; i < 2; i++) {
		analysis_free(&a[i]);
		trace_free(&t[i]);
	}
}

static void test_report_page(void)
{
	struct trace t;
	struct analysis a;
	char *buf = NULL, want[64];
	size_t len = 0, steps;
	FILE *f;

	if (load(0, &t, &a, TRACE_KEEP_SAMPLES, ANALYZE_KEEP_GAPS))
		return;
	CHECK(t.gpu_samples.n == 60, "NVML samples kept (%zu)", t.gpu_samples.n);
	f = open_memstream(&buf, &len);
	CHECK(render_html(f, &a) == 0, "report page rendered");
	fclose(f);
	steps = a.steps.n;
	CHECK(count(buf, "<g class=\"stepbar\">") == (steps < 300 ? steps : 300), "%zu step bars for %zu steps",
	      count(buf, "<g class=\"stepbar\">"), steps);
	snprintf(want, sizeof(want), "data-bins=\"%zu\" data-steps=\"%zu\"", steps < 300 ? steps : 300, steps);
	CHECK(strstr(buf, want) != NULL, "%s", want);
	CHECK(count(buf, "<section class=\"finding") == a.findings.n, "one section per finding (%zu)",
	      a.findings.n);
	CHECK(strstr(buf, "id=\"gpu-clocks\"") && strstr(buf, "id=\"gpu-power\""), "GPU charts");
	CHECK(!strstr(buf, "<script>alert") && strstr(buf, "&lt;script&gt;alert(1)&lt;/script&gt;&#39; &amp; more"),
	      "report page escapes the command line");
	CHECK(strstr(buf, "data-verdict=\"healthy\"") != NULL, "verdict");
	CHECK(!strstr(buf, "http://") || !strstr(buf, "src=\"http"), "nothing fetched");
	free(buf);
	analysis_free(&a);
	trace_free(&t);
}

/* The program of a command line, as diff tells two programs from one job
 * run twice: the script past the interpreter's own options. */
static void test_program_of(void)
{
	static const struct {
		const char *cmd, *want;
	} cases[] = {
		{ "python3 train.py --lr 3e-4", "train.py" },
		{ "/usr/bin/python3.12 /home/u/proj/train.py", "train.py" },
		{ "env CUDA_VISIBLE_DEVICES=0 python train.py", "train.py" },
		{ "env -i PATH=/usr/bin python3 train.py", "train.py" },
		{ "OMP_NUM_THREADS=4 python -X faulthandler -W ignore train.py", "train.py" },
		{ "python --check-hash-based-pycs never train.py", "train.py" },
		{ "python -m torch.distributed.run --nproc_per_node 2 train.py", "torch.distributed.run" },
		{ "python -mpkg.train", "pkg.train" },
		{ "python -c import torch", "python -c" },
		{ "./build/saxpy --n 1024", "saxpy" },
	};
	char out[128];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		CHECK(diff_program_of(cases[i].cmd, out, sizeof(out)) && !strcmp(out, cases[i].want),
		      "program of '%s': '%s' (want '%s')", cases[i].cmd, out, cases[i].want);
	CHECK(!diff_program_of(NULL, out, sizeof(out)) && !diff_program_of("", out, sizeof(out)),
	      "no command line: no program");
}

int main(void)
{
	for (int i = 0; i < 2; i++) {
		int fd = mkstemp(path[i]);

		if (fd < 0)
			return 1;
		close(fd);
	}
	test_diff_2x();
	test_report_page();
	test_program_of();
	if (!getenv("GW_KEEP"))
		unlink(path[0]), unlink(path[1]);
	T_DONE();
}
