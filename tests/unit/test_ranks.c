/* The job report on SYNTHETIC rank recordings: made-up timelines of a
 * data-parallel job, one file per rank, written with the recording writer.
 * Every rank's clock counts from its own made-up boot, and its realtime
 * pair carries a made-up sync error of up to a millisecond; the truth is
 * known, so the alignment is checked against it. Rank 2 (rank 1 of two)
 * is slow on the host every step; rank 0 writes a checkpoint (torch.save
 * in its Python stacks) every 10 steps while the others wait in the next
 * collective. Asserts the clocks' residual, the straggler and the rank-0
 * stall with their ranks and activity, the wait, uneven work, a slow host,
 * and damaged and missing ranks.
 *
 * `test_ranks --write DIR N [STEPS] [--uneven | --fix]` writes N such recordings
 * as DIR/synthetic-rank-R.gwr (the CLI tests, the schema test and
 * bench/ranks.sh use them). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analyze/internal.h"
#include "job/job.h"
#include "t.h"
#include "synth.h"

#define US 1000ll
#define MS 1000000ll
#define SEC 1000000000ll

#define STEP_GAP (220 * US)       /* optimizer kernel and launch after the collective */
#define KERNELS 4                 /* compute kernels per step ... */
#define KERNEL_NS (1500 * US)     /* ... each this long */
#define XFER_NS (1 * MS)          /* the collective's transfer once all have arrived */
#define SLOW_NS (3 * MS)          /* the slow rank's extra host time per step */
#define CKPT_NS (30 * MS)         /* rank 0's checkpoint, every CKPT_EVERY steps */
#define CKPT_EVERY 10
#define REAL0 1796000000000000000ll /* the job's made-up realtime start */

struct synth_job {
	int n, steps, uneven;
	int slow_host;            /* the ranks of host 1 (ranks 4-7) are all slow instead */
	int fix;                  /* neither a slow rank nor a checkpoint: the fixed job */
	int slow;                 /* the slow rank */
	/* per rank: its boot (monotonic = true time + boot) and its realtime error */
	int64_t boot[1024], real_err[1024];
};

/* A made-up, repeatable jitter of 0..max-1 ns. */
static int64_t jitter(unsigned a, unsigned b, int64_t max)
{
	uint64_t x = (uint64_t)a * 2654435761u ^ (uint64_t)b * 40503u;

	x ^= x >> 13;
	x *= 0x5bd1e995u;
	x ^= x >> 15;
	return (int64_t)(x % (uint64_t)max);
}

/* uneven: 1 the slow rank has more GPU work, 0 a slower host, -1 neither
 * (the fixed job) */
static void plan(struct synth_job *sj, int n, int steps, int uneven)
{
	memset(sj, 0, sizeof(*sj));
	sj->n = n;
	sj->steps = steps;
	sj->slow = uneven < 0 ? -1 : n > 2 ? 2 : n - 1; /* uneven < 0: the fixed job */
	sj->fix = uneven < 0;
	sj->uneven = uneven > 0;
	for (int r = 0; r < n; r++) {
		sj->boot[r] = 1000 * SEC + (int64_t)r * 37123456789ll; /* hosts booted apart */
		sj->real_err[r] = (r % 3 - 1) * 400 * US + r * 7 * US; /* NTP-like, under 1 ms */
	}
}

static void meta_i(struct gw_writer *w, const char *k, int64_t v)
{
	char b[32];

	snprintf(b, sizeof(b), "%lld", (long long)v);
	gw_emit_meta(w, k, b);
}

/* The true-time start of step s, and when each rank reaches its collective:
 * all ranks start a step together after the previous collective. */
static int64_t arrival(const struct synth_job *sj, int r, int s, int64_t start)
{
	int64_t ready = start + jitter((unsigned)r, (unsigned)s, 20 * US);

	if (sj->slow_host ? r / 4 == 1 : r == sj->slow && !sj->uneven)
		ready += SLOW_NS;
	if (r == 0 && s % CKPT_EVERY == CKPT_EVERY - 1 && !sj->fix)
		ready += CKPT_NS;
	return ready + KERNELS * (KERNEL_NS + 10 * US) + (r == sj->slow && sj->uneven ? SLOW_NS : 0);
}

static void py_sample(struct gw_writer *w, uint32_t pid, int64_t mono, uint32_t stack)
{
	uint64_t v[GW_PYS_NF] = { (uint64_t)mono, pid, pid, stack, GW_PYSTATE_RUN };

	gw_emit(w, GW_REC_PY_SAMPLE, v, GW_PYS_NF);
}

static uint32_t py_stack2(struct gw_pytrie *trie, struct gw_writer *w, const char *file, const char *func,
			  uint32_t line)
{
	struct gw_pyframe fr[2] = { { file, func, line }, { "/home/u/proj/train.py", "main", 90 } };
	uint32_t id = gw_pytrie_stack(trie, fr, 2);

	gw_pytrie_emit(trie, w);
	return id;
}

/* One rank's whole recording. */
static int write_rank(const struct synth_job *sj, int r, const char *path)
{
	struct gw_writer w;
	struct gw_pytrie *trie = gw_pytrie_new(64);
	uint32_t pid = 1000 + (uint32_t)r;
	int64_t boot = sj->boot[r], start = 2 * SEC, t_end;
	char host[32];
	int fd = synth_begin(&w, path, pid, 81559, 700000);

	if (fd < 0 || !trie)
		return -1;
	snprintf(host, sizeof(host), "synth-node%d", r / 4);
	meta_i(&w, "job.rank", r);
	meta_i(&w, "job.local_rank", r % 4);
	meta_i(&w, "job.world_size", sj->n);
	gw_emit_meta(&w, "host.name", host);
	gw_emit_meta(&w, "record.py", "sampled");
	gw_emit_meta(&w, "record.py_hz", "1000");
	gw_emit_meta(&w, "record.py_keyframe_ms", "1000");
	meta_i(&w, "record.start_ns", boot + SEC);
	meta_i(&w, "clock.start_mono_ns", boot + SEC);
	meta_i(&w, "clock.start_real_ns", REAL0 + SEC + sj->real_err[r]);
	gw_flush(&w); /* the meta in a chunk of its own, as gpuwhy record writes it */
	uint32_t model = py_stack2(trie, &w, "/venv/lib/python3.11/site-packages/torch/nn/modules/linear.py",
				   "forward", 125);
	uint32_t save = py_stack2(trie, &w, "/venv/lib/python3.11/site-packages/torch/serialization.py", "save",
				  600);

	for (int s = 0; s < sj->steps; s++) {
		int64_t last = 0, a = arrival(sj, r, s, start), ready = a - KERNELS * (KERNEL_NS + 10 * US);

		if (r == sj->slow && sj->uneven)
			ready -= SLOW_NS;
		for (int q = 0; q < sj->n; q++)
			if (arrival(sj, q, s, start) > last)
				last = arrival(sj, q, s, start);
		/* the host's Python stack from the step's start to its first kernel */
		for (int64_t t = start; t < ready; t += MS)
			py_sample(&w, pid, boot + t, r == 0 && s % CKPT_EVERY == CKPT_EVERY - 1 && !sj->fix ? save : model);
		py_sample(&w, pid, boot + ready, model);
		for (int k = 0; k < KERNELS; k++) {
			int64_t d = KERNEL_NS + (r == sj->slow && sj->uneven ? SLOW_NS / KERNELS : 0);

			synth_kernel(&w, (uint64_t)(boot + ready), (uint64_t)d, k % 2 ? "synthetic_gemm_bwd" : "synthetic_gemm_fwd", 264);
			ready += d + 10 * US;
		}
		/* every rank's collective ends together, within a few us */
		int64_t end = last + XFER_NS + jitter((unsigned)r + 7, (unsigned)s, 3 * US);

		synth_kernel(&w, (uint64_t)(boot + a), (uint64_t)(end - a), "ncclDevKernel_AllReduce_Sum_f32_RING_LL", 32);
		synth_kernel(&w, (uint64_t)(boot + end + 10 * US), 200 * US, "synthetic_adam", 132);
		start = last + XFER_NS + 3 * US + STEP_GAP;
	}
	t_end = start + SEC;
	meta_i(&w, "clock.end_mono_ns", boot + t_end);
	meta_i(&w, "clock.end_real_ns", REAL0 + t_end + sj->real_err[r]);
	gw_flush(&w);
	gw_writer_free(&w);
	gw_pytrie_free(trie);
	return close(fd);
}

static int write_job(const struct synth_job *sj, const char *dir)
{
	char path[4096];

	for (int r = 0; r < sj->n; r++) {
		snprintf(path, sizeof(path), "%s/synthetic-rank-%d.gwr", dir, r);
		if (write_rank(sj, r, path) < 0)
			return -1;
	}
	return 0;
}

static const struct job_finding *xfind(const struct job *j, const char *cause)
{
	for (size_t i = 0; i < j->findings.n; i++)
		if (!strcmp(j->findings.v[i].cause, cause))
			return &j->findings.v[i];
	return NULL;
}

static int load_dir(struct job *j, const char *dir, int n)
{
	char *files[64] = { 0 };
	int ret;

	for (int r = 0; r < n; r++)
		if (asprintf(&files[r], "%s/synthetic-rank-%d.gwr", dir, r) < 0)
			return -ENOMEM;
	ret = job_load(j, (const char *const *)files, (size_t)n, NULL);
	if (ret == 0)
		ret = job_align(j);
	if (ret == 0)
		ret = job_rules(j);
	for (int r = 0; r < n; r++)
		free(files[r]);
	return ret;
}

/* Synthetic: 4 ranks on one time line; the rank-2 straggler and rank 0's
 * checkpoint named. */
static void test_four_ranks(const char *dir)
{
	struct synth_job sj;
	struct job j;

	plan(&sj, 4, 60, 0);
	CHECK(write_job(&sj, dir) == 0, "wrote the synthetic job");
	CHECK(load_dir(&j, dir, 4) == 0, "job loaded");
	CHECK(j.ranks.n == 4 && !j.missing.n && j.world == 4, "4 ranks, none missing (%zu, %zu)", j.ranks.n,
	      j.missing.n);
	CHECK(j.aligned_by == ALIGN_COLLECTIVES && j.ncoll >= 55, "aligned by collectives: %d, %zu matched", j.aligned_by, j.ncoll);
	/* the truth: a true instant T is boot_r + T on rank r's clock; the
	 * common line must put those readings at one time on every rank */
	double worst = 0;

	for (int r = 0; r < 4; r++) {
		const struct rank_rec *rr = &j.ranks.v[r];
		int64_t d = job_rel(&j, rr, (uint64_t)(sj.boot[r] + 5 * SEC)) -
			    job_rel(&j, &j.ranks.v[0], (uint64_t)(sj.boot[0] + 5 * SEC));

		if (llabs(d) > worst)
			worst = (double)llabs(d);
		CHECK(rr->rank == r && rr->status == RANK_OK, "rank %d read (%ld, %d)", r, rr->rank, rr->status);
	}
	CHECK(worst <= 10 * US, "clocks aligned within 10 us of the truth: %.1f us (realtime errors up to 421 us)",
	      worst / 1e3);
	CHECK(j.residual_ns <= 10 * US, "residual %.1f us", j.residual_ns / 1e3);
	const struct job_finding *x1 = xfind(&j, "X1"), *x3 = xfind(&j, "X3"), *x2 = xfind(&j, "X2");

	CHECK(x1 && x1->rank == 2, "the straggler is rank 2 (%ld)", x1 ? x1->rank : -9);
	CHECK(x1 && x1->per_step_ns > 2.5 * MS && x1->per_step_ns < 3.5 * MS, "rank 2 is ~3 ms late per step (%.2f ms)",
	      x1 ? x1->per_step_ns / 1e6 : 0);
	CHECK(x1 && strstr(x1->title, "Rank 2 is the straggler"), "X1 title: %s", x1 ? x1->title : "");
	CHECK(x3 && x3->rank == 0 && strstr(x3->title, "checkpointing"), "rank 0's checkpoint: %s",
	      x3 ? x3->title : "none");
	CHECK(x3 && strstr(x3->title, "every 10 steps"), "every 10 steps: %s", x3 ? x3->title : "");
	/* 27 ms behind the straggler, once in 10 steps */
	CHECK(x3 && x3->per_step_ns > 2.0 * MS && x3->per_step_ns < 3.0 * MS, "rank 0 costs %.2f ms per step",
	      x3 ? x3->per_step_ns / 1e6 : 0);
	CHECK(x2 != NULL, "the collective wait is a finding");
	CHECK(!xfind(&j, "X4"), "no uneven work planted, none found");
	/* the collective runs after the step's compute: its transfer, once all
	 * have arrived, is exposed (XFER_NS), beyond the wait */
	const struct job_finding *x6 = xfind(&j, "X6");

	CHECK(x6 && x6->per_step_ns > 0.75 * XFER_NS && x6->per_step_ns < 1.1 * XFER_NS,
	      "the exposed transfer: %.2f ms per step (%.2f ms planted)", x6 ? x6->per_step_ns / 1e6 : 0,
	      XFER_NS / 1e6);
	CHECK(j.ranks.v[1].wait_ns_step > 2.5 * MS, "rank 1 waits %.2f ms per step in collectives",
	      j.ranks.v[1].wait_ns_step / 1e6);
	CHECK(j.ranks.v[2].times_last >= 50, "rank 2 last %zu times", j.ranks.v[2].times_last);
	job_free(&j);
}

/* Synthetic: the slow rank's GPU has more work: uneven work (X4) named. */
static void test_uneven(const char *dir)
{
	struct synth_job sj;
	struct job j;

	plan(&sj, 4, 40, 1);
	CHECK(write_job(&sj, dir) == 0, "wrote the uneven job");
	CHECK(load_dir(&j, dir, 4) == 0, "job loaded");
	const struct job_finding *x4 = xfind(&j, "X4"), *x1 = xfind(&j, "X1");

	CHECK(x4 && x4->rank == 2 && x4->per_step_ns > 2.5 * MS, "uneven work on rank 2: %s",
	      x4 ? x4->title : "none");
	CHECK(x1 && strstr(x1->fix, "more GPU work"), "the straggler's fix names its work: %s", x1 ? x1->fix : "");
	job_free(&j);
}

/* Synthetic: 8 ranks on two hosts, every rank of host 1 slow: one host
 * named (X5), no single straggler. */
static void test_slow_host(const char *dir)
{
	struct synth_job sj;
	struct job j;

	plan(&sj, 8, 40, 0);
	sj.slow_host = 1;
	CHECK(write_job(&sj, dir) == 0, "wrote the two-host job");
	CHECK(load_dir(&j, dir, 8) == 0, "job loaded");
	const struct job_finding *x5 = xfind(&j, "X5"), *x1 = xfind(&j, "X1");

	CHECK(x5 && !strcmp(x5->host, "synth-node1") && x5->per_step_ns > 2.5 * MS, "host synth-node1 named: %s",
	      x5 ? x5->title : "none");
	CHECK(!x1, "no single straggler: %s", x1 ? x1->title : "");
	job_free(&j);
	for (int r = 0; r < 8; r++) {
		char p[4096];

		snprintf(p, sizeof(p), "%s/synthetic-rank-%d.gwr", dir, r);
		unlink(p);
	}
}

/* Synthetic: rank 3's file missing, rank 1's cut short, a file that is no
 * recording: each named, the rest reported. */
static void test_damaged(const char *dir)
{
	struct synth_job sj;
	struct job j;
	char p[4096], q[4096];

	plan(&sj, 4, 30, 0);
	CHECK(write_job(&sj, dir) == 0, "wrote the job");
	snprintf(p, sizeof(p), "%s/synthetic-rank-3.gwr", dir);
	unlink(p);
	snprintf(p, sizeof(p), "%s/synthetic-rank-1.gwr", dir);
	struct stat st;

	CHECK(stat(p, &st) == 0 && truncate(p, st.st_size - 100) == 0, "cut rank 1 short");
	snprintf(q, sizeof(q), "%s/not-a-recording.gwr", dir);
	FILE *f = fopen(q, "w");

	if (f) {
		fputs("hello\n", f);
		fclose(f);
	}
	const char *files[3] = { p, q, NULL };
	char r0[4096], r2[4096];

	snprintf(r0, sizeof(r0), "%s/synthetic-rank-0.gwr", dir);
	snprintf(r2, sizeof(r2), "%s/synthetic-rank-2.gwr", dir);
	files[2] = r0;
	const char *all[4] = { files[0], files[1], r0, r2 };

	CHECK(job_load(&j, all, 4, NULL) == 0 && job_align(&j) == 0 && job_rules(&j) == 0, "loaded");
	CHECK(j.missing.n == 1 && j.missing.v[0] == 3, "rank 3 missing (%zu)", j.missing.n);
	int cut = 0, bad = 0;

	for (size_t i = 0; i < j.ranks.n; i++) {
		const struct rank_rec *r = &j.ranks.v[i];

		cut += r->rank == 1 && r->status != RANK_OK && r->why[0];
		bad += r->rank < 0 && r->status == RANK_UNREADABLE && strstr(r->path, "not-a-recording");
	}
	CHECK(cut == 1, "rank 1 named as cut short");
	CHECK(bad == 1, "the file that is no recording named");
	CHECK(j.ranks.v[0].rank == 0 && j.ranks.v[0].status == RANK_OK && j.ranks.v[0].nsteps >= 25,
	      "rank 0 still reported (%zu steps)", j.ranks.v[0].nsteps);
	unlink(q);
	job_free(&j);
}

/* Synthetic: the rank list of a report ("ranks 0-3,5"). */
static void test_rank_list(void)
{
	long v[] = { 0, 1, 2, 3, 5, 7, 8 };
	char b[64];

	job_rank_list(b, sizeof(b), v, 7);
	CHECK(!strcmp(b, "ranks 0-3,5,7-8"), "%s", b);
	job_rank_list(b, sizeof(b), v + 4, 1);
	CHECK(!strcmp(b, "rank 5"), "%s", b);
}

/* Synthetic operations into exposed.c: the part of the collectives that
 * no other operation of the main process covered. */
static double exposed_of(const struct gpu_op *ops, size_t n)
{
	struct analysis a = { .t0 = 0, .t1 = 1000000, .main_pid = 7, .main_dev = 0 };
	struct comm_exposure x = { 0 };

	for (size_t i = 0; i < n; i++)
		exposed_add(&a, &x, &ops[i]);
	exposed_end(&a, &x);
	return a.comm_exposed_ns;
}

static void test_exposed(void)
{
#define K(s, e, comm) { .start = (s), .end = (e), .pid = 7, .kind = OP_KERNEL, .name_class = (comm) ? KC_COMM : KC_OTHER }
	/* compute, then a collective alone: all of it exposed */
	const struct gpu_op serial[] = { K(0, 100, 0), K(100, 150, 1), K(200, 300, 0) };
	/* a collective beside the backward's kernels on another stream, which
	 * start after it: covered but for the 10 ns before the first */
	const struct gpu_op overlapped[] = { K(0, 100, 0), K(100, 400, 1), K(110, 200, 0), K(200, 420, 0) };
	/* two collectives inside one long kernel, and one past its end */
	const struct gpu_op inside[] = { K(0, 1000, 0), K(100, 200, 1), K(300, 400, 1), K(900, 1100, 1) };
	/* another process's kernel covers nothing of this one's */
	struct gpu_op other[] = { K(0, 100, 1), K(0, 100, 0) };

	other[1].pid = 8;
	CHECK(exposed_of(serial, 3) == 50, "serial: %.0f ns exposed of 50", exposed_of(serial, 3));
	CHECK(exposed_of(overlapped, 4) == 10, "overlapped: %.0f ns exposed of 10", exposed_of(overlapped, 4));
	CHECK(exposed_of(inside, 4) == 100, "inside: %.0f ns exposed of 100", exposed_of(inside, 4));
	CHECK(exposed_of(other, 2) == 100, "another process: %.0f ns exposed of 100", exposed_of(other, 2));
#undef K
}

int main(int argc, char **argv)
{
	char dir[] = "/tmp/gw-test-ranks-XXXXXX";

	if (argc >= 4 && !strcmp(argv[1], "--write")) {
		struct synth_job sj;
		int n = atoi(argv[3]), steps = argc >= 5 && argv[4][0] != '-' ? atoi(argv[4]) : 60;

		if (n < 1 || n > 1024 || steps < 1) {
			fprintf(stderr, "usage: test_ranks --write DIR N(1-1024) [STEPS] [--uneven | --fix]\n");
			return 2;
		}
		plan(&sj, n, steps, !strcmp(argv[argc - 1], "--uneven") ? 1 : !strcmp(argv[argc - 1], "--fix") ? -1 : 0);
		return write_job(&sj, argv[2]) < 0 ? 1 : 0;
	}
	if (!mkdtemp(dir))
		return 1;
	test_rank_list();
	test_exposed();
	test_four_ranks(dir);
	test_uneven(dir);
	test_slow_host(dir);
	test_damaged(dir);
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd) != 0)
		return 1;
	T_DONE();
}
