/* C15: communication. Several GPUs in one process tree: NCCL time that
 * differs between them is the faster GPUs waiting for a slow one (a
 * straggler; a busy claim, no idle). One rank whose collectives are
 * staged through host memory (gloo with CUDA tensors): its GPU idles
 * between copying a tensor out to pinned host memory and copying the same
 * bytes back, while the CPUs reduce it with the other ranks (hostcoll.c;
 * the idle part, settled before C4). That time is the collectives' own and
 * any wait for a slower rank: the job report (one recording per rank, or
 * --job) tells the two apart. */
#include "rule.h"

RULE(comm, "C15.communication", "C15", 0, 75, ADV_C15_COMM);

static void host_collectives(struct analysis *a, struct finding *f)
{
	double comm = (double)a->idle_by_cause[IDLE_COMM];
	double steps = has_steps(a) ? (double)has_steps(a) : 0;
	char b1[32], b2[32];

	if (!a->host_colls || pct(a, comm) < FINDING_MIN_PCT)
		return;
	finding_set_gain(a, f, &(struct gain){ .idle_causes = IDLE_BIT(IDLE_COMM), .idle_ns = comm });
	snprintf(f->title, sizeof(f->title),
		 "Collectives run on the host (gloo): the GPU waits for them %.0f%% of the run", pct(a, comm));
	snprintf(f->evidence, sizeof(f->evidence),
		 "This process is one rank of several, and its collectives are staged through host "
		 "memory: %llu times in the whole run a tensor was copied from the GPU into pinned "
		 "memory and the same bytes copied back on the same stream, %s apart on average; in "
		 "the steady window the GPU idled %s%s "
		 "between such copies (%.0f%% of the run). That is the reduction on the CPUs and any "
		 "wait for a slower rank: reporting the ranks together (gpuwhy report DIR/, or --job) "
		 "tells which.",
		 (unsigned long long)a->host_colls,
		 fmt_ns(b1, sizeof(b1), a->host_coll_ns / (double)a->host_colls),
		 fmt_ns(b2, sizeof(b2), steps ? comm / steps : comm),
		 steps ? " per step" : "", pct(a, comm));
	SET_FIX(a, f, ADV_C15_HOST);
	f->confidence = CONF_MEDIUM;
}

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
	if (!have || a->ndev < 2 || !a->dev[hi].comm_ns) {
		host_collectives(a, f);
		return;
	}
	double wait = (double)(a->dev[hi].comm_ns - a->dev[lo].comm_ns);

	if (pct(a, wait) < FINDING_MIN_PCT) {
		host_collectives(a, f);
		return;
	}
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
