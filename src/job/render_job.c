/* The job report: terminal and JSON (schema gpuwhy.job/1, docs/JSON.md),
 * printed from struct job; nothing is computed here. */
#include <string.h>

#include "../report/render.h"
#include "../util/util.h"
#include "job.h"

static const char *status_name(enum rank_status s)
{
	return s == RANK_OK ? "ok" : s == RANK_DAMAGED ? "damaged" : "unreadable";
}

static const char *align_name(int by)
{
	return by == ALIGN_ONE_CLOCK ? "one-clock" : by == ALIGN_COLLECTIVES ? "collectives"
		: by == ALIGN_REALTIME ? "realtime" : "none";
}

static void term_header(FILE *f, const struct job *j)
{
	char list[512];
	size_t ok = 0;

	for (size_t i = 0; i < j->ranks.n; i++)
		ok += j->ranks.v[i].status != RANK_UNREADABLE;
	fprintf(f, "gpuwhy job report: %zu recording%s, %zu analysed, world size %ld\n", j->ranks.n,
		j->ranks.n == 1 ? "" : "s", ok, j->world);
	if (j->ranks.n && !strcmp(j->ranks.v[0].rank_from, "GPU and pid"))
		fprintf(f, "  one recording's GPU processes, numbered by GPU and pid (they record no RANK)\n");
	if (j->missing.n) {
		job_rank_list(list, sizeof(list), j->missing.v, j->missing.n);
		fprintf(f, "  missing: %s of %ld (no recording given; the report covers the others)\n", list,
			j->world);
	}
	if (j->duplicate.n) {
		job_rank_list(list, sizeof(list), j->duplicate.v, j->duplicate.n);
		fprintf(f, "  recorded twice: %s (several files give that rank; each is shown)\n", list);
	}
	for (size_t i = 0; i < j->ranks.n; i++) {
		const struct rank_rec *r = &j->ranks.v[i];

		if (r->status == RANK_OK)
			continue;
		if (r->rank >= 0)
			fprintf(f, "  %s: rank %ld (%s): %s\n", status_name(r->status), r->rank, r->path, r->why);
		else
			fprintf(f, "  %s: %s: %s\n", status_name(r->status), r->path, r->why);
	}
	if (j->aligned_by == ALIGN_ONE_CLOCK)
		fprintf(f, "  clocks: one host's clock (every rank recorded on %s since the same boot): no "
			   "correction; %zu collectives matched on every rank\n", j->ranks.v[j->ref].host, j->ncoll);
	else if (j->aligned_by == ALIGN_COLLECTIVES)
		fprintf(f, "  clocks: realtime pairs refined by %zu collectives matched on every rank; residual "
			   "alignment error %.1f us (the largest rank's median)\n", j->ncoll, j->residual_ns / 1e3);
	else if (j->aligned_by == ALIGN_REALTIME)
		fprintf(f, "  clocks: realtime pairs only (no collectives to refine them): within the hosts' "
			   "clock sync, about 1 ms across hosts\n");
	else
		fprintf(f, "  clocks: not aligned (recordings without clock pairs or collectives): no "
			   "cross-rank timing\n");
}

static void term_table(FILE *f, const struct job *j)
{
	char a[32], b[32], c[32];

	/* the mean step (steady window / steps), of which the per-step
	 * columns are shares, as the job's step is */
	fprintf(f, "\n  rank  host          pid      GPUs  steps   mean step busy  coll/step  wait/step  top finding\n");
	for (size_t i = 0; i < j->ranks.n; i++) {
		const struct rank_rec *r = &j->ranks.v[i];
		char rk[16], dev[32] = "";
		size_t o = 0;

		snprintf(rk, sizeof(rk), r->rank >= 0 ? "%ld" : "?", r->rank);
		if (r->status == RANK_UNREADABLE) {
			fprintf(f, "  %4s  (unreadable: %s)\n", rk, r->path);
			continue;
		}
		if (!r->ndevs) {
			fprintf(f, "  %4s  %-12.12s  %-7u  (no GPU timeline)\n", rk, r->host[0] ? r->host : "?", r->pid);
			continue;
		}
		for (unsigned d = 0; d < r->ndevs && o < sizeof(dev); d++)
			o += (size_t)snprintf(dev + o, sizeof(dev) - o, "%s%u", d ? "," : "", r->devs[d]);
		fprintf(f, "  %4s  %-12.12s  %-7u  %-4s  %5zu   %-8s  %3.0f%%  %-9s  %-9s  ", rk,
			r->host[0] ? r->host : "?", r->pid, dev[0] ? dev : "-", r->nsteps,
			r->nsteps ? fmt_ns(a, sizeof(a), r->steady_ns / (double)r->nsteps) : "-", r->busy_pct,
			fmt_ns(b, sizeof(b), r->comm_ns_step), r->matched ? fmt_ns(c, sizeof(c), r->wait_ns_step) : "-");
		if (r->findings.n) {
			/* the cause and its gain first, then the title's name (before
			 * its ':'): cut short, a title lost its figures; the whole
			 * titles are under "Each rank's own findings" */
			const struct rank_finding *t = &r->findings.v[0];
			const char *colon = strchr(t->title, ':');
			int len = colon ? (int)(colon - t->title) : (int)strlen(t->title);

			fprintf(f, "[%s] %.2fx %.*s%s\n", t->cause, t->speedup, len > 48 ? 45 : len, t->title,
				len > 48 ? "..." : "");
		} else {
			fprintf(f, "healthy\n");
		}
	}
}

static void term_findings(FILE *f, const struct job *j, int verbose)
{
	char a[32], list[512];

	fprintf(f, "\nAcross ranks:\n");
	if (!j->findings.n)
		fprintf(f, "  no cross-rank cause at warning or above%s\n",
			j->ncoll ? "" : " (no collectives matched across ranks: none could be judged)");
	for (size_t i = 0; i < j->findings.n; i++) {
		const struct job_finding *x = &j->findings.v[i];
		int col = fprintf(f, "%2zu. [%s] ", i + 1, severity_label(x->severity));

		fprint_wrapped(f, x->title, 4, col);
		fprintf(f, "    (%s) gain: %s per step, %.2fx faster overall\n", x->cause,
			fmt_ns(a, sizeof(a), x->per_step_ns), x->speedup);
		if (verbose) {
			fprintf(f, "    evidence: ");
			fprint_wrapped(f, x->evidence, 4, 14);
		}
		fprintf(f, "    fix: ");
		fprint_wrapped(f, x->fix, 4, 9);
	}
	fprintf(f, "\nEach rank's own findings (warning and above):\n");
	if (!j->groups.n)
		fprintf(f, "  none: every rank analysed is healthy on its own\n");
	for (size_t i = 0; i < j->groups.n; i++) {
		const struct job_group *g = &j->groups.v[i];

		job_rank_list(list, sizeof(list), g->ranks.v, g->ranks.n);
		fprintf(f, "  %s%s: [%s] [%s] %s, ", list, g->all || i == 0 ? "" : " also", severity_label(g->severity),
			g->cause, g->title);
		if (g->max_speedup - g->min_speedup < 0.005)
			fprintf(f, "%.2fx\n", g->max_speedup);
		else
			fprintf(f, "%.2fx-%.2fx\n", g->min_speedup, g->max_speedup);
	}
	fprintf(f, "\nOne rank's own report: gpuwhy report --rank N with the same files.\n");
}

struct term_ctx {
	const struct job *j;
	int verbose;
};

static void term_all(FILE *f, const void *ctx)
{
	const struct term_ctx *c = ctx;

	term_header(f, c->j);
	term_table(f, c->j);
	term_findings(f, c->j, c->verbose);
}

int render_job_terminal(FILE *f, const struct job *j, int verbose, int color)
{
	struct term_ctx c = { j, verbose };

	(void)color;
	return gw_with_units(f, gw_utf8_locale(), term_all, &c);
}

static void json_rank(struct json *js, const struct job *j, const struct rank_rec *r)
{
	json_obj_begin(js, NULL);
	if (r->rank >= 0)
		json_i64(js, "rank", r->rank);
	else
		json_null(js, "rank");
	if (r->local_rank >= 0)
		json_i64(js, "local_rank", r->local_rank);
	else
		json_null(js, "local_rank");
	json_str(js, "file", r->path);
	json_str(js, "status", status_name(r->status));
	if (r->status != RANK_OK)
		json_str(js, "why", r->why);
	if (r->status == RANK_UNREADABLE) {
		json_obj_end(js);
		return;
	}
	json_str(js, "host", r->host);
	json_u64(js, "pid", r->pid);
	json_arr_begin(js, "devices");
	for (unsigned d = 0; d < r->ndevs; d++)
		json_u64(js, NULL, r->devs[d]);
	json_arr_end(js);
	json_u64(js, "steps", r->nsteps);
	if (r->nsteps)
		json_dbl(js, "step_ms", r->step_ns / 1e6);
	else
		json_null(js, "step_ms");
	json_dbl(js, "busy_pct", r->busy_pct);
	json_dbl(js, "collective_ms_per_step", r->comm_ns_step / 1e6);
	json_dbl(js, "compute_ms_per_step", r->compute_ns_step / 1e6);
	json_dbl(js, "wait_ms_per_step", r->wait_ns_step / 1e6);
	json_dbl(js, "late_ms_per_step", r->late_ns_step / 1e6);
	json_dbl(js, "exposed_ms_per_step", r->exposed_ns_step / 1e6);
	json_bool(js, "host_staged", r->host_staged);
	json_u64(js, "times_last", r->times_last);
	json_u64(js, "collectives", r->coll.n);
	json_u64(js, "collectives_matched", r->matched);
	json_i64(js, "clock_correction_ns", r->corr);
	json_dbl(js, "clock_residual_us", r->resid_ns / 1e3);
	if (r->findings.n) {
		const struct rank_finding *t = &r->findings.v[0];

		json_obj_begin(js, "top_finding");
		json_str(js, "rule", t->rule);
		json_str(js, "cause", t->cause);
		json_str(js, "title", t->title);
		json_str(js, "severity", severity_name(t->severity));
		json_dbl(js, "speedup", t->speedup);
		json_obj_end(js);
	} else {
		json_null(js, "top_finding");
	}
	(void)j;
	json_obj_end(js);
}

static void json_longs(struct json *js, const char *key, const long *v, size_t n)
{
	json_arr_begin(js, key);
	for (size_t i = 0; i < n; i++)
		json_i64(js, NULL, v[i]);
	json_arr_end(js);
}

void render_job_json(struct json *js, const struct job *j)
{
	json_obj_begin(js, NULL);
	json_str(js, "schema", "gpuwhy.job/1");
	json_i64(js, "world_size", j->world);
	json_longs(js, "missing_ranks", j->missing.v, j->missing.n);
	json_longs(js, "duplicate_ranks", j->duplicate.v, j->duplicate.n);
	json_obj_begin(js, "alignment");
	json_str(js, "by", align_name(j->aligned_by));
	json_u64(js, "collectives", j->ncoll);
	json_dbl(js, "residual_us", j->residual_ns / 1e3);
	if (j->ref >= 0 && j->ranks.v[j->ref].rank >= 0)
		json_i64(js, "reference_rank", j->ranks.v[j->ref].rank);
	else
		json_null(js, "reference_rank");
	json_obj_end(js);
	json_dbl(js, "step_ms", j->step_ns / 1e6);
	json_arr_begin(js, "ranks");
	for (size_t i = 0; i < j->ranks.n; i++)
		json_rank(js, j, &j->ranks.v[i]);
	json_arr_end(js);
	json_arr_begin(js, "findings");
	for (size_t i = 0; i < j->findings.n; i++) {
		const struct job_finding *x = &j->findings.v[i];

		json_obj_begin(js, NULL);
		json_str(js, "rule", x->rule);
		json_str(js, "cause", x->cause);
		json_str(js, "title", x->title);
		json_str(js, "severity", severity_name(x->severity));
		if (x->rank >= 0)
			json_i64(js, "rank", x->rank);
		else
			json_null(js, "rank");
		if (x->host[0])
			json_str(js, "host", x->host);
		else
			json_null(js, "host");
		json_dbl(js, "saved_per_step_ms", x->per_step_ns / 1e6);
		json_dbl(js, "speedup", x->speedup);
		json_str(js, "evidence", x->evidence);
		json_str(js, "fix", x->fix);
		json_obj_end(js);
	}
	json_arr_end(js);
	json_arr_begin(js, "rank_findings");
	for (size_t i = 0; i < j->groups.n; i++) {
		const struct job_group *g = &j->groups.v[i];

		json_obj_begin(js, NULL);
		json_str(js, "rule", g->rule);
		json_str(js, "cause", g->cause);
		json_str(js, "title", g->title);
		json_longs(js, "ranks", g->ranks.v, g->ranks.n);
		json_bool(js, "all_ranks", g->all);
		json_dbl(js, "min_speedup", g->min_speedup);
		json_dbl(js, "max_speedup", g->max_speedup);
		json_obj_end(js);
	}
	json_arr_end(js);
	json_obj_end(js);
}
