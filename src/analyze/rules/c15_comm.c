/* C15: multi-GPU: communication that waits on a slow rank (straggler). */
#include "rule.h"

RULE(comm, "C15.communication", "C15", 0, SETTLE_NO_IDLE, ADV_C15_COMM);

static void comm_eval(struct analysis *a, struct finding *f)
{
	uint32_t lo = 0, hi = 0;
	int have = 0;

	for (uint32_t d = 0; d < a->ndev && d < GW_MAX_GPUS; d++) {
		if (!a->dev[d].busy_ns)
			continue;
		if (!have || a->dev[d].comm_ns < a->dev[lo].comm_ns)
			lo = d;
		if (!have || a->dev[d].comm_ns > a->dev[hi].comm_ns)
			hi = d;
		have = 1;
	}
	if (!have || a->ndev < 2 || !a->dev[hi].comm_ns)
		return;
	double wait = (double)(a->dev[hi].comm_ns - a->dev[lo].comm_ns);

	if (pct(a, wait) < FINDING_MIN_PCT)
		return;
	/* the faster GPUs' wait is time inside their collectives */
	finding_set_gain(a, f, &(struct gain){ .busy_set = BUSY_COMM, .busy_ns = wait,
					    .busy_of_ns = a->ops.class_ns[KC_COMM] });
	snprintf(f->title, sizeof(f->title), "GPU %u is a straggler: the other GPUs wait in collectives", lo);
	snprintf(f->evidence, sizeof(f->evidence),
		 "Communication kernels (NCCL) ran %.0f%% of the window on GPU %u but %.0f%% on GPU "
		 "%u: the faster GPUs wait inside collectives for GPU %u, which computes longer.",
		 100.0 * a->dev[hi].comm_ns / (double)a->dev[hi].window_ns, hi,
		 100.0 * a->dev[lo].comm_ns / (double)a->dev[lo].window_ns, lo, lo);
	SET_FIX(a, f, ADV_C15_COMM);
	f->confidence = CONF_MEDIUM;
}
