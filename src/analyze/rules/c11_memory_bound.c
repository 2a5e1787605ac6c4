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

/* The elementwise kernels' chains, and attention computed unfused: the
 * kernels between its two matrix products (scaling, masking, softmax,
 * dropout), which a fused attention does on chip (FlashAttention,
 * scaled_dot_product_attention) without writing the score matrix. */
static void memory_bound_eval(struct analysis *a, struct finding *f)
{
	const struct op_stats *s = &a->ops;
	double ew = s->class_ns[KC_ELEMENTWISE], saved = s->chain.saved, dram = 0, attn = s->attn_ns;
	/* the chains' one-pass saving outside the attention cores, and theirs */
	double chain_busy = saved - s->chain.gaps - s->attn_chain_saved_ns;
	unsigned chains = s->chain.n, ngpm = 0;
	int chained, attention;

	if (!a->busy_ns || (a->framework == FW_JAX && jax_compiled(a)))
		return;
	chained = ew >= C11_ELEMENTWISE_SHARE * (double)a->busy_ns && pct(a, saved) >= FINDING_MIN_PCT;
	attention = s->attn_cores && attn >= C11_ATTENTION_SHARE * (double)a->busy_ns;
	if (!chained && !attention)
		return;
	dram = a->gpm_dram; /* GPM samples while the SMs worked (steady pass) */
	ngpm = a->gpm_dram_n;
	/* Bandwidth-bound means DRAM busy: with GPM, that much on average; without,
	 * kernels long enough to stream real amounts of memory. */
	if (ngpm ? dram / ngpm < C11_DRAM_PCT
		 : (chained ? s->chain.ns / s->chain.kernels : attn / s->attn_kernels) < C11_CHAIN_KERNEL_NS)
		return;
	if (!attention)
		attn = 0;
	/* one pass instead of k (busy), and the launch gaps inside the chains;
	 * an attention core's inner kernels whole */
	finding_set_gain(a, f, &(struct gain){ .idle_causes = IDLE_BIT(IDLE_LAUNCH_OVERHEAD),
					    .idle_ns = s->chain.gaps,
					    .busy_set = BUSY_ELEMENTWISE | (attention ? BUSY_OTHER : 0),
					    .busy_ns = (chain_busy > 0 ? chain_busy : 0) + attn,
					    .busy_of_ns = s->chain.ns + (attention ? attn - s->attn_ew_ns : 0) });
	/* the optimizer's update most of the chains: the activity a user changes */
	int optimizer = ew > 0 && s->foreach_ns >= C11_FOREACH_FUSED * ew;

	if (attention && attn >= (chain_busy > 0 ? chain_busy : 0))
		snprintf(f->title, sizeof(f->title), "Attention computed unfused: the score matrix takes %.0f%% of "
			 "GPU time in memory passes", 100 * attn / (double)a->busy_ns);
	else if (optimizer)
		snprintf(f->title, sizeof(f->title), "Memory-bound optimizer update: a foreach optimizer's passes "
			 "over the parameters take %.0f%% of GPU time", 100 * s->foreach_ns / (double)a->busy_ns);
	else
		snprintf(f->title, sizeof(f->title), "Memory-bound elementwise chains: %.0f%% of GPU time",
			 100 * ew / (double)a->busy_ns);
	snprintf(f->evidence, sizeof(f->evidence),
		 "Elementwise/reduction kernels take %.0f%% of the busy time, in %u back-to-back chains "
		 "on one stream (%.1f kernels each); each kernel reads and writes its whole tensor, so "
		 "a chain of k costs k memory passes where a fused kernel needs one for each tensor "
		 "shape, and k launches where it needs one.",
		 100 * ew / (double)a->busy_ns, chains, chains ? s->chain.kernels / chains : 0);
	if (attention) {
		if (has_steps(a))
			ADDF(f->evidence, " Attention is computed unfused: %.1f times a step,",
			     (double)s->attn_cores / (double)has_steps(a));
		else
			ADDF(f->evidence, " Attention is computed unfused: %llu times in the window,",
			     (unsigned long long)s->attn_cores);
		ADDF(f->evidence, " between its two matrix products, %.1f kernels (scaling, masking, softmax, "
		     "dropout) each write and read the score matrix, %.0f%% of the busy time; a fused attention "
		     "computes them on chip and never writes that matrix.",
		     s->attn_kernels / (double)s->attn_cores, 100 * attn / (double)a->busy_ns);
	}
	if (a->mem_counted.ns > 0 && ew > 0)
		ADDF(f->evidence, " Of the elementwise time, %.0f%% is kernels of no known family (hand-written: "
		     "Triton, CUDA C) that the GPU's counters show memory-bound, DRAM %.0f%% busy with the tensor "
		     "cores and FP32 pipes quiet in the %u intervals they held (a chain holds each such kernel "
		     "once: its next run is the loop's next iteration).", 100 * a->mem_counted.ns / ew, a->mem_counted.dram, a->mem_counted.intervals);
	if (ngpm)
		ADDF(f->evidence, " DRAM bandwidth utilization (GPM) averaged %.0f%% while the GPU was active.", dram / ngpm);
	if (optimizer)
		snprintf(f->fix, sizeof(f->fix), "Use the optimizer's fused version, one pass over every "
			 "parameter (torch.optim.AdamW(..., fused=True); Adam and SGD too). Beyond the "
			 "optimizer: %s", advice(ADV_C11_FUSION, a->framework));
	else
		SET_FIX(a, f, ADV_C11_FUSION);
	if (attention)
		ADDF(f->fix, " For attention: torch.nn.functional.scaled_dot_product_attention (Hugging Face: "
		     "attn_implementation=\"sdpa\" or \"flash_attention_2\"; JAX: jax.nn.dot_product_attention).");
	/* a foreach optimizer: one pass over every parameter for each of its
	 * operations, where a fused one makes one */
	if (ew > 0 && s->foreach_ns >= C11_FOREACH_SHOWN * ew) {
		ADDF(f->evidence, " Of it, %.0f%% is a foreach optimizer's update (torch._foreach_* kernels: one "
		     "pass over every parameter for each of its operations).", 100 * s->foreach_ns / ew);
		if (!optimizer)
			ADDF(f->fix, " For the optimizer: its fused version makes one pass (torch.optim.AdamW(..., "
			     "fused=True); Adam and SGD too).");
	}
	f->confidence = ngpm && dram / ngpm > C11_DRAM_HIGH_PCT ? CONF_HIGH : CONF_MEDIUM;
}
