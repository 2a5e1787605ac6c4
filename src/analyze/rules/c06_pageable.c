/* C6: host-to-device copies from pageable memory (staged, synchronous, slow),
 * and the staging a library does on the training thread before a copy
 * (CuPy's asarray of a numpy array: into its own pinned buffer, then a
 * pinned copy), which the code sites find (docs/RULES.md section 6). */
#include "rule.h"

RULE(pageable, "C6.pageable-copies", "C6", NEED_TIMELINE, 30, ADV_C6_PAGEABLE);

static void pageable_eval(struct analysis *a, struct finding *f)
{
	double pg_time, pg_bytes, pin_time, pin_bytes, idle;
	uint64_t n;
	char b1[32], b2[32];

	pg_time = a->ops.pageable_ns;
	pg_bytes = a->ops.pageable_bytes;
	n = a->ops.pageable_copies;
	pin_time = a->ops.pinned_ns;
	pin_bytes = a->ops.pinned_bytes;
	idle = (double)a->idle_by_cause[IDLE_PAGEABLE];
	double stage = (double)a->site_stage_ns, stage_lib = (double)a->site_stage_lib_ns;

	if (!n && !stage)
		return;
	double bw_pg = n ? pg_bytes / pg_time : 0; /* bytes per ns = GB/s */
	/* What pinned copies would reach: measured in the same run if there were
	 * any, else the link's practical bandwidth, else C6_PINNED_RATIO (docs/RULES.md). */
	double link = main_gpu_link_gbs(a);
	double ratio = !n ? 1 : pin_time > 0 ? (pin_bytes / pin_time) / bw_pg : link > 0 ? link / bw_pg : C6_PINNED_RATIO;

	if (ratio < 1)
		ratio = 1;
	/* the staging idle is part of pageable_copy idle: counted once */
	double saved = idle + pg_time * (1 - 1 / ratio);

	if (pct(a, saved) < C6_MIN_PCT)
		return;
	finding_set_gain(a, f, &(struct gain){ .idle_causes = IDLE_BIT(IDLE_PAGEABLE), .idle_ns = idle,
					    .busy_set = BUSY_COPIES, .busy_ns = pg_time * (1 - 1 / ratio),
					    .busy_of_ns = pg_time });
	snprintf(f->title, sizeof(f->title), "Copies from pageable host memory: %.0f%% of the run", pct(a, pg_time + idle));
	if (!n) { /* staging alone: the copies themselves were pinned */
		snprintf(f->evidence, sizeof(f->evidence),
			 "the GPU idled %.0f%% of the run while the training thread staged host data "
			 "for its host-to-device copies on the CPU, inside a library call that copies "
			 "host memory to the device (its Python stacks name the calls: the code sites)%s.",
			 pct(a, stage),
			 stage_lib >= stage / 2 ? ": the library copied the pageable source into its own "
						  "pinned buffer, then to the GPU (the copies that follow "
						  "are pinned)"
						: "");
		SET_FIX(a, f, ADV_C6_PAGEABLE);
		f->confidence = CONF_HIGH; /* the stacks and the copies both say so */
		return;
	}
	char typical[64];

	snprintf(typical, sizeof(typical), "pinned copies typically run about %gx faster", C6_PINNED_RATIO);
	snprintf(f->evidence, sizeof(f->evidence),
		 "%llu host<->device copies from pageable memory (%s, %.1f per step) ran at %.1f GB/s "
		 "and took %s; %s; the GPU also idled %.0f%% of the run around them while the "
		 "driver staged the data.",
		 (unsigned long long)n, fmt_bytes(b1, sizeof(b1), pg_bytes),
		 has_steps(a) ? (double)n / (double)has_steps(a) : 0.0, bw_pg, fmt_ns(b2, sizeof(b2), pg_time),
		 pin_time > 0 ? "pinned copies in the same run were faster"
			      : link > 0 ? "pinned copies should reach about the link's practical bandwidth"
					 : typical,
		 pct(a, idle));
	SET_FIX(a, f, ADV_C6_PAGEABLE);
	f->confidence = pin_time > 0 ? CONF_HIGH : CONF_MEDIUM;
}
