/* gpuwhy diff: what changed between two recordings of a job (diff.h). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../util/util.h"
#include "diff.h"

const char *diff_state_name(enum diff_state s)
{
	return s == DIFF_GONE ? "gone" : s == DIFF_NEW ? "new" : s == DIFF_CHANGED ? "changed" : "same";
}

static void side_fill(struct diff_side *s, const struct analysis *a, double batch)
{
	double per = 0; /* what "per step" divides by */

	memset(s, 0, sizeof(*s));
	s->a = a;
	s->steps = has_steps(a);
	s->steady_ns = (double)a->steady_ns;
	if (s->steps) {
		s->step_mean_ns = s->steady_ns / (double)s->steps;
		s->step_median_ns = a->step_median_ns;
		s->step_p95_ns = a->step_p95_ns;
		s->step_max_ns = a->step_max_ns;
		if (s->steady_ns > 0)
			s->steps_per_s = (double)s->steps / (s->steady_ns / 1e9);
		s->samples_per_s = batch > 0 ? batch * s->steps_per_s : 0;
		per = (double)s->steps;
	} else {
		per = s->steady_ns / 1e9;
	}
	if (s->steady_ns > 0) {
		s->busy_pct = 100.0 * (double)a->busy_ns / s->steady_ns;
		s->idle_pct = 100.0 * (double)a->idle_ns / s->steady_ns;
	}
	for (int c = 0; c < IDLE_NCAUSES; c++) {
		s->idle_ns[c] = per > 0 ? (double)a->idle_by_cause[c] / per : 0;
		s->idle_pct_cause[c] = a->idle_ns ? 100.0 * (double)a->idle_by_cause[c] / (double)a->idle_ns : 0;
	}
	s->kernels_per_step = per > 0 ? (double)a->ops.kernels / per : 0;
	s->startup_ns = s->steps ? (double)a->startup_ns : 0;
	s->job_ns = a->job_ns;
}

struct kent {
	const char *name;
	double ns;
	uint64_t count;
};

static int cmp_kent(const void *x, const void *y)
{
	return strcmp(((const struct kent *)x)->name, ((const struct kent *)y)->name);
}

/* One side's kernels by short name (several recorded names can share one),
 * sorted by name. */
static struct kent *kernels_by_name(const struct analysis *a, size_t *n)
{
	struct kent *v = NULL;
	size_t k = 0, m = 0;

	for (size_t i = 0; i < a->name_totals_n; i++)
		m += a->name_totals[i].count > 0;
	v = calloc(m + 1, sizeof(*v));
	if (!v)
		return NULL;
	for (size_t i = 0; i < a->name_totals_n; i++)
		if (a->name_totals[i].count)
			v[k++] = (struct kent){ analysis_kname(a, (uint32_t)i, KNAME_SHORT),
						(double)a->name_totals[i].ns, a->name_totals[i].count };
	qsort(v, k, sizeof(*v), cmp_kent);
	m = 0;
	for (size_t i = 0; i < k; i++) { /* merge equal names */
		if (m && !strcmp(v[m - 1].name, v[i].name)) {
			v[m - 1].ns += v[i].ns;
			v[m - 1].count += v[i].count;
		} else {
			v[m++] = v[i];
		}
	}
	*n = m;
	return v;
}

static double change(const struct diff_kernel *k)
{
	return fabs(k->per_step[1] - k->per_step[0]);
}

static int cmp_change(const void *x, const void *y)
{
	double a = change(x), b = change(y);

	if (a != b)
		return a < b ? 1 : -1;
	return strcmp(((const struct diff_kernel *)x)->name, ((const struct diff_kernel *)y)->name);
}

static int kernels(struct diff *d, size_t top)
{
	size_t n0 = 0, n1 = 0, i = 0, j = 0, n = 0;
	struct kent *k0 = kernels_by_name(d->side[0].a, &n0), *k1 = kernels_by_name(d->side[1].a, &n1);
	double per[2];

	if (!k0 || !k1) {
		free(k0);
		free(k1);
		return -ENOMEM;
	}
	d->k = calloc(n0 + n1 + 1, sizeof(*d->k));
	if (!d->k) {
		free(k0);
		free(k1);
		return -ENOMEM;
	}
	for (int s = 0; s < 2; s++)
		per[s] = d->side[s].steps ? (double)d->side[s].steps : d->side[s].steady_ns / 1e9;
	while (i < n0 || j < n1) {
		int c = i == n0 ? 1 : j == n1 ? -1 : strcmp(k0[i].name, k1[j].name);
		struct diff_kernel *e = &d->k[n++];

		e->name = c <= 0 ? k0[i].name : k1[j].name;
		if (c <= 0) {
			e->ns[0] = k0[i].ns;
			e->count[0] = k0[i++].count;
		}
		if (c >= 0) {
			e->ns[1] = k1[j].ns;
			e->count[1] = k1[j++].count;
		}
		for (int s = 0; s < 2; s++)
			e->per_step[s] = per[s] > 0 ? e->ns[s] / per[s] : 0;
	}
	free(k0);
	free(k1);
	qsort(d->k, n, sizeof(*d->k), cmp_change);
	d->nk_total = n;
	d->nk = n < top ? n : top;
	return 0;
}

static const struct finding *find_rule(const struct analysis *a, const char *rule)
{
	for (size_t i = 0; i < a->findings.n; i++) {
		const struct finding *f = &a->findings.v[i];

		if (f->assessed && f->severity >= SEV_WARN && !strcmp(f->rule_id, rule))
			return f;
	}
	return NULL;
}

static int findings(struct diff *d)
{
	size_t cap = d->side[0].a->findings.n + d->side[1].a->findings.n + 1;

	d->fd = calloc(cap, sizeof(*d->fd));
	if (!d->fd)
		return -ENOMEM;
	for (int s = 0; s < 2; s++) {
		const struct analysis *a = d->side[s].a;

		for (size_t i = 0; i < a->findings.n; i++) {
			const struct finding *f = &a->findings.v[i];
			struct diff_finding *e;
			int seen = 0;

			if (!f->assessed || f->severity < SEV_WARN)
				continue;
			for (size_t k = 0; k < d->nf; k++)
				seen |= !strcmp(d->fd[k].rule, f->rule_id);
			if (seen)
				continue;
			e = &d->fd[d->nf++];
			e->rule = f->rule_id;
			e->cause = f->cause;
			e->f[0] = find_rule(d->side[0].a, f->rule_id);
			e->f[1] = find_rule(d->side[1].a, f->rule_id);
			if (!e->f[1])
				e->state = DIFF_GONE;
			else if (!e->f[0])
				e->state = DIFF_NEW;
			else {
				/* changed: another severity, or a gain 5 points of the run
				 * larger or smaller */
				double p0 = d->side[0].steady_ns > 0 ? 100 * e->f[0]->saved_ns / d->side[0].steady_ns : 0;
				double p1 = d->side[1].steady_ns > 0 ? 100 * e->f[1]->saved_ns / d->side[1].steady_ns : 0;

				e->state = diff_finding_moved(e->f[0]->severity, e->f[1]->severity, p0, p1) ? DIFF_CHANGED
													  : DIFF_SAME;
			}
		}
	}
	return 0;
}

static void predicted(struct diff *d)
{
	struct diff_predicted *p = &d->pred;
	const struct analysis *b = d->side[0].a;
	size_t warn = 0;

	for (size_t i = 0; i < b->findings.n; i++)
		warn += b->findings.v[i].assessed && b->findings.v[i].severity >= SEV_WARN;
	/* in BEFORE's order: largest gain first */
	for (size_t i = 0; i < b->findings.n; i++) {
		const struct finding *f = &b->findings.v[i];

		if (!f->assessed || f->severity < SEV_WARN || find_rule(d->side[1].a, f->rule_id))
			continue;
		if (p->n < DIFF_PREDICTED_MAX)
			p->f[p->n] = f;
		p->n++;
		size_t k = strlen(p->causes);

		snprintf(p->causes + k, sizeof(p->causes) - k, "%s%s", k ? "+" : "", f->cause);
	}
	if (p->n > DIFF_PREDICTED_MAX)
		p->n = DIFF_PREDICTED_MAX;
	if (p->n == 1) {
		p->speedup = p->f[0]->speedup;
		p->capped = p->f[0]->capped;
	} else if (p->n > 1 && p->n == warn && b->combined_speedup > 0) {
		p->speedup = b->combined_speedup;
		p->capped = b->combined_capped;
		p->combined = 1;
	}
}

int diff_program_of(const char *cmdline, char *out, size_t len)
{
	const char *p = cmdline;
	char tok[256], exe[128] = "";
	int python = 0, want_arg = 0; /* the next token: 1 -m's module, 2 an option's value */
	int saw_env = 0;

	out[0] = 0;
	while (p && *p && !out[0]) {
		size_t n = strcspn(p, " ");
		const char *base;

		snprintf(tok, sizeof(tok), "%.*s", (int)(n < sizeof(tok) ? n : sizeof(tok) - 1), p);
		p += n + (p[n] == ' ');
		base = strrchr(tok, '/') ? strrchr(tok, '/') + 1 : tok;
		if (!tok[0])
			continue;
		if (!exe[0] && (!strcmp(base, "env") || strchr(tok, '=') || (saw_env && tok[0] == '-'))) {
			saw_env |= !strcmp(base, "env");
			continue; /* env [-i] VAR=value ... runs what follows */
		} else if (!exe[0]) { /* the executable */
			snprintf(exe, sizeof(exe), "%s", base);
			python = gw_is_python_name(base);
			if (!python)
				snprintf(out, len, "%s", base);
		} else if (want_arg) {
			if (want_arg == 1)
				snprintf(out, len, "%s", tok);
			want_arg = 0;
		} else if (!strcmp(tok, "-m")) {
			want_arg = 1;
		} else if (!strncmp(tok, "-m", 2)) { /* -mMODULE */
			snprintf(out, len, "%s", tok + 2);
		} else if (!strcmp(tok, "-c")) { /* a program given inline */
			snprintf(out, len, "python -c");
		} else if (!strcmp(tok, "-X") || !strcmp(tok, "-W") || !strcmp(tok, "--check-hash-based-pycs")) {
			want_arg = 2;
		} else if (tok[0] != '-') { /* the script */
			snprintf(out, len, "%s", base);
		}
	}
	if (!out[0] && exe[0])
		snprintf(out, len, "%s", exe);
	return out[0] != 0;
}

/* Whether two recordings ran on different machines, and what each ran on
 * ("NVIDIA H100 80GB HBM3, 16 CPUs (AMD EPYC 9454 48-Core Processor)"): a
 * name or count only one of them recorded is not compared. */
static int machines(struct diff *d, const struct analysis *before, const struct analysis *after)
{
	const struct analysis *side[2] = { before, after };
	const char *gpu[2], *cpu[2], *cpus[2];

	for (int i = 0; i < 2; i++) {
		gpu[i] = trace_gpu_name(side[i]->t, side[i]->main_dev);
		cpu[i] = trace_meta(side[i]->t, "host.cpu_model");
		cpus[i] = trace_meta(side[i]->t, "host.cpus");
		snprintf(d->machine[i], sizeof(d->machine[i]), "%s, %s CPUs%s%s%s", gpu[i] ? gpu[i] : "GPU unknown",
			 cpus[i] ? cpus[i] : "?", cpu[i] ? " (" : "", cpu[i] ? cpu[i] : "", cpu[i] ? ")" : "");
	}
	return (gpu[0] && gpu[1] && strcmp(gpu[0], gpu[1])) || (cpu[0] && cpu[1] && strcmp(cpu[0], cpu[1])) ||
	       (cpus[0] && cpus[1] && strcmp(cpus[0], cpus[1]));
}

static int program_of(const struct analysis *a, char *out, size_t len)
{
	return diff_program_of(trace_meta(a->t, "target.cmdline"), out, len);
}

int diff_compute(struct diff *d, const struct analysis *before, const struct analysis *after,
		 const double batch[2], size_t top)
{
	const struct diff_side *b = &d->side[0], *a = &d->side[1];

	memset(d, 0, sizeof(*d));
	side_fill(&d->side[0], before, batch[0]);
	side_fill(&d->side[1], after, batch[1]);
	if (b->steps && a->steps && a->step_mean_ns > 0) {
		/* samples per step given for both: the throughput ratio */
		double per = batch[0] > 0 && batch[1] > 0 ? batch[1] / batch[0] : 1;

		d->by_samples = per != 1 || (batch[0] > 0 && batch[1] > 0);
		d->speedup = b->step_mean_ns / a->step_mean_ns * per;
		if (a->step_median_ns > 0)
			d->speedup_median = b->step_median_ns / a->step_median_ns * per;
		if (before->busy_ns > 0)
			d->work_ratio = ((double)after->busy_ns / (double)a->steps) /
					((double)before->busy_ns / (double)b->steps);
		d->work_differs = !d->by_samples && d->work_ratio > 0 &&
				  (d->work_ratio > DIFF_WORK_DIFFERS || d->work_ratio < 1 / DIFF_WORK_DIFFERS);
		d->work_unlike = !d->by_samples && d->work_ratio > DIFF_WORK_DIFFERS;
	}
	/* a fix is often tried in a copy of the script (train_amp.py): two
	 * names alone are no proof of two jobs; another framework, or GPU work
	 * that differs DIFF_OTHER_JOB_WORK times either way, is */
	d->programs_differ = !d->by_samples && program_of(before, d->program[0], sizeof(d->program[0])) &&
			     program_of(after, d->program[1], sizeof(d->program[1])) &&
			     strcmp(d->program[0], d->program[1]) &&
			     (before->framework != after->framework ||
			      (d->work_ratio > 0 && (d->work_ratio > DIFF_OTHER_JOB_WORK ||
						     d->work_ratio < 1 / DIFF_OTHER_JOB_WORK)));
	d->not_speedup = d->speedup > 0 && (d->work_unlike || d->programs_differ);
	d->machines_differ = machines(d, before, after);
	/* the side whose longest step stands out the most over its median */
	double out[2];

	for (int i = 0; i < 2; i++)
		out[i] = d->side[i].steady_ns > 0 ? (d->side[i].step_max_ns - d->side[i].step_median_ns) / d->side[i].steady_ns
						  : 0;
	int o = out[1] > out[0];

	d->outlier_side = d->speedup > 0 && d->speedup_median > 0 && !d->not_speedup && out[o] >= DIFF_OUTLIER_SHARE &&
				  (d->speedup / d->speedup_median > DIFF_OUTLIER_SKEW ||
				   d->speedup_median / d->speedup > DIFF_OUTLIER_SKEW)
			  ? o
			  : -1;
	if (d->side[1].steady_ns > 0)
		d->wall_ratio = d->side[0].steady_ns / d->side[1].steady_ns;
	double was = d->side[0].startup_ns, now = d->side[1].startup_ns;

	d->startup_better = (now < was * (1 - DIFF_SAME_SHARE)) - (now > was * (1 + DIFF_SAME_SHARE));
	if (before->startup_finding.shown && !after->startup_finding.shown && d->side[0].job_ns > 0 &&
	    d->side[1].job_ns > 0)
		d->job_speedup = d->side[0].job_ns / d->side[1].job_ns;
	if (kernels(d, top) < 0 || findings(d) < 0) {
		diff_free(d);
		return -ENOMEM;
	}
	predicted(d);
	return 0;
}

void diff_free(struct diff *d)
{
	free(d->k);
	free(d->fd);
	memset(d, 0, sizeof(*d));
}
