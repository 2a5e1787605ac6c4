/* One rank's recording: analysed as it is alone, then summarized. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../util/hmap.h"
#include "job.h"

/* The rank from the meta: gpuwhy's own (job.rank), else a launcher's
 * variable as the recording kept it (env.*: the target's environment too). */
static const char *const rank_keys[] = { "job.rank", "env.RANK", "env.SLURM_PROCID",
					 "env.OMPI_COMM_WORLD_RANK", "env.PMI_RANK", NULL };
static const char *const local_keys[] = { "job.local_rank", "env.LOCAL_RANK", "env.SLURM_LOCALID",
					  "env.OMPI_COMM_WORLD_LOCAL_RANK", "env.MPI_LOCALRANKID", NULL };
static const char *const world_keys[] = { "job.world_size", "env.WORLD_SIZE", "env.SLURM_NTASKS",
					  "env.OMPI_COMM_WORLD_SIZE", "env.PMI_SIZE", NULL };

static long num(const char *s)
{
	char *end;
	long v;

	if (!s || !*s)
		return -1;
	errno = 0;
	v = strtol(s, &end, 10);
	return errno || *end || v < 0 || v > INT32_MAX ? -1 : v;
}

static long meta_first(const struct trace *t, const char *const *keys)
{
	for (; *keys; keys++) {
		long v = num(trace_meta(t, *keys));

		if (v >= 0)
			return v;
	}
	return -1;
}

static uint64_t meta_u64(const struct trace *t, const char *key)
{
	const char *s = trace_meta(t, key);

	return s ? strtoull(s, NULL, 10) : 0;
}

static uint32_t name_hash(const char *s)
{
	uint32_t h = 2166136261u;

	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 16777619u;
	return h ? h : 1;
}

long rank_peek(const char *path)
{
	struct gw_reader *rd;
	struct gw_record rec;
	char err[256];
	long rank = -1, env_rank = -1;

	if (gw_reader_open_flags(&rd, path, GW_OPEN_REGULAR, err, sizeof(err)) < 0)
		return RANK_PEEK_UNREADABLE;
	/* gpuwhy's meta comes in the file's first chunk */
	for (int i = 0; i < 4096 && rank < 0 && gw_reader_next(rd, &rec) == 1; i++) {
		char key[64], val[32];

		if (rec.type != GW_REC_META || rec.blob_len >= sizeof(key) || rec.blob2_len >= sizeof(val))
			continue;
		memcpy(key, rec.blob, rec.blob_len);
		key[rec.blob_len] = 0;
		memcpy(val, rec.blob2, rec.blob2_len);
		val[rec.blob2_len] = 0;
		if (!strcmp(key, "job.rank"))
			rank = num(val);
		else if (env_rank < 0 && (!strcmp(key, "env.RANK") || !strcmp(key, "env.SLURM_PROCID") ||
					  !strcmp(key, "env.OMPI_COMM_WORLD_RANK") || !strcmp(key, "env.PMI_RANK")))
			env_rank = num(val);
	}
	gw_reader_close(rd);
	return rank >= 0 ? rank : env_rank;
}

/* The collective kernels of the main process on its main GPU: a third read
 * of the file, keeping only them (the analysis keeps no operations). */
static int load_collectives(struct rank_rec *r, const char *path, uint32_t pid, uint32_t dev)
{
	struct gw_reader *rd;
	struct gw_record rec;
	struct hmap cls = { 0 }; /* stream << 32 | string id -> 1 + (comm ? hash : 0) */
	char err[256];
	int ret = 0;

	if (gw_reader_open_flags(&rd, path, GW_OPEN_REGULAR, err, sizeof(err)) < 0)
		return 0; /* read once already: what it held is in the analysis */
	gw_reader_fields(rd, GW_REC_KERNEL, GW_KERNEL_DEVICE + 1);
	while (ret == 0 && gw_reader_next(rd, &rec) == 1) {
		if (rec.type != GW_REC_KERNEL || rec.stream != pid || rec.v[GW_KERNEL_DEVICE] != dev)
			continue;
		uint64_t key = (uint64_t)rec.stream << 32 | (rec.v[GW_KERNEL_NAME] & 0xffffffffu);
		uint64_t c = hmap_get(&cls, key);

		if (!c) {
			const char *nm = gw_reader_string(rd, rec.stream, rec.v[GW_KERNEL_NAME]);

			c = 1 + (classify_kernel(nm) == KC_COMM ? name_hash(nm) : 0);
			if (hmap_put(&cls, key, c) < 0)
				ret = -ENOMEM;
		}
		if (c > 1) {
			struct rank_coll k = { rec.v[GW_KERNEL_START], rec.v[GW_KERNEL_END], (uint32_t)(c - 1) };

			if (VEC_PUSH(r->coll, k) < 0)
				ret = -ENOMEM;
		}
	}
	hmap_free(&cls);
	gw_reader_close(rd);
	return ret;
}

/* Without NCCL kernels, the collectives staged through host memory
 * (gloo: src/analyze/hostcoll.c): from the end of the copy out, when the
 * rank's data is ready, to the start of the copy back, when the reduction
 * returned on this rank; matched across ranks by their size. */
static int host_collectives(struct rank_rec *r, const struct trace *t, const struct analysis *a)
{
	for (size_t i = 0; i < t->host_colls.n; i++) {
		const struct host_coll *c = &t->host_colls.v[i];
		char key[40];

		if (c->pid != a->main_pid || c->dev != a->main_dev)
			continue;
		snprintf(key, sizeof(key), "host-staged %llu", (unsigned long long)c->bytes);
		struct rank_coll k = { c->start, c->end, name_hash(key) };

		if (VEC_PUSH(r->coll, k) < 0)
			return -ENOMEM;
	}
	r->host_staged = r->coll.n > 0;
	return 0;
}

/* Their time in the steady window, per step, as the union of their spans:
 * the buckets of one step are reduced one after the other while all of
 * them wait (called once they are in start order). */
static void host_staged_time(struct rank_rec *r, const struct analysis *a)
{
	double per = has_steps(a) ? (double)has_steps(a) : 1, ns = 0;
	uint64_t to = 0;

	for (size_t i = 0; i < r->coll.n; i++) {
		uint64_t s = r->coll.v[i].start, e = r->coll.v[i].end;

		s = s > a->t0 ? s : a->t0;
		e = e < a->t1 ? e : a->t1;
		s = s > to ? s : to;
		if (e > s) {
			ns += (double)(e - s);
			to = e;
		}
	}
	r->comm_ns_step = ns / per;
	r->exposed_ns_step = (double)a->idle_by_cause[IDLE_COMM] / per; /* the GPU idle inside them */
}

static int by_start(const void *x, const void *y)
{
	const struct rank_coll *a = x, *b = y;

	return a->start < b->start ? -1 : a->start > b->start;
}

static void identity(struct rank_rec *r, const struct trace *t)
{
	const char *h = trace_meta(t, "host.name");
	uint64_t sm = meta_u64(t, "clock.start_mono_ns"), sr = meta_u64(t, "clock.start_real_ns");
	uint64_t em = meta_u64(t, "clock.end_mono_ns"), er = meta_u64(t, "clock.end_real_ns");

	const char *of = trace_meta(t, "job.split_of"), *pid = trace_meta(t, "job.split_pid");
	char *name;

	/* a view of one process of a recording (split.c): named by the recording */
	if (of && pid && asprintf(&name, "%s (pid %s)", of, pid) >= 0) {
		free(r->path);
		r->path = name;
	}
	const char *from = trace_meta(t, "job.rank_from");

	snprintf(r->rank_from, sizeof(r->rank_from), "%s", from ? from : "");
	r->rank = meta_first(t, rank_keys);
	r->local_rank = meta_first(t, local_keys);
	r->world = meta_first(t, world_keys);
	snprintf(r->host, sizeof(r->host), "%s", h ? h : "");
	if (sm && sr) {
		r->clock_pairs = 2;
		r->mono0 = sm;
		r->real0 = sr;
		/* the two clocks' drift over the recording (NTP slews realtime) */
		if (em > sm + 1000000000ull && er)
			r->drift = ((double)(int64_t)(er - sr) - (double)(em - sm)) / (double)(em - sm);
	} else if (meta_u64(t, "record.start_ns") && meta_u64(t, "record.start_unix")) {
		r->clock_pairs = 1; /* a recording made before the pairs: whole seconds */
		r->mono0 = meta_u64(t, "record.start_ns");
		r->real0 = meta_u64(t, "record.start_unix") * 1000000000ull;
	}
}

static int summarize(struct rank_rec *r, const struct trace *t, const struct analysis *a)
{
	size_t ns = has_steps(a) ? a->steps.n : 0;
	double per = ns ? (double)ns : 1;

	identity(r, t);
	r->pid = a->main_pid;
	for (uint32_t i = 0; i < a->ndev && r->ndevs < 16; i++)
		if (a->dev[i].nkernels + a->dev[i].ncopies)
			r->devs[r->ndevs++] = a->dev[i].dev;
	r->nsteps = ns;
	r->step_ns = ns ? a->step_median_ns : 0;
	r->steady_ns = (double)a->steady_ns;
	r->busy_pct = a->busy_ns + a->idle_ns ? 100.0 * (double)a->busy_ns / (double)(a->busy_ns + a->idle_ns) : 0;
	r->comm_ns_step = a->ops.class_ns[KC_COMM] / per;
	r->exposed_ns_step = a->comm_exposed_ns / per;
	r->compute_ns_step = ((double)a->busy_ns - a->ops.class_ns[KC_COMM]) / per;
	if (r->compute_ns_step < 0)
		r->compute_ns_step = 0;
	for (int k = 0; k < ACT_N; k++)
		r->act_ns[k] = a->act[k].wall_ns;
	for (size_t i = 0; i < a->findings.n; i++) {
		const struct finding *f = &a->findings.v[i];
		struct rank_finding rf = { .severity = f->severity, .speedup = f->speedup,
					   .per_step_ns = f->per_step_ns };

		if (!f->assessed || !f->title[0] || f->severity < SEV_WARN)
			continue;
		snprintf(rf.rule, sizeof(rf.rule), "%s", f->rule_id);
		snprintf(rf.cause, sizeof(rf.cause), "%s", f->cause);
		snprintf(rf.title, sizeof(rf.title), "%s", f->title);
		if (VEC_PUSH(r->findings, rf) < 0)
			return -ENOMEM;
	}
	for (size_t i = 0; i < ns; i++) {
		struct rank_step s = { a->steps.v[i].start, a->steps.v[i].end, a->steps.v[i].acts };

		if (VEC_PUSH(r->steps, s) < 0)
			return -ENOMEM;
	}
	return 0;
}

int rank_load(struct rank_rec *r, const char *path, const char *steps)
{
	struct trace t;
	struct analysis a;
	char err[512];
	int ret;

	memset(r, 0, sizeof(*r));
	r->rank = r->local_rank = r->world = -1;
	r->path = strdup(path);
	r->load_path = strdup(path);
	if (!r->path || !r->load_path)
		return -ENOMEM;
	ret = trace_load(&t, path, err, sizeof(err));
	if (ret < 0) {
		r->status = RANK_UNREADABLE;
		snprintf(r->why, sizeof(r->why), "%s", err);
		trace_free(&t);
		return ret;
	}
	ret = analyze_steps(&t, &a, 0, steps);
	if (ret < 0) {
		r->status = RANK_UNREADABLE;
		snprintf(r->why, sizeof(r->why), "%s", ret == -EINVAL ? a.step_why
						       : a.err_msg[0] ? a.err_msg : strerror(-ret));
		identity(r, &t);
		analysis_free(&a);
		trace_free(&t);
		return ret;
	}
	r->verdict_exit = gw_verdict_exit(&t.verdict);
	if (r->verdict_exit) {
		r->status = RANK_DAMAGED;
		gw_verdict_describe(&t.verdict, r->why, sizeof(r->why));
	}
	ret = summarize(r, &t, &a);
	if (ret == 0)
		ret = load_collectives(r, path, a.main_pid, a.main_dev);
	if (ret == 0 && !r->coll.n)
		ret = host_collectives(r, &t, &a);
	if (ret == 0 && r->coll.n > 1)
		qsort(r->coll.v, r->coll.n, sizeof(*r->coll.v), by_start);
	if (ret == 0 && r->host_staged)
		host_staged_time(r, &a);
	analysis_free(&a);
	trace_free(&t);
	return ret;
}

void rank_free(struct rank_rec *r)
{
	free(r->path);
	free(r->load_path);
	free(r->findings.v);
	free(r->coll.v);
	free(r->steps.v);
	memset(r, 0, sizeof(*r));
}
