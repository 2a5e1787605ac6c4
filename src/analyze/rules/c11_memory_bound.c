/* C11: memory-bandwidth-bound: chains of elementwise kernels that each read
 * and write all of memory; fusion does one pass instead of k. */
#include "rule.h"

RULE(memory_bound, "C11.memory-bound", "C11");

static void memory_bound_eval(struct analysis *a, struct finding *f)
{
	double ew = 0, saved = 0, run_time = 0, run_gaps = 0, dram = 0;
	uint64_t prev_end = 0;
	unsigned run_len = 0, chains = 0, ngpm = 0;
	uint32_t run_stream = 0, run_blocks = 0, run_step = UINT32_MAX;
	double chain_kernels = 0, chain_time = 0;

	size_t step_cursor = 0;

	if (!a->t->ops.n) {
		f->assessed = 0;
		snprintf(f->why, sizeof(f->why), "needs the GPU timeline");
		return;
	}
	/* the first two conditions of the test below, known from the op
	 * statistics: most runs need no walk over their kernels */
	if (!a->busy_ns || a->ops.class_ns[KC_ELEMENTWISE] < 0.3 * (double)a->busy_ns)
		return;
	FOR_STEADY_OPS(a, o)
	{
		int is_ew = o->kind == OP_KERNEL && o->name_class == KC_ELEMENTWISE;
		double d = (double)(o->end - o->start);
		uint32_t st = is_ew ? step_at(a, o->start, &step_cursor) : UINT32_MAX;

		if (is_ew)
			ew += d;
		/* a fusable chain: same stream, same grid (the same tensor shape) */
		if (is_ew && run_len && o->stream == run_stream && o->blocks == run_blocks &&
		    st == run_step) {
			run_len++;
			run_time += d;
			/* the launch gaps inside the chain go away with it */
			run_gaps += o->start > prev_end ? (double)(o->start - prev_end) : 0;
			prev_end = o->end;
			continue;
		}
		/* a run of k elementwise kernels fused costs about one of them */
		if (run_len >= 2) {
			saved += run_time * (1 - 1.0 / run_len) + run_gaps;
			chains++;
			chain_kernels += run_len;
			chain_time += run_time;
		}
		run_len = is_ew;
		run_time = is_ew ? d : 0;
		run_gaps = 0;
		prev_end = o->end;
		run_stream = o->stream;
		run_blocks = o->blocks;
		run_step = st;
	}
	if (run_len >= 2) {
		saved += run_time * (1 - 1.0 / run_len) + run_gaps;
		chains++;
		chain_kernels += run_len;
		chain_time += run_time;
	}
	if (!a->busy_ns || ew < 0.3 * (double)a->busy_ns || pct(a, saved) < 5)
		return;
	for (size_t i = 0; i < a->t->gpm.n; i++)
		if (a->t->gpm.v[i].gpu == a->main_dev && a->t->gpm.v[i].ts >= a->t0 &&
		    a->t->gpm.v[i].ts <= a->t1 && (a->t->gpm.v[i].valid & 8) &&
		    a->t->gpm.v[i].sm_util > 5) { /* only while the GPU works */
			dram += a->t->gpm.v[i].dram;
			ngpm++;
		}
	/* Bandwidth-bound means DRAM busy: with GPM, require >= 30% average; without,
	 * require kernels long enough (>= 20 us) to stream real amounts of memory. */
	if (ngpm ? dram / ngpm < 30 : chain_time / chain_kernels < 20000)
		return;
	finding_set_gain(a, f, saved);
	snprintf(f->title, sizeof(f->title), "Memory-bound elementwise chains: %.0f%% of GPU time",
		 100 * ew / (double)a->busy_ns);
	snprintf(f->evidence, sizeof(f->evidence),
		 "Elementwise/reduction kernels take %.0f%% of the busy time, in %u back-to-back chains "
		 "on one stream; each kernel reads and writes its whole tensor, so a chain of k costs "
		 "k memory passes where a fused kernel needs one.",
		 100 * ew / (double)a->busy_ns, chains);
	if (ngpm)
		ADDF(f->evidence, " DRAM bandwidth utilization (GPM) averaged %.0f%% while the GPU was active.", dram / ngpm);
	if (target_is_pytorch(a))
		snprintf(f->fix, sizeof(f->fix),
			 "Fuse the chains: torch.compile the function (Inductor generates one kernel per "
			 "chain), or write a fused kernel (Triton); use in-place ops and channels_last "
			 "for convolutions.");
	else
		snprintf(f->fix, sizeof(f->fix),
			 "Fuse consecutive elementwise operations into one kernel (e.g. CuPy "
			 "ElementwiseKernel / cupy.fuse, jax.jit, Triton) so data crosses DRAM once.");
	f->confidence = ngpm && dram / ngpm > 50 ? CONF_HIGH : CONF_MEDIUM;
}
