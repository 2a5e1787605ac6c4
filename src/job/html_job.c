/* The job report as one self-contained HTML page (report --html OUT with
 * several ranks): the clocks, a table of the ranks with each one's step
 * drawn as its parts (GPU work, time in collectives before the last rank
 * arrived, the rest of the collectives, everything else), the causes
 * across ranks, and each rank's own findings grouped. Printed from struct
 * job, like the terminal and JSON renderers; nothing is computed here
 * beyond the bars' shares. */
#include <errno.h>
#include <string.h>

#include "../report/html.h"
#include "../report/render.h"
#include "../util/util.h"
#include "job.h"

static void clocks(FILE *f, const struct job *j)
{
	fputs("<p id=\"clocks\">clocks: ", f);
	if (j->aligned_by == ALIGN_ONE_CLOCK) {
		fputs("one host's clock (every rank recorded on ", f);
		html_esc(f, j->ranks.v[j->ref].host);
		fprintf(f, " since the same boot): no correction; %zu collectives matched on every rank", j->ncoll);
	} else if (j->aligned_by == ALIGN_COLLECTIVES) {
		fprintf(f, "realtime pairs refined by %zu collectives matched on every rank; residual alignment "
			   "error %.1f µs (the largest rank's median)", j->ncoll, j->residual_ns / 1e3);
	} else if (j->aligned_by == ALIGN_REALTIME) {
		fputs("realtime pairs only (no collectives to refine them): within the hosts' clock sync, "
		      "about 1 ms across hosts", f);
	} else {
		fputs("not aligned (recordings without clock pairs or collectives): no cross-rank timing", f);
	}
	fputs("</p>\n", f);
}

/* A rank's step as parts: GPU work outside collectives, waiting inside
 * them for the last rank, the rest of them, and the rest of the step. */
static void step_bar(FILE *f, const struct rank_rec *r, size_t i)
{
	static const char *const label[] = { "GPU work outside collectives", "waiting for the last rank",
					     "rest of the collectives", "rest of the step" };
	static const char *const color[] = { BUSY_COLOR, "#c62828", "#7e57c2", "#cfd8dc" };
	double share[4] = { 0 }, step = r->step_ns;
	char id[32];

	if (!(step > 0))
		return;
	share[0] = r->compute_ns_step / step;
	share[1] = r->matched ? r->wait_ns_step / step : 0;
	share[2] = r->comm_ns_step > r->wait_ns_step ? (r->comm_ns_step - share[1] * step) / step : 0;
	for (int k = 0; k < 3; k++)
		share[k] = share[k] < 0 ? 0 : share[k];
	double sum = share[0] + share[1] + share[2];

	if (sum > 1) /* the parts overlap (collectives beside GPU work): scaled to the step */
		for (int k = 0; k < 3; k++)
			share[k] /= sum;
	share[3] = 1 - (share[0] + share[1] + share[2]);
	snprintf(id, sizeof(id), "rank-bar-%zu", i);
	html_split_bar(f, id, share, label, color, 4);
}

static void rank_table(FILE *f, const struct job *j)
{
	char a[32], b[32], c[32], d[32];

	fputs("<h2 id=\"ranks\">Ranks</h2>\n<table id=\"rank-table\"><tr><th>rank</th><th>host</th>"
	      "<th class=\"num\">pid</th><th>GPUs</th><th class=\"num\">steps</th><th class=\"num\">step</th>"
	      "<th class=\"num\">busy</th><th class=\"num\">coll/step</th><th class=\"num\">wait/step</th>"
	      "<th>the step</th><th>top finding</th></tr>\n", f);
	for (size_t i = 0; i < j->ranks.n; i++) {
		const struct rank_rec *r = &j->ranks.v[i];

		fputs("<tr><td class=\"num\">", f);
		if (r->rank >= 0)
			fprintf(f, "%ld", r->rank);
		else
			fputs("?", f);
		fputs("</td><td>", f);
		if (r->status == RANK_UNREADABLE) {
			fputs("unreadable: <span class=\"mono\">", f);
			html_esc(f, r->path);
			fputs("</span>: ", f);
			html_esc(f, r->why);
			fputs("</td></tr>\n", f);
			continue;
		}
		html_esc(f, r->host[0] ? r->host : "?");
		fprintf(f, "</td><td class=\"num\">%u</td><td>", r->pid);
		for (unsigned k = 0; k < r->ndevs; k++)
			fprintf(f, "%s%u", k ? "," : "", r->devs[k]);
		fprintf(f, "</td><td class=\"num\">%zu</td><td class=\"num\">%s</td><td class=\"num\">%.0f%%</td>"
			   "<td class=\"num\">%s</td><td class=\"num\">%s</td><td>",
			r->nsteps, r->nsteps ? fmt_ns(a, sizeof(a), r->step_ns) : "-", r->busy_pct,
			fmt_ns(b, sizeof(b), r->comm_ns_step), r->matched ? fmt_ns(c, sizeof(c), r->wait_ns_step) : "-");
		step_bar(f, r, i);
		fputs("</td><td>", f);
		if (r->findings.n) {
			fprintf(f, "<span class=\"sev %s\">%s</span>", severity_name(r->findings.v[0].severity),
				severity_label(r->findings.v[0].severity));
			html_esc(f, r->findings.v[0].title);
			fprintf(f, " (%s) %.2fx", r->findings.v[0].cause, r->findings.v[0].speedup);
		} else {
			fputs("healthy", f);
		}
		if (r->status == RANK_DAMAGED) {
			fputs("<div class=\"muted\">damaged: ", f);
			html_esc(f, r->why);
			fputs("</div>", f);
		}
		fputs("</td></tr>\n", f);
		(void)d;
	}
	fputs("</table>\n", f);
	html_legend(f, BUSY_COLOR, "GPU work outside collectives");
	html_legend(f, "#c62828", "waiting for the last rank");
	html_legend(f, "#7e57c2", "rest of the collectives");
	html_legend(f, "#cfd8dc", "rest of the step");
}

static void findings(FILE *f, const struct job *j)
{
	char a[32], list[512];

	fputs("<h2 id=\"across\">Across ranks</h2>\n", f);
	if (!j->findings.n)
		fprintf(f, "<p>no cross-rank cause at warning or above%s</p>\n",
			j->ncoll ? "" : " (no collectives matched across ranks: none could be judged)");
	for (size_t i = 0; i < j->findings.n; i++) {
		const struct job_finding *x = &j->findings.v[i];

		fprintf(f, "<section class=\"finding %s\" id=\"finding-%zu\" data-rule=\"", severity_name(x->severity),
			i + 1);
		html_esc(f, x->rule);
		fprintf(f, "\">\n<h3><span class=\"sev %s\">%s</span>", severity_name(x->severity),
			severity_label(x->severity));
		html_esc(f, x->title);
		fprintf(f, " (%s)</h3>\n<div class=\"gain\">gain: %s per step, %.2fx faster overall</div>\n", x->cause,
			fmt_ns(a, sizeof(a), x->per_step_ns), x->speedup);
		fputs("<div class=\"fix\"><b>fix:</b> ", f);
		html_esc(f, x->fix);
		fputs("</div>\n<details class=\"evidence\" open><summary>evidence</summary>", f);
		html_esc(f, x->evidence);
		fputs("</details>\n</section>\n", f);
	}
	fputs("<h2 id=\"own\">Each rank's own findings (warning and above)</h2>\n<ul id=\"groups\">\n", f);
	if (!j->groups.n)
		fputs("<li>none: every rank analysed is healthy on its own</li>\n", f);
	for (size_t i = 0; i < j->groups.n; i++) {
		const struct job_group *g = &j->groups.v[i];

		job_rank_list(list, sizeof(list), g->ranks.v, g->ranks.n);
		fputs("<li>", f);
		html_esc(f, list);
		fprintf(f, "%s: [%s] ", g->all || i == 0 ? "" : " also", g->cause);
		html_esc(f, g->title);
		if (g->max_speedup - g->min_speedup < 0.005)
			fprintf(f, ", %.2fx</li>\n", g->max_speedup);
		else
			fprintf(f, ", %.2fx-%.2fx</li>\n", g->min_speedup, g->max_speedup);
	}
	fputs("</ul>\n<p class=\"muted\">One rank's own report, with its timeline and code sites: gpuwhy "
	      "report --rank N --html OUT with the same files.</p>\n", f);
}

static void page(FILE *f, const void *ctx)
{
	const struct job *j = ctx;
	size_t ok = 0;

	for (size_t i = 0; i < j->ranks.n; i++)
		ok += j->ranks.v[i].status != RANK_UNREADABLE;
	html_begin(f, "gpuwhy job report");
	fprintf(f, "<h1>gpuwhy job report: %zu recordings, %zu analysed", j->ranks.n, ok);
	if (j->world > 0)
		fprintf(f, ", world size %ld", j->world);
	fputs("</h1>\n", f);
	clocks(f, j);
	rank_table(f, j);
	findings(f, j);
	html_end(f);
}

int render_job_html(FILE *f, const struct job *j)
{
	int r = gw_with_units(f, 1, page, j);

	return ferror(f) ? -EIO : r;
}
