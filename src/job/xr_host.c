/* X5, per-host causes: something about one host that hits every rank on
 * it and no rank elsewhere: a finding all its ranks' own reports share
 * (power or thermal limits, PCIe, CPU oversubscription, storage), or all
 * its ranks arriving later at the collectives than any rank elsewhere (docs/RULES.md section 8). */
#include <stdlib.h>
#include <string.h>

#include "xr.h"

struct host_set {
	const char *name;
	size_t ranks, late;
	double late_ns;
};

/* 1 when every rank read on host h has a finding of cause c and no rank
 * on another host has one. */
static int only_on(const struct job *j, const char *h, const char *c, size_t *nh)
{
	*nh = 0;
	for (size_t i = 0; i < j->nr; i++) {
		const struct rank_rec *r = &j->ranks.v[i];
		int has = 0;

		if (r->status == RANK_UNREADABLE)
			continue;
		for (size_t k = 0; k < r->findings.n && !has; k++)
			has = !strcmp(r->findings.v[k].cause, c);
		if (!strcmp(r->host, h)) {
			if (!has)
				return 0;
			(*nh)++;
		} else if (has) {
			return 0;
		}
	}
	return *nh > 0;
}

static void finding_of_host(struct job *j, const char *h, const struct rank_finding *rf, size_t nh)
{
	struct job_finding *f = job_finding_add(j, "X5.host", "X5");

	if (!f)
		return;
	snprintf(f->host, sizeof(f->host), "%s", h);
	f->severity = rf->severity;
	f->per_step_ns = rf->per_step_ns;
	f->speedup = rf->speedup;
	snprintf(f->title, sizeof(f->title), "Host %s: every rank on it, and no other, has [%s] %s", h, rf->cause,
		 rf->title);
	snprintf(f->evidence, sizeof(f->evidence),
		 "The %zu rank(s) recorded on %s all report %s (%s); the ranks on the other hosts do not. "
		 "A cause of the host (its GPUs, power and cooling, PCIe, CPUs, storage) rather than of "
		 "the code.", nh, h, rf->cause, rf->rule);
	snprintf(f->fix, sizeof(f->fix),
		 "Check that host: gpuwhy check on it, and the fix of %s in any of its ranks' reports "
		 "(gpuwhy report --rank N).", rf->cause);
}

/* Every rank on host h later into the collectives than every rank on the
 * other hosts, by XR_LATE_MIN_NS or more: something about the host (its
 * CPUs, its storage, its network link) holds them all. */
static void late_host(struct job *j, const char *h)
{
	double min_in = -1, max_out = 0, sum = 0;
	size_t n = 0;

	for (size_t i = 0; i < j->nr; i++) {
		const struct rank_rec *r = &j->ranks.v[i];

		if (r->status == RANK_UNREADABLE || !r->matched)
			continue;
		if (!strcmp(r->host, h)) {
			if (min_in < 0 || r->late_ns_step < min_in)
				min_in = r->late_ns_step;
			sum += r->late_ns_step;
			n++;
		} else if (r->late_ns_step > max_out) {
			max_out = r->late_ns_step;
		}
	}
	if (!n || min_in - max_out < XR_LATE_MIN_NS || xr_severity(j, min_in) == SEV_INFO)
		return;
	struct job_finding *f = job_finding_add(j, "X5.host", "X5");
	char a[32], b[32], c[32];

	if (!f)
		return;
	snprintf(f->host, sizeof(f->host), "%s", h);
	xr_gain(j, f, min_in);
	snprintf(f->title, sizeof(f->title), "Host %s: every rank on it reaches the collectives late, %s per step or more",
		 h, fmt_ns(a, sizeof(a), min_in));
	snprintf(f->evidence, sizeof(f->evidence),
		 "The %zu rank(s) on %s arrive %s per step after the median rank on average, at least %s; no "
		 "rank on another host more than %s. A cause of the host rather than of one rank.",
		 n, h, fmt_ns(a, sizeof(a), sum / (double)n), fmt_ns(b, sizeof(b), min_in),
		 fmt_ns(c, sizeof(c), max_out));
	snprintf(f->fix, sizeof(f->fix),
		 "Compare that host with the others: gpuwhy check on it (CPU governor, NUMA binding, PCIe, "
		 "clocks), other jobs on it, its data path; its ranks' own reports (gpuwhy report --rank N).");
}

void xr_host(struct job *j)
{
	const char **hosts = malloc((j->nr ? j->nr : 1) * sizeof(*hosts));
	size_t nh = 0;

	if (!hosts) {
		j->nomem = 1;
		return;
	}
	for (size_t i = 0; i < j->nr; i++) {
		const char *h = j->ranks.v[i].host;
		size_t k = 0;

		if (!h[0] || j->ranks.v[i].status == RANK_UNREADABLE)
			continue;
		while (k < nh && strcmp(hosts[k], h))
			k++;
		if (k == nh)
			hosts[nh++] = h;
	}
	if (nh < 2) {
		free(hosts);
		return; /* one host: nothing to set it apart from */
	}
	for (size_t k = 0; k < nh; k++) {
		const struct rank_rec *first = NULL;

		late_host(j, hosts[k]);
		for (size_t i = 0; i < j->nr && !first; i++)
			if (!strcmp(j->ranks.v[i].host, hosts[k]) && j->ranks.v[i].status != RANK_UNREADABLE)
				first = &j->ranks.v[i];
		for (size_t c = 0; first && c < first->findings.n; c++) {
			size_t n;

			if (only_on(j, hosts[k], first->findings.v[c].cause, &n))
				finding_of_host(j, hosts[k], &first->findings.v[c], n);
		}
	}
	free(hosts);
}
