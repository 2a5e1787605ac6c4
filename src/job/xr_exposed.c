/* X6, communication not overlapped with compute: the median rank spends
 * time in collectives with nothing else on its GPU, beyond its wait for
 * the last rank (X2 counts that). NCCL: its collective kernels while none
 * of its other operations ran; host-staged (gloo): its GPU idle inside
 * them (docs/RULES.md section 8). Overlapping hides at most the GPU work
 * there is to hide it behind, so the saving is bounded by the rank's GPU
 * work per step; a transfer much longer than that wants a faster one. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xr.h"

void xr_exposed(struct job *j)
{
	double *v = malloc((j->nr ? j->nr : 1) * 2 * sizeof(*v)), *work, transfer, med_work;
	size_t n = 0, host = 0;

	if (!v) {
		j->nomem = 1;
		return;
	}
	work = v + j->nr;
	for (size_t i = 0; i < j->nr; i++) {
		const struct rank_rec *r = &j->ranks.v[i];

		if (r->status == RANK_UNREADABLE || !r->nsteps || !r->matched)
			continue;
		v[n] = r->exposed_ns_step > r->wait_ns_step ? r->exposed_ns_step - r->wait_ns_step : 0;
		work[n++] = r->compute_ns_step;
		host += r->host_staged;
	}
	if (n < 2) {
		free(v);
		return;
	}
	qsort(v, n, sizeof(*v), xr_cmp_dbl);
	qsort(work, n, sizeof(*work), xr_cmp_dbl);
	transfer = v[(n - 1) / 2];
	med_work = work[(n - 1) / 2];
	free(v);
	double saving = transfer < med_work ? transfer : med_work;

	if (xr_severity(j, saving) == SEV_INFO)
		return;
	struct job_finding *f = job_finding_add(j, "X6.exposed-communication", "X6");
	char a[32], b[32], c[32], d[32], nccl[256] = "";

	if (!f)
		return;
	/* the faster transfer itself: the ranks' own C15 findings replay it
	 * (their collectives' host time taken out), a gain this one leaves out */
	double lo = 0, hi = 0;

	for (size_t i = 0; host && i < j->nr; i++)
		for (size_t k = 0; k < j->ranks.v[i].findings.n; k++) {
			const struct rank_finding *rf = &j->ranks.v[i].findings.v[k];

			if (strcmp(rf->cause, "C15"))
				continue;
			lo = lo == 0 || rf->speedup < lo ? rf->speedup : lo;
			hi = rf->speedup > hi ? rf->speedup : hi;
		}
	if (lo > 0) {
		char range[48];

		snprintf(range, sizeof(range), hi > lo ? "%.2fx-%.2fx" : "%.2fx", lo, hi);
		snprintf(nccl, sizeof(nccl), " NCCL's faster transfer saves more: the ranks' own C15 findings "
			 "estimate %s with it (gpuwhy report --rank N).", range);
	}
	xr_gain(j, f, saving);
	snprintf(f->title, sizeof(f->title),
		 "Communication is not overlapped with compute: %s per step in collectives with the GPU "
		 "otherwise idle (%.0f%% of the step)", fmt_ns(a, sizeof(a), transfer), 100 * transfer / j->step_ns);
	snprintf(f->evidence, sizeof(f->evidence),
		 "The median rank spends %s per step in collectives while its GPU runs nothing else, "
		 "besides waiting for the last rank (X2); its GPU work per step is %s, so overlapping "
		 "hides at most that: %s per step of a %s step.%s",
		 fmt_ns(a, sizeof(a), transfer), fmt_ns(b, sizeof(b), med_work), fmt_ns(c, sizeof(c), saving),
		 fmt_ns(d, sizeof(d), j->step_ns),
		 host ? " Its collectives are staged through host memory (gloo): each one copies the "
			"tensor to host memory, reduces it on the CPUs and copies it back. The gain counts "
			"the overlap alone." : "");
	if (host) {
		size_t l = strlen(f->evidence);

		snprintf(f->evidence + l, sizeof(f->evidence) - l, "%s",
			 nccl[0] ? nccl : " NCCL's faster transfer would save more, which these recordings do not "
					  "estimate.");
	}
	snprintf(f->fix, sizeof(f->fix), "%s",
		 host ? "Use the NCCL backend for CUDA tensors, one GPU per rank: its collectives run on the "
			"GPU and DDP overlaps them with the backward pass; a transfer this much longer than "
			"the GPU work is gloo's round trip through host memory."
		      : "Overlap the collectives with compute: DDP does so bucket by bucket during the "
			"backward pass (bucket_cap_mb smaller for an earlier start; no_sync() under "
			"gradient accumulation; static_graph=True), FSDP with forward and backward "
			"prefetch; keep the optimizer step from waiting on all of them at once.");
}
