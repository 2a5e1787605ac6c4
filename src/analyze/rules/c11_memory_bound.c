/* C11: memory-bandwidth-bound: chains of elementwise kernels that each read
 * and write all of memory; fusion does one pass of each tensor shape instead
 * of k, and one launch. */
#include "rule.h"

RULE(memory_bound, "C11.memory-bound", "C11", NEED_TIMELINE, 90, ADV_C11_FUSION);

/* JAX ran the work compiled: the lines that issued it called a jitted
 * function, whose dispatch runs below Python, where eager operations go
 * through jax's own Python (jax.numpy, lax) one by one. XLA fused what it
 * could inside a jitted computation: its fusions back to back are its
 * boundaries, not chains jax.jit would fuse. */
static int jax_compiled(const struct analysis *a)
{
	double all = 0, eager = 0;

	for (size_t i = 0; i < a->sites.n; i++) {
		const struct site *s = &a->sites.v[i];
		const char *lib = s->lib_file && s->lib_file < a->t->names.n ? a->t->names.v[s->lib_file] : "";

		all += s->launch_ns;
		if (!strncmp(lib, "jax/", 4))
			eager += s->launch_ns;
	}
	return all > 0 && eager < 0.5 * all;
}

static void memory_bound_eval(struct analysis *a, struct finding *f)
{
	const struct op_stats *s = &a->ops;
	double ew = s->class_ns[KC_ELEMENTWISE], saved = s->chain_saved_ns, dram = 0;
	unsigned chains = s->chains, ngpm = 0;

	if (!a->busy_ns || ew < C11_ELEMENTWISE_SHARE * (double)a->busy_ns ||
	    pct(a, saved) < FINDING_MIN_PCT || (a->framework == FW_JAX && jax_compiled(a)))
		return;
	dram = a->gpm_dram; /* GPM samples while the SMs worked (steady pass) */
	ngpm = a->gpm_dram_n;
	/* Bandwidth-bound means DRAM busy: with GPM, that much on average; without,
	 * kernels long enough to stream real amounts of memory. */
	if (ngpm ? dram / ngpm < C11_DRAM_PCT : s->chain_ns / s->chain_kernels < C11_CHAIN_KERNEL_NS)
		return;
	/* one pass instead of k (busy), and the launch gaps inside the chains */
	finding_set_gain(a, f, &(struct gain){ .idle_causes = IDLE_BIT(IDLE_LAUNCH_OVERHEAD),
					    .idle_ns = s->chain_gap_ns, .busy_set = BUSY_ELEMENTWISE,
					    .busy_ns = saved - s->chain_gap_ns, .busy_of_ns = s->chain_ns });
	snprintf(f->title, sizeof(f->title), "Memory-bound elementwise chains: %.0f%% of GPU time",
		 100 * ew / (double)a->busy_ns);
	snprintf(f->evidence, sizeof(f->evidence),
		 "Elementwise/reduction kernels take %.0f%% of the busy time, in %u back-to-back chains "
		 "on one stream (%.1f kernels each); each kernel reads and writes its whole tensor, so "
		 "a chain of k costs k memory passes where a fused kernel needs one for each tensor "
		 "shape, and k launches where it needs one.",
		 100 * ew / (double)a->busy_ns, chains, chains ? s->chain_kernels / chains : 0);
	if (ngpm)
		ADDF(f->evidence, " DRAM bandwidth utilization (GPM) averaged %.0f%% while the GPU was active.", dram / ngpm);
	SET_FIX(a, f, ADV_C11_FUSION);
	/* a foreach optimizer: one pass over every parameter for each of its
	 * operations, where a fused one makes one */
	if (s->foreach_ns >= C11_FOREACH_SHOWN * ew) {
		ADDF(f->evidence, " Of it, %.0f%% is a foreach optimizer's update (torch._foreach_* kernels: one "
		     "pass over every parameter for each of its operations).", 100 * s->foreach_ns / ew);
		ADDF(f->fix, " For the optimizer: its fused version makes one pass (torch.optim.AdamW(..., "
		     "fused=True); Adam and SGD too).");
	}
	f->confidence = ngpm && dram / ngpm > C11_DRAM_HIGH_PCT ? CONF_HIGH : CONF_MEDIUM;
}
