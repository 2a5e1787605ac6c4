/* Code sites on SYNTHETIC recordings: made-up timelines with made-up Python
 * stacks, written with the recording writer; asserts which sites each
 * finding names, their shares, the exact call sites of synchronizations,
 * the site classes' effect on attribution, and the note saying why a
 * recording has no stacks. */
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analyze/analyze.h"
#include "analyze/internal.h"
#include "format/format.h"
#include "analyze/export.h"
#include "report/render.h"
#include "t.h"
#include "real.h"

#define PID 100
#define US 1000ull
#define MS 1000000ull

static char path[] = "/tmp/gw-test-sites-XXXXXX";
static struct gw_writer w;
static struct gw_pytrie *trie;
static int fd;

static int begin_incomplete; /* the next begin() leaves record.complete out */

static void begin(const char *py_meta)
{
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	gw_write_file_header(fd);
	gw_writer_init(&w, fd, PID, 0, 1 << 16);
	trie = gw_pytrie_new(4096);
	if (!begin_incomplete)
		gw_emit_meta(&w, "record.complete", "1");
	gw_emit_meta(&w, GW_END_KEY, "1"); /* the end record: a finished recording */
	gw_emit_meta(&w, "host.clk_tck", "100");
	gw_emit_meta(&w, "target.cpu_count", "8");
	gw_emit_meta(&w, "target.cwd", "/home/u/proj");
	if (py_meta) {
		gw_emit_meta(&w, "record.py", py_meta);
		gw_emit_meta(&w, "record.py_hz", "1000");
		gw_emit_meta(&w, "record.py_keyframe_ms", "1000");
	}
}

static void kernel(uint64_t start, uint64_t dur, const char *name)
{
	static uint64_t corr;
	uint64_t v[GW_KERNEL_NF] = { start, start + dur, gw_intern(&w, name), 0, 1, 7, 1024, 1, 1,
				     256, 1, 1, ++corr, 32, 0, 0 };

	gw_emit(&w, GW_REC_KERNEL, v, GW_KERNEL_NF);
}

static void thread(uint64_t ts, uint32_t pid, uint32_t tid, char state, uint64_t ticks)
{
	uint64_t v[GW_THREAD_NF] = { ts, pid, tid, (uint64_t)state, ticks, 0, 0, 0 };

	gw_emit(&w, GW_REC_THREAD, v, GW_THREAD_NF);
}

/* A stack of up to 4 frames "file:func:line", innermost first. */
/* The training thread's /proc samples around a step's host part, from
 * `from` to `to`, on the CPU for `ticks_add` ticks of it. */
static void cpu_between(uint64_t from, uint64_t to, uint64_t *ticks, uint64_t ticks_add)
{
	thread(from, PID, PID, 'R', *ticks);
	*ticks += ticks_add;
	thread(to - 1, PID, PID, 'R', *ticks);
}

/* A stack from "file|func|line" frames, innermost first (up to 4). */
static uint32_t stack_of(const char *const *in, int n)
{
	struct gw_pyframe fr[4];
	char buf[4][128];
	int k = 0;

	for (int i = 0; i < n && i < 4 && in[i]; i++) {
		char *a, *b;

		snprintf(buf[i], sizeof(buf[i]), "%s", in[i]);
		a = strchr(buf[i], '|');
		b = a ? strchr(a + 1, '|') : NULL;
		if (!a || !b)
			return 0;
		*a = *b = 0;
		fr[k++] = (struct gw_pyframe){ buf[i], a + 1, (uint32_t)atoi(b + 1) };
	}
	uint32_t id = gw_pytrie_stack(trie, fr, k);

	gw_pytrie_emit(trie, &w);
	return id;
}

static uint32_t stack(const char *f0, const char *f1, const char *f2)
{
	const char *in[3] = { f0, f1, f2 };

	return stack_of(in, 3);
}

static uint32_t stack4(const char *f0, const char *f1, const char *f2, const char *f3)
{
	const char *in[4] = { f0, f1, f2, f3 };

	return stack_of(in, 4);
}

/* The conv layer's forward under the loop at train.py:95: launching work. */
static uint32_t model_stack(void)
{
	return stack("/venv/lib/python3.11/site-packages/torch/nn/modules/conv.py|forward|450",
		     "/home/u/proj/train.py|main|95", NULL);
}

static void sample(uint64_t ts, uint32_t pid, uint32_t tid, uint32_t st)
{
	uint64_t v[GW_PYS_NF] = { ts, pid, tid, st };

	gw_emit(&w, GW_REC_PY_SAMPLE, v, GW_PYS_NF);
}

/* The same, with the thread's state when its stack was read (GW_PYSTATE_*). */
static void sample_state(uint64_t ts, uint32_t pid, uint32_t tid, uint32_t st, unsigned state)
{
	uint64_t v[GW_PYS_NF] = { ts, pid, tid, st, state };

	gw_emit(&w, GW_REC_PY_SAMPLE, v, GW_PYS_NF);
}

static void end(struct trace *t, struct analysis *a)
{
	char err[256];

	gw_flush(&w);
	gw_writer_free(&w);
	gw_pytrie_free(trie);
	close(fd);
	CHECK(trace_load(t, path, err, sizeof(err)) == 0, "load: %s", err);
	analyze(t, a, ANALYZE_KEEP_GAPS);
	uint64_t ns[IDLE_NCAUSES] = { 0 };

	for (size_t i = 0; i < a->gaps.n; i++)
		ns[a->gaps.v[i].cause] += a->gaps.v[i].end - a->gaps.v[i].start;
	int agree = 1;

	for (int c = 0; c < IDLE_NCAUSES; c++)
		agree &= ns[c] == a->idle_by_cause[c];
	CHECK(agree, "kept gaps and the totals agree after the site classes");
}

static const struct finding *finding(const struct analysis *a, const char *cause)
{
	for (size_t i = 0; i < a->findings.n; i++)
		if (a->findings.v[i].assessed && !strcmp(a->findings.v[i].cause, cause))
			return &a->findings.v[i];
	return NULL;
}

static const struct site *site(const struct analysis *a, const struct finding *f, unsigned i)
{
	return f && i < f->nsites ? &a->sites.v[f->sites[i].site] : NULL;
}

static int site_is(const struct analysis *a, const struct site *s, const char *file, unsigned line,
		   const char *lib_func)
{
	return s && !strcmp(site_file(a, s), file) && s->line == line &&
	       !strcmp(a->t->names.v[s->lib_func], lib_func);
}

/* 100 steps of 8 ms: 2 ms of GPU work (waited for in a stream
 * synchronization when sync), then 6 ms of the training thread's CPU work;
 * the thread's stack in each 1 ms of the step from st[] (samples at 1000
 * Hz). */
static void cpu_steps(int sync, const uint32_t st[8])
{
	uint64_t ts = 1000 * MS, ticks = 0;

	for (int s = 0; s < 100; s++) {
		kernel(ts, 2 * MS, "conv");
		if (sync) {
			uint64_t v[GW_API_NF] = { ts + 10 * US, ts + 2 * MS + 5 * US, 131, PID, 0,
						  gw_intern(&w, "cudaStreamSynchronize"), 2, 0 };
			gw_emit(&w, GW_REC_API, v, GW_API_NF);
		}
		for (int k = 0; k < 8; k++)
			sample(ts + (uint64_t)k * MS + MS / 2, PID, PID, st[k]);
		for (int k = 0; k < 4; k++)
			thread(ts + 2 * MS + (uint64_t)k * 2 * MS, PID, PID, 'R', ticks);
		ticks += 1;
		thread(ts + 8 * MS - 1, PID, PID, 'R', ticks);
		ts += 8 * MS;
	}
}

/* The CPU work: 4 ms in decode(), 2 ms in normalize(), no synchronization. */
static void input_steps(uint32_t st_decode, uint32_t st_norm, uint32_t st_model)
{
	const uint32_t st[8] = { st_model, st_model, st_decode, st_decode,
				 st_decode, st_decode, st_norm, st_norm };

	cpu_steps(0, st);
}

/* Synthetic: blocks of lines (sites.c merge_blocks). load_batch's decode
 * at line 40 (PIL, 4 of the 6 ms), a NumPy mean at 41 (1 ms) and its own
 * arithmetic at 43 (1 ms): the mean, a second library call, never joins
 * the decode's block, and the arithmetic may not reach past it, so the
 * decode stands alone; the mean and the arithmetic are one block, 41-43.
 * Then lines of the user's own at 40 (3 ms), 44 (2 ms) and 49 (1 ms): 40
 * and 44 have three lines between, one block; 49, four lines past it, is
 * a site of its own. */
static void test_blocks_of_lines(void)
{
	struct trace t;
	struct analysis a;

	begin("sampled");
	uint32_t dec = stack("/usr/lib/python3/dist-packages/PIL/Image.py|decode|700",
			     "/home/u/proj/train.py|load_batch|40", "/home/u/proj/train.py|main|90");
	uint32_t mean = stack("/usr/lib/python3/dist-packages/numpy/core/fromnumeric.py|mean|3000",
			      "/home/u/proj/train.py|load_batch|41", "/home/u/proj/train.py|main|90");
	uint32_t own = stack("/home/u/proj/train.py|load_batch|43", "/home/u/proj/train.py|main|90", NULL);
	uint32_t model = model_stack();
	const uint32_t st[8] = { model, model, dec, dec, dec, dec, mean, own };

	cpu_steps(0, st);
	end(&t, &a);
	const struct finding *f = finding(&a, "C1");
	const struct site *s0 = site(&a, f, 0), *s1 = site(&a, f, 1);

	CHECK(f && f->nsites == 2, "C1 has %u sites (want 2)", f ? f->nsites : 0);
	CHECK(site_is(&a, s0, "train.py", 40, "decode") && !f->sites[0].line_first && f->sites[0].share > 0.64 &&
		      f->sites[0].share < 0.69,
	      "the decode alone, 2/3 (%u-%u, %.3f)", f ? f->sites[0].line_first : 0, f ? f->sites[0].line_last : 0,
	      f && f->nsites ? f->sites[0].share : 0);
	CHECK(s1 && f->sites[1].line_first == 41 && f->sites[1].line_last == 43 && f->sites[1].share > 0.31 &&
		      f->sites[1].share < 0.35,
	      "the mean and the arithmetic: 41-43 (%u-%u), 1/3 (%.3f)", f && f->nsites > 1 ? f->sites[1].line_first : 0,
	      f && f->nsites > 1 ? f->sites[1].line_last : 0, f && f->nsites > 1 ? f->sites[1].share : 0);
	analysis_free(&a);
	trace_free(&t);

	begin("sampled");
	uint32_t l40 = stack("/home/u/proj/train.py|load_batch|40", "/home/u/proj/train.py|main|90", NULL);
	uint32_t l44 = stack("/home/u/proj/train.py|load_batch|44", "/home/u/proj/train.py|main|90", NULL);
	uint32_t l49 = stack("/home/u/proj/train.py|load_batch|49", "/home/u/proj/train.py|main|90", NULL);
	const uint32_t st2[8] = { model_stack(), model_stack(), l40, l40, l40, l44, l44, l49 };

	cpu_steps(0, st2);
	end(&t, &a);
	f = finding(&a, "C1");
	CHECK(f && f->nsites == 2 && f->sites[0].line_first == 40 && f->sites[0].line_last == 44 &&
		      f->sites[0].share > 0.81 && f->sites[0].share < 0.85,
	      "40 and 44, three lines between: one block of 5/6 (%u-%u)", f && f->nsites ? f->sites[0].line_first : 0,
	      f && f->nsites ? f->sites[0].line_last : 0);
	s1 = site(&a, f, 1);
	CHECK(s1 && s1->line == 49 && !f->sites[1].line_first, "49, four lines past 44: a site of its own (%u)",
	      s1 ? s1->line : 0);
	analysis_free(&a);
	trace_free(&t);
}

/* Synthetic: the same C1 under a loop's frame (run's `step(i)` at
 * loop.py:10, every sample under it, the model's launches too): the sites
 * name the step's line that leads to them (train.py:55), not the loop's
 * own frame or anything above it. */
static void test_call_lines(void)
{
	struct trace t;
	struct analysis a;

	begin("sampled");
	uint32_t dec = stack4("/usr/lib/python3/dist-packages/PIL/Image.py|decode|700",
			      "/home/u/proj/train.py|load_batch|40", "/home/u/proj/train.py|step|55",
			      "/home/u/proj/loop.py|run|10");
	uint32_t norm = stack4("/usr/lib/python3/dist-packages/numpy/core/fromnumeric.py|mean|3000",
			       "/home/u/proj/train.py|load_batch|41", "/home/u/proj/train.py|step|55",
			       "/home/u/proj/loop.py|run|10");
	uint32_t model = stack4("/venv/lib/python3.11/site-packages/torch/nn/modules/conv.py|forward|450",
				"/venv/lib/python3.11/site-packages/torch/nn/modules/module.py|_call_impl|1700",
				"/home/u/proj/train.py|step|60", "/home/u/proj/loop.py|run|10");

	input_steps(dec, norm, model);
	end(&t, &a);
	const struct finding *f = finding(&a, "C1");
	const struct site *s0 = site(&a, f, 0);

	CHECK(site_is(&a, s0, "train.py", 40, "decode"), "first site train.py:40 -> PIL decode");
	CHECK(s0 && s0->call_line == 55 && !strcmp(a.t->names.v[s0->call_func], "step"),
	      "its call line is the step's train.py:55, below the loop's loop.py:10 (%u)",
	      s0 ? s0->call_line : 0);
	char text[512] = "";

	if (s0)
		site_text(text, sizeof(text), &a, s0);
	CHECK(!strcmp(text, "train.py:55 in step -> train.py:40 in load_batch -> PIL/Image.py decode"),
	      "site text: %s", text);
	analysis_free(&a);
	trace_free(&t);
}

/* Synthetic: C1 on the training thread. Its site is load_batch's decode
 * line with 4 of the 6 ms and the normalize line after it with 2: one
 * block of lines (input preparation, named by the decode's library call,
 * the line that holds the most); the model's line is not in the idle time
 * at all. Files under site-packages are library context. */
static void test_input_sites(void)
{
	struct trace t;
	struct analysis a;

	begin("sampled");
	uint32_t dec = stack("/usr/lib/python3/dist-packages/PIL/Image.py|decode|700",
			     "/home/u/proj/train.py|load_batch|40", "/home/u/proj/train.py|main|90");
	uint32_t norm = stack("/home/u/proj/train.py|load_batch|41", "/home/u/proj/train.py|main|90",
			      NULL);
	uint32_t model = model_stack();

	input_steps(dec, norm, model);
	end(&t, &a);
	const struct finding *f = finding(&a, "C1");
	const struct site *s0 = site(&a, f, 0), *s1 = site(&a, f, 1);

	CHECK(f && f->nsites == 1, "C1 has %u sites (want 1, a block)", f ? f->nsites : 0);
	CHECK(site_is(&a, s0, "train.py", 40, "decode") && s0->cls == SC_INPUT,
	      "first site train.py:40 -> PIL decode, input preparation");
	CHECK(s0 && !strcmp(a.t->names.v[s0->lib_file], "PIL/Image.py"), "library file shortened: %s",
	      s0 ? a.t->names.v[s0->lib_file] : "-");
	CHECK(f && f->sites[0].line_first == 40 && f->sites[0].line_last == 41 &&
		      f->sites[0].block_cls == SC_INPUT && f->sites[0].share > 0.99,
	      "the block train.py:40-41 (%u-%u), input preparation (%d), share %.3f (want all)",
	      f ? f->sites[0].line_first : 0, f ? f->sites[0].line_last : 0, f ? f->sites[0].block_cls : 0,
	      f ? f->sites[0].share : 0);
	CHECK(!s1, "no second site");
	CHECK(a.py_note[0] == 0, "stacks present: no note (%s)", a.py_note);
	/* the reports: the terminal line and the JSON sites array */
	char *text = NULL, *js = NULL;
	size_t len = 0, jlen = 0;
	FILE *m = open_memstream(&text, &len);

	render_terminal(m, &a, 0, 0);
	fclose(m);
	/* no frame holds 80% of the thread's time (main's lines are nodes of
	 * their own): the call line is main's, the outermost user frame */
	CHECK(s0 && s0->call_line == 90 && !strcmp(a.t->names.v[s0->call_func], "main"),
	      "first site's call line train.py:90 in main (%u)", s0 ? s0->call_line : 0);
	CHECK(text && strstr(text, "    at train.py:90 in main -> train.py:40-41 in load_batch -> PIL/Image.py decode "
				   "(100% of this idle: input preparation)\n"), "terminal: %s", text ? text : "");
	struct json j;

	m = open_memstream(&js, &jlen);
	json_init(&j, m, 0);
	render_json(&j, &a);
	json_done(&j);
	fclose(m);
	CHECK(js && strstr(js, "\"sites\":[{\"file\":\"train.py\",\"line\":40,\"lines\":[40,41],"
				 "\"function\":\"load_batch\",\"library_file\":\"PIL/Image.py\","
				 "\"library_function\":\"decode\""), "json: %.400s",
	      js && strstr(js, "sites") ? strstr(js, "sites") : "");
	CHECK(js && strstr(js, "\"python_stacks\":{\"note\":null,\"samples\":800"),
	      "json python_stacks");
	free(text);
	free(js);
	CHECK(a.py_thread_samples == 800, "training thread samples %llu",
	      (unsigned long long)a.py_thread_samples);
	analysis_free(&a);
	trace_free(&t);
}

/* Synthetic: --trace draws the stacks as nested slices on the thread's
 * track; a frame shared by consecutive samples stays one slice. */
static void test_trace_slices(void)
{
	struct trace t;
	struct analysis a;
	char err[256], *out = NULL;
	size_t len = 0;

	begin("sampled");
	uint32_t dec = stack("/usr/lib/python3/dist-packages/PIL/Image.py|decode|700",
			     "/home/u/proj/train.py|load_batch|40", "/home/u/proj/train.py|main|90");
	uint32_t norm = stack("/home/u/proj/train.py|load_batch|41", "/home/u/proj/train.py|main|90",
			      NULL);
	uint32_t model = model_stack();

	input_steps(dec, norm, model);
	gw_flush(&w);
	gw_writer_free(&w);
	gw_pytrie_free(trie);
	close(fd);
	CHECK(trace_load_flags(&t, path, TRACE_KEEP_OPS, err, sizeof(err)) == 0, "load: %s", err);
	analyze(&t, &a, ANALYZE_KEEP_GAPS);
	FILE *m = open_memstream(&out, &len);

	struct render_trace_stats st;
	double ts_main = -1, dur_main = -1, ts_dec = -1, dur_dec = -1, ts_first = -1;
	const char *p;

	struct trace_export x;

	trace_export_read(&t, &x);
	render_trace(m, &a, &x, 0, &st);
	trace_export_free(&x);
	fclose(m);
	CHECK(out && st.events > 0 && !st.dropped, "trace written");
	/* times are exact microseconds from the recording's earliest time */
	p = out ? strstr(out, "\"name\":\"main (/home/u/proj/train.py:90)\",\"cat\":\"python\",\"ph\":\"X\",") : NULL;
	if (p)
		sscanf(strstr(p, "\"ts\":"), "\"ts\":%lf,\"dur\":%lf", &ts_main, &dur_main);
	p = out ? strstr(out, "\"name\":\"decode (/usr/lib/python3/dist-packages/PIL/Image.py:700)\",\"cat\":\"python\",\"ph\":\"X\",") : NULL;
	if (p)
		sscanf(strstr(p, "\"ts\":"), "\"ts\":%lf,\"dur\":%lf", &ts_dec, &dur_dec);
	p = out ? strstr(out, "\"cat\":\"kernel\",\"ph\":\"X\",\"ts\":") : NULL;
	if (p)
		sscanf(strstr(p, "\"ts\":"), "\"ts\":%lf", &ts_first);
	/* main:90 holds from 0.5 ms before the first decode sample (2.5 ms into
	 * the step) to 0.5 ms before the next step's first sample: 6 ms; the
	 * first kernel starts the step */
	CHECK(dur_main == 6000 && ts_main - ts_first == 2000, "main:90 slice: ts %.3f (first kernel %.3f), dur %.3f",
	      ts_main, ts_first, dur_main);
	CHECK(ts_dec == ts_main && dur_dec == 4000, "decode slice inside it: ts %.3f dur %.3f", ts_dec, dur_dec);
	CHECK(out && strstr(out, ": Python stack (training thread)") &&
	      strstr(out, "\"name\":\"process_name\",\"ph\":\"M\",\"pid\":100,"),
	      "track names, the job's pid");
	free(out);
	analysis_free(&a);
	trace_free(&t);
}

/* Synthetic: the same CPU time between steps, spent in torch.save: the site
 * class moves it from C1 to C14 (checkpoint serialization). */
static void test_serialization_class(void)
{
	struct trace t;
	struct analysis a;

	begin("sampled");
	uint32_t save = stack("/venv/lib/python3.11/site-packages/torch/serialization.py|save|600",
			      "/home/u/proj/train.py|checkpoint|70", "/home/u/proj/train.py|main|92");
	uint32_t model = model_stack();

	input_steps(save, save, model);
	end(&t, &a);
	double per = (double)a.idle_by_cause[IDLE_PERIODIC] / (double)a.idle_ns;

	CHECK(per > 0.99, "checkpoint idle moved to periodic: %.3f of the idle", per);
	CHECK(a.idle_by_cause[IDLE_HOST_COMPUTE] == 0, "no CPU-work idle left (%llu ns)",
	      (unsigned long long)a.idle_by_cause[IDLE_HOST_COMPUTE]);
	CHECK(a.site_moved_ns == a.idle_by_cause[IDLE_PERIODIC], "moved %llu ns",
	      (unsigned long long)a.site_moved_ns);
	const struct finding *f = finding(&a, "C14");

	CHECK(f && site_is(&a, site(&a, f, 0), "train.py", 70, "save") && f->sites[0].share > 0.99,
	      "C14's first site is train.py:70 -> torch.save");
	analysis_free(&a);
	trace_free(&t);
}

/* Synthetic: each step ends with a stream synchronization made by
 * loss.item() at train.py:57 (its stack carried by the api record); every
 * tenth by print(loss) at train.py:60. C9's sites are exact: counts and
 * waits of those calls, not samples. */
static void test_exact_sync_sites(void)
{
	struct trace t;
	struct analysis a;
	uint64_t ts = 1000 * MS;

	begin("sampled");
	uint32_t item = stack("/home/u/proj/train.py|train_step|57", "/home/u/proj/train.py|main|90",
			      NULL);
	uint32_t print = stack("/venv/lib/python3.11/site-packages/torch/_tensor_str.py|_str|700",
			       "/home/u/proj/train.py|train_step|60", "/home/u/proj/train.py|main|90");

	for (int s = 0; s < 100; s++) {
		kernel(ts, 500 * US, "fwd");
		kernel(ts + 500 * US, 500 * US, "bwd");
		uint64_t v[GW_API_NF] = { ts + 10 * US, ts + 1005 * US, 131, PID, 0,
					  gw_intern(&w, "cudaStreamSynchronize"), 2,
					  s % 10 == 9 ? print : item };
		gw_emit(&w, GW_REC_API, v, GW_API_NF);
		ts += 1302 * US;
	}
	end(&t, &a);
	const struct finding *f = finding(&a, "C9");
	const struct site *s0 = site(&a, f, 0), *s1 = site(&a, f, 1);

	CHECK(f && f->nsites == 2 && f->sites[0].exact, "C9 has %u exact sites", f ? f->nsites : 0);
	CHECK(s0 && s0->line == 57 && s0->calls == 90 && s0->cls == SC_SYNC,
	      "first: train.py:57, %llu calls (want 90 of the steady window's)",
	      s0 ? (unsigned long long)s0->calls : 0);
	CHECK(s1 && s1->line == 60 && s1->cls == SC_LOG && s1->calls >= 9 && s1->calls <= 10,
	      "second: train.py:60 print, %llu calls", s1 ? (unsigned long long)s1->calls : 0);
	CHECK(f && f->sites[0].share > 0.88 && f->sites[0].share < 0.92, "share of the waits %.3f",
	      f ? f->sites[0].share : 0);
	CHECK(s0 && s0->wait_ns == s0->calls * 995 * US, "wait %llu ns",
	      s0 ? (unsigned long long)s0->wait_ns : 0);
	analysis_free(&a);
	trace_free(&t);
}

/* The GPU work waited for in a synchronization (loss.item()), then 6 ms of
 * CPU work in stack `after` before the next step's kernel. */
static void sync_then_work(uint32_t after, uint32_t model)
{
	const uint32_t st[8] = { model, model, after, after, after, after, after, after };

	cpu_steps(1, st);
}

/* Synthetic: after a synchronization the host tokenizes the next batch (6 ms
 * of 8): the gap's length is that input code's, so it is CPU work on the
 * training thread (C1), not a synchronization stall. The same gap spent
 * launching the next work (torch.nn) stays the synchronization's (C9). */
static void test_after_sync_class(void)
{
	struct trace t;
	struct analysis a;

	begin("sampled");
	uint32_t tok = stack("/venv/lib/python3.11/site-packages/tokenizers/__init__.py|encode_batch|40",
			     "/home/u/proj/train.py|collate|30", "/home/u/proj/train.py|main|92");
	uint32_t model = stack("/venv/lib/python3.11/site-packages/torch/nn/modules/linear.py|forward|120",
			       "/home/u/proj/train.py|main|95", NULL);

	sync_then_work(tok, model);
	end(&t, &a);
	CHECK(a.idle_by_cause[IDLE_HOST_COMPUTE] > 0.99 * (double)a.idle_ns && !a.idle_by_cause[IDLE_SYNC],
	      "input code after a sync is CPU work: %llu of %llu ns (sync %llu)",
	      (unsigned long long)a.idle_by_cause[IDLE_HOST_COMPUTE], (unsigned long long)a.idle_ns,
	      (unsigned long long)a.idle_by_cause[IDLE_SYNC]);
	const struct finding *f = finding(&a, "C1");

	CHECK(f && site_is(&a, site(&a, f, 0), "train.py", 30, "encode_batch"),
	      "C1's first site is train.py:30 -> encode_batch");
	analysis_free(&a);
	trace_free(&t);

	begin("sampled");
	uint32_t launch = stack("/venv/lib/python3.11/site-packages/torch/nn/modules/linear.py|forward|120",
				"/home/u/proj/train.py|main|95", NULL);

	sync_then_work(launch, launch);
	end(&t, &a);
	CHECK(a.idle_by_cause[IDLE_SYNC] > 0.99 * (double)a.idle_ns,
	      "launching after a sync stays the sync's: %llu of %llu ns",
	      (unsigned long long)a.idle_by_cause[IDLE_SYNC], (unsigned long long)a.idle_ns);
	analysis_free(&a);
	trace_free(&t);

	/* a metric on the host (sklearn, on numpy below it) after the sync: the
	 * sync's, titled for the metric, its idle saved whole; not data loading */
	begin("sampled");
	uint32_t f1 = stack("/venv/lib/python3.11/site-packages/numpy/_core/fromnumeric.py|sum|80",
			    "/venv/lib/python3.11/site-packages/sklearn/metrics/_classification.py|f1_score|1100",
			    "/home/u/proj/train.py|main|97");

	model = stack("/venv/lib/python3.11/site-packages/torch/nn/modules/linear.py|forward|120",
		      "/home/u/proj/train.py|main|95", NULL);
	sync_then_work(f1, model);
	end(&t, &a);
	f = finding(&a, "C9");
	CHECK(a.idle_by_cause[IDLE_SYNC] > 0.99 * (double)a.idle_ns && !finding(&a, "C1"),
	      "a host metric after a sync is the sync's, not C1 (%llu of %llu ns)",
	      (unsigned long long)a.idle_by_cause[IDLE_SYNC], (unsigned long long)a.idle_ns);
	CHECK(f && strstr(f->title, "Host-side metrics and logging of GPU values"), "C9 title: %s",
	      f ? f->title : "-");
	CHECK(f && f->idle_ns > 0.99 * (double)a.idle_by_cause[IDLE_SYNC], "the metric's idle saved whole: "
	      "%.1f of %.1f ms", f ? f->idle_ns / 1e6 : 0, (double)a.idle_by_cause[IDLE_SYNC] / 1e6);
	CHECK(f && site_is(&a, site(&a, f, 0), "train.py", 97, "f1_score"), "C9's first site train.py:97 -> f1_score");
	analysis_free(&a);
	trace_free(&t);

	/* numeric code of the user's own on the training thread, no sync: CPU
	 * work on that thread, not data loading (no DataLoader advice) */
	begin("sampled");
	uint32_t sort = stack("/venv/lib/python3.11/site-packages/numpy/_core/fromnumeric.py|sort|1000",
			      "/home/u/proj/train.py|host_work|25", "/home/u/proj/train.py|main|96");

	model = stack("/venv/lib/python3.11/site-packages/torch/nn/modules/linear.py|forward|120",
		      "/home/u/proj/train.py|main|95", NULL);
	input_steps(sort, sort, model);
	end(&t, &a);
	f = finding(&a, "C1");
	CHECK(f && strstr(f->title, "CPU work on the training thread"), "C1 title: %s", f ? f->title : "-");
	CHECK(f && strstr(f->fix, "off the thread that feeds the GPU"), "C1 advice: %s", f ? f->fix : "-");
	analysis_free(&a);
	trace_free(&t);

	/* ... and the same numpy code under DataLoader is input preparation */
	begin("sampled");
	sort = stack("/venv/lib/python3.11/site-packages/numpy/_core/fromnumeric.py|sort|1000",
		     "/home/u/proj/train.py|Data.__getitem__|25",
		     "/venv/lib/python3.11/site-packages/torch/utils/data/_utils/fetch.py|fetch|50");
	model = stack("/venv/lib/python3.11/site-packages/torch/nn/modules/linear.py|forward|120",
		      "/home/u/proj/train.py|main|95", NULL);
	input_steps(sort, sort, model);
	end(&t, &a);
	f = finding(&a, "C1");
	CHECK(f && strstr(f->title, "Data loading starves the GPU"), "C1 title under DataLoader: %s",
	      f ? f->title : "-");
	analysis_free(&a);
	trace_free(&t);
}

/* Synthetic: each step ends in torch.cuda.empty_cache() at train.py:40: a
 * cudaFree that waits for the GPU (2 ms of work), then 1 ms of the host in
 * that call before the next step's kernel. Freeing device memory is a
 * synchronization (C9), counted apart in the evidence; no stack came with
 * the frees, so C9's sites are the samples': the empty_cache line first. */
static void test_free_syncs(void)
{
	struct trace t;
	struct analysis a;
	uint64_t ts = 1000 * MS;

	begin("sampled");
	uint32_t ec = stack("/venv/lib/python3.11/site-packages/torch/cuda/memory.py|empty_cache|220",
			    "/home/u/proj/train.py|step|40", "/home/u/proj/train.py|main|90");
	uint32_t fwd = stack("/venv/lib/python3.11/site-packages/torch/nn/modules/linear.py|forward|120",
			     "/home/u/proj/train.py|step|29", NULL);

	for (int s = 0; s < 100; s++) {
		kernel(ts, 2 * MS, "fwd");
		uint64_t v[GW_API_NF] = { ts + 10 * US, ts + 2 * MS + 5 * US, 22, PID, 0,
					  gw_intern(&w, "cudaFree"), 1, 0 };
		gw_emit(&w, GW_REC_API, v, GW_API_NF);
		sample(ts + MS / 2, PID, PID, fwd);
		sample(ts + 3 * MS / 2, PID, PID, ec);
		sample(ts + 5 * MS / 2, PID, PID, ec);
		ts += 3 * MS;
	}
	end(&t, &a);
	const struct finding *f = finding(&a, "C9");

	CHECK(a.idle_by_cause[IDLE_SYNC] > 0.99 * (double)a.idle_ns, "the idle after a free is the sync's: %llu of %llu ns",
	      (unsigned long long)a.idle_by_cause[IDLE_SYNC], (unsigned long long)a.idle_ns);
	CHECK(f && strstr(f->evidence, "1.0 of the synchronizations per step free device or pinned memory"),
	      "C9 counts the frees: %.300s", f ? f->evidence : "(no C9)");
	CHECK(f && f->nsites && !f->sites[0].exact && site_is(&a, site(&a, f, 0), "train.py", 40, "empty_cache"),
	      "C9's first site is train.py:40 -> empty_cache, from the samples");
	analysis_free(&a);
	trace_free(&t);
}

/* Synthetic: recordings without stacks. A non-Python target's status gives
 * the one line why; --no-py says so; a recording from before stacks says
 * nothing, and its findings name no site. */
static void test_no_stacks(void)
{
	struct trace t;
	struct analysis a;

	begin("sampled");
	uint64_t p[GW_PROC_NF] = { 900 * MS, PID, 1, 0, gw_intern(&w, "./target"), 1 };
	gw_emit(&w, GW_REC_PROCESS, p, GW_PROC_NF);
	uint64_t v[GW_PYST_NF] = { 5000 * MS, PID, GW_PY_NOT_PYTHON,
				   gw_intern(&w, "not a Python process (no _PyRuntime)"), 0, 0 };
	gw_emit(&w, GW_REC_PY_STATUS, v, GW_PYST_NF);
	thread(1000 * MS, PID, PID, 'R', 5);
	end(&t, &a);
	CHECK(strstr(a.py_note, "not a Python process") && strstr(a.py_note, "pid 100"), "note: %s",
	      a.py_note);
	analysis_free(&a);
	trace_free(&t);

	/* a launcher (a pyenv shim) that runs the interpreter as its child: the
	 * note says which process was sampled, and never that the job is not
	 * Python */
	begin("sampled");
	p[GW_PROC_CMDLINE] = gw_intern(&w, "./target");
	gw_emit(&w, GW_REC_PROCESS, p, GW_PROC_NF);
	uint64_t child[GW_PROC_NF] = { 901 * MS, PID + 1, PID, 0,
				       gw_intern(&w, "/opt/py/bin/python3.11 train.py"), 0 };
	gw_emit(&w, GW_REC_PROCESS, child, GW_PROC_NF);
	v[GW_PYST_DETAIL] = gw_intern(&w, "process 100 is not a Python process (no _PyRuntime)");
	gw_emit(&w, GW_REC_PY_STATUS, v, GW_PYST_NF);
	uint64_t read[GW_PYST_NF] = { 5000 * MS, PID + 1, GW_PY_OK, gw_intern(&w, "Python 3.11.7, /opt/py/bin/python3.11"), 412, 0 };
	gw_emit(&w, GW_REC_PY_STATUS, read, GW_PYST_NF);
	thread(1000 * MS, PID, PID, 'R', 5);
	end(&t, &a);
	CHECK(strstr(a.py_note, "Python stacks from pid 101 (Python 3.11.7, /opt/py/bin/python3.11; 412 samples)") &&
	      strstr(a.py_note, "pid 100, the command gpuwhy started, runs no Python itself") &&
	      !strstr(a.py_note, "not a Python process"), "launcher with a child interpreter: %s", a.py_note);
	analysis_free(&a);
	trace_free(&t);

	/* a launcher that exec'd the interpreter after the sampler's last look:
	 * its libraries name Python, so the note says what happened */
	begin("sampled");
	p[GW_PROC_CMDLINE] = gw_intern(&w, "./target");
	gw_emit(&w, GW_REC_PROCESS, p, GW_PROC_NF);
	uint64_t libs[GW_PLIBS_NF] = { 1200 * MS, PID, 0, gw_intern(&w, "3.11") };
	gw_emit(&w, GW_REC_PROC_LIBS, libs, GW_PLIBS_NF);
	v[GW_PYST_DETAIL] = gw_intern(&w, "process 100 is not a Python process (no _PyRuntime)");
	gw_emit(&w, GW_REC_PY_STATUS, v, GW_PYST_NF);
	thread(1000 * MS, PID, PID, 'R', 5);
	end(&t, &a);
	CHECK(strstr(a.py_note, "no Python stacks for pid 100: the sampler read it while it still ran a launcher") &&
	      strstr(a.py_note, "Python 3.11 it exec'd") && !strstr(a.py_note, "not a Python process"),
	      "launcher exec'd into Python: %s", a.py_note);
	analysis_free(&a);
	trace_free(&t);

	begin("off");
	input_steps(0, 0, 0);
	end(&t, &a);
	CHECK(strstr(a.py_note, "--no-py") != NULL, "note: %s", a.py_note);
	CHECK(finding(&a, "C1") && finding(&a, "C1")->nsites == 0, "no sites without stacks");
	analysis_free(&a);
	trace_free(&t);

	begin(NULL);
	input_steps(0, 0, 0);
	end(&t, &a);
	CHECK(a.py_note[0] == 0, "older recording: no note (%s)", a.py_note);
	CHECK(finding(&a, "C1") && a.idle_by_cause[IDLE_HOST_COMPUTE] > 0 && !a.site_moved_ns,
	      "attribution as without stacks");
	analysis_free(&a);
	trace_free(&t);
}

/* 100 steps of 8 ms: a 1 ms host-to-device copy of 64 MiB (source memory
 * `src`: 1 pageable, 2 pinned), 1 ms of GPU work, then 6 ms in which the
 * training thread is in `st_host` on the CPU before the next step's copy
 * (`copy` 0: the next step starts with the kernel, no copy at all). */
static void staging_steps(uint32_t st_host, uint32_t st_model, int src, int copy)
{
	uint64_t ts = 1000 * MS, ticks = 0, corr = 1u << 20;

	for (int s = 0; s < 100; s++) {
		if (copy) {
			uint64_t v[GW_MEMCPY_NF] = { ts, ts + MS, 1, (uint64_t)src, 3, 64ull << 20, 1, 0, 7,
						     ++corr };

			gw_emit(&w, GW_REC_MEMCPY, v, GW_MEMCPY_NF);
		}
		kernel(ts + MS, MS, "fft");
		for (int k = 0; k < 8; k++)
			sample(ts + (uint64_t)k * MS + MS / 2, PID, PID, k < 2 ? st_model : st_host);
		for (int k = 0; k < 4; k++)
			thread(ts + 2 * MS + (uint64_t)k * 2 * MS, PID, PID, 'R', ticks);
		ticks += 1;
		thread(ts + 8 * MS - 1, PID, PID, 'R', ticks);
		ts += 8 * MS;
	}
}

static const char *const cupy_asarray =
	"/venv/lib/python3.11/site-packages/cupy/_creation/from_data.py|asarray|94";
static const char *const tv_transform =
	"/venv/lib/python3.11/site-packages/torchvision/transforms/functional.py|normalize|350";
static const char *const pl_move =
	"/venv/lib/python3.11/site-packages/lightning/fabric/utilities/apply_func.py|move_data_to_device|90";

/* One synthetic recording: the CPU time before each copy spent in `lib`
 * (called from train.py:53), copies from `src`; returns the share of the
 * idle time that became pageable_copy, and the C1 and C6 findings. */
static double staging_case(struct trace *t, struct analysis *a, const char *lib, int src, int copy)
{
	begin("sampled");
	uint32_t host = stack(lib, "/home/u/proj/train.py|step|53", "/home/u/proj/train.py|main|90");
	uint32_t model = stack("/venv/lib/python3.11/site-packages/cupy/fft/_fft.py|rfft|600",
			       "/home/u/proj/train.py|step|54", NULL);

	staging_steps(host, model, src, copy);
	end(t, a);
	return a->idle_ns ? (double)a->idle_by_cause[IDLE_PAGEABLE] / (double)a->idle_ns : 0;
}

/* Synthetic: CuPy's asarray of a numpy array copies it into CuPy's pinned
 * staging buffer on the training thread, then makes a pinned copy. The CPU
 * time before each copy is that staging: pageable_copy (C6), not data
 * loading (C1); C6 fires with no pageable copy in the run and claims that
 * idle once. The same CPU time in torchvision's transforms stays C1. */
static void test_staging_class(void)
{
	struct trace t;
	struct analysis a;
	double pg = staging_case(&t, &a, cupy_asarray, MEM_PINNED, 1);
	const struct finding *c6 = finding(&a, "C6"), *c1 = finding(&a, "C1");

	CHECK(pg > 0.99, "CuPy asarray staging moved to pageable_copy: %.3f of the idle", pg);
	CHECK(a.idle_by_cause[IDLE_HOST_COMPUTE] == 0, "no CPU-work idle left (%llu ns)",
	      (unsigned long long)a.idle_by_cause[IDLE_HOST_COMPUTE]);
	CHECK(a.site_stage_ns == a.idle_by_cause[IDLE_PAGEABLE] && a.site_stage_lib_ns == a.site_stage_ns,
	      "staging %llu ns, into the library's buffer %llu ns",
	      (unsigned long long)a.site_stage_ns, (unsigned long long)a.site_stage_lib_ns);
	CHECK(c6 && c6->title[0] && a.findings.v[0].cause && !strcmp(a.findings.v[0].cause, "C6"),
	      "C6 ranks first (first: %s)", a.findings.n ? a.findings.v[0].cause : "-");
	CHECK(!c1 || !c1->title[0], "no C1 finding");
	/* the gain: the staging idle once, no busy part (the copies were pinned) */
	CHECK(c6 && c6->busy_ns == 0 && c6->idle_ns > 0.99 * (double)a.idle_by_cause[IDLE_PAGEABLE] &&
		      c6->idle_ns <= (double)a.idle_by_cause[IDLE_PAGEABLE],
	      "C6 idle part %.0f of %llu ns", c6 ? c6->idle_ns : 0,
	      (unsigned long long)a.idle_by_cause[IDLE_PAGEABLE]);
	CHECK(c6 && c6->speedup > 3.8 && c6->speedup < 4.1, "C6 %.2fx (want 8 ms / 2 ms = 4x)",
	      c6 ? c6->speedup : 0);
	CHECK(c6 && strstr(c6->evidence, "own pinned buffer"), "evidence: %s", c6 ? c6->evidence : "");
	const struct site *s0 = site(&a, c6, 0);

	CHECK(site_is(&a, s0, "train.py", 53, "asarray") && s0->cls == SC_STAGE &&
		      c6->sites[0].share > 0.99,
	      "C6's first site train.py:53 -> cupy asarray, host-to-device staging");
	CHECK(!strcmp(site_class_name(SC_STAGE), "host-to-device staging"), "class name");
	analysis_free(&a);
	trace_free(&t);

	pg = staging_case(&t, &a, tv_transform, MEM_PINNED, 1);
	c1 = finding(&a, "C1");
	CHECK(pg == 0 && a.site_stage_ns == 0, "torchvision transforms: nothing to pageable_copy (%.3f)", pg);
	CHECK(c1 && c1->title[0] && !strcmp(a.findings.v[0].cause, "C1"), "torchvision: C1 first (%s)",
	      a.findings.n ? a.findings.v[0].cause : "-");
	CHECK(!finding(&a, "C6") || !finding(&a, "C6")->title[0], "torchvision: no C6");
	analysis_free(&a);
	trace_free(&t);

	/* asarray with no copy after the gap: no staging (the GPU waited for
	 * something else) */
	pg = staging_case(&t, &a, cupy_asarray, MEM_PINNED, 0);
	CHECK(pg == 0 && a.idle_by_cause[IDLE_HOST_COMPUTE] > 0, "no copy: stays CPU work (%.3f)", pg);
	analysis_free(&a);
	trace_free(&t);
}

/* Synthetic: a wrapper that calls torch's .to(device) (Lightning's
 * move_data_to_device). Before a pinned copy the source was pinned: its CPU
 * time is no staging and stays C1. Before a pageable copy the driver staged
 * the data: C6. */
static void test_staging_pinnedness(void)
{
	struct trace t;
	struct analysis a;
	double pg = staging_case(&t, &a, pl_move, MEM_PINNED, 1);

	CHECK(pg == 0 && a.idle_by_cause[IDLE_HOST_COMPUTE] > 0,
	      "pinned source under move_data_to_device: not staging (%.3f)", pg);
	analysis_free(&a);
	trace_free(&t);

	pg = staging_case(&t, &a, pl_move, MEM_PAGEABLE, 1);
	CHECK(pg > 0.99 && a.site_stage_lib_ns == 0, "pageable source: driver staging, %.3f", pg);
	const struct finding *c6 = finding(&a, "C6");

	CHECK(c6 && c6->title[0] && !strcmp(a.findings.v[0].cause, "C6"), "C6 first (%s)",
	      a.findings.n ? a.findings.v[0].cause : "-");
	/* the idle part is bounded by pageable_copy idle, the busy part by the copies */
	CHECK(c6 && c6->idle_ns <= (double)a.idle_by_cause[IDLE_PAGEABLE] &&
		      c6->busy_ns <= (double)a.ops.pageable_ns,
	      "C6 idle %.0f <= %llu, busy %.0f <= %.0f", c6 ? c6->idle_ns : 0,
	      (unsigned long long)a.idle_by_cause[IDLE_PAGEABLE], c6 ? c6->busy_ns : 0, a.ops.pageable_ns);
	analysis_free(&a);
	trace_free(&t);
}

/* Synthetic, damaged metadata: a sampling rate or keyframe interval out of
 * range falls back to the defaults (100 Hz, 1 s) instead of wrapping the
 * hold of a sample (ts + hold) or dividing by a rate of 0. */
static void test_damaged_py_meta(void)
{
	static const char *const rates[] = { "0", "-5", "99999999999999999999", "x" };
	struct trace t;
	struct analysis a;

	/* a sampler that had to slow down for a while: samples may hold as long
	 * as its slowest spacing, and are centred by the rate asked for */
	uint64_t half = 0, hold = 0;
	const char *hz;

	begin("sampled");
	gw_emit_meta(&w, "record.py_hz_lowest", "7.5");
	input_steps(0, 0, 0);
	end(&t, &a);
	py_hold(&t, &half, &hold);
	hz = trace_meta(&t, "record.py_hz");
	CHECK(hz && half == 500 * MS / (uint64_t)atoi(hz) && hold == 1000 * MS + 4 * (500 * MS / 7),
	      "lowest 7.5 Hz of %s: half %llu, hold %llu", hz ? hz : "-", (unsigned long long)half,
	      (unsigned long long)hold);
	analysis_free(&a);
	trace_free(&t);
	for (unsigned i = 0; i < sizeof(rates) / sizeof(rates[0]); i++) {
		uint64_t half = 0, hold = 0;

		begin(NULL);
		gw_emit_meta(&w, "record.py", "sampled");
		gw_emit_meta(&w, "record.py_hz", rates[i]);
		gw_emit_meta(&w, "record.py_keyframe_ms", "18446744073709551");
		input_steps(0, 0, 0);
		end(&t, &a);
		py_hold(&t, &half, &hold);
		CHECK(half == 5 * MS && hold == 1000 * MS + 20 * MS, "rate '%s': half %llu, hold %llu",
		      rates[i], (unsigned long long)half, (unsigned long long)hold);
		analysis_free(&a);
		trace_free(&t);
	}
}

/* 100 steps of 8 ms: 2 ms of GPU work, then 6 ms in which the training
 * thread's stack is `wait` in state `state`; its /proc samples show it on
 * the CPU around the gap (the 40 ms window /proc's 20 ms period needs
 * holds the launching too), as a polling loop's do. */
static void wait_steps(uint32_t model, uint32_t wait, unsigned state)
{
	uint64_t ts = 1000 * MS, ticks = 0;

	for (int s = 0; s < 100; s++) {
		kernel(ts, 2 * MS, "conv");
		for (int k = 0; k < 8; k++)
			sample_state(ts + (uint64_t)k * MS + MS / 2, PID, PID, k < 2 ? model : wait,
				     k < 2 ? GW_PYSTATE_RUN : state);
		cpu_between(ts + 2 * MS, ts + 8 * MS, &ticks, 1);
		ts += 8 * MS;
	}
}

/* wait_steps() with a synchronization after the step's kernel: the thread
 * waits in cudaStreamSynchronize (a `.item()`, at `item`) until the kernel
 * ends, then runs `wait` as there. */
static void wait_steps_synced(uint32_t model, uint32_t item, uint32_t wait, unsigned state)
{
	uint64_t ts = 1000 * MS, ticks = 0, corr = 1u << 22;

	for (int s = 0; s < 100; s++) {
		uint64_t api[GW_API_NF] = { ts + 100 * US, ts + 2 * MS + 10 * US, 131, PID, ++corr,
					    gw_intern(&w, "cudaStreamSynchronize"), 1, item };

		kernel(ts, 2 * MS, "conv");
		gw_emit(&w, GW_REC_API, api, GW_API_NF);
		for (int k = 0; k < 8; k++)
			sample_state(ts + (uint64_t)k * MS + MS / 2, PID, PID, k < 2 ? model : wait,
				     k < 2 ? GW_PYSTATE_RUN : state);
		cpu_between(ts + 2 * MS, ts + 8 * MS, &ticks, 1);
		ts += 8 * MS;
	}
}

static double wait_case(uint32_t (*mk)(void), unsigned state, const char **top, struct analysis *a,
			struct trace *t)
{
	begin("sampled");
	uint32_t model = model_stack();

	wait_steps(model, mk(), state);
	end(t, a);
	*top = a->findings.n && a->findings.v[0].assessed && a->findings.v[0].severity >= SEV_WARN
		       ? a->findings.v[0].cause
		       : "none";
	return a->steady_ns ? (double)a->idle_by_cause[IDLE_WAIT] / (double)a->steady_ns : 0;
}

static uint32_t sleep_line(void)
{
	return stack("/home/u/proj/train.py|poll|30", "/home/u/proj/train.py|main|96", NULL);
}

static uint32_t queue_get(void)
{
	return stack("/usr/lib/python3.11/threading.py|Condition.wait|355",
		     "/usr/lib/python3.11/queue.py|Queue.get|180", "/home/u/proj/train.py|main|97");
}

static uint32_t loader_wait(void)
{
	return stack("/usr/lib/python3.11/threading.py|Condition.wait|355",
		     "/venv/lib/python3.11/site-packages/torch/utils/data/dataloader.py|_get_data|1100",
		     "/home/u/proj/train.py|main|98");
}

/* Synthetic: a training thread asleep (time.sleep, a queue's wait) while
 * the GPU idles is C16, its line the first site; awake at the same line
 * it is CPU work (C1), and asleep in DataLoader's wait it is not C16 (the
 * workers' business, C1). */
static void test_wait_class(void)
{
	struct trace t;
	struct analysis a;
	const char *top;
	double share = wait_case(sleep_line, GW_PYSTATE_SLEEP, &top, &a, &t);
	const struct finding *f = finding(&a, "C16");

	CHECK(share > 0.70 && share < 0.76, "asleep at the user's line: wait %.3f of the run (want 0.75)",
	      share);
	CHECK(!strcmp(top, "C16"), "first finding %s (want C16)", top);
	CHECK(site_is(&a, site(&a, f, 0), "train.py", 30, ""), "C16's first site train.py:30");
	analysis_free(&a);
	trace_free(&t);

	share = wait_case(queue_get, GW_PYSTATE_SLEEP, &top, &a, &t);
	f = finding(&a, "C16");
	CHECK(share > 0.70 && !strcmp(top, "C16"), "asleep in queue.get: wait %.3f, top %s", share, top);
	CHECK(site_is(&a, site(&a, f, 0), "train.py", 97, "Queue.get") &&
	      site(&a, f, 0)->cls == SC_WAIT, "C16's first site train.py:97 -> queue.py Queue.get, waiting");
	analysis_free(&a);
	trace_free(&t);

	share = wait_case(sleep_line, GW_PYSTATE_RUN, &top, &a, &t);
	CHECK(share == 0 && strcmp(top, "C16"), "on the CPU at the same line: wait %.3f, top %s", share, top);
	analysis_free(&a);
	trace_free(&t);

	share = wait_case(sleep_line, GW_PYSTATE_UNKNOWN, &top, &a, &t);
	CHECK(share == 0, "no state (an older recording): no wait (%.3f)", share);
	analysis_free(&a);
	trace_free(&t);

	/* after a synchronization: a `.item()`, then asleep on a lock at the
	 * user's line (a logger's, held by its shipper thread) */
	begin("sampled");
	uint32_t model = model_stack();
	uint32_t item = stack("/venv/lib/python3.11/site-packages/torch/_tensor.py|item|10",
			      "/home/u/proj/train.py|main|96", NULL);
	uint32_t lock = stack("/home/u/proj/train.py|MetricsClient.log|45", "/home/u/proj/train.py|main|97", NULL);

	wait_steps_synced(model, item, lock, GW_PYSTATE_SLEEP);
	end(&t, &a);
	f = finding(&a, "C16");
	share = a.steady_ns ? (double)a.idle_by_cause[IDLE_WAIT] / (double)a.steady_ns : 0;
	CHECK(share > 0.70 && f && a.findings.v[0].cause == f->cause && site_is(&a, site(&a, f, 0), "train.py", 45, ""),
	      "asleep on a lock after a sync: wait %.3f of the run, C16 first at train.py:45", share);
	analysis_free(&a);
	trace_free(&t);

	/* asleep under autograd (its engine thread launches the backward pass):
	 * no time asleep elsewhere, no wait */
	begin("sampled");
	model = model_stack();
	uint32_t bwd = stack("/venv/lib/python3.11/site-packages/torch/autograd/graph.py|_engine_run_backward|869",
			     "/venv/lib/python3.11/site-packages/torch/_tensor.py|backward|640",
			     "/home/u/proj/train.py|main|99");

	wait_steps(model, bwd, GW_PYSTATE_SLEEP);
	end(&t, &a);
	CHECK(a.asleep_ns == 0 && a.idle_by_cause[IDLE_WAIT] == 0 && !finding(&a, "C16"),
	      "asleep in autograd's backward: %.1f ms asleep elsewhere, no C16", a.asleep_ns / 1e6);
	analysis_free(&a);
	trace_free(&t);

	share = wait_case(loader_wait, GW_PYSTATE_SLEEP, &top, &a, &t);
	CHECK(share == 0 && strcmp(top, "C16"), "asleep in DataLoader's wait: wait %.3f, top %s", share, top);
	analysis_free(&a);
	trace_free(&t);
}

/* wait_steps() with a second Python thread of the training process
 * (tid PID + 1) sampled at the same times in `other` (state `ostate`). */
static void wait_steps_other(uint32_t model, uint32_t wait, uint32_t other, unsigned ostate)
{
	wait_steps(model, wait, GW_PYSTATE_SLEEP);
	for (uint64_t ts = 1000 * MS; ts < 1000 * MS + 100 * 8 * MS; ts += MS)
		sample_state(ts + MS / 2, PID, PID + 1, other, ostate);
}

/* Synthetic: the training thread asleep outside its CUDA calls, on a queue
 * or in its own launching code (the interpreter lock, the GIL), while
 * another thread of its process runs the user's input code: it waits for
 * that thread (C1), whose lines are the sites, and the replay takes the
 * waits out (6 ms of each 8 ms step: 4x, the GPU's 2 ms then the pace).
 * The same thread asleep itself leaves the queue's wait C16's; a
 * pin-memory thread (its copies release the lock) is not input code. */
static void test_waits_other_thread(void)
{
	uint32_t (*waits[2])(void) = { queue_get, model_stack };
	const char *what[2] = { "queue.get", "its launching code" };
	struct trace t;
	struct analysis a;

	for (int i = 0; i < 2; i++) {
		begin("sampled");
		uint32_t model = model_stack();
		uint32_t enc = stack("/home/u/proj/train.py|encode|40", "/home/u/proj/train.py|prefetch|60",
				     "/usr/lib/python3.11/threading.py|Thread.run|1010");

		wait_steps_other(model, waits[i](), enc, GW_PYSTATE_RUN);
		end(&t, &a);
		const struct finding *f = finding(&a, "C1");
		double share = a.steady_ns ? (double)a.idle_by_cause[IDLE_DATA_WAIT] / (double)a.steady_ns : 0;

		CHECK(share > 0.70 && a.findings.n && f == &a.findings.v[0] && a.other_tid == PID + 1,
		      "asleep in %s while a thread prepares input: waiting for input %.3f of the run, C1 first",
		      what[i], share);
		CHECK(site_is(&a, site(&a, f, 0), "train.py", 40, "") && site(&a, f, 0)->cls == SC_NONE &&
		      f && strstr(f->evidence, "interpreter lock"),
		      "%s: C1's first site the thread's train.py:40, the evidence names the GIL", what[i]);
		CHECK(f && f->speedup > 3.5 && f->speedup < 4.5, "%s: C1 %.2fx (want about 4x)", what[i],
		      f ? f->speedup : 0);
		CHECK(!finding(&a, "C16") && !finding(&a, "C4"), "%s: no C16 or C4 beside it", what[i]);
		analysis_free(&a);
		trace_free(&t);
	}

	begin("sampled");
	uint32_t model = model_stack();
	uint32_t idle = stack("/usr/lib/python3.11/threading.py|Condition.wait|355",
			      "/home/u/proj/train.py|prefetch|61", "/usr/lib/python3.11/threading.py|Thread.run|1010");

	wait_steps_other(model, queue_get(), idle, GW_PYSTATE_SLEEP);
	end(&t, &a);
	CHECK(a.other_wait_idle_ns == 0 && a.idle_by_cause[IDLE_DATA_WAIT] == 0 && finding(&a, "C16"),
	      "the other thread asleep too: no wait for it, C16 stays");
	analysis_free(&a);
	trace_free(&t);

	begin("sampled");
	model = model_stack();
	uint32_t pin = stack("/venv/lib/python3.11/site-packages/torch/utils/data/_utils/pin_memory.py|pin_memory|70",
			     "/venv/lib/python3.11/site-packages/torch/utils/data/_utils/pin_memory.py|_pin_memory_loop|50",
			     "/usr/lib/python3.11/threading.py|Thread.run|1010");

	wait_steps_other(model, queue_get(), pin, GW_PYSTATE_RUN);
	end(&t, &a);
	CHECK(a.other_wait_idle_ns == 0 && finding(&a, "C16"), "a pin-memory thread running: no wait for it");
	analysis_free(&a);
	trace_free(&t);
}

/* `nsteps` steps of 8 ms: 6 ms of GPU work, then 2 ms launching the next
 * (the model's stack). Every `every`-th step then runs extra work for
 * `extra_ms` on the training thread: the first half in `first` with a 2 ms
 * device-to-host copy (`copy_call`: a copy call with that stack spans it),
 * the rest in `second` (state `state2`). */
static void extra_steps(uint32_t model, uint32_t first, uint32_t second, unsigned state2, int copy_call, int nsteps,
			int every, uint64_t extra_ms)
{
	uint64_t ts = 1000 * MS, ticks = 0, corr = 1u << 21;

	for (int s = 0; s < nsteps; s++) {
		int extra = s % every == every - 1;
		uint64_t len = extra ? (8 + extra_ms) * MS : 8 * MS;

		kernel(ts, 6 * MS, "conv");
		for (uint64_t k = 0; k < 8; k++) /* the model's code, waiting in it too */
			sample_state(ts + k * MS + MS / 2, PID, PID, model, GW_PYSTATE_RUN);
		if (extra) {
			uint64_t c0 = ts + 10 * MS;
			uint64_t v[GW_MEMCPY_NF] = { c0, c0 + 2 * MS, 2, 3, 1, 256ull << 20, 0, 0, 7, ++corr };

			gw_emit(&w, GW_REC_MEMCPY, v, GW_MEMCPY_NF);
			if (copy_call) {
				uint64_t c[GW_API_NF] = { c0 - 10 * US, c0 + 2 * MS + 5 * US, 31, PID, corr,
							  gw_intern(&w, "cudaMemcpy"), 1, first };

				gw_emit(&w, GW_REC_API, c, GW_API_NF);
			}
			for (uint64_t k = 0; k < extra_ms; k++)
				sample_state(ts + 8 * MS + k * MS + MS / 2, PID, PID, 2 * k < extra_ms ? first : second,
					     2 * k < extra_ms ? GW_PYSTATE_RUN : state2);
		}
		cpu_between(ts + 6 * MS, ts + len, &ticks, extra ? 4 : 1);
		ts += len;
	}
}

/* 100 steps, every 10th with 30 ms of extra work (extra_steps) */
static void activity_steps(uint32_t model, uint32_t first, uint32_t second, unsigned state2, int copy_call)
{
	extra_steps(model, first, second, state2, copy_call, 100, 10, 30);
}

static uint32_t worker_start_stack(void)
{
	return stack4("/usr/lib/python3.11/multiprocessing/popen_fork.py|Popen._launch|66",
		      "/usr/lib/python3.11/multiprocessing/process.py|BaseProcess.start|121",
		      "/venv/lib/python3.11/site-packages/torch/utils/data/dataloader.py|DataLoader.__iter__|484",
		      "/home/u/proj/train.py|main|96");
}

/* Synthetic: every 10th of 100 steps the training thread starts loader
 * workers for 60 ms (a DataLoader iterator without persistent workers, at
 * each epoch), first on its CPU, then asleep while they come up. Those gaps
 * are waiting for input (C1), titled as restarts, with the restart advice;
 * and where the only restart is the last step, before one more step, that
 * step stays in the steady window. */
static void test_worker_restarts(void)
{
	struct trace t;
	struct analysis a;

	begin("sampled");
	uint32_t model = model_stack(), ws = worker_start_stack();

	extra_steps(model, ws, ws, GW_PYSTATE_SLEEP, 0, 100, 10, 60);
	end(&t, &a);
	const struct finding *f = finding(&a, "C1");

	CHECK(a.worker_start_gaps >= 10 && f && f == &a.findings.v[0] && strstr(f->title, "Loader workers are started again"),
	      "restarts every 10 steps: C1 first (%llu gaps; %s)", (unsigned long long)a.worker_start_gaps,
	      f ? f->title : "-");
	CHECK(f && strstr(f->fix, "workers once") && f->speedup > 1.5,
	      "the restart advice, %.2fx (about 68/8 ms a step: want > 1.5x)", f ? f->speedup : 0);
	CHECK(!finding(&a, "C14") || finding(&a, "C14")->severity < SEV_WARN, "no periodic stall beside it");
	analysis_free(&a);
	trace_free(&t);

	begin("sampled");
	model = model_stack();
	ws = worker_start_stack();
	/* 20 steps, the last with the restart; then the next batch's copy and
	 * the first kernel of one more step */
	extra_steps(model, ws, ws, GW_PYSTATE_SLEEP, 0, 20, 20, 300);
	uint64_t v[GW_MEMCPY_NF] = { 1459 * MS, 1459 * MS + MS / 2, 1, 2, 3, 1ull << 20, 0, 0, 7, 1u << 22 };

	gw_emit(&w, GW_REC_MEMCPY, v, GW_MEMCPY_NF);
	kernel(1460 * MS, 6 * MS, "conv");
	end(&t, &a);
	f = finding(&a, "C1");
	CHECK(a.steps.n == 20 && a.restart_steps == 1, "the long last step kept: %zu steps, %u taken back",
	      a.steps.n, a.restart_steps);
	CHECK(f && f == &a.findings.v[0] && f->speedup > 2, "C1 first, %.2fx (want > 2x)", f ? f->speedup : 0);
	analysis_free(&a);
	trace_free(&t);

	begin("sampled");
	model = model_stack();
	uint32_t other = stack("/home/u/proj/train.py|summarize|50", "/home/u/proj/train.py|main|130", NULL);

	extra_steps(model, other, other, GW_PYSTATE_RUN, 0, 21, 20, 300);
	end(&t, &a);
	CHECK(a.steps.n == 19 && !a.restart_steps, "a long last step of other work stays out: %zu steps", a.steps.n);
	analysis_free(&a);
	trace_free(&t);
}

/* Synthetic: each step the training thread spends 5 of its 6 ms of CPU
 * work in a multiprocessing.Queue's get, awake: reading the pickled batch
 * out of the pipe. C1 says the copy is the thread's own, with the pipe
 * advice, not more producers. */
static void test_pipe_receive(void)
{
	struct trace t;
	struct analysis a;

	begin("sampled");
	uint32_t model = model_stack();
	uint32_t recv = stack4("/usr/lib/python3.11/multiprocessing/connection.py|Connection._recv|395",
			       "/usr/lib/python3.11/multiprocessing/connection.py|Connection._recv_bytes|437",
			       "/usr/lib/python3.11/multiprocessing/queues.py|Queue.get|103",
			       "/home/u/proj/train.py|main|97");

	cpu_steps(0, (const uint32_t[8]){ model, model, recv, recv, recv, recv, recv, model });
	end(&t, &a);
	const struct finding *f = finding(&a, "C1");

	CHECK(a.pipe_recv_gaps > 50 && f && f == &a.findings.v[0] && strstr(f->title, "copied out of a pipe") &&
		      strstr(f->fix, "shared memory"),
	      "awake in a queue's get: C1 first, the pipe's (%llu gaps; %s)", (unsigned long long)a.pipe_recv_gaps,
	      f ? f->title : "-");
	analysis_free(&a);
	trace_free(&t);
}

/* A batch (of `bytes`) cut from a memory-mapped array in the user's own code
 * (numpy's C calls hold no frame of their own) at the start of each 8 ms
 * step: the GPU waits 1.5 ms for it, then the batch is copied in (pinned)
 * and the step's 6.4 ms of work follows. The gap is under a quarter of the
 * step and the thread is on a core, so by length alone it is launch
 * overhead; but the host issued nothing in it and ended it with an input
 * copy: it prepared that input (C1's CPU work), and C4 has no finding. */
static void input_copy_steps(uint64_t bytes, struct trace *t, struct analysis *a)
{
	uint64_t ts = 1000 * MS, ticks = 0;
	static uint64_t corr = 1u << 26;

	begin("sampled");
	uint32_t model = model_stack();
	uint32_t batch = stack("/home/u/proj/train.py|get_batch|110", "/home/u/proj/train.py|step|120",
			       "/home/u/proj/train.py|main|130");

	for (int st = 0; st < 100; st++) {
		uint64_t c0 = ts + 1500 * US;
		uint64_t v[GW_MEMCPY_NF] = { c0, c0 + 50 * US, 1, 2, 3, bytes, 1, 0, 7, ++corr };

		gw_emit(&w, GW_REC_MEMCPY, v, GW_MEMCPY_NF);
		kernel(c0 + 60 * US, 6390 * US, "fwd");
		sample_state(ts + 500 * US, PID, PID, batch, GW_PYSTATE_RUN);
		sample_state(ts + 1000 * US, PID, PID, batch, GW_PYSTATE_RUN);
		for (uint64_t k = 2; k < 8; k++)
			sample_state(ts + k * MS, PID, PID, model, GW_PYSTATE_RUN);
		cpu_between(ts, ts + 8 * MS, &ticks, 1);
		ts += 8 * MS;
	}
	end(t, a);
}

/* Synthetic: the same with a copy of 4 bytes (a Python number a jitted call
 * sends before its kernels): no input, the gaps stay launch gaps. REAL:
 * c4_jax_per_leaf_jit_adamw calls a jitted AdamW per parameter with the
 * learning rate and step as Python numbers; its dispatch gaps, each ended by
 * those 4-byte copies, were C1's "data loading" first, and the copies no
 * run of C12's small copies. */
static void test_value_copy_no_input(void)
{
	struct trace t;
	struct analysis a;

	input_copy_steps(4, &t, &a);
	CHECK(a.input_copy_gaps == 0 && a.idle_by_cause[IDLE_HOST_COMPUTE] < a.idle_by_cause[IDLE_LAUNCH_OVERHEAD],
	      "a value's copy: %llu input-copy gaps, host work %.1f ms against launch overhead %.1f ms",
	      (unsigned long long)a.input_copy_gaps, a.idle_by_cause[IDLE_HOST_COMPUTE] / 1e6,
	      a.idle_by_cause[IDLE_LAUNCH_OVERHEAD] / 1e6);
	analysis_free(&a);
	trace_free(&t);
	if (analyze_real("tests/fixtures/corpus/c4_jax_per_leaf_jit_adamw.gwr", &t, &a) < 0)
		return;
	const struct finding *c1 = finding(&a, "C1"), *c4 = finding(&a, "C4"), *c12 = finding(&a, "C12");

	CHECK((!c1 || c1->severity < SEV_WARN) && c4 && c4->severity >= SEV_WARN,
	      "per-leaf jitted calls: C4 %s, no C1 warning (%s)", c4 ? c4->title : "-", c1 ? c1->title : "-");
	/* those copies are no rows to gather: no small-copies finding */
	CHECK(!c12 || !c12->title[0] || c12->severity < SEV_WARN, "no C12 on a JAX call's numbers (%s)",
	      c12 ? c12->title : "-");
	analysis_free(&a);
	trace_free(&t);
}

/* Real (the corpus's knowledge-distillation job): a teacher run outside
 * autocast beside a student inside it. C8's sites are the lines that
 * launched its FP32 matrix kernels, placed by their correlation ids between
 * the timed calls: the teacher's line (82), though the student's (84)
 * takes more of the time launching work. A JAX job, whose runtime threads
 * launch, keeps the sites by launching time. */
static void test_matrix_launch_sites(void)
{
	struct trace t;
	struct analysis a;

	if (analyze_real("tests/fixtures/corpus/c8_timm_kd_teacher_outside_autocast.gwr", &t, &a) < 0)
		return;
	const struct finding *c8 = finding(&a, "C8");
	const struct site *s0 = c8 && c8->nsites ? &a.sites.v[c8->sites[0].site] : NULL;

	CHECK(a.matrix_launch_ns > 0 && a.matrix_placed_ns >= 0.9 * a.matrix_launch_ns,
	      "the FP32 matrix kernels placed: %.0f of %.0f ms", a.matrix_placed_ns / 1e6, a.matrix_launch_ns / 1e6);
	CHECK(s0 && c8->sites[0].launched && !c8->sites[0].launching && s0->line == 82 && c8->sites[0].share > 0.5,
	      "C8's first site: line %u, launched %d, %.0f%% (want the teacher's line 82, over half)",
	      s0 ? s0->line : 0, c8 && c8->nsites ? c8->sites[0].launched : -1,
	      c8 && c8->nsites ? 100 * c8->sites[0].share : 0);
	CHECK(c8 && c8->nsites > 1 && a.sites.v[c8->sites[1].site].line == 84 && c8->sites[1].share < 0.2,
	      "the student's line second, under a fifth");
	analysis_free(&a);
	trace_free(&t);
	if (analyze_real("tests/fixtures/corpus/c8_jax_highest.gwr", &t, &a) < 0)
		return;
	c8 = finding(&a, "C8");
	CHECK(c8 && c8->nsites && c8->sites[0].launching && !c8->sites[0].launched && a.matrix_launch_ns == 0,
	      "JAX's runtime threads launch: C8's sites by launching time");
	analysis_free(&a);
	trace_free(&t);
}

/* Real: a loop over 32 task heads (line 46, two lines of work each) whose
 * backward pass holds 65% of the launch-bound idle at `loss.backward()`
 * (line 96): that idle is the heads' gradients, counted at the forward
 * lines, so the head loop's line comes first and no backward line is
 * shown. */
static void test_backward_at_forward_lines(void)
{
	struct trace t;
	struct analysis a;

	if (analyze_real("tests/fixtures/corpus/c4_torch_multitask_heads_loop.gwr", &t, &a) < 0)
		return;
	const struct finding *c4 = finding(&a, "C4");
	double sum = 0;
	int bwd = 0;

	for (unsigned i = 0; c4 && i < c4->nsites; i++) {
		const struct site *s = &a.sites.v[c4->sites[i].site];

		sum += c4->sites[i].share;
		bwd |= s->line == 96;
	}
	CHECK(c4 && c4->nsites && a.sites.v[c4->sites[0].site].line == 46 && !bwd,
	      "C4's first site: line %u (want the head loop's 46), backward's line 96 shown: %d",
	      c4 && c4->nsites ? a.sites.v[c4->sites[0].site].line : 0, bwd);
	CHECK(c4 && c4->backward_share > 0.55 && c4->backward_share < 0.75 && sum <= 1.0 + 1e-9,
	      "the backward pass's share moved: %.2f (want 0.65), the sites' shares sum %.2f", c4 ? c4->backward_share : 0,
	      sum);
	analysis_free(&a);
	trace_free(&t);
	/* Lightning's manual_backward is a backward pass too (its first site the
	 * member's forward, 97, or its loss, 98), and its LightningOptimizer.step
	 * (line 101) an optimizer's update; an EMA updated one parameter at a
	 * time (line 58) and a hand-written Lion's update (line 49) are
	 * arithmetic outside any module: none of these holds gradients, so none
	 * gets the backward pass's share (15%, 17% and 21% of their own) */
	static const struct {
		const char *fixture;
		unsigned line, first[2]; /* first: the first site's line, one of them (0: any) */
		double most;
	} none[] = { { "tests/fixtures/corpus/c4_lightning_deep_ensemble_member_loop.gwr", 101, { 97, 98 }, 0.2 },
		     { "tests/fixtures/corpus/m_hf_vit_ema_loop_sync_timing.gwr", 58, { 0, 0 }, 0.2 },
		     { "tests/fixtures/corpus/c4_torch_python_lion.gwr", 49, { 0, 0 }, 0.24 } };

	for (size_t k = 0; k < sizeof(none) / sizeof(none[0]); k++) {
		if (analyze_real(none[k].fixture, &t, &a) < 0)
			return;
		c4 = finding(&a, "C4");
		unsigned l0 = c4 && c4->nsites ? a.sites.v[c4->sites[0].site].line : 0;
		int seen = 0;

		for (unsigned i = 0; c4 && i < c4->nsites; i++) {
			const struct finding_site *fs = &c4->sites[i];
			const struct site *s = &a.sites.v[fs->site];
			unsigned lo = fs->line_first ? fs->line_first : s->line, hi = fs->line_first ? fs->line_last : s->line;
			double own = 0;

			if (none[k].line < lo || none[k].line > hi)
				continue;
			seen = 1;
			/* a block (sites.c merge_blocks): no more than its lines' own
			 * launch wait, whatever call line led to them */
			for (size_t j = 0; j < a.sites.n; j++)
				if (a.sites.v[j].file == s->file && a.sites.v[j].func == s->func &&
				    a.sites.v[j].line >= lo && a.sites.v[j].line <= hi)
					own += a.sites.v[j].ns[IDLE_LAUNCH_OVERHEAD];
			CHECK(lo < hi ? fs->value <= own * 1.001 : fs->share < none[k].most,
			      "%s: line %u (lines %u-%u) holds %.2f, %.1f ms of their own %.1f ms (want its own, a line "
			      "alone under %.2f)",
			      none[k].fixture, none[k].line, lo, hi, fs->share, fs->value / 1e6, own / 1e6, none[k].most);
		}
		CHECK(seen && c4->backward_share > 0.3, "%s: line %u among the sites (%d), backward share %.2f",
		      none[k].fixture, none[k].line, seen, c4 ? c4->backward_share : 0);
		CHECK(!none[k].first[0] || l0 == none[k].first[0] || l0 == none[k].first[1],
		      "%s: first site line %u (want %u or %u)", none[k].fixture, l0, none[k].first[0], none[k].first[1]);
		analysis_free(&a);
		trace_free(&t);
	}
}

/* Real: a token-classification step that reads its predictions and labels
 * to the host and scores them with scikit-learn every step: the idle is the
 * host's scoring (42 ms a step) after reads that wait 1 ms, so C9's first
 * site is the scoring's line (161), not the read's (160), and is no exact
 * call site. */
static void test_host_metric_sites(void)
{
	struct trace t;
	struct analysis a;

	if (analyze_real("tests/fixtures/corpus/c9_hf_ner_seqeval_sklearn_every_step.gwr", &t, &a) < 0)
		return;
	const struct finding *c9 = finding(&a, "C9");
	const struct site *s0 = c9 && c9->nsites ? &a.sites.v[c9->sites[0].site] : NULL;

	CHECK(c9 && (c9->claim.host_classes & 1u << SC_METRIC), "C9 is a host metric");
	CHECK(s0 && !c9->sites[0].exact && (s0->line == 161 || s0->call_line == 161) && s0->cls == SC_METRIC,
	      "C9's first site: line %u (call %u), exact %d, class %d (want the scoring at 161, a host metric)",
	      s0 ? s0->line : 0, s0 ? s0->call_line : 0, s0 ? c9->sites[0].exact : -1, s0 ? (int)s0->cls : -1);
	analysis_free(&a);
	trace_free(&t);
}

/* Real: a depth model validated every 10 steps from the step (its line
 * 217): the evaluation's sites in the model's forward say that user frames
 * (validate(), its loop over the test batches) lie between the step's call
 * and the model's line; validate()'s own lines (its read at line 192) have none. */
static void test_elided_frames(void)
{
	struct trace t;
	struct analysis a;
	char text[512];
	int forward = 0, own = 0;

	if (analyze_real("tests/fixtures/corpus/c14_tv_monodepth_val_every_n.gwr", &t, &a) < 0)
		return;
	const struct finding *c14 = finding(&a, "C14");

	for (unsigned i = 0; c14 && i < c14->nsites; i++) {
		const struct site *s = &a.sites.v[c14->sites[i].site];
		const char *func = a.t->names.v[s->func];

		if (s->call_line != 217)
			continue;
		site_text(text, sizeof(text), &a, s);
		if (strstr(func, "forward")) {
			forward++;
			CHECK(s->elided && strstr(text, "step -> ... -> "), "%s: frames between shown", text);
		} else if (strstr(func, "validate")) {
			own++;
			CHECK(!s->elided && !strstr(text, "..."), "%s: none between", text);
		}
	}
	CHECK(forward >= 1 && own >= 1, "C14's sites under line 217: %d in a forward, %d in validate()", forward, own);
	analysis_free(&a);
	trace_free(&t);
	/* a checkpoint's sites led back to the line that calls save() (the
	 * activity's call line, line 45): save()'s own lines have nothing
	 * between, whatever call line their stacks had before */
	if (analyze_real("tests/fixtures/corpus/c14_jax_npz_ckpt.gwr", &t, &a) < 0)
		return;
	c14 = finding(&a, "C14");
	int in_save = 0;

	for (unsigned i = 0; c14 && i < c14->nsites; i++) {
		const struct site *s = &a.sites.v[c14->sites[i].site];

		if (s->call_line != 45 || strcmp(a.t->names.v[s->func], "save"))
			continue;
		in_save++;
		site_text(text, sizeof(text), &a, s);
		CHECK(!s->elided && !strstr(text, "..."), "%s: save() is called at the call line", text);
	}
	CHECK(in_save >= 1, "C14's sites in save() under line 45: %d", in_save);
	analysis_free(&a);
	trace_free(&t);
}

/* Real: opt.step() runs inside torch's profiling wrapper
 * (Optimizer.profile_hook_step.<locals>.wrapper): the site names SGD.step,
 * the function wrapped, and keys on the call as recorded (the wrapper), so
 * its share is the same as before. */
static void test_wrapper_named_past(void)
{
	struct trace t;
	struct analysis a;
	char text[512];
	int step = 0;

	if (analyze_real("tests/fixtures/corpus/w_torch_lock_logger.gwr", &t, &a) < 0)
		return;
	for (size_t i = 0; i < a.sites.n; i++) {
		const struct site *s = &a.sites.v[i];

		if (s->line != 86 || !s->lib_func)
			continue;
		site_text(text, sizeof(text), &a, s);
		step++;
		CHECK(strstr(a.t->names.v[s->lib_func], "<locals>.wrapper") && strstr(text, "-> torch/optim/sgd.py SGD.step") &&
		      !strstr(text, "<locals>.wrapper"),
		      "line 86's site: %s (called %s)", text, a.t->names.v[s->lib_func]);
	}
	CHECK(step >= 1, "line 86 (opt.step()): %d sites", step);
	analysis_free(&a);
	trace_free(&t);
}

/* Real: a torch.compile'd GPT whose launches run in Inductor's generated
 * code (its cache's `c<hash>.py`, the `<string>` launchers): no site is that
 * code, whose lines change with each compilation; the user's lines are. */
static void test_generated_code_sites(void)
{
	struct trace t;
	struct analysis a;

	if (analyze_real("tests/fixtures/corpus/m_compile_gpt_accum_microbatch_item.gwr", &t, &a) < 0)
		return;
	const struct finding *c4 = finding(&a, "C4");
	int generated = 0;

	for (unsigned i = 0; c4 && i < c4->nsites; i++) {
		const char *file = a.t->names.v[a.sites.v[c4->sites[i].site].file];

		generated |= !strcmp(file, "<string>") || strstr(file, "torchinductor") != NULL;
	}
	CHECK(c4 && c4->nsites > 2 && !generated, "C4's %u sites: none in generated code (%d)", c4 ? c4->nsites : 0,
	      generated);
	analysis_free(&a);
	trace_free(&t);
	/* synthetic names: Inductor's output wherever its cache is, FX's modules;
	 * a user file of the same length or a near miss stays the user's */
	static const struct {
		const char *file;
		int lib;
	} names[] = {
		{ "/tmp/cache/5s/c5s63axzmiuyrrh2eszwsqns3z5scey7s4bupqivrotjr6akyhxl.py", 1 },
		{ "<eval_with_key>.12", 1 },
		{ "/tmp/torchinductor_me/ab/kernel.py", 1 },
		{ "/home/me/train.py", 0 },
		{ "/home/me/c5s63axzmiuyrrh2eszwsqns3z5scey7s4bupqivrotjr6akyhx.py", 0 }, /* 50 */
		{ "/home/me/C5S63AXZMIUYRRH2ESZWSQNS3Z5SCEY7S4BUPQIVROTJR6AKYHXL.py", 0 },
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		CHECK(sites_is_library(names[i].file) == names[i].lib, "%s: library %d (want %d)", names[i].file,
		      sites_is_library(names[i].file), names[i].lib);
}

/* Synthetic: those steps with a 256 KiB batch. */
static void test_input_copy(void)
{
	struct trace t;
	struct analysis a;

	input_copy_steps(256ull << 10, &t, &a);
	const struct finding *f = finding(&a, "C1"), *l = finding(&a, "C4");

	CHECK(a.input_copy_gaps >= 90 && a.idle_by_cause[IDLE_HOST_COMPUTE] > a.idle_by_cause[IDLE_LAUNCH_OVERHEAD],
	      "gaps ended by an input copy: %llu, host work %.1f ms against launch overhead %.1f ms",
	      (unsigned long long)a.input_copy_gaps, a.idle_by_cause[IDLE_HOST_COMPUTE] / 1e6,
	      a.idle_by_cause[IDLE_LAUNCH_OVERHEAD] / 1e6);
	CHECK(f && f == &a.findings.v[0] && (!l || l->severity < SEV_WARN),
	      "C1 first, no C4 warning (C1: %s; C4: %s)", f ? f->title : "-", l ? l->title : "-");
	analysis_free(&a);
	trace_free(&t);
}

/* Synthetic: every 8.3 ms step a 3 ms kernel, then 5 ms of the training
 * thread's own CPU work at train.py:97 (a C call: no library frame), then a
 * device synchronization on the idle GPU (0.1 ms, empty_cache's), then the
 * next step's launch. The gap is the thread's CPU work (C1), and C1's fix
 * takes all of the thread's time in it, also the part before the
 * synchronization: the step falls to about 3.3 ms. */
static void test_work_before_idle_sync(void)
{
	struct trace t;
	struct analysis a;
	uint64_t ts = 1000 * MS, ticks = 0, corr = 1u << 27;

	begin("sampled");
	uint32_t model = model_stack();
	uint32_t tidy = stack("/home/u/proj/train.py|step|97", "/home/u/proj/train.py|main|130", NULL);

	for (int st = 0; st < 100; st++) {
		uint64_t api[GW_API_NF] = { ts + 8 * MS, ts + 8 * MS + 100 * US, 131, PID, ++corr,
					    gw_intern(&w, "cudaDeviceSynchronize"), 1, tidy };

		kernel(ts, 3 * MS, "fwd");
		gw_emit(&w, GW_REC_API, api, GW_API_NF);
		for (uint64_t k = 0; k < 8; k++)
			sample_state(ts + k * MS + MS / 2, PID, PID, k < 3 ? model : tidy, GW_PYSTATE_RUN);
		cpu_between(ts + 3 * MS, ts + 8 * MS, &ticks, 1);
		ts += 8300 * US;
	}
	end(&t, &a);
	const struct finding *f = finding(&a, "C1");

	CHECK(a.idle_by_cause[IDLE_HOST_COMPUTE] > 0.5 * (double)a.idle_ns,
	      "host work %.1f ms of %.1f ms idle", a.idle_by_cause[IDLE_HOST_COMPUTE] / 1e6, (double)a.idle_ns / 1e6);
	CHECK(f && f->replayed && f->speedup > 2.2 && f->speedup < 2.8,
	      "C1 replayed %.2fx (want about 8.3 / 3.3 = 2.5x: the work before the synchronization goes too)",
	      f ? f->speedup : 0);
	analysis_free(&a);
	trace_free(&t);
}

/* Synthetic: 28 iterations (27 whole steps), every 10th from the sixth
 * 30 ms longer (three of them), the training thread in a logging helper for
 * those 30 ms. Three occurrences at spacing 10 fit in 27 steps, and the long
 * steps are marked periodic, though the spacing is more than a third of the
 * steps. With the thread in the model's code all along instead, the long
 * steps are the loop's own work: none is periodic, and the report says
 * every 10 steps one runs long in the same code. */
static void test_period_of_a_third(void)
{
	for (int same = 0; same < 2; same++) {
		struct trace t;
		struct analysis a;
		uint64_t ts = 1000 * MS, ticks = 0;

		begin("sampled");
		uint32_t model = model_stack();
		uint32_t log = stack("/home/u/proj/train.py|log_histograms|40", "/home/u/proj/train.py|main|97", NULL);

		for (int st = 0; st < 28; st++) {
			uint64_t len = st % 10 == 5 ? 38 * MS : 8 * MS;

			kernel(ts, 3 * MS, "fwd");
			kernel(ts + 3 * MS, 3 * MS, "bwd");
			for (uint64_t k = 0; k < len / MS; k++)
				sample_state(ts + k * MS + MS / 2, PID, PID, k < 8 || same ? model : log,
					     GW_PYSTATE_RUN);
			cpu_between(ts + 6 * MS, ts + len, &ticks, 1);
			ts += len;
		}
		end(&t, &a);
		size_t periodic = 0;

		for (size_t i = 0; i < a.steps.n; i++)
			periodic += a.steps.v[i].periodic;
		CHECK(a.steps.n >= 24 && periodic == (same ? 0u : 3u) && a.steps_long_every == (same ? 10u : 0u),
		      "%s: %zu of %zu steps periodic (want %s), long every %u steps in the same code",
		      same ? "same code" : "a logging helper", periodic, a.steps.n,
		      same ? "none" : "the 3 long ones, 10 apart", a.steps_long_every);
		analysis_free(&a);
		trace_free(&t);
	}
}

/* Synthetic: 22 steps, two of them (4 and 14) running a pass of the model
 * over 30 ms of kernels, back to back, after the training step (previews
 * drawn every 10 steps): the GPU stays busy, so the long steps add work,
 * not idle. Seen twice, with the training thread in a function of their
 * own, they are a periodic stall worth that work; run from the same code
 * as the other steps, they are the loop's own. */
static void test_periodic_gpu_pass(void)
{
	for (int same = 0; same < 2; same++) {
		struct trace t;
		struct analysis a;
		uint64_t ts = 1000 * MS, ticks = 0;

		begin("sampled");
		uint32_t model = model_stack();
		uint32_t pass = stack("/home/u/proj/train.py|sample_grid|51", "/home/u/proj/train.py|main|97", NULL);

		for (int st = 0; st < 22; st++) {
			int is_long = st == 4 || st == 14;
			uint64_t len = is_long ? 38 * MS : 8 * MS;

			kernel(ts, 3 * MS, "fwd");
			kernel(ts + 3 * MS, 3 * MS, "bwd");
			for (int k = 0; is_long && k < 30; k++)
				kernel(ts + 6 * MS + (uint64_t)k * MS, MS, "sample_fwd");
			for (uint64_t k = 0; k < len / MS; k++)
				sample_state(ts + k * MS + MS / 2, PID, PID, k < 6 || same ? model : pass, GW_PYSTATE_RUN);
			cpu_between(ts, ts + len, &ticks, 1);
			ts += len;
		}
		end(&t, &a);
		const struct finding *c14 = finding(&a, "C14");

		if (same)
			CHECK(!c14 || !c14->title[0] || c14->severity < SEV_WARN, "the loop's own code: no C14 (%s)",
			      c14 ? c14->title : "-");
		else
			CHECK(c14 && c14->severity >= SEV_WARN && c14->busy_ns > 50 * MS,
			      "a GPU pass twice, in its own function: C14 at warning with its work (%s, %.1f ms of "
			      "work)", c14 ? c14->title : "-", c14 ? c14->busy_ns / 1e6 : 0);
		analysis_free(&a);
		trace_free(&t);
	}
}

/* Synthetic: every 10th of 100 steps the training thread runs a monitoring
 * command and waits for it (subprocess.run, asleep) for 30 ms. The stall
 * that recurs is a wait: C16 names it, with the period, and C14 leaves it. */
static void test_periodic_wait(void)
{
	struct trace t;
	struct analysis a;

	begin("sampled");
	uint32_t model = model_stack();
	uint32_t sub = stack4("/usr/lib/python3.11/subprocess.py|Popen._wait|2011",
			      "/usr/lib/python3.11/subprocess.py|run|550", "/home/u/proj/train.py|monitor|40",
			      "/home/u/proj/train.py|main|99");

	uint64_t ts = 1000 * MS, ticks = 0;

	for (int st = 0; st < 100; st++) {
		int extra = st % 10 == 9;
		uint64_t len = extra ? 38 * MS : 8 * MS;

		kernel(ts, 3 * MS, "fwd");
		kernel(ts + 3 * MS, 3 * MS, "bwd");
		for (uint64_t k = 0; k < 8; k++)
			sample_state(ts + k * MS + MS / 2, PID, PID, model, GW_PYSTATE_RUN);
		for (uint64_t k = 0; extra && k < 30; k++)
			sample_state(ts + 8 * MS + k * MS + MS / 2, PID, PID, sub, GW_PYSTATE_SLEEP);
		cpu_between(ts + 6 * MS, ts + len, &ticks, 1);
		ts += len;
	}
	end(&t, &a);
	const struct finding *f = finding(&a, "C16");

	CHECK(f && f == &a.findings.v[0] && a.periodic_wait_ns > 0 && strstr(f->evidence, "recur every 10 steps"),
	      "a wait every 10 steps: C16 first, with its period (%s)", f ? f->evidence : "-");
	CHECK(!finding(&a, "C14") || finding(&a, "C14")->severity < SEV_WARN, "C14 leaves it");
	analysis_free(&a);
	trace_free(&t);
}

/* Synthetic: a checkpoint every 10 steps in the user's save(): torch.save
 * (serialization, with the state dict's copy) then os.fsync at save's own
 * line (a C call: the user's frame is innermost). One finding, C14, names
 * save and counts the whole checkpoint: the fsync's gap (no class of its
 * own) and the copy's GPU time too; C6 claims no copy. */
static void test_checkpoint_activity(void)
{
	struct trace t;
	struct analysis a;

	begin("sampled");
	uint32_t model = model_stack();
	uint32_t ser = stack("/venv/lib/python3.11/site-packages/torch/serialization.py|save|600",
			     "/home/u/proj/train.py|save|50", "/home/u/proj/train.py|main|99");
	uint32_t fsync = stack("/home/u/proj/train.py|save|52", "/home/u/proj/train.py|main|99", NULL);

	activity_steps(model, ser, fsync, GW_PYSTATE_DISK, 1);
	end(&t, &a);
	const struct finding *f = finding(&a, "C14");
	const struct activity_stat *k = &a.act[ACT_CHECKPOINT];

	/* the repeating unit is the 10 iterations with their checkpoint: 9 in
	 * the steady window, whose ends cut one checkpoint in two runs */
	CHECK(a.steps.n == 9 && k->runs == 10 && k->wall_ns > 265 * MS && k->wall_ns < 275 * MS,
	      "checkpoint: %zu steps, %u runs, %.1f ms (want 9, 10, 270)", a.steps.n, k->runs, k->wall_ns / 1e6);
	CHECK(k->func && !strcmp(a.t->names.v[k->func], "save"), "held by save()");
	CHECK(k->idle_ns > 260 * MS && k->idle_ns < 270 * MS, "idle during it %.1f ms (want 266: 30 ms "
	      "less the copy's 2, and the half of the gap before it the stacks give it)", k->idle_ns / 1e6);
	CHECK(f && a.findings.v[0].cause == f->cause, "C14 ranks first");
	/* the repeating unit holds the checkpoint: save() runs in every step, so
	 * its call is no line of its own; the title names its line instead */
	/* ... and the title counts it once: no more times than the steps it fell in */
	CHECK(f && strstr(f->title, "Checkpointing 9 times in the 9 steps recorded in save (train.py:50)"), "title: %s",
	      f ? f->title : "-");
	CHECK(a.ops.ckpt_copies == 9 && !a.ops.pageable_copies, "the copies are the checkpoint's (%llu, "
	      "C6 sees %llu)", (unsigned long long)a.ops.ckpt_copies, (unsigned long long)a.ops.pageable_copies);
	CHECK(!finding(&a, "C6"), "no pageable-copy finding");
	/* the saving, replayed without the checkpoint: the idle in it and the
	 * GPU time of the copies it issued (9 of 2 ms), and the little idle
	 * the steps' ends leave around it */
	CHECK(f && f->replayed && f->saved_ns > 280 * MS && f->saved_ns < 295 * MS,
	      "saves %.1f ms (want 266 + 18 of copies)", f ? f->saved_ns / 1e6 : 0);
	CHECK(f && strstr(f->evidence, "its own GPU work, issued while it ran, goes with it"), "said: %s",
	      f ? f->evidence : "");
	analysis_free(&a);
	trace_free(&t);
}

/* Synthetic: the same every-10th-step extra work writing sample images with
 * PIL (Image.save, then in the user's loop over the files): a periodic write
 * of output files, C14 titled as images written and advised as such, not
 * input preparation (PIL's other functions decode input). */
static void test_image_writes(void)
{
	struct trace t;
	struct analysis a;

	begin("sampled");
	uint32_t model = model_stack();
	uint32_t save = stack4("/venv/lib/python3.11/site-packages/PIL/PngImagePlugin.py|_save|1300",
			       "/venv/lib/python3.11/site-packages/PIL/Image.py|Image.save|2400",
			       "/home/u/proj/train.py|save_samples|70", "/home/u/proj/train.py|main|99");

	activity_steps(model, save, save, GW_PYSTATE_RUN, 0);
	end(&t, &a);
	const struct finding *f = finding(&a, "C14");

	CHECK(f && a.findings.v[0].cause == f->cause && strstr(f->title, "Images or plots written") &&
	      !finding(&a, "C1") && strstr(f->fix, "samples, images and plots"),
	      "PIL's save every 10 steps: C14 first, '%s', no C1", f ? f->title : "-");
	CHECK(a.act[ACT_CHECKPOINT].output_ns > 0.9 * a.act[ACT_CHECKPOINT].wall_ns, "all of it writing images");
	analysis_free(&a);
	trace_free(&t);
}

/* Synthetic: 100 steps of 8 ms whose third and sixth the training thread
 * spends in XLA's compiler (a jit compiling again at a later call): the six
 * go into the start-up, however short; in the 60th, the loop's (a recompile
 * the run pays again). */
static void test_compile_steps(void)
{
	/* late: 0, compiles in the 3rd and 6th steps; 1, in the 61st; 2, in
	 * the 26th, past any count of early steps but in the first third (a
	 * step found as a fraction of the program's meets a kernel built on
	 * first use that far in); 3, in the 61st to the 70th, 60 ms of the
	 * 800 ms run: said under the split, with its line */
	for (int late = 0; late < 4; late++) {
		struct trace t;
		struct analysis a;

		begin("sampled");
		uint32_t model = model_stack();
		uint32_t comp = stack("/venv/lib/python3.11/site-packages/jax/_src/compiler.py|compile_or_get_cached|300",
				      "/venv/lib/python3.11/site-packages/jax/_src/interpreters/pxla.py|UnloadedMeshExecutable.from_hlo|2400",
				      "/home/u/proj/train.py|main|95");
		uint64_t ts = 1000 * MS, ticks = 0;

		for (int s = 0; s < 100; s++) {
			int compiles = late == 1 ? s == 60 : late == 2 ? s == 25 : late == 3 ? s >= 60 && s < 70
											  : (s == 2 || s == 5);

			kernel(ts, 2 * MS, "conv");
			for (int k = 0; k < 8; k++)
				sample(ts + (uint64_t)k * MS + MS / 2, PID, PID, compiles && k >= 2 ? comp : model);
			cpu_between(ts + 2 * MS, ts + 8 * MS, &ticks, 1);
			ts += 8 * MS;
		}
		end(&t, &a);
		if (late == 1) {
			/* in the steady window, the compiler's gap is its own: no
			 * fix takes it away, so it is no launch gap of C4's */
			double comp_ms = (double)a.idle_by_cause[IDLE_COMPILE] / 1e6;

			CHECK(a.warmup_steps == 0, "a compile in the 61st step: no warm-up (%u)", a.warmup_steps);
			CHECK(comp_ms > 5.5 && comp_ms < 6.5, "the 61st step's compiling is `compiling`: %.2f ms (want 6)",
			      comp_ms);
			/* 6 ms of a 800 ms run: under COMPILE_SHOWN, not said */
			CHECK(!a.facts.compile_shown, "a compile of 0.75%% of the run is said under the split");
		} else if (late == 3) {
			size_t cs = a.facts.compile_site;

			CHECK(a.warmup_steps == 0 && a.facts.compile_shown && cs != SIZE_MAX && a.sites.v[cs].line == 95,
			      "ten compiling steps in the run: said (%d) at line %u (want 95)", a.facts.compile_shown,
			      cs != SIZE_MAX ? a.sites.v[cs].line : 0);
		} else if (late == 2)
			CHECK(a.warmup_steps == 26, "a compile in the 26th step: %u warm-up steps (want 26)",
			      a.warmup_steps);
		else
			CHECK(a.warmup_steps == 6 && a.steps.n >= 92 && a.steps.n <= 94,
			      "compiles in the 3rd and 6th steps: %u warm-up steps, %zu left (want 6, about 93)",
			      a.warmup_steps, a.steps.n);
		analysis_free(&a);
		trace_free(&t);
	}
}

/* Synthetic: one checkpoint of 400 ms among 40 steps of 8 ms (extra_steps:
 * the 21st step, serializing then in the disk's wait): save() takes most of
 * the run, in one step. It is still the checkpoint's holder, so its fsync,
 * after the serialization, is the checkpoint's too: one activity of 400 ms.
 * `model` launches (a torch module's frame: save() holds none of the
 * launching work) or does not (by the steps save() is in: 1 of 39). The same
 * calls inline in the loop's own function give no holder either way. */
static void long_checkpoint(uint32_t (*model_of)(void), const char *what)
{
	struct trace t;
	struct analysis a;

	begin("sampled");
	extra_steps(model_of(),
		    stack("/venv/lib/python3.11/site-packages/torch/serialization.py|save|600",
			  "/home/u/proj/train.py|save|50", "/home/u/proj/train.py|main|99"),
		    stack("/home/u/proj/train.py|save|52", "/home/u/proj/train.py|main|99", NULL), GW_PYSTATE_DISK, 0,
		    40, 21, 400);
	end(&t, &a);
	const struct activity_stat *k = &a.act[ACT_CHECKPOINT];
	const struct finding *f = finding(&a, "C14");

	CHECK(k->wall_ns > 0.5 * (double)a.steady_ns, "%s: the checkpoint is most of the run (%.1f of %.1f ms)", what,
	      k->wall_ns / 1e6, (double)a.steady_ns / 1e6);
	CHECK(k->func && !strcmp(a.t->names.v[k->func], "save") && k->wall_ns > 395 * MS && k->wall_ns < 405 * MS,
	      "%s: held by save(), fsync included: %.1f ms (want 400)", what, k->wall_ns / 1e6);
	CHECK(f && a.findings.v[0].cause == f->cause && f->idle_ns > 390 * MS, "%s: C14 first, its idle %.1f ms",
	      what, f ? f->idle_ns / 1e6 : 0);
	analysis_free(&a);
	trace_free(&t);

	/* torch.save and fsync inline in main, on the stack in every step and
	 * where the model launches its work: no holder, the serializing
	 * samples alone are the checkpoint */
	begin("sampled");
	extra_steps(model_of(),
		    stack("/venv/lib/python3.11/site-packages/torch/serialization.py|save|600",
			  "/home/u/proj/train.py|main|60", NULL),
		    stack("/home/u/proj/train.py|main|61", NULL, NULL), GW_PYSTATE_DISK, 0, 40, 21, 400);
	end(&t, &a);
	k = &a.act[ACT_CHECKPOINT];
	CHECK(k->wall_ns > 195 * MS && k->wall_ns < 205 * MS, "%s, inline in main: the serialization alone, %.1f ms "
	      "(want 200)", what, k->wall_ns / 1e6);
	analysis_free(&a);
	trace_free(&t);
}

/* a model whose samples show no framework frame: the user's own code */
static uint32_t plain_model_stack(void)
{
	return stack("/home/u/proj/train.py|forward|30", "/home/u/proj/train.py|main|95", NULL);
}

static void test_long_checkpoint(void)
{
	long_checkpoint(model_stack, "launching model");
	long_checkpoint(plain_model_stack, "model with no launching frames");
}

/* Synthetic stacks: JAX's device_get and float() read device values (a
 * synchronizing op, whatever pytree code runs under them), its jitted call
 * dispatches; an optimizer's update is one (torch.optim's step, optax's
 * update), not a learning-rate schedule, optax's loss, or a training step
 * Lightning runs inside the optimizer's closure. */
static void test_stack_kinds(void)
{
	struct trace t;
	struct analysis a;

	begin("sampled");
	uint32_t model = model_stack();
	uint32_t get = stack("/venv/lib/python3.11/site-packages/jax/_src/tree_util.py|tree_map|400",
			     "/venv/lib/python3.11/site-packages/jax/_src/api.py|device_get|2590",
			     "/home/u/proj/train.py|save|22");
	uint32_t flt = stack("/venv/lib/python3.11/site-packages/jax/_src/array.py|ArrayImpl._value|640",
			     "/venv/lib/python3.11/site-packages/jax/_src/array.py|ArrayImpl.__float__|300",
			     "/home/u/proj/train.py|step|61");
	uint32_t jit = stack("/venv/lib/python3.11/site-packages/jax/_src/pjit.py|cache_miss|300",
			     "/home/u/proj/train.py|step|43", NULL);
	uint32_t upd = stack("/venv/lib/python3.11/site-packages/torch/optim/adam.py|_single_tensor_adam|400",
			     "/venv/lib/python3.11/site-packages/torch/optim/optimizer.py|wrapper|480",
			     "/home/u/proj/train.py|main|70");
	uint32_t sched = stack("/venv/lib/python3.11/site-packages/torch/optim/lr_scheduler.py|step|200",
			       "/home/u/proj/train.py|main|71", NULL);
	uint32_t loss = stack("/venv/lib/python3.11/site-packages/optax/losses/_regression.py|huber_loss|90",
			      "/home/u/proj/train.py|loss_fn|27", NULL);
	uint32_t upd2 = stack("/venv/lib/python3.11/site-packages/optax/_src/update.py|apply_updates|40",
			      "/home/u/proj/train.py|step|44", NULL);
	uint32_t closure = stack("/venv/lib/python3.11/site-packages/torch/nn/modules/module.py|_call_impl|1700",
				 "/venv/lib/python3.11/site-packages/lightning/pytorch/core/module.py|training_step|10",
				 "/venv/lib/python3.11/site-packages/torch/optim/optimizer.py|wrapper|480");
	/* a @triton.jit kernel called from Python: its launcher */
	uint32_t trl = stack("/venv/lib/python3.11/site-packages/triton/runtime/jit.py|JITFunction.run|700",
			     "/venv/lib/python3.11/site-packages/triton/runtime/jit.py|<lambda>|390",
			     "/home/u/proj/train.py|pool|160");
	uint64_t ts = 1000 * MS, ticks = 0;

	for (int s = 0; s < 20; s++) {
		kernel(ts, 6 * MS, "conv");
		sample_state(ts + MS / 2, PID, PID, model, GW_PYSTATE_RUN);
		cpu_between(ts + 6 * MS, ts + 8 * MS, &ticks, 1);
		ts += 8 * MS;
	}
	end(&t, &a);
	CHECK(sites_node_class(&a, trl) == SC_LAUNCH, "Triton's launcher: %d (want launching work, %d)",
	      sites_node_class(&a, trl), SC_LAUNCH);
	CHECK(sites_node_class(&a, get) == SC_SYNC && sites_node_class(&a, flt) == SC_SYNC &&
	      sites_node_class(&a, jit) == SC_LAUNCH, "JAX: device_get %d, float() %d (want %d), jit %d (want %d)",
	      sites_node_class(&a, get), sites_node_class(&a, flt), SC_SYNC, sites_node_class(&a, jit), SC_LAUNCH);
	CHECK(sites_node_optimizer(&a, upd) && sites_node_optimizer(&a, upd2) && !sites_node_optimizer(&a, sched) &&
	      !sites_node_optimizer(&a, loss) && !sites_node_optimizer(&a, closure) &&
	      !sites_node_optimizer(&a, model),
	      "an optimizer's update: torch %d, optax %d; not a scheduler %d, a loss %d, a closure %d, the model %d",
	      sites_node_optimizer(&a, upd), sites_node_optimizer(&a, upd2), sites_node_optimizer(&a, sched),
	      sites_node_optimizer(&a, loss), sites_node_optimizer(&a, closure), sites_node_optimizer(&a, model));
	analysis_free(&a);
	trace_free(&t);
}

/* A blocking device-to-host copy of `bytes` to pageable memory at c0,
 * running `dur`, by a cudaMemcpy call with Python stack `py` that begins
 * `lead` before it and returns 5 us after. */
static void dtoh_copy(uint64_t c0, uint64_t dur, uint64_t bytes, uint32_t py, uint64_t lead)
{
	static uint64_t corr = 1u << 24;
	uint64_t v[GW_MEMCPY_NF] = { c0, c0 + dur, 2, 3, 1, bytes, 0, 0, 7, ++corr };
	uint64_t api[GW_API_NF] = { c0 - lead, c0 + dur + 5 * US, 31, PID, corr, gw_intern(&w, "cudaMemcpy"), 1, py };

	gw_emit(&w, GW_REC_MEMCPY, v, GW_MEMCPY_NF);
	gw_emit(&w, GW_REC_API, api, GW_API_NF);
}

/* A model's step on the GPU from ts: 20 kernels of 0.3 ms, each named its
 * own (the step finder's unit is the 20). */
static void layer_kernels(uint64_t ts)
{
	for (int k = 0; k < 20; k++) {
		char kn[16];

		snprintf(kn, sizeof(kn), "layer%d", k);
		kernel(ts + (uint64_t)k * 300 * US, 300 * US, kn);
	}
}

/* 100 steps of 8 ms (20 kernels in 6 ms, 2 ms launching the next); in the
 * steps where every % 10 == 9 (every = 1: each step), the training thread
 * then runs `copy_fn` for 60 ms making `ncopies` device-to-host copies of
 * 0.4 ms each to pageable memory, each by a cudaMemcpy call with that
 * stack. */
static void copy_steps_as(uint32_t model, uint32_t copy_fn, uint32_t sample_fn, int every, int ncopies,
			  unsigned ncopy_samples);

static void copy_steps(uint32_t model, uint32_t copy_fn, int every, int ncopies)
{
	copy_steps_as(model, copy_fn, copy_fn, every, ncopies, 60);
}

/* ... the training thread's samples in those 60 ms: the first ncopy_samples
 * with stack copy_fn, the others with sample_fn. */
static void copy_steps_as(uint32_t model, uint32_t copy_fn, uint32_t sample_fn, int every, int ncopies,
			  unsigned ncopy_samples)
{
	uint64_t ts = 1000 * MS, ticks = 0;

	for (int s = 0; s < 100; s++) {
		int extra = every == 1 || s % every == every - 1;
		uint64_t len = extra ? 68 * MS : 8 * MS;

		layer_kernels(ts);
		for (uint64_t k = 0; k < 8; k++)
			sample_state(ts + k * MS + MS / 2, PID, PID, model, GW_PYSTATE_RUN);
		for (int c = 0; extra && c < ncopies; c++)
			dtoh_copy(ts + 8 * MS + (uint64_t)c * (60 * MS / (uint64_t)ncopies), 400 * US, 4ull << 20,
				  copy_fn, 10 * US);
		for (uint64_t k = 0; extra && k < 60; k++)
			sample_state(ts + 8 * MS + k * MS + MS / 2, PID, PID, k < ncopy_samples ? copy_fn : sample_fn,
				     GW_PYSTATE_RUN);
		cpu_between(ts + 6 * MS, ts + len, &ticks, extra ? 7 : 1);
		ts += len;
	}
}

/* A recording begun: copy_steps_as() with the user's function fn copying
 * (.cpu()) in the first ncopy_samples of its 60 samples, then in numpy's
 * histogram. */
static void copies_then_numpy(const char *fn, unsigned ncopy_samples)
{
	char at40[64], at42[64];

	snprintf(at40, sizeof(at40), "/home/u/proj/train.py|%s|40", fn);
	snprintf(at42, sizeof(at42), "/home/u/proj/train.py|%s|42", fn);
	begin("sampled");
	uint32_t model = model_stack();

	copy_steps_as(model,
		      stack("/venv/lib/python3.11/site-packages/torch/_tensor.py|cpu|20", at40,
			    "/home/u/proj/train.py|main|99"),
		      stack("/venv/lib/python3.11/site-packages/numpy/lib/_histograms_impl.py|histogram|800", at42,
			    "/home/u/proj/train.py|main|99"),
		      10, 40, ncopy_samples);
}

/* Synthetic: every 10 steps the user's snapshot() copies the state to the
 * host, 40 tensors through .cpu(), and serializes nothing: a checkpoint
 * found by its copies (a state snapshot), C14 first, its copies not C6's,
 * the fix's kept copies counted. The same function copying 40 tensors in
 * every step is the step's own work: no activity. */
static void test_snapshot_activity(void)
{
	struct trace t;
	struct analysis a;

	begin("sampled");
	uint32_t model = model_stack();
	uint32_t snap = stack("/venv/lib/python3.11/site-packages/torch/_tensor.py|cpu|20",
			      "/home/u/proj/train.py|snapshot|40", "/home/u/proj/train.py|main|99");

	copy_steps(model, snap, 10, 40);
	end(&t, &a);
	const struct finding *f = finding(&a, "C14");
	const struct activity_stat *k = &a.act[ACT_CHECKPOINT];

	CHECK(k->func && !strcmp(a.t->names.v[k->func], "snapshot") && !k->serializes,
	      "held by snapshot(), which serializes nothing");
	CHECK(k->copies >= 9 * 40 && k->copies <= 10 * 40 && k->copy_runs >= 9 && k->copy_runs <= 10,
	      "its copies: %u in %u bursts (want 40 in each of 9-10)", k->copies, k->copy_runs);
	CHECK(f && a.findings.v[0].cause == f->cause, "C14 ranks first");
	CHECK(f && !strncmp(f->title, "State copied to host memory ", 28), "title: %s", f ? f->title : "-");
	CHECK(f && strstr(f->fix, "pinned host buffers"), "the snapshot's fix: %s", f ? f->fix : "-");
	CHECK(!finding(&a, "C6") && a.ops.ckpt_copies == k->copies, "the copies are the snapshot's, not C6's");
	CHECK(f && f->claim.kept_ns > 0 && strstr(f->evidence, "The fix still copies them"),
	      "the fix keeps its copies: %.2f ms", f ? f->claim.kept_ns / 1e6 : 0);
	analysis_free(&a);
	trace_free(&t);

	begin("sampled");
	model = model_stack();
	snap = stack("/venv/lib/python3.11/site-packages/torch/_tensor.py|cpu|20",
		     "/home/u/proj/train.py|snapshot|40", "/home/u/proj/train.py|main|99");
	copy_steps(model, snap, 1, 40);
	end(&t, &a);
	CHECK(a.act[ACT_CHECKPOINT].copies == 0 && a.act[ACT_CHECKPOINT].wall_ns == 0,
	      "copies in every step: no activity (%u copies)", a.act[ACT_CHECKPOINT].copies);
	analysis_free(&a);
	trace_free(&t);
	/* the same copies, then histograms of them in numpy for most of its
	 * time: statistics of the state, done less often, not a snapshot */
	copies_then_numpy("log_stats", 10);
	end(&t, &a);
	f = finding(&a, "C14");
	k = &a.act[ACT_CHECKPOINT];
	CHECK(k->func && !strcmp(a.t->names.v[k->func], "log_stats") && k->processes && !k->serializes,
	      "held by log_stats(), which computes on its copies");
	CHECK(f && !strncmp(f->title, "Host computation on copies of the model's state ", 48), "title: %s",
	      f ? f->title : "-");
	CHECK(f && strstr(f->fix, "less often") && !strstr(f->fix, "pinned host buffers allocated once"),
	      "the statistics' fix: %s", f ? f->fix : "-");
	CHECK(f && f->claim.kept_ns == 0, "the fix keeps nothing: %.2f ms", f ? f->claim.kept_ns / 1e6 : 0);
	analysis_free(&a);
	trace_free(&t);

	/* a snapshot followed by a little numpy (35% of its time) stays a
	 * snapshot, with its pinned-copy advice */
	copies_then_numpy("snapshot", 39);
	end(&t, &a);
	f = finding(&a, "C14");
	CHECK(!a.act[ACT_CHECKPOINT].processes && f && !strncmp(f->title, "State copied to host memory ", 28) &&
	      strstr(f->fix, "pinned host buffers"), "a snapshot with a little numpy: %s", f ? f->title : "-");
	analysis_free(&a);
	trace_free(&t);
}

/* 100 steps: 20 kernels in 6 ms, then the training thread reads a 4 MiB
 * result back (a blocking copy to pageable memory, its call at `read`) and
 * works 4 ms on the CPU under `work` before it launches the next step;
 * nothing goes back to the GPU. */
/* The step's model stack (a conv layer's forward under train.py:46) and
 * the stack of its read of the results (train.py:49), in the trace begun. */
static void step_read_stacks(uint32_t *model, uint32_t *read)
{
	*model = stack("/venv/lib/python3.11/site-packages/torch/nn/modules/conv.py|forward|450",
		       "/home/u/proj/train.py|step|46", NULL);
	*read = stack("/home/u/proj/train.py|step|49", "/home/u/proj/train.py|main|90", NULL);
}

static void read_then_work_with(uint32_t model, uint32_t read, uint32_t work, uint32_t fourth, int answer)
{
	uint64_t ts = 1000 * MS, ticks = 0, corr = 1u << 26;

	for (int s = 0; s < 100; s++) {
		layer_kernels(ts);
		uint64_t c0 = ts + 6 * MS;

		dtoh_copy(c0, 300 * US, 4ull << 20, read, 5 * MS);
		if (answer) { /* the work's answer copied back to the GPU: it ends the gap */
			uint64_t v[GW_MEMCPY_NF] = { ts + 10 * MS + 400 * US, ts + 10 * MS + 450 * US, 1, 2, 3, 64ull << 10,
						     1, 0, 7, ++corr };

			gw_emit(&w, GW_REC_MEMCPY, v, GW_MEMCPY_NF);
		}
		sample_state(ts + MS / 2, PID, PID, model, GW_PYSTATE_RUN);
		for (uint64_t k = 0; k < 8; k++) /* 0.5 ms apart over the 4 ms of work */
			sample_state(c0 + 400 * US + k * 500 * US, PID, PID, k == 3 && fourth ? fourth : work,
				     GW_PYSTATE_RUN);
		cpu_between(ts + 6 * MS, ts + 10 * MS + 500 * US, &ticks, 1);
		ts += 10 * MS + 500 * US;
	}
}

static void read_then_work(uint32_t model, uint32_t read, uint32_t work)
{
	read_then_work_with(model, read, work, 0, 0);
}

/* Synthetic: detections read back every step (a 300 us device-to-host
 * copy at the step's line) and then 25 ms of work in the read's function
 * before the next step's kernels: the gap, 25 ms, longer than any launch
 * would leave it. */
static void read_then_long_work(uint32_t model, uint32_t read, uint32_t work)
{
	uint64_t ts = 1000 * MS, ticks = 0;

	for (int s = 0; s < 60; s++) {
		layer_kernels(ts);
		uint64_t c0 = ts + 6 * MS;

		dtoh_copy(c0, 300 * US, 4ull << 20, read, 5 * MS);
		sample_state(ts + MS / 2, PID, PID, model, GW_PYSTATE_RUN);
		for (uint64_t k = 0; k < 10; k++) /* 2.5 ms apart over the 25 ms of work */
			sample_state(c0 + 500 * US + k * 2500 * US, PID, PID, work, GW_PYSTATE_RUN);
		cpu_between(c0, c0 + 26 * MS, &ticks, 2);
		ts += 32 * MS;
	}
}

/* Synthetic: torchvision's NMS on CPU tensors after the read, in the
 * read's function: in a 25 ms gap its torch ops launched nothing, so they
 * ran on the CPU, on the values read: C9, the results processed on the
 * host. The same frames under Dynamo (a recompilation after the read) are
 * the compiler's, not processing. */
static void test_cpu_ops_after_read(void)
{
	struct trace t;
	struct analysis a;

	for (int compiling = 0; compiling < 2; compiling++) {
		begin("sampled");
		uint32_t model, read;

		step_read_stacks(&model, &read);
		uint32_t nms = compiling ? stack4("/venv/lib/python3.11/site-packages/torch/_ops.py|__call__|1200",
						  "/venv/lib/python3.11/site-packages/torch/_dynamo/eval_frame.py|_fn|600",
						  "/home/u/proj/train.py|step|52", "/home/u/proj/train.py|main|90")
					 : stack4("/venv/lib/python3.11/site-packages/torch/_ops.py|__call__|1200",
						  "/venv/lib/python3.11/site-packages/torchvision/ops/boxes.py|batched_nms|75",
						  "/home/u/proj/train.py|step|52", "/home/u/proj/train.py|main|90");

		read_then_long_work(model, read, nms);
		end(&t, &a);
		const struct finding *f = finding(&a, "C9");

		if (!compiling)
			CHECK(f && a.findings.v[0].cause == f->cause && strstr(f->title, "processes GPU results") &&
			      a.site_sync_post_ns > 500 * MS,
			      "eager ops on CPU tensors after the read: C9 first, processing (%s; %.0f ms)",
			      f ? f->title : "-", a.site_sync_post_ns / 1e6);
		else
			CHECK(a.site_sync_post_ns == 0, "the same ops under Dynamo: not processing (%.0f ms)",
			      a.site_sync_post_ns / 1e6);
		analysis_free(&a);
		trace_free(&t);
	}
}

/* Synthetic: the step copies its results back in a helper (to_img, called
 * at step's line 49) and then scores them in SciPy at its next line (50,
 * through calc_ssim): the work on the values read, in the function that
 * called the read's, below the loop's frame (main:90): C9 first, the results
 * processed on the host. The same work at a line of the step before the
 * read's call (44) is the next step's, not processing. */
static void test_processing_in_caller(void)
{
	struct trace t;
	struct analysis a;

	for (int before = 0; before < 2; before++) {
		begin("sampled");
		uint32_t model = stack("/venv/lib/python3.11/site-packages/torch/nn/modules/conv.py|forward|450",
				       "/home/u/proj/train.py|step|46", "/home/u/proj/train.py|main|90");
		uint32_t read = stack("/home/u/proj/train.py|to_img|10", "/home/u/proj/train.py|step|49",
				      "/home/u/proj/train.py|main|90");
		uint32_t work = stack4("/venv/lib/python3.11/site-packages/scipy/ndimage/_filters.py|correlate1d|100",
				       "/home/u/proj/train.py|calc_ssim|20",
				       before ? "/home/u/proj/train.py|step|44" : "/home/u/proj/train.py|step|50",
				       "/home/u/proj/train.py|main|90");

		read_then_long_work(model, read, work);
		end(&t, &a);
		const struct finding *f = finding(&a, "C9");

		if (!before)
			CHECK(f && a.findings.v[0].cause == f->cause && strstr(f->title, "processes GPU results") &&
			      a.site_sync_post_ns > 500 * MS,
			      "SciPy on the values a helper read, in its caller after the call: C9 first, "
			      "processing (%s; %.0f ms)", f ? f->title : "-", a.site_sync_post_ns / 1e6);
		else
			CHECK(a.site_sync_post_ns == 0, "the same work above the read's call: not processing (%.0f ms)",
			      a.site_sync_post_ns / 1e6);
		analysis_free(&a);
		trace_free(&t);
	}
}

/* Synthetic: the same read and work, the work in a host callback of a
 * compiled step (jax.pure_callback's frames under the user's function):
 * C9 first, named as a callback, its time the callback's; no C1. Then
 * jax.debug.print's callbacks, the thread inside the step's run. */
static void test_host_callback(void)
{
	struct trace t;
	struct analysis a;

	begin("sampled");
	uint32_t model, read;

	step_read_stacks(&model, &read);
	uint32_t cb = stack("/home/u/proj/train.py|knn_host|30",
			    "/venv/lib/python3.11/site-packages/jax/_src/callback.py|_FlatCallback.__call__|210",
			    "/venv/lib/python3.11/site-packages/jax/_src/callback.py|pure_callback_impl|180");

	read_then_work(model, read, cb);
	end(&t, &a);
	const struct finding *f = finding(&a, "C9");

	CHECK(f && a.findings.v[0].cause == f->cause && strstr(f->title, "host callback") &&
	      strstr(f->evidence, "pure_callback") && a.site_callback_ns > 300 * MS,
	      "a host callback: C9 first, named so (%s; %.1f ms in it)", f ? f->title : "-",
	      a.site_callback_ns / 1e6);
	CHECK(!finding(&a, "C1") || finding(&a, "C1")->severity < SEV_WARN, "no CPU-work finding");
	analysis_free(&a);
	trace_free(&t);

	/* a callback whose body runs numpy's Python (a k-d tree in Python, a
	 * SciPy filter), its answer copied back to the GPU: still the
	 * callback's, not the next input */
	begin("sampled");
	step_read_stacks(&model, &read);
	cb = stack4("/venv/lib/python3.11/site-packages/numpy/_core/fromnumeric.py|argpartition|900",
		    "/home/u/proj/train.py|knn_host|30",
		    "/venv/lib/python3.11/site-packages/jax/_src/callback.py|_FlatCallback.__call__|210",
		    "/venv/lib/python3.11/site-packages/jax/_src/callback.py|pure_callback_impl|180");
	read_then_work_with(model, read, cb, 0, 1);
	end(&t, &a);
	f = finding(&a, "C9");
	CHECK(f && a.findings.v[0].cause == f->cause && strstr(f->title, "host callback") &&
	      a.site_callback_ns > 300 * MS,
	      "numpy inside a callback, its answer sent back: C9 first, a callback (%s; %.1f ms)",
	      f ? f->title : "-", a.site_callback_ns / 1e6);
	analysis_free(&a);
	trace_free(&t);

	/* jax.debug.print's callbacks: each too short to be caught every
	 * time, the training thread waits inside the compiled step's run
	 * (pxla's ExecuteReplicated.__call__) while they run; one sample in
	 * eight catches a callback's own code */
	begin("sampled");
	step_read_stacks(&model, &read);
	uint32_t run = stack("/venv/lib/python3.11/site-packages/jax/_src/interpreters/pxla.py|"
			     "ExecuteReplicated.__call__|1290",
			     "/venv/lib/python3.11/site-packages/jax/_src/traceback_util.py|reraise_with_filtered_traceback|180",
			     "/home/u/proj/train.py|main|132");
	uint32_t print = stack("/venv/lib/python3.11/site-packages/jax/_src/debugging.py|_format_print_callback|556",
			       "/venv/lib/python3.11/site-packages/jax/_src/debugging.py|debug_callback_impl|96",
			       "/venv/lib/python3.11/site-packages/jax/_src/callback.py|"
			       "emit_python_callback.<locals>._wrapped_callback|816");
	read_then_work_with(model, read, run, print, 0);
	end(&t, &a);
	f = finding(&a, "C9");
	CHECK(f && a.findings.v[0].cause == f->cause && strstr(f->title, "host callback") &&
	      a.py_callback_ns > 0 && a.site_callback_ns > 300 * MS,
	      "the compiled step's run waiting for callbacks: C9 first, named so (%s; %.1f ms)",
	      f ? f->title : "-", a.site_callback_ns / 1e6);
	analysis_free(&a);
	trace_free(&t);

	/* a numpy batch staged to the device below the step's run, in a job
	 * whose callbacks were sampled: staging, not a callback's wait */
	begin("sampled");
	step_read_stacks(&model, &read);
	run = stack4("/venv/lib/python3.11/site-packages/jax/_src/interpreters/pxla.py|_shard_np_array|300",
		     "/venv/lib/python3.11/site-packages/jax/_src/interpreters/pxla.py|ExecuteReplicated.__call__|1290",
		     "/venv/lib/python3.11/site-packages/jax/_src/traceback_util.py|reraise_with_filtered_traceback|180",
		     "/home/u/proj/train.py|main|132");
	print = stack("/venv/lib/python3.11/site-packages/jax/_src/debugging.py|debug_callback_impl|96",
		      "/venv/lib/python3.11/site-packages/jax/_src/callback.py|"
		      "emit_python_callback.<locals>._wrapped_callback|816", NULL);
	read_then_work_with(model, read, run, print, 0);
	end(&t, &a);
	CHECK(a.py_callback_ns > 0 && a.site_callback_ns > 0 && a.site_callback_ns < 100 * MS,
	      "staging below the step's run: not a callback's wait (%.0f ms in callbacks, the one sample "
	      "in eight that caught one: want ~50)", a.site_callback_ns / 1e6);
	analysis_free(&a);
	trace_free(&t);

	/* the same run with no callback sampled anywhere: not a callback */
	begin("sampled");
	step_read_stacks(&model, &read);
	run = stack("/venv/lib/python3.11/site-packages/jax/_src/interpreters/pxla.py|ExecuteReplicated.__call__|1290",
		    "/venv/lib/python3.11/site-packages/jax/_src/traceback_util.py|reraise_with_filtered_traceback|180",
		    "/home/u/proj/train.py|main|132");
	read_then_work(model, read, run);
	end(&t, &a);
	f = finding(&a, "C9");
	CHECK(a.py_callback_ns == 0 && a.site_callback_ns == 0 && (!f || !strstr(f->title, "host callback")),
	      "no callback sampled: the step's run is no callback's wait (%s)", f ? f->title : "-");
	analysis_free(&a);
	trace_free(&t);
}

/* Synthetic: scores read back with .cpu().numpy() and a numpy top-k on
 * them, in the line that read them: the GPU's results processed on the
 * host, C9 first with that title and advice (not C1's CPU work). The same
 * numpy work at a line above the read (the next step's own work, as
 * c9_item_sync's host helper) is not processing: C9 keeps its plain title. */
static void test_results_on_host(void)
{
	struct trace t;
	struct analysis a;

	begin("sampled");
	uint32_t model, read;

	step_read_stacks(&model, &read);
	uint32_t topk = stack("/venv/lib/python3.11/site-packages/numpy/_core/fromnumeric.py|argpartition|900",
			      "/home/u/proj/train.py|topk_numpy|21", "/home/u/proj/train.py|step|49");

	read_then_work(model, read, topk);
	end(&t, &a);
	const struct finding *f = finding(&a, "C9");

	CHECK(f && a.findings.v[0].cause == f->cause && strstr(f->title, "processes GPU results"),
	      "results processed on the host: C9 first (%s)", f ? f->title : "-");
	CHECK(a.site_sync_post_ns > 300 * MS, "the work after the read: %.1f ms (want ~400)", a.site_sync_post_ns / 1e6);
	CHECK(!finding(&a, "C1") || finding(&a, "C1")->severity < SEV_WARN, "no CPU-work finding");
	analysis_free(&a);
	trace_free(&t);

	begin("sampled");
	step_read_stacks(&model, &read);
	uint32_t helper = stack("/venv/lib/python3.11/site-packages/numpy/_core/fromnumeric.py|sort|900",
				"/home/u/proj/train.py|host_work|25", "/home/u/proj/train.py|step|29");

	read_then_work(model, read, helper);
	end(&t, &a);
	f = finding(&a, "C9");
	CHECK(a.site_sync_post_ns == 0 && f && !strstr(f->title, "processes GPU results"),
	      "the next step's own work above the read: not processing (%.1f ms; %s)", a.site_sync_post_ns / 1e6,
	      f ? f->title : "-");
	analysis_free(&a);
	trace_free(&t);
}

/* 100 steps of 10 ms: a 2 ms kernel, its 64 MiB result copied into
 * pageable host memory (a 4 ms copy) by a call that returns 0.5 ms after
 * it, then 3 ms of the training thread on the CPU in `st_after`, its stack
 * at the model's launch (`st_model`) otherwise. */
static void copy_back_steps(uint32_t st_model, uint32_t st_after)
{
	uint64_t ts = 1000 * MS, ticks = 0, corr = 1u << 23;

	for (int s = 0; s < 100; s++) {
		uint64_t c0 = ts + 2 * MS + 5 * US;
		uint64_t v[GW_MEMCPY_NF] = { c0, c0 + 4 * MS, 2, 3, 1, 64ull << 20, 0, 0, 7, ++corr };
		uint64_t c[GW_API_NF] = { ts + 10 * US, c0 + 4500 * US, 31, PID, corr, gw_intern(&w, "cudaMemcpy"),
					  2, 0 };

		kernel(ts, 2 * MS, "conv");
		gw_emit(&w, GW_REC_MEMCPY, v, GW_MEMCPY_NF);
		gw_emit(&w, GW_REC_API, c, GW_API_NF);
		for (int k = 0; k < 10; k++)
			sample(ts + (uint64_t)k * MS + MS / 2, PID, PID, k >= 7 ? st_after : st_model);
		for (int k = 0; k < 5; k++)
			thread(ts + 2 * MS + (uint64_t)k * 2 * MS, PID, PID, 'R', ticks);
		ticks += 1;
		thread(ts + 10 * MS - 1, PID, PID, 'R', ticks);
		ts += 10 * MS;
	}
}

/* Synthetic: C6's fix puts the copies on a copy stream; a copy back whose
 * values the host does not process before its next work (3.5 ms of its own
 * code after it: a cache for a writer) stops blocking, so the host's time
 * overlaps the kernel and the copy (at the pinned rate, 2 ms): the replay
 * gives 3.5 ms a step, and the saving is held to the run's idle (4 ms a
 * step) and the copy's 2 ms saved: 10 / 4 = 2.5x. The same copy whose values
 * the host then sorts with numpy keeps the host waiting for it: 2 ms saved
 * a step, 1.25x. */
static void test_copy_back_processed(void)
{
	struct trace t;
	struct analysis a;
	const struct finding *f;

	begin("sampled");
	copy_back_steps(model_stack(), stack("/home/u/proj/train.py|main|97", NULL, NULL));
	end(&t, &a);
	f = finding(&a, "C6");
	CHECK(f && f->replayed && f->speedup > 2.4 && f->speedup < 2.6,
	      "values not processed: C6 replayed %.2fx (want 2.5x, the copy off the host's way)", f ? f->speedup : 0);
	analysis_free(&a);
	trace_free(&t);

	begin("sampled");
	copy_back_steps(model_stack(), stack("/venv/lib/python3.11/site-packages/numpy/_core/fromnumeric.py|sort|900",
					     "/home/u/proj/train.py|main|97", NULL));
	end(&t, &a);
	f = finding(&a, "C6");
	CHECK(f && f->replayed && f->speedup > 1.2 && f->speedup < 1.3,
	      "values sorted on the host: C6 replayed %.2fx (want the host still waiting, at the pinned rate)",
	      f ? f->speedup : 0);
	analysis_free(&a);
	trace_free(&t);
}

/* 100 steps: a 2 ms kernel, then `cpu_ms` of the training thread on the CPU
 * in an optimizer's step (SparseAdam's update over a table kept on the
 * host), issuing nothing until the next step. */
static void optimizer_steps(unsigned cpu_ms, struct trace *t, struct analysis *a)
{
	uint64_t ts = 1000 * MS, ticks = 0;

	begin("sampled");
	uint32_t upd = stack("/venv/lib/python3.11/site-packages/torch/optim/_functional.py|sparse_adam|60",
			     "/venv/lib/python3.11/site-packages/torch/optim/optimizer.py|wrapper|480",
			     "/home/u/proj/train.py|main|104");
	uint32_t model = model_stack();

	for (int s = 0; s < 100; s++) {
		kernel(ts, 2 * MS, "conv");
		sample(ts + MS / 2, PID, PID, model);
		for (unsigned k = 0; k < cpu_ms; k++)
			sample(ts + 2 * MS + (uint64_t)k * MS + MS / 2, PID, PID, upd);
		cpu_between(ts + 2 * MS, ts + (2 + cpu_ms) * MS, &ticks, (cpu_ms + 9) / 10);
		ts += (2 + cpu_ms) * MS;
	}
	end(t, a);
}

/* Synthetic: an optimizer's step that issues nothing for 20 ms computes on
 * the host (a launch would have ended the GPU's idle gap): CPU work (C1), not
 * launch overhead; 4 ms in the optimizer's Python stays launch overhead. */
static void test_silent_optimizer(void)
{
	struct trace t;
	struct analysis a;

	optimizer_steps(20, &t, &a);
	CHECK(a.idle_by_cause[IDLE_HOST_COMPUTE] > 10 * a.idle_by_cause[IDLE_LAUNCH_OVERHEAD] &&
	      a.findings.n && !strcmp(a.findings.v[0].cause, "C1"),
	      "20 ms in the optimizer issuing nothing: CPU work (%.0f ms) over launching (%.0f ms), %s first",
	      a.idle_by_cause[IDLE_HOST_COMPUTE] / 1e6, a.idle_by_cause[IDLE_LAUNCH_OVERHEAD] / 1e6,
	      a.findings.n ? a.findings.v[0].cause : "-");
	analysis_free(&a);
	trace_free(&t);

	optimizer_steps(4, &t, &a);
	CHECK(a.idle_by_cause[IDLE_LAUNCH_OVERHEAD] > 10 * a.idle_by_cause[IDLE_HOST_COMPUTE],
	      "4 ms in the optimizer: launching (%.0f ms) over CPU work (%.0f ms)",
	      a.idle_by_cause[IDLE_LAUNCH_OVERHEAD] / 1e6, a.idle_by_cause[IDLE_HOST_COMPUTE] / 1e6);
	analysis_free(&a);
	trace_free(&t);
}

/* 60 steps of a body of nine kernels (a matrix product and eight
 * elementwise kernels, 5 us each, 10 us apart) run twelve times in a row,
 * then the loss and the optimizer's kernel; the training thread's stack at
 * `st` throughout. */
static void repeated_body_steps(uint32_t st, struct trace *t, struct analysis *a)
{
	static const char *const body[] = { "sm90_xmma_gemm_bf16bf16_bf16f32", "elementwise_kernel_add",
					    "elementwise_kernel_mul", "elementwise_kernel_gelu",
					    "elementwise_kernel_div", "elementwise_kernel_sub",
					    "elementwise_kernel_exp", "elementwise_kernel_neg", "elementwise_kernel_abs" };
	uint64_t ts = 1000 * MS, ticks = 0;
	/* a GPU of 132 SMs (C10 weighs the grids against them) */
	uint64_t gi[GW_GINFO_NF] = { 0, 0x1ffff, gw_intern(&w, "Synthetic GPU"), 0, 0, 132, 81920, 5, 5, 16, 16,
				     (uint64_t)-1, 1, 700000, 700000, 700000, 9, 0, 0 };

	gw_emit(&w, GW_REC_GPU_INFO, gi, GW_GINFO_NF);
	for (int s = 0; s < 60; s++) {
		uint64_t s0 = ts;

		for (int c = 0; c < 12; c++)
			for (int k = 0; k < 9; k++) {
				kernel(ts, 5 * US, body[k]);
				ts += 15 * US;
			}
		kernel(ts, 20 * US, "cross_entropy_loss_forward"); /* the step's own end */
		kernel(ts + 30 * US, 20 * US, "multi_tensor_apply_kernel_AdamFunctor");
		ts += 150 * US;
		for (uint64_t x = s0 + MS / 4; x < ts; x += MS / 2)
			sample(x, PID, PID, st);
		cpu_between(s0, ts, &ticks, 1);
	}
	end(t, a);
}

/* Synthetic: a body of kernels repeated twelve times a step, launch-bound.
 * Launched from the user's own loop it is a loop of small kernels (C10);
 * launched inside a model library's modules (a Hugging Face transformer's
 * twelve identical layers) it is the model's stack, run once a step: no
 * C10, a bigger batch or a graph is the fix. */
static void test_layer_stack_not_loop(void)
{
	struct trace t;
	struct analysis a;

	begin("sampled");
	repeated_body_steps(stack("/home/u/proj/model.py|scan|30", "/home/u/proj/train.py|main|77", NULL), &t, &a);
	CHECK(finding(&a, "C10") != NULL, "the user's loop: C10 (%s first)", a.findings.n ? a.findings.v[0].cause : "-");
	analysis_free(&a);
	trace_free(&t);

	begin("sampled");
	repeated_body_steps(stack("/venv/lib/python3.11/site-packages/torch/nn/modules/linear.py|forward|125",
				  "/venv/lib/python3.11/site-packages/transformers/models/bert/modeling_bert.py|forward|640",
				  "/home/u/proj/train.py|main|77"), &t, &a);
	CHECK(finding(&a, "C10") == NULL && finding(&a, "C4") != NULL,
	      "a transformer's layers: no C10, C4 (%s first)", a.findings.n ? a.findings.v[0].cause : "-");
	analysis_free(&a);
	trace_free(&t);
}

/* The extra work of activity_steps() in the user's function `fn` (its
 * stacks in the model's code below it), read into t and a. */
static void extra_work_in(const char *fn, struct trace *t, struct analysis *a)
{
	char at70[96], at72[96];

	snprintf(at70, sizeof(at70), "/home/u/proj/train.py|%s|70", fn);
	snprintf(at72, sizeof(at72), "/home/u/proj/train.py|%s|72", fn);
	begin("sampled");
	uint32_t model = model_stack();
	uint32_t inner = stack("/venv/lib/python3.11/site-packages/torch/nn/modules/conv.py|forward|450", at70,
			       "/home/u/proj/train.py|main|99");
	uint32_t own = stack(at72, "/home/u/proj/train.py|main|99", NULL);

	activity_steps(model, inner, own, GW_PYSTATE_RUN, 0);
	end(t, a);
}

/* Synthetic: the same extra work in the user's validate() (its stacks in
 * the model's code below validate), a pass inside the loop every 10 steps:
 * evaluation, C14; the same work at a line of a function named otherwise
 * is no activity, nor host work alone in a function named like one. */
static void test_eval_activity(void)
{
	struct trace t;
	struct analysis a;

	extra_work_in("validate", &t, &a);
	const struct finding *f = finding(&a, "C14");

	CHECK(a.act[ACT_EVAL].runs == 10 && a.act[ACT_CHECKPOINT].wall_ns == 0, "evaluation: %u runs",
	      a.act[ACT_EVAL].runs);
	CHECK(f && strstr(f->title, "Evaluation inside the training loop 9 times in the 9 steps recorded in "
				    "validate (train.py:70)"), "title: %s", f ? f->title : "-");
	CHECK(f && a.findings.v[0].cause == f->cause, "C14 ranks first");
	analysis_free(&a);
	trace_free(&t);

	extra_work_in("report", &t, &a);
	CHECK(a.act[ACT_EVAL].wall_ns == 0 && a.act[ACT_CHECKPOINT].wall_ns == 0,
	      "work in report(): no activity");
	analysis_free(&a);
	trace_free(&t);

	/* a function named like an evaluation that only computes on the host
	 * (an SSIM's `_filter_valid` in SciPy), issuing no GPU work: no
	 * evaluation */
	begin("sampled");
	uint32_t filt = stack("/venv/lib/python3.11/site-packages/scipy/ndimage/_filters.py|correlate1d|100",
			      "/home/u/proj/train.py|_filter_valid|70", "/home/u/proj/train.py|main|99");

	activity_steps(model_stack(), filt, filt, GW_PYSTATE_RUN, 0);
	end(&t, &a);
	CHECK(a.act[ACT_EVAL].wall_ns == 0, "host-only work in _filter_valid(): no evaluation (%.0f ms)",
	      a.act[ACT_EVAL].wall_ns / 1e6);
	analysis_free(&a);
	trace_free(&t);

	/* validate() running the user's own model code: the finding names
	 * validate(), what the user runs less often, not Block.forward */
	begin("sampled");
	uint32_t model = model_stack();
	uint32_t inner = stack4("/venv/lib/python3.11/site-packages/torch/nn/modules/conv.py|forward|450",
				"/home/u/proj/model.py|Block.forward|30", "/home/u/proj/train.py|validate|70",
				"/home/u/proj/train.py|main|99");
	uint32_t own = stack("/home/u/proj/train.py|validate|72", "/home/u/proj/train.py|main|99", NULL);

	activity_steps(model, inner, own, GW_PYSTATE_RUN, 0);
	end(&t, &a);
	f = finding(&a, "C14");
	CHECK(f && strstr(f->title, "in validate (train.py:70)") && !strstr(f->title, "Block.forward"),
	      "an evaluation running the user's model is named by its function: %s", f ? f->title : "-");
	analysis_free(&a);
	trace_free(&t);
}

/* 100 steps: a 2 ms kernel and 6 ms of gap; the steps in `lng` last 60 ms
 * (a 58 ms gap: compilation, autotuning, a validation pass). */
static void long_steps(const int *lng, size_t nl)
{
	uint64_t ts = 1000 * MS;

	for (int s = 0; s < 100; s++) {
		int l = 0;

		for (size_t i = 0; i < nl; i++)
			l |= lng[i] == s;
		kernel(ts, 2 * MS, "conv");
		kernel(ts + 3 * MS, 1 * MS, "gemm");
		ts += l ? 60 * MS : 8 * MS;
	}
	kernel(ts, 2 * MS, "conv");
}

/* Synthetic: the first steps much longer than any later one are warm-up,
 * kept with the start-up; long steps that recur later are the loop's. */
static void test_warmup_steps(void)
{
	struct trace t;
	struct analysis a;
	const int first[] = { 4, 5, 6 }, recur[] = { 5, 40, 78 };

	begin(NULL);
	long_steps(first, 3);
	end(&t, &a);
	size_t n = a.steps.n + a.warmup_steps;

	CHECK(a.warmup_steps >= 5 && a.warmup_steps <= 7 && a.steps.n + 10 > n * 9 / 10,
	      "warm-up: %u steps (the 3 long ones and those before them), %zu left", a.warmup_steps, a.steps.n);
	CHECK(a.startup_ns >= 180 * MS, "start-up holds them: %.1f ms", a.startup_ns / 1e6);
	analysis_free(&a);
	trace_free(&t);

	begin(NULL);
	long_steps(recur, 3);
	end(&t, &a);
	CHECK(a.warmup_steps == 0 && a.steps.n >= 95, "recurring long steps stay: %u, %zu steps",
	      a.warmup_steps, a.steps.n);
	analysis_free(&a);
	trace_free(&t);
}

/* Synthetic: a kernel, then 300 ms of start-up in which the training thread
 * compiles (Dynamo under train.py:40), then 100 steady steps: the start-up's
 * compilation and its line are found. */
static void test_startup_parts(void)
{
	struct trace t;
	struct analysis a;

	begin("sampled");
	uint32_t comp = stack("/venv/lib/python3.11/site-packages/torch/_dynamo/eval_frame.py|_fn|600",
			      "/home/u/proj/train.py|main|40", NULL);
	uint32_t model = model_stack();

	kernel(700 * MS, MS, "init");
	for (uint64_t k = 0; k < 300; k++)
		sample_state(700 * MS + k * MS + MS / 2, PID, PID, comp, GW_PYSTATE_RUN);
	cpu_steps(0, (const uint32_t[8]){ model, model, model, model, model, model, model, model });
	end(&t, &a);
	CHECK(a.startup.compile_ns > 290 * MS && a.startup.compile_ns <= a.startup_ns,
	      "compiled %.1f ms of a %.1f ms start-up (want 300)", a.startup.compile_ns / 1e6, a.startup_ns / 1e6);
	CHECK(a.startup.compile_line == 40 && !strcmp(a.t->names.v[a.startup.compile_file], "/home/u/proj/train.py"),
	      "compiled at train.py:40 (line %u)", a.startup.compile_line);
	analysis_free(&a);
	trace_free(&t);

	/* the same start-up spent starting loader workers: said as such */
	begin("sampled");
	uint32_t ws = worker_start_stack();

	model = model_stack();
	kernel(700 * MS, MS, "init");
	for (uint64_t k = 0; k < 300; k++)
		sample_state(700 * MS + k * MS + MS / 2, PID, PID, ws, GW_PYSTATE_SLEEP);
	cpu_steps(0, (const uint32_t[8]){ model, model, model, model, model, model, model, model });
	end(&t, &a);
	char msg[512];

	CHECK(a.startup.workers_ns > 290 * MS && (a.facts.startup_said & SAID_WORKERS) &&
		      startup_parts_text(msg, sizeof(msg), &a) && strstr(msg, "started worker processes for"),
	      "started workers %.1f ms of the start-up, said", a.startup.workers_ns / 1e6);
	analysis_free(&a);
	trace_free(&t);
}

/* 100 steps: 60 kernels of 20 us with 25 us launch gaps, then a 2 ms
 * kernel waited for by a stream synchronization whose stack is `sync_st`,
 * then 1 ms before the next step's first launch. */
static void launch_and_sync_steps(uint32_t model, uint32_t sync_st)
{
	uint64_t ts = 1000 * MS;

	for (int s = 0; s < 100; s++) {
		uint64_t t = ts;

		for (int k = 0; k < 60; k++, t += 45 * US)
			kernel(t, 20 * US, "small");
		kernel(t, 2 * MS, "big");
		uint64_t v[GW_API_NF] = { t + 10 * US, t + 2 * MS + 5 * US, 131, PID, 0,
					  gw_intern(&w, "cudaStreamSynchronize"), 2, sync_st };

		gw_emit(&w, GW_REC_API, v, GW_API_NF);
		for (uint64_t k = 0; ts + k * MS < t + 3 * MS; k++)
			sample_state(ts + k * MS + MS / 2, PID, PID, model, GW_PYSTATE_RUN);
		ts = t + 3 * MS;
	}
}

/* Synthetic: a sync every step inside the model's forward keeps the
 * launch-bound fix (CUDA graphs) from working: C9 ranks before C4, and
 * C4's evidence says so; the same sync outside the model does not move. */
static void test_sync_blocks_graphs(void)
{
	struct trace t;
	struct analysis a;

	for (int inside = 1; inside >= 0; inside--) {
		begin("sampled");
		uint32_t model = stack("/venv/lib/python3.11/site-packages/torch/nn/modules/linear.py|forward|120",
				       "/home/u/proj/train.py|main|95", NULL);
		uint32_t st = inside ? stack("/venv/lib/python3.11/site-packages/torch/nn/modules/module.py|_call_impl|1500",
					     "/home/u/proj/train.py|main|95", NULL)
				     : stack("/home/u/proj/train.py|main|99", NULL, NULL);

		launch_and_sync_steps(model, st);
		end(&t, &a);
		const struct finding *c9 = finding(&a, "C9"), *c4 = finding(&a, "C4");
		size_t i9 = c9 ? (size_t)(c9 - a.findings.v) : 99, i4 = c4 ? (size_t)(c4 - a.findings.v) : 99;

		CHECK(c9 && c4 && c9->severity >= SEV_WARN, "C9 and C4 found (%s, %s)", c9 ? "C9" : "-",
		      c4 ? "C4" : "-");
		if (inside) {
			CHECK(i9 < i4, "inside the model: C9 (%zu) ranks before C4 (%zu)", i9, i4);
			CHECK(c4 && (c4->severity < SEV_WARN || strstr(c4->evidence, "keeps this fix from working")),
			      "C4, at warning or above, says C9 blocks it");
			CHECK(c9 && strstr(c9->evidence, "inside the model"), "C9 says where");
			CHECK(c9 && c9->blocks[0] && !strcmp(c9->blocks[0], "C4"), "C9 blocks C4's fix");
			CHECK(c9 && strstr(c9->evidence, "1.0 of them per step"), "one place per sync (the sync and "
			      "its copy counted once): %s", c9 ? c9->evidence : "");
		} else {
			CHECK(!c9 || (!strstr(c9->evidence, "inside the model") && !c9->blocks[0]),
			      "outside the model: not said, blocks nothing");
		}
		analysis_free(&a);
		trace_free(&t);
	}
}

/* 100 steps of 8 ms in `model` (cpu_steps), then 300 ms after the last one:
 * 30 kernels `kname` of `kdur` each, 10 ms apart, the training thread in
 * `tail` throughout; loaded and analysed into t, a. */
static void steps_then_tail(struct trace *t, struct analysis *a, uint32_t model, uint32_t tail, uint64_t kdur,
			    const char *kname)
{
	uint64_t ts = 1000 * MS + 100 * 8 * MS;

	cpu_steps(0, (const uint32_t[8]){ model, model, model, model, model, model, model, model });
	for (int k = 0; k < 30; k++, ts += 10 * MS) {
		kernel(ts, kdur, kname);
		for (int q = 0; q < 10; q++)
			sample(ts + (uint64_t)q * MS + MS / 2, PID, PID, tail);
	}
	end(t, a);
}

/* Synthetic: 100 steps (8 ms each), then an evaluation after the last one:
 * 300 ms of forward kernels (30, fewer than the steps' 100) under evaluate(),
 * called at train.py:120. The tail is kept apart and said, with the line,
 * and no finding claims it. */
static void test_tail_evaluation(int decorated)
{
	struct trace t;
	struct analysis a;

	begin("sampled");
	uint32_t model = model_stack();
	/* @torch.no_grad() puts its wrapper between evaluate and its caller:
	 * the call is still the user's line */
	uint32_t ev = decorated ? stack("/home/u/proj/train.py|evaluate|60",
					"/venv/lib/python3.11/site-packages/torch/utils/_contextlib.py|decorate_context|116",
					"/home/u/proj/train.py|main|120")
				: stack("/venv/lib/python3.11/site-packages/torch/nn/modules/conv.py|forward|450",
					"/home/u/proj/train.py|evaluate|60", "/home/u/proj/train.py|main|120");

	steps_then_tail(&t, &a, model, ev, 9 * MS, "conv_eval");
	CHECK(a.tail.ns > 290 * MS && a.tail.ns < 320 * MS, "tail %.1f ms (want about 300)", a.tail.ns / 1e6);
	CHECK(a.tail.eval_ns > 250 * MS && a.tail.eval_ns <= a.tail.ns, "evaluated %.1f ms of it",
	      a.tail.eval_ns / 1e6);
	CHECK(a.tail.eval_line == 120 && !strcmp(a.t->names.v[a.tail.eval_file], "/home/u/proj/train.py"),
	      "at the line that called evaluate (train.py:%u)", a.tail.eval_line);
	CHECK(!finding(&a, "C14") || finding(&a, "C14")->severity < SEV_WARN, "seen once: no C14 claim");
	analysis_free(&a);
	trace_free(&t);
}

/* Synthetic: the same 100 steps, then a checkpoint after the last one:
 * 300 ms under torch.save in save_ckpt(), called at train.py:121, while the
 * GPU copies the state out. Said as the tail's checkpoint, with the line;
 * no finding claims it. */
static void test_tail_checkpoint(void)
{
	struct trace t;
	struct analysis a;

	begin("sampled");
	uint32_t model = model_stack();
	uint32_t save = stack("/venv/lib/python3.11/site-packages/torch/serialization.py|save|900",
			      "/home/u/proj/train.py|save_ckpt|70", "/home/u/proj/train.py|main|121");

	steps_then_tail(&t, &a, model, save, 1 * MS, "copy_state");
	CHECK(a.tail.ns > 280 * MS && a.tail.ns < 320 * MS && a.facts.tail_ckpt_shown && !a.facts.tail_eval_shown,
	      "tail %.1f ms, its checkpoint said (want about 300 ms)", a.tail.ns / 1e6);
	CHECK(a.tail.ckpt_ns > 250 * MS && a.tail.ckpt_ns <= a.tail.ns && a.tail.ckpt_line == 121,
	      "serialized %.1f ms of it, at train.py:%u (want 121)", a.tail.ckpt_ns / 1e6, a.tail.ckpt_line);
	CHECK(!finding(&a, "C14") || finding(&a, "C14")->severity < SEV_WARN, "seen once: no C14 claim");
	analysis_free(&a);
	trace_free(&t);
}

/* Real: c14_torch_fastspeech2_griffinlim_audio_every_n synthesizes audio
 * every 20 steps (an eval-mode forward, then Griffin-Lim in NumPy); its
 * recording ended in the first synthesis, 1.8 s after 19 steps of 0.66 s,
 * in a function no step ran. Said once, with its call line, as too little
 * to diagnose (it was "healthy"); a tail of the steps' own code (a
 * validation weighed in the steps, a slow iteration) is not. */
static void test_tail_new_work(void)
{
	static const char *const weighed[] = { "tests/fixtures/corpus/c14_lightning_val_every10.gwr",
					       "tests/fixtures/corpus/c9_torch_mask_index.gwr" };
	struct trace t;
	struct analysis a;

	if (analyze_real("tests/fixtures/corpus/c14_torch_fastspeech2_griffinlim_audio_every_n.gwr", &t, &a) < 0)
		return;
	CHECK(a.too_little && strstr(a.too_little_why, "synth_one_sample") &&
	      strstr(a.too_little_why, "c14_torch_fastspeech2_griffinlim_audio_every_n.py:282"),
	      "too little, the synthesis named: %s", a.too_little_why);
	CHECK(a.tail.loop_called && a.tail.loop_called_ns > (double)a.steady_ns, "the new work %.2f s, steps %.2f s",
	      a.tail.loop_called_ns / 1e9, (double)a.steady_ns / 1e9);
	analysis_free(&a);
	trace_free(&t);
	for (size_t i = 0; i < sizeof(weighed) / sizeof(weighed[0]); i++) {
		if (analyze_real(weighed[i], &t, &a) < 0)
			continue;
		CHECK(!a.too_little && !a.tail.loop_called && a.tail.loop_ns > (double)a.steady_ns,
		      "%s: a long tail in the loop, in the steps' own code: diagnosed (%s)", weighed[i],
		      a.too_little_why);
		analysis_free(&a);
		trace_free(&t);
	}
}

/* Synthetic: a job (start to exit, as recorded: 0 to end_ns) whose first GPU
 * operation comes at 1 ms and whose 100 steps of 8 ms start at 1 s; in between
 * the training thread is in the compiler `file` (called at train.py:30).
 * exit is the job's exit status, stopped the recording's record.stopped_early
 * (NULL: it ran to the end). */
/* startup_job()'s variants */
enum { SJ_NO_START = 1, SJ_INCOMPLETE = 2, SJ_RING = 4, SJ_MIXED = 8, SJ_SHORT_COMPILE = 16,
       SJ_CACHE_ENV = 32 };

static void startup_job_opt(struct trace *t, struct analysis *a, const char *file, const char *exit,
			    const char *stopped, uint64_t end_ns, unsigned tried, unsigned opt)
{
	char fr[160];

	begin_incomplete = (opt & SJ_INCOMPLETE) != 0;
	begin("sampled");
	begin_incomplete = 0;
	if (!(opt & SJ_NO_START))
		gw_emit_meta(&w, "record.start_ns", "1000"); /* the recorder's clock: only the span counts */
	snprintf(fr, sizeof(fr), "%llu", 1000 + (unsigned long long)end_ns);
	gw_emit_meta(&w, "record.end_ns", fr);
	gw_emit_meta(&w, "record.exit_status", exit);
	if (stopped)
		gw_emit_meta(&w, "record.stopped_early", stopped);
	if (opt & SJ_RING)
		gw_emit_meta(&w, "record.ring_bytes", "1048576");
	if (opt & SJ_CACHE_ENV)
		gw_emit_meta(&w, "env.JAX_COMPILATION_CACHE_DIR", "/data/jax-cache");
	snprintf(fr, sizeof(fr), "%s|compile|300", file);
	uint32_t model = model_stack(), comp = stack(fr, "/home/u/proj/train.py|main|30", NULL);
	uint32_t cupy = stack("/venv/lib/python3.12/site-packages/cupy/cuda/compiler.py|compile|90",
			      "/home/u/proj/train.py|main|31", NULL);
	uint32_t user = stack("/home/u/proj/train.py|setup|12", "/home/u/proj/train.py|main|29", NULL);

	kernel(MS, 100 * US, "init_params");
	for (unsigned i = 0; i < tried; i++) { /* 5 ms each, of four names, every 20 ms */
		char nm[32];

		snprintf(nm, sizeof(nm), "conv_algo_%u", i % 4);
		kernel(100 * MS + i * 20 * MS, 5 * MS, nm);
	}
	/* the start-up: in the compiler throughout; SJ_MIXED: CuPy's for its
	 * last 400 ms; SJ_SHORT_COMPILE: the user's own code but for 150 ms */
	for (uint64_t ts = 2 * MS; ts < 1000 * MS; ts += MS)
		sample(ts, PID, PID, (opt & SJ_MIXED) && ts >= 600 * MS ? cupy
				     : (opt & SJ_SHORT_COMPILE) && ts >= 150 * MS ? user : comp);
	cpu_steps(0, (const uint32_t[8]){ model, model, model, model, model, model, model, model });
	end(t, a);
}

static void startup_job(struct trace *t, struct analysis *a, const char *file, const char *exit,
			const char *stopped, uint64_t end_ns, unsigned tried)
{
	startup_job_opt(t, a, file, exit, stopped, end_ns, tried, 0);
}

/* The start-up finding: shown for a job that ran to its end, started up
 * for half of it or more, in a compiler whose output a persistent cache
 * keeps (XLA's, CuPy's), with the job's time over that time less the
 * compiling; not for torch.compile (no warm-start saving measured), a
 * job that failed or a recording cut short, or a start-up under half the
 * job. */
static void test_startup_finding(void)
{
	static const struct {
		const char *what, *file, *exit, *stopped;
		uint64_t end_ns;
		int shown;
		enum startup_cache kind;
	} c[] = {
		{ "XLA, ran to its end", "/venv/lib/python3.12/site-packages/jax/_src/compiler.py", "0", NULL,
		  1900 * MS, 1, STARTUP_CACHE_XLA },
		{ "CuPy, ran to its end", "/venv/lib/python3.12/site-packages/cupy/cuda/compiler.py", "0", NULL,
		  1900 * MS, 1, STARTUP_CACHE_CUPY },
		{ "torch.compile", "/venv/lib/python3.12/site-packages/torch/_inductor/compile_fx.py", "0", NULL,
		  1900 * MS, 0, STARTUP_CACHE_NONE },
		{ "killed", "/venv/lib/python3.12/site-packages/jax/_src/compiler.py", "137", NULL, 1900 * MS, 0,
		  STARTUP_CACHE_XLA },
		{ "cut by --duration", "/venv/lib/python3.12/site-packages/jax/_src/compiler.py", "0",
		  "duration", 1900 * MS, 0, STARTUP_CACHE_XLA },
		{ "start-up under half the job", "/venv/lib/python3.12/site-packages/jax/_src/compiler.py", "0",
		  NULL, 2100 * MS, 0, STARTUP_CACHE_XLA },
	};

	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		struct trace t;
		struct analysis a;
		const struct startup_finding *sf = &a.startup_finding;

		startup_job(&t, &a, c[i].file, c[i].exit, c[i].stopped, c[i].end_ns, 0);
		CHECK(a.startup_ns > 990 * MS && a.startup_ns < 1010 * MS, "%s: start-up %.0f ms (want 999)",
		      c[i].what, a.startup_ns / 1e6);
		CHECK(a.startup.compile_ns > 950 * MS, "%s: compiled %.0f ms", c[i].what, a.startup.compile_ns / 1e6);
		CHECK(a.facts.startup_said == SAID_COMPILE && a.startup.first_ops_ns == 0,
		      "%s: the steps section says the compiling alone (%u)", c[i].what, a.facts.startup_said);
		CHECK(a.startup.cache_kind == c[i].kind, "%s: compiler %d (want %d)", c[i].what,
		      (int)a.startup.cache_kind, (int)c[i].kind);
		CHECK(sf->shown == c[i].shown, "%s: start-up finding %s", c[i].what, c[i].shown ? "shown" : "not shown");
		CHECK(a.facts.startup_cache_said == (c[i].kind != STARTUP_CACHE_NONE), "%s: the steps section %s "
		      "the cache", c[i].what, c[i].kind != STARTUP_CACHE_NONE ? "names" : "does not name");
		if (sf->shown) {
			double want = 1.9 / (1.9 - a.startup.cache_ns / 1e9);

			CHECK(sf->job_ns == 1900 * MS, "%s: the job as recorded, %.0f ms", c[i].what, sf->job_ns / 1e6);
			CHECK(sf->saved_ns == a.startup.cache_ns, "%s: a warm start saves the cached compiling",
			      c[i].what);
			CHECK(sf->speedup > want * 0.999 && sf->speedup < want * 1.001, "%s: %.3fx (want %.3fx)",
			      c[i].what, sf->speedup, want);
			CHECK(sf->speedup_lo < sf->speedup && sf->speedup < sf->speedup_hi, "%s: a range around it",
			      c[i].what);
			CHECK(sf->saved_hi_ns <= (double)a.startup_ns, "%s: never more than the start-up", c[i].what);
			CHECK(strstr(sf->fix, c[i].kind == STARTUP_CACHE_XLA ? "jax_compilation_cache_dir"
									     : "CUPY_CACHE_DIR") != NULL,
			      "%s: the compiler's own cache: %s", c[i].what, sf->fix);
			CHECK(a.startup.compile_line == 30, "%s: at train.py:%u", c[i].what, a.startup.compile_line);
		}
		analysis_free(&a);
		trace_free(&t);
	}
}

/* The start-up finding's edges, on the same synthetic job: no start time
 * or no record.complete (the job's length or end not known), a --ring
 * recording, a start-up mostly not compiling (a warm cache would save under
 * a fifth of the job), compiling in both XLA and CuPy (the larger names
 * the fix, all of it counts), the cap at 95% of the job binding, and a
 * cache directory the job set (said in the evidence). */
static void test_startup_edges(void)
{
	static const char *xla = "/venv/lib/python3.12/site-packages/jax/_src/compiler.py";
	static const struct {
		const char *what;
		unsigned opt;
		uint64_t end_ns;
		int shown;
	} c[] = {
		{ "no record.start_ns", SJ_NO_START, 1900 * MS, 0 },
		{ "no record.complete", SJ_INCOMPLETE, 1900 * MS, 0 },
		{ "--ring", SJ_RING, 1900 * MS, 0 },
		{ "compiling 150 ms of a 1 s start-up", SJ_SHORT_COMPILE, 1900 * MS, 0 },
		{ "XLA 600 ms, CuPy 400 ms", SJ_MIXED, 1900 * MS, 1 },
		{ "a job of 1.05 s: the 95% cap", 0, 1050 * MS, 1 },
		{ "a cache directory set", SJ_CACHE_ENV, 1900 * MS, 1 },
	};

	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		struct trace t;
		struct analysis a;
		const struct startup_finding *sf = &a.startup_finding;

		startup_job_opt(&t, &a, xla, "0", NULL, c[i].end_ns, 0, c[i].opt);
		CHECK(sf->shown == c[i].shown, "%s: start-up finding %s", c[i].what, c[i].shown ? "shown" : "not shown");
		CHECK(sf->saved_lo_ns <= sf->saved_ns && sf->saved_ns <= sf->saved_hi_ns &&
		      sf->saved_hi_ns <= (double)a.startup_ns && sf->saved_hi_ns <= 0.95 * sf->job_ns + 1,
		      "%s: saved %.0f <= %.0f <= %.0f ms, within the start-up and 95%% of the job", c[i].what,
		      sf->saved_lo_ns / 1e6, sf->saved_ns / 1e6, sf->saved_hi_ns / 1e6);
		if (c[i].opt & SJ_MIXED) {
			CHECK(a.startup.cache_kind == STARTUP_CACHE_XLA && a.startup.cache_ns > 950 * MS &&
			      !strcmp(sf->compiler, "XLA") && strstr(sf->fix, "jax_compilation_cache_dir"),
			      "%s: XLA's fix, both compilers' time (%.0f ms)", c[i].what, a.startup.cache_ns / 1e6);
		}
		if (c[i].end_ns == 1050 * MS) {
			CHECK(sf->saved_hi_ns > 0.95 * 1050 * MS - 1 && sf->saved_hi_ns < 0.95 * 1050 * MS + 1 &&
			      isfinite(sf->speedup_hi) && sf->speedup_hi < 21,
			      "%s: at most %.1f ms, %.1fx", c[i].what, sf->saved_hi_ns / 1e6, sf->speedup_hi);
		}
		if (c[i].opt & SJ_CACHE_ENV)
			CHECK(strstr(sf->evidence, "JAX_COMPILATION_CACHE_DIR=/data/jax-cache") != NULL,
			      "%s: the evidence says the cache was cold: %s", c[i].what, sf->evidence);
		if (c[i].opt & SJ_SHORT_COMPILE)
			CHECK(a.startup_ns > 990 * MS && a.startup.cache_ns < 160 * MS, "%s: %.0f ms cached of %.0f",
			      c[i].what, a.startup.cache_ns / 1e6, a.startup_ns / 1e6);
		analysis_free(&a);
		trace_free(&t);
	}
}

/* Synthetic: the same job whose start-up is the model's first convolution
 * (torch/nn/modules/conv.py: cuDNN set up, its kernels loaded, autotuned):
 * the model's first operations, neither compiling nor importing, and no
 * start-up finding (no cache keeps them). The GPU tried 40 candidates of 5
 * ms, of four names, that the steps never run: with the first kernel, 41
 * kernels of 5 names, 200.1 ms. */
static void test_startup_first_ops(void)
{
	struct trace t;
	struct analysis a;

	startup_job(&t, &a, "/venv/lib/python3.12/site-packages/torch/nn/modules/conv.py", "0", NULL, 1900 * MS,
		    40);
	CHECK(a.steps.n >= 95 && a.startup_ns > 990 * MS, "the steps after the candidates: %zu, start-up %.0f ms",
	      a.steps.n, a.startup_ns / 1e6);
	CHECK(a.startup.once_kernels == 41 && a.startup.once_names == 5 &&
	      a.startup.once_ns > 200.0 * MS && a.startup.once_ns < 200.2 * MS,
	      "kernels that never run again: %llu of %u names, %.1f ms",
	      (unsigned long long)a.startup.once_kernels, a.startup.once_names, a.startup.once_ns / 1e6);
	CHECK(a.startup.first_ops_ns > 950 * MS && a.startup.compile_ns == 0 && a.startup.import_ns == 0,
	      "first operations %.0f ms, compiled %.0f ms, imported %.0f ms", a.startup.first_ops_ns / 1e6,
	      a.startup.compile_ns / 1e6, a.startup.import_ns / 1e6);
	CHECK(a.facts.startup_said == (SAID_FIRST_OPS | SAID_ONCE), "the steps section says the first operations "
	      "and the kernels tried once (%u)",
	      a.facts.startup_said);
	CHECK(!a.startup_finding.shown && !a.facts.startup_cache_said, "no cache claimed for them");
	analysis_free(&a);
	trace_free(&t);
}

/* 100 steps of two halves, each 30 kernels of 20 us with 25 us launch
 * gaps, then a 2 ms kernel that a call named `call` of the training thread
 * (stack `st`) waits for, then 300 us before the next launch. */
static void two_waits_steps(uint32_t model, uint32_t st, const char *call)
{
	uint64_t ts = 1000 * MS;

	for (int s = 0; s < 100; s++) {
		uint64_t t = ts;

		for (int half = 0; half < 2; half++) {
			for (int k = 0; k < 30; k++, t += 45 * US)
				kernel(t, 20 * US, half ? "small_b" : "small_a");
			kernel(t, 2 * MS, half ? "big_b" : "big_a");
			uint64_t v[GW_API_NF] = { t + 10 * US, t + 2 * MS + 5 * US, 131, PID, 0,
						  gw_intern(&w, call), 2, st };

			gw_emit(&w, GW_REC_API, v, GW_API_NF);
			t += 2 * MS + 300 * US;
		}
		for (uint64_t k = 0; ts + k * MS < t; k++)
			sample_state(ts + k * MS + MS / 2, PID, PID, model, GW_PYSTATE_RUN);
		ts = t;
	}
}

/* Synthetic: two synchronizations a step in the user's own code (outside
 * any model): a CUDA graph can run from one read to the next, but two split
 * the step wherever it starts, so C9 blocks C4's fix; two frees of memory
 * (the caching allocator's, which a graph's pool makes none of) do not, nor
 * do two reads a step made by transformers' attention-mask check inside a
 * model's forward, which the library skips under torch.compile (2). */
static void test_two_reads_block_graphs(void)
{
	struct trace t;
	struct analysis a;

	for (int frees = 0; frees <= 2; frees++) {
		begin("sampled");
		uint32_t model = stack("/home/u/proj/solve.py|main|40", NULL, NULL);
		uint32_t st = frees == 2 ? stack4("/venv/lib/python3.12/site-packages/transformers/masking_utils.py|"
						  "_ignore_bidirectional_mask_sdpa|331",
						  "/venv/lib/python3.12/site-packages/transformers/masking_utils.py|"
						  "sdpa_mask|501",
						  "/venv/lib/python3.12/site-packages/torch/nn/modules/module.py|"
						  "Module._call_impl|1786",
						  "/home/u/proj/solve.py|main|44")
					 : stack("/home/u/proj/solve.py|main|44", NULL, NULL);

		two_waits_steps(model, st, frees == 1 ? "cudaFree" : "cudaStreamSynchronize");
		end(&t, &a);
		const struct finding *c9 = finding(&a, "C9"), *c4 = finding(&a, "C4");
		size_t i9 = c9 ? (size_t)(c9 - a.findings.v) : 99, i4 = c4 ? (size_t)(c4 - a.findings.v) : 99;

		CHECK(c9 && c4, "C9 and C4 found (%s, %s)", c9 ? "C9" : "-", c4 ? "C4" : "-");
		CHECK(frees ? a.sync_read_gaps == 0 : a.sync_read_gaps >= 2 * (uint64_t)has_steps(&a),
		      "%s: %llu read gaps in %zu steps", frees == 1 ? "frees" : frees ? "mask checks" : "reads",
		      (unsigned long long)a.sync_read_gaps, has_steps(&a));
		if (!frees) {
			CHECK(i9 < i4, "two reads a step: C9 (%zu) ranks before C4 (%zu)", i9, i4);
			CHECK(c9 && c9->blocks[0] && !strcmp(c9->blocks[0], "C4") &&
				      strstr(c9->evidence, "split the step into separate captures"),
			      "C9 blocks C4's fix and says why: %s", c9 ? c9->evidence : "");
		} else {
			CHECK(c9 && !c9->blocks[0], "%s block nothing", frees == 1 ? "frees" : "compile-skipped checks");
		}
		analysis_free(&a);
		trace_free(&t);
	}
}

/* Real recordings: the sites of busy time and of oversubscription. C8's
 * are the lines that launch the model's work, not the optimizer's update or
 * gradient clipping: c8_hf_t5_fp32's forward line (58), the one to wrap in
 * autocast. C7's are the job's other threads that ran while the training
 * thread waited for a core: c7_torch_pool_intraop_threads' pool processes
 * at line 72, where the training thread's own line (108) waited. */
static void test_busy_and_taker_sites(void)
{
	static const struct {
		const char *file, *cause, *src;
		uint32_t line;
		const char *evidence;
	} want[] = {
		{ "tests/fixtures/corpus/c8_hf_t5_fp32.gwr", "C8", "c8_hf_t5_fp32.py", 58, NULL },
		{ "tests/fixtures/corpus/c7_torch_pool_intraop_threads.gwr", "C7", "c7_torch_pool_intraop_threads.py",
		  72, "took the cores" },
	};

	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		struct trace t;
		struct analysis a;

		if (analyze_real(want[i].file, &t, &a) < 0)
			continue;
		const struct finding *f = finding(&a, want[i].cause);
		const struct site *s0 = f && f->nsites ? &a.sites.v[f->sites[0].site] : NULL;
		const char *file = s0 ? t.names.v[s0->file] : "";
		const char *base = strrchr(file, '/') ? strrchr(file, '/') + 1 : file;

		CHECK(s0 && !strcmp(base, want[i].src) && s0->line == want[i].line, "%s: %s's first site %s:%u (want %s:%u)",
		      want[i].file, want[i].cause, base, s0 ? s0->line : 0, want[i].src, want[i].line);
		if (want[i].evidence)
			CHECK(f && strstr(f->evidence, want[i].evidence), "%s: %s's evidence says whose lines: %s",
			      want[i].file, want[i].cause, f ? f->evidence : "-");
		analysis_free(&a);
		trace_free(&t);
	}
}

/* Real recordings: a synchronization read with its stack makes the user's
 * line a "synchronizing op" where the wait is a C method at that line
 * (.item() in c9_tv_activation_hooks' forward hook, line 51, under the
 * module's call), not where it is deep inside a library call that mostly
 * launches: h_hf_whisper_bf16.r2's model call (line 63) waits twice a step
 * inside HF's code, and its launch gaps are launching work; as launching
 * work, c11_hf_longdoc_eager_attention's model call (line 56) is C11's
 * first site (it had the line after it). */
static void test_sync_inside_library_call(void)
{
	static const struct {
		const char *file, *cause;
		uint32_t line;
		enum site_class cls;
	} want[] = {
		{ "tests/fixtures/corpus/c9_tv_activation_hooks.gwr", "C9", 51, SC_SYNC },
		{ "tests/fixtures/corpus/h_hf_whisper_bf16.r2.gwr", "C4", 63, SC_LAUNCH },
		{ "tests/fixtures/corpus/c11_hf_longdoc_eager_attention.gwr", "C11", 56, SC_LAUNCH },
	};

	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		struct trace t;
		struct analysis a;

		if (analyze_real(want[i].file, &t, &a) < 0)
			continue;
		const struct finding *f = finding(&a, want[i].cause);
		const struct site *s0 = f && f->nsites ? &a.sites.v[f->sites[0].site] : NULL;

		CHECK(s0 && s0->line == want[i].line && s0->cls == want[i].cls,
		      "%s: %s's first site line %u, %s (want %u, %s)", want[i].file, want[i].cause, s0 ? s0->line : 0,
		      s0 ? site_class_name((enum site_class)s0->cls) : "-", want[i].line, site_class_name(want[i].cls));
		analysis_free(&a);
		trace_free(&t);
	}
}

/* Real recordings: C6's sites are the lines whose uploads from pageable
 * memory the training thread's samples fell inside, not the code around
 * them. m_torch_cold_features_pageable reads each 6 MB clip with np.load
 * (line 148) and copies it with copy_() (149): the idle around the copies
 * is mostly the reads (C2's). m_cupy_ultrasound_pageable_asnumpy's uploads
 * stage through CuPy's pinned buffer, so no pageable upload holds samples:
 * its sites stay the idle's (line 156, the upload, before the blocking
 * read-back at 157, whose call waits for the GPU). */
static void test_pageable_copy_sites(void)
{
	static const struct {
		const char *file;
		uint32_t line;
		int staging;
	} want[] = {
		{ "tests/fixtures/corpus/m_torch_cold_features_pageable.gwr", 149, 1 },
		{ "tests/fixtures/corpus/c6_torch_mri_volume_serving.gwr", 79, 1 },
		{ "tests/fixtures/corpus/m_cupy_ultrasound_pageable_asnumpy.gwr", 156, 0 },
	};

	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		struct trace t;
		struct analysis a;

		if (analyze_real(want[i].file, &t, &a) < 0)
			continue;
		const struct finding *f = finding(&a, "C6");
		const struct finding_site *fs = f && f->nsites ? &f->sites[0] : NULL;
		const struct site *s0 = fs ? &a.sites.v[fs->site] : NULL;

		CHECK(s0 && s0->line == want[i].line && fs->staging == want[i].staging,
		      "%s: C6's first site line %u, staging %d (want %u, %d)", want[i].file, s0 ? s0->line : 0,
		      fs ? fs->staging : -1, want[i].line, want[i].staging);
		analysis_free(&a);
		trace_free(&t);
	}
}

/* Real recording: loader workers busy is not waiting for them while the
 * training thread runs on its CPU. c6_lightning_sentinel2_unpinned's 12
 * workers prepare batches throughout; what stays input wait is the wait for
 * the next batch (about 14% of the run; all gaps with the workers busy
 * would be 34%). The training thread's 11-16 ms after each batch's pageable
 * copy, its stacks in Lightning's batch_to_device, are that transfer's
 * (staging, C6), not launching: C6 comes first, its planted cause. */
static void test_busy_workers_running_thread(void)
{
	const char *file = "tests/fixtures/corpus/c6_lightning_sentinel2_unpinned.gwr";
	struct trace t;
	struct analysis a;
	const struct finding *first = NULL;

	if (analyze_real(file, &t, &a) < 0)
		return;
	double wait = (double)a.idle_by_cause[IDLE_DATA_WAIT] / (double)a.steady_ns;
	double staging = (double)a.idle_by_cause[IDLE_PAGEABLE] / (double)a.steady_ns;

	for (size_t i = 0; i < a.findings.n && !first; i++)
		if (a.findings.v[i].assessed)
			first = &a.findings.v[i];
	CHECK(wait > 0.1 && wait < 0.25, "%s: input wait %.1f%% of the run (want 10-25%%)", file, 100 * wait);
	CHECK(staging > 0.12, "%s: staging after the pageable copies %.1f%% of the run (want > 12%%)", file,
	      100 * staging);
	CHECK(first && !strcmp(first->cause, "C6"), "%s: first finding %s (want C6)", file, first ? first->cause : "-");
	analysis_free(&a);
	trace_free(&t);
}

/* Real recording: a SEG-Y reader on the training thread (the tango batch's
 * c2_torch_seismic_segy_crossline_cold) reads 4 KB traces cold, one seek and
 * read each, at line 163: its samples there are on a CPU (the kernel's read
 * path) and in D by turns. The line reads from storage, so its gaps are
 * storage's whichever state their samples caught: C2 holds most of the input
 * idle, its first site is that line, and it ranks before the input work on
 * the training thread (C1) that it explains. */
static void test_reading_line(void)
{
	const char *file = "tests/fixtures/corpus/c2_torch_seismic_segy_crossline_cold.gwr";
	struct trace t;
	struct analysis a;
	const struct finding *first = NULL, *c2;
	const struct site *s163 = NULL;

	if (analyze_real(file, &t, &a) < 0)
		return;
	double io = (double)a.idle_by_cause[IDLE_IO] / (double)a.steady_ns;
	double hc = (double)a.idle_by_cause[IDLE_HOST_COMPUTE] / (double)a.steady_ns;

	for (size_t i = 0; i < a.findings.n && !first; i++)
		if (a.findings.v[i].assessed)
			first = &a.findings.v[i];
	for (size_t i = 0; i < a.sites.n; i++)
		if (a.sites.v[i].line == 163 && strstr(site_file(&a, &a.sites.v[i]), "segy") && a.sites.v[i].reads_storage)
			s163 = &a.sites.v[i];
	c2 = finding(&a, "C2");
	CHECK(s163 && s163->disk_ns >= 0.15 * s163->held_ns && s163->disk_ns < 0.5 * s163->held_ns,
	      "%s: line 163 reads from storage, in D for %.0f%% of its time (want 15-50%%)", file,
	      s163 && s163->held_ns > 0 ? 100 * s163->disk_ns / s163->held_ns : 0);
	CHECK(io > 0.15 && hc < 0.1, "%s: storage %.1f%%, CPU work %.1f%% of the run (want > 15%%, < 10%%)", file,
	      100 * io, 100 * hc);
	CHECK(a.read_site_io_ns > 0.05 * (double)a.steady_ns, "%s: %.1f%% of the run at reading lines (want > 5%%)",
	      file, 100 * (double)a.read_site_io_ns / (double)a.steady_ns);
	CHECK(first && !strcmp(first->cause, "C2"), "%s: first finding %s (want C2)", file, first ? first->cause : "-");
	CHECK(c2 && site(&a, c2, 0) && site(&a, c2, 0)->line == 163, "%s: C2's first site at line %u (want 163)", file,
	      site(&a, c2, 0) ? site(&a, c2, 0)->line : 0);
	analysis_free(&a);
	trace_free(&t);
}

/* Real recordings: work every 10 steps seen twice in a 27-step window
 * (c14_hf_gc_empty_cache: gc.collect() and torch.cuda.empty_cache(), 460 ms
 * steps against 45 ms) is a periodic stall whose gain removes the training
 * thread's time in it; two storage stalls 160 steps apart in 396
 * (c2_storage) are no period; an HTTP upload inside a checkpoint found twice
 * stays the checkpoint's (c14_torch_http_ckpt_upload.6s), not a wait every N
 * steps of its own. */
static void test_periodic_twice(void)
{
	const char *gc = "tests/fixtures/corpus/c14_hf_gc_empty_cache.gwr";
	const char *io = "tests/fixtures/c2_storage.gwr";
	const char *up = "tests/fixtures/corpus/c14_torch_http_ckpt_upload.6s.gwr";
	struct trace t;
	struct analysis a;

	if (analyze_real(gc, &t, &a) < 0)
		return;
	unsigned n = 0;

	for (size_t i = 0; i < a.steps.n; i++)
		n += a.steps.v[i].periodic;
	const struct finding *f = finding(&a, "C14");

	CHECK(n == 2, "%s: %u periodic steps (want 2)", gc, n);
	CHECK(f && a.findings.v[0].cause == f->cause && strstr(f->title, "every 10 steps"), "%s: C14 first, "
	      "every 10 steps: %s", gc, f ? f->title : "-");
	/* measured 1.88x with the work every 1000 steps; as C1 it was 1.66x,
	 * and before the thread's time in it went with the fix, 1.01x */
	CHECK(f && f->speedup > 1.5 && f->speedup < 1.9, "%s: C14 %.2fx (want 1.5-1.9x)", gc, f ? f->speedup : 0);
	CHECK(!finding(&a, "C1"), "%s: no separate CPU-work finding", gc);
	analysis_free(&a);
	trace_free(&t);

	if (analyze_real(io, &t, &a) < 0)
		return;
	CHECK(!finding(&a, "C14"), "%s: no periodic finding", io);
	analysis_free(&a);
	trace_free(&t);

	if (analyze_real(up, &t, &a) < 0)
		return;
	f = finding(&a, "C14");
	CHECK(f && a.findings.v[0].cause == f->cause, "%s: C14 first", up);
	CHECK(!finding(&a, "C16"), "%s: the upload's wait is the checkpoint's, not C16's", up);
	analysis_free(&a);
	trace_free(&t);
}

/* Real recordings: a user function under @torch.no_grad() that issues GPU
 * work in a few steps is an evaluation (the nowcasting job's EMA previews,
 * once in its 19 steps, called at line 239, and again after the last step;
 * the SimCLR job's kNN probe from a Lightning callback); one in every step is the step's own (an EMA update
 * under @torch.no_grad(); an inference job's decorated step), and one whose
 * results stay on the GPU feeds the training (PPO's rollout every 128
 * updates). */
static void test_grad_free_evaluation(void)
{
	static const struct {
		const char *path;
		int eval;
		unsigned call_line;
	} cases[] = {
		{ "tests/fixtures/corpus/c14_torch_nowcast_diffusion_ema_previews.gwr", 1, 239 },
		{ "tests/fixtures/corpus/c14_lightning_simclr_knn_probe.gwr", 1, 191 },
		{ "tests/fixtures/corpus/c4_torch_python_lion.gwr", 0, 0 },
		{ "tests/fixtures/corpus/c4_torch_ppo_gpu_env_minibatch.gwr", 0, 0 },
		{ "tests/fixtures/corpus/c3_tv_resnet50_batch1_infer.gwr", 0, 0 },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct trace t;
		struct analysis a;

		if (analyze_real(cases[i].path, &t, &a) < 0)
			continue;
		const struct finding *f0 = a.findings.n ? &a.findings.v[0] : NULL;
		const struct activity_stat *ev = &a.act[ACT_EVAL];

		if (cases[i].eval) {
			CHECK(f0 && !strcmp(f0->cause, "C14") && f0->activity == ACT_EVAL && f0->severity >= SEV_WARN,
			      "%s: first finding %s (%s), want C14's evaluation", cases[i].path, f0 ? f0->cause : "-",
			      f0 ? f0->title : "-");
			CHECK(ev->call_line == cases[i].call_line, "%s: called at line %u (want %u)", cases[i].path,
			      ev->call_line, cases[i].call_line);
			/* the nowcasting job's next preview came after its last step */
			CHECK(a.facts.tail_eval_again == (i == 0), "%s: the tail's evaluation is the steps' again: %d",
			      cases[i].path, a.facts.tail_eval_again);
		} else {
			CHECK(ev->wall_ns == 0, "%s: %.1f ms evaluating (want none: its decorated function runs every step)",
			      cases[i].path, ev->wall_ns / 1e6);
		}
		analysis_free(&a);
		trace_free(&t);
	}
}

int main(void)
{
	int tmp = mkstemp(path);

	if (tmp < 0)
		return 1;
	close(tmp);
	test_input_sites();
	test_blocks_of_lines();
	test_call_lines();
	test_trace_slices();
	test_serialization_class();
	test_after_sync_class();
	test_free_syncs();
	test_exact_sync_sites();
	test_staging_class();
	test_staging_pinnedness();
	test_no_stacks();
	test_damaged_py_meta();
	test_wait_class();
	test_waits_other_thread();
	test_worker_restarts();
	test_periodic_wait();
	test_pipe_receive();
	test_input_copy();
	test_value_copy_no_input();
	test_matrix_launch_sites();
	test_backward_at_forward_lines();
	test_host_metric_sites();
	test_generated_code_sites();
	test_elided_frames();
	test_wrapper_named_past();
	test_work_before_idle_sync();
	test_period_of_a_third();
	test_periodic_gpu_pass();
	test_checkpoint_activity();
	test_long_checkpoint();
	test_stack_kinds();
	test_snapshot_activity();
	test_results_on_host();
	test_host_callback();
	test_cpu_ops_after_read();
	test_processing_in_caller();
	test_eval_activity();
	test_warmup_steps();
	test_startup_parts();
	test_sync_blocks_graphs();
	test_two_reads_block_graphs();
	test_busy_and_taker_sites();
	test_copy_back_processed();
	test_silent_optimizer();
	test_layer_stack_not_loop();
	test_tail_evaluation(0);
	test_tail_evaluation(1);
	test_tail_checkpoint();
	test_tail_new_work();
	test_image_writes();
	test_compile_steps();
	test_startup_finding();
	test_startup_edges();
	test_startup_first_ops();
	test_busy_workers_running_thread();
	test_sync_inside_library_call();
	test_pageable_copy_sites();
	test_periodic_twice();
	test_grad_free_evaluation();
	test_reading_line();
	unlink(path);
	T_DONE();
}
