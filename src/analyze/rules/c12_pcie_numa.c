/* C12: PCIe link below its maximum, NUMA placement, copy bandwidth far under
 * the link; and many small copies issued one after another, the GPU idle
 * while the host issues each (a copy_() a row or a request: one copy of the
 * rows gathered in a pinned buffer moves the same bytes at once). It claims
 * those gaps before the launch-gap rules (C11, C10, C3, C4), which explain
 * launch gaps by the kernels around them. */
#include "rule.h"

RULE(pcie_numa, "C12.pcie-numa", "C12", 0, 85, ADV_C12_PLACEMENT);

/* The merged copies of the replay's graph (depgraph.c): a finding where the
 * GPU waited on their issuing for C12_COPIES_IDLE_SHARE of the run and they
 * come C12_COPIES_PER_STEP times a step or more. */
static int small_copies(struct analysis *a, struct finding *f)
{
	const struct depgraph *g = replay_available(a) ? a->graph : NULL;
	double steps = (double)has_steps(a), run = (double)a->steady_ns;
	char b1[32], b2[32], b3[32];

	if (!g || !(run > 0) || (steps > 0 && (double)g->merged_n < C12_COPIES_PER_STEP * steps))
		return 0;
	/* the pool it draws on: launch gaps (an issuing host) */
	double late = g->merged_late_ns < (double)a->idle_by_cause[IDLE_LAUNCH_OVERHEAD]
			      ? g->merged_late_ns
			      : (double)a->idle_by_cause[IDLE_LAUNCH_OVERHEAD];

	if (late < C12_COPIES_IDLE_SHARE * run)
		return 0;
	finding_set_gain(a, f, &(struct gain){ .idle_causes = IDLE_BIT(IDLE_LAUNCH_OVERHEAD), .idle_ns = late });
	if (steps > 0)
		snprintf(f->title, sizeof(f->title),
			 "Many small copies issued one at a time: %.0f a step, the GPU idle %.0f%% of the "
			 "run while the host issues them", (double)g->merged_n / steps, 100 * late / run);
	else
		snprintf(f->title, sizeof(f->title),
			 "Many small copies issued one at a time: %zu, the GPU idle %.0f%% of the run while "
			 "the host issues them", g->merged_n, 100 * late / run);
	ADDF(f->evidence, "%zu copies of at most %u KiB between the GPU and pinned host memory (or "
	     "memory of unknown kind) each followed another of their direction and stream with no "
	     "synchronization between: the GPU waited %s for the host to issue them (%.0f%% of the "
	     "run), the host spent %s in their copy calls, and the copies took %s on the GPU. One "
	     "copy of the rows gathered in a pinned buffer moves the same bytes at once. ",
	     g->merged_n, BATCH_VALUE_BYTES >> 10, fmt_ns(b1, sizeof(b1), late), 100 * late / run,
	     fmt_ns(b2, sizeof(b2), g->merged_call_ns), fmt_ns(b3, sizeof(b3), g->merged_busy_ns));
	return 1;
}

static void pcie_numa_eval(struct analysis *a, struct finding *f)
{
	const struct trace *t = a->t;
	const struct gpu_info *g = NULL;
	const char *aff = trace_meta(t, "target.cpu_affinity");
	const char *nodes = trace_meta(t, "host.numa_nodes");
	double bytes, time;
	int problems = 0; /* of the link or the placement */

	for (size_t i = 0; i < t->gpus.n; i++)
		if (t->gpus.v[i].index == a->main_dev || t->gpus.n == 1)
			g = &t->gpus.v[i];
	if (!g) {
		f->assessed = 0;
		snprintf(f->why, sizeof(f->why), "no GPU information (NVML) in the recording");
		return;
	}
	f->evidence[0] = 0;
	if (FIELD_VALID(g, GINFO_VALID_PCIE_GEN) && FIELD_VALID(g, GINFO_VALID_PCIE_GEN_MAX) &&
	    g->pcie_gen < g->pcie_gen_max) {
		ADDF(f->evidence, "PCIe link at Gen%u of Gen%u. ", g->pcie_gen, g->pcie_gen_max);
		problems++;
	}
	if (FIELD_VALID(g, GINFO_VALID_PCIE_WIDTH) && FIELD_VALID(g, GINFO_VALID_PCIE_WIDTH_MAX) &&
	    g->pcie_width < g->pcie_width_max) {
		ADDF(f->evidence, "PCIe link x%u of x%u lanes. ", g->pcie_width, g->pcie_width_max);
		problems++;
	}
	if (nodes && atoi(nodes) > 1 && g->numa_node >= 0 && aff && g->cpus && *g->cpus) {
		if (!cpulist_subset(aff, g->cpus)) {
			ADDF(f->evidence, "The job may run on CPUs %s, not all on the GPU's NUMA node %lld "
			     "(GPU-local CPUs: %s). ", aff, (long long)g->numa_node, g->cpus);
			problems++;
		}
	}
	bytes = a->ops.big_pinned_htod_bytes;
	time = a->ops.big_pinned_htod_ns;
	double expect = pcie_practical_gbs(g->pcie_gen_max, g->pcie_width_max), slow = 0;

	/* slower than the link, with the link and placement fine: how the copies
	 * are made (strided or 2D copies of short rows, copies in pieces); the
	 * time above the link's rate is what a contiguous copy saves */
	if (time > 0 && expect > 0 && bytes / time < C12_LINK_SHARE * expect) {
		slow = time - bytes / expect;
		ADDF(f->evidence, "Pinned host-to-device copies of %u MiB or more reached %.1f GB/s where the "
		     "link should give about %.0f GB/s; they took %.0f%% of the run, %.0f%% at the link's rate. ",
		     BIG_PINNED_HTOD_BYTES >> 20, bytes / time, expect, 100 * time / (double)a->steady_ns,
		     100 * (bytes / expect) / (double)a->steady_ns);
	}
	if (!problems && !(slow > 0)) {
		if (small_copies(a, f)) {
			SET_FIX(a, f, ADV_C12_COPIES);
			f->confidence = CONF_MEDIUM;
		}
		return;
	}
	finding_set_gain(a, f, &(struct gain){ .busy_set = BUSY_COPIES, .busy_ns = slow, .busy_of_ns = time });
	if (problems) { /* the link or the placement: not quantified */
		f->min_severity = SEV_WARN;
		snprintf(f->title, sizeof(f->title), "PCIe / NUMA placement slows host-GPU transfers");
		ADDF(f->evidence, "(The link was read when recording started; links train down when "
		     "idle: confirm under load with `gpuwhy check`.)");
		SET_FIX(a, f, ADV_C12_PLACEMENT);
	} else {
		snprintf(f->title, sizeof(f->title), "Pinned copies run at %.0f GB/s, %.0f%% of the link's %.0f GB/s",
			 bytes / time, 100 * bytes / time / expect, expect);
		ADDF(f->evidence, "The link runs at its full generation and width%s, so the copies themselves "
		     "are slow: strided or 2D copies of short rows, or one copy made of many pieces.",
		     nodes && atoi(nodes) > 1 ? " and the job's CPUs are on the GPU's NUMA node" : "");
		SET_FIX(a, f, ADV_C12_COPIES);
	}
	f->confidence = CONF_MEDIUM;
}
