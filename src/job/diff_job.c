/* gpuwhy diff of two jobs: BEFORE's folder of rank recordings against
 * AFTER's (a fix tried on the whole job). The job's step (the median
 * rank's mean step: what the loop's timer measures), each rank's step,
 * busy and wait side by side, and the cross-rank findings gone, new or
 * still there, by cause and rank. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../report/diff.h"
#include "../report/render.h"
#include "../util/escape.h"
#include "../util/outfile.h"
#include "../util/util.h"
#include "job.h"
#include "report_job.h"

enum { SIDE_BEFORE, SIDE_AFTER };

static int load_side(struct job *j, const char *dir, const char *steps)
{
	VEC_TYPE_STR files = { 0 };
	int ret = job_list_dir(dir, &files);

	memset(j, 0, sizeof(*j));
	if (ret == 0 && !files.n) {
		gw_error("%s holds no recording to compare", dir);
		ret = -ENOENT;
	}
	if (ret == 0)
		ret = job_load(j, (const char *const *)files.v, files.n, steps);
	if (ret == 0)
		ret = job_align(j);
	if (ret == 0)
		ret = job_rules(j);
	for (size_t i = 0; i < files.n; i++)
		free(files.v[i]);
	free(files.v);
	return ret;
}

static const struct rank_rec *rank_in(const struct job *j, long rank)
{
	for (size_t i = 0; i < j->ranks.n; i++)
		if (j->ranks.v[i].rank == rank && j->ranks.v[i].status != RANK_UNREADABLE)
			return &j->ranks.v[i];
	return NULL;
}

static const struct job_finding *finding_in(const struct job *j, const struct job_finding *f)
{
	for (size_t i = 0; i < j->findings.n; i++)
		if (!strcmp(j->findings.v[i].cause, f->cause) && j->findings.v[i].rank == f->rank &&
		    !strcmp(j->findings.v[i].host, f->host))
			return &j->findings.v[i];
	return NULL;
}

/* The ranks of either side, in order. */
static size_t all_ranks(const struct job *b, const struct job *a, long *out, size_t cap)
{
	size_t n = 0;

	for (long r = 0; n < cap; r++) {
		if (r >= b->world && r >= a->world)
			break;
		if (rank_in(b, r) || rank_in(a, r))
			out[n++] = r;
	}
	return n;
}

static double speedup(const struct job *b, const struct job *a)
{
	return a->step_ns > 0 && b->step_ns > 0 ? b->step_ns / a->step_ns : 0;
}

/* What BEFORE's report predicted: its collective wait (X2) sums every
 * rank's lateness, so with that gone its speed-up is the prediction to
 * set beside the measured one; 0 when X2 is still there or never was. */
static double predicted(const struct job *b, const struct job *a)
{
	for (size_t i = 0; i < b->findings.n; i++)
		if (!strcmp(b->findings.v[i].cause, "X2") && !finding_in(a, &b->findings.v[i]))
			return b->findings.v[i].speedup;
	return 0;
}

/* A rank's mean step: steady window / steps (0 without steps). */
static double rank_mean(const struct rank_rec *r)
{
	return r->nsteps ? r->steady_ns / (double)r->nsteps : 0;
}

/* A finding of BEFORE against its match in AFTER (NULL: none): gone;
 * changed as diff.c judges one recording's findings; else same. */
static const char *pair_state(const struct job_finding *fb, const struct job_finding *fa)
{
	if (!fa)
		return "gone";
	/* a gain in points of the run, as the speed-up it is said as */
	double pb = fb->speedup > 0 ? 100 * (1 - 1 / fb->speedup) : 0, pa = fa->speedup > 0 ? 100 * (1 - 1 / fa->speedup) : 0;

	return diff_finding_moved(fb->severity, fa->severity, pb, pa) ? "changed" : "same";
}

static void term_diff(FILE *f, const void *ctx)
{
	const struct job *const *s = ctx;
	const struct job *b = s[SIDE_BEFORE], *a = s[SIDE_AFTER];
	long ranks[4096];
	size_t n = all_ranks(b, a, ranks, 4096);
	char x[32], y[32], u[32], v[32];

	fprintf(f, "gpuwhy job diff: %zu ranks before, %zu after\n", b->ranks.n, a->ranks.n);
	if (speedup(b, a) > 0) {
		fprintf(f, "  step (median rank's mean): %s -> %s: %.2fx\n", fmt_ns(x, sizeof(x), b->step_ns),
			fmt_ns(y, sizeof(y), a->step_ns), speedup(b, a));
		if (predicted(b, a) > 0)
			fprintf(f, "  predicted %.2fx for X2, the wait in collectives (before) / measured %.2fx\n",
				predicted(b, a), speedup(b, a));
	} else {
		fprintf(f, "  no steps on one side: no speed-up to measure\n");
	}
	/* each rank's mean step, the statistic of the job's (its long steps,
	 * a checkpoint every N steps, included), and its median */
	fprintf(f, "\n  rank  mean step before -> after (median)          busy          wait/step before -> after\n");
	for (size_t i = 0; i < n; i++) {
		const struct rank_rec *rb = rank_in(b, ranks[i]), *ra = rank_in(a, ranks[i]);

		if (!rb || !ra) {
			fprintf(f, "  %4ld  only %s\n", ranks[i], rb ? "before" : "after");
			continue;
		}
		char mb[32], ma[32], med[80];

		snprintf(med, sizeof(med), "%s -> %s", fmt_ns(x, sizeof(x), rb->step_ns), fmt_ns(y, sizeof(y), ra->step_ns));
		fprintf(f, "  %4ld  %-9s -> %-9s (%-20s)   %3.0f%% -> %3.0f%%   %-9s -> %s\n", ranks[i],
			fmt_ns(mb, sizeof(mb), rank_mean(rb)), fmt_ns(ma, sizeof(ma), rank_mean(ra)), med, rb->busy_pct,
			ra->busy_pct, fmt_ns(u, sizeof(u), rb->wait_ns_step), fmt_ns(v, sizeof(v), ra->wait_ns_step));
	}
	fprintf(f, "\nAcross ranks:\n");
	for (size_t i = 0; i < b->findings.n; i++) {
		const struct job_finding *fb = &b->findings.v[i];

		const struct job_finding *fa = finding_in(a, fb);

		/* the same cause on both sides: AFTER's title, its figures now;
		 * where they moved, BEFORE's under it */
		const char *st = pair_state(fb, fa);

		fprintf(f, "  %-7s [%s] %s\n", st, fb->cause, fa ? fa->title : fb->title);
		if (!strcmp(st, "changed"))
			fprintf(f, "            before: %s\n", fb->title);
	}
	for (size_t i = 0; i < a->findings.n; i++)
		if (!finding_in(b, &a->findings.v[i]))
			fprintf(f, "  new     [%s] %s\n", a->findings.v[i].cause, a->findings.v[i].title);
	if (!b->findings.n && !a->findings.n)
		fprintf(f, "  no cross-rank cause on either side\n");
}

static void json_side(struct json *js, const char *key, const char *dir, const struct job *j)
{
	json_obj_begin(js, key);
	json_str(js, "dir", dir);
	json_u64(js, "ranks", j->ranks.n);
	json_i64(js, "world_size", j->world);
	json_dbl(js, "step_ms", j->step_ns / 1e6);
	json_obj_end(js);
}

static void json_state(struct json *js, const struct job_finding *f, const char *state)
{
	json_obj_begin(js, NULL);
	json_str(js, "rule", f->rule);
	json_str(js, "cause", f->cause);
	if (f->rank >= 0)
		json_i64(js, "rank", f->rank);
	else
		json_null(js, "rank");
	json_str(js, "state", state);
	json_str(js, "title", f->title);
	json_obj_end(js);
}

static void json_diff(struct json *js, const struct job *b, const struct job *a, const char *bd, const char *ad)
{
	long ranks[4096];
	size_t n = all_ranks(b, a, ranks, 4096);

	json_obj_begin(js, NULL);
	json_str(js, "schema", "gpuwhy.jobdiff/1");
	json_side(js, "before", bd, b);
	json_side(js, "after", ad, a);
	if (speedup(b, a) > 0)
		json_dbl(js, "speedup", speedup(b, a));
	else
		json_null(js, "speedup");
	if (predicted(b, a) > 0)
		json_dbl(js, "predicted", predicted(b, a));
	else
		json_null(js, "predicted");
	json_arr_begin(js, "ranks");
	for (size_t i = 0; i < n; i++) {
		const struct rank_rec *s[2] = { rank_in(b, ranks[i]), rank_in(a, ranks[i]) };
		static const char *const side[2] = { "before", "after" };

		json_obj_begin(js, NULL);
		json_i64(js, "rank", ranks[i]);
		for (int k = 0; k < 2; k++) {
			if (!s[k]) {
				json_null(js, side[k]);
				continue;
			}
			json_obj_begin(js, side[k]);
			json_dbl(js, "step_ms", s[k]->step_ns / 1e6);
			json_dbl(js, "step_mean_ms", rank_mean(s[k]) / 1e6);
			json_dbl(js, "busy_pct", s[k]->busy_pct);
			json_dbl(js, "wait_ms_per_step", s[k]->wait_ns_step / 1e6);
			json_obj_end(js);
		}
		json_obj_end(js);
	}
	json_arr_end(js);
	json_arr_begin(js, "findings");
	for (size_t i = 0; i < b->findings.n; i++)
		json_state(js, &b->findings.v[i], pair_state(&b->findings.v[i], finding_in(a, &b->findings.v[i])));
	for (size_t i = 0; i < a->findings.n; i++)
		if (!finding_in(b, &a->findings.v[i]))
			json_state(js, &a->findings.v[i], "new");
	json_arr_end(js);
	json_obj_end(js);
}

static int write_diff(const struct job *s[2], const char *bd, const char *ad, const struct job_diff_opts *o)
{
	struct outfile of = { 0 };
	FILE *out = stdout;
	int ret = 0, r;

	if (o->json && o->json_out) {
		const char *inputs[] = { NULL };

		r = outfile_open(&of, o->json_out, OUTFILE_GZIP_BY_NAME | o->force, inputs);
		if (r < 0) {
			gw_error("cannot write the comparison to %s: %s", o->json_out, outfile_strerror(r));
			return 1;
		}
		out = of.f;
	}
	if (o->json) {
		struct json js;

		json_init(&js, out, 1);
		json_diff(&js, s[0], s[1], bd, ad);
		json_done(&js);
	} else {
		FILE *term = term_filter_open(out, o->color);

		if (!term)
			return 1;
		if (gw_with_units(term, gw_utf8_locale(), term_diff, s) < 0)
			ret = 1;
		if (fclose(term) != 0)
			ret = 1;
	}
	if (of.f && (r = outfile_commit(&of)) < 0) {
		gw_error("writing the comparison to %s failed: %s", o->json_out, outfile_strerror(r));
		ret = 1;
	}
	fflush(stdout);
	return ret;
}

int job_diff_dirs(const char *before, const char *after, const struct job_diff_opts *o)
{
	struct job j[2];
	const struct job *s[2] = { &j[0], &j[1] };
	struct job_diff_opts oc = *o;
	int ret, status = 0;

	if (o->html) {
		gw_error("--html compares two recordings: name one rank's file of each job");
		return 2;
	}
	if (oc.color < 0)
		oc.color = gw_color_auto(STDOUT_FILENO);
	o = &oc;
	ret = load_side(&j[0], before, o->steps);

	if (ret == 0)
		ret = load_side(&j[1], after, o->steps);
	else
		memset(&j[1], 0, sizeof(j[1]));
	if (ret < 0) {
		if (ret == -ENOMEM)
			gw_error("out of memory while comparing the jobs in %s and %s", before, after);
		status = 1;
	} else {
		status = write_diff(s, before, after, o);
		for (int k = 0; k < 2 && !status; k++)
			for (size_t i = 0; i < j[k].ranks.n; i++)
				if (j[k].ranks.v[i].status != RANK_OK)
					status = j[k].ranks.v[i].status == RANK_UNREADABLE ? 1 : GW_EXIT_DAMAGED;
		if (!status && o->fail_pct >= 0 && speedup(&j[0], &j[1]) > 0 &&
		    j[1].step_ns > j[0].step_ns * (1 + o->fail_pct / 100))
			status = 4;
	}
	job_free(&j[0]);
	job_free(&j[1]);
	return status;
}
