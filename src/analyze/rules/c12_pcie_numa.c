/* C12: PCIe link below its maximum, NUMA placement, copy bandwidth far under the link. */
#include "rule.h"

RULE(pcie_numa, "C12.pcie-numa", "C12", 0, SETTLE_NO_IDLE, ADV_C12_PLACEMENT);

static void pcie_numa_eval(struct analysis *a, struct finding *f)
{
	const struct trace *t = a->t;
	const struct gpu_info *g = NULL;
	const char *aff = trace_meta(t, "target.cpu_affinity");
	const char *nodes = trace_meta(t, "host.numa_nodes");
	double bytes, time;
	int problems = 0;

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
	double expect = pcie_practical_gbs(g->pcie_gen_max, g->pcie_width_max);

	if (time > 0 && expect > 0 && bytes / time < C12_LINK_SHARE * expect) {
		ADDF(f->evidence, "Pinned host-to-device copies reached %.1f GB/s where the link "
		     "should give about %.0f GB/s. ", bytes / time, expect);
		problems++;
	}
	if (!problems)
		return;
	f->min_severity = SEV_WARN; /* not quantified */
	finding_set_gain(a, f, &(struct gain){ 0 });
	snprintf(f->title, sizeof(f->title), "PCIe / NUMA placement slows host-GPU transfers");
	ADDF(f->evidence, "(The link was read when recording started; links train down when "
	     "idle: confirm under load with `gpuwhy check`.)");
	SET_FIX(a, f, ADV_C12_PLACEMENT);
	f->confidence = CONF_MEDIUM;
}
