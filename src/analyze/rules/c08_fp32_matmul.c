/* C8: matrix work in FP32: tensor cores idle, or run on FP32 data (TF32) at
 * half bf16's rate (no mixed precision). */
#include "rule.h"
#include "../../util/kname.h"

RULE(fp32_matmul, "C8.no-mixed-precision", "C8", NEED_TIMELINE, SETTLE_NO_IDLE, ADV_C8_PRECISION);

/* FP32 matrix work that the counters showed in kernels of no known family
 * (counters.c): which kernel, and what the counters read. */
static void counted_evidence(const struct analysis *a, struct finding *f, double fp32)
{
	const char *n = a->fp32_counted.name < a->t->names.n ? a->t->names.v[a->fp32_counted.name] : "";
	char shown[96];

	if (!(a->fp32_counted.ns > 0) || !(fp32 > 0))
		return;
	kname_short(n, shown, sizeof(shown));
	ADDF(f->evidence,
	     " Of the FP32 matrix time, %.0f%% is in kernels whose names do not say what they do (%s "
	     "the longest), launched as tiled matrix kernels are (many registers a thread, shared "
	     "memory for tiles): over the %u GPM intervals they held the GPU, its counters read the "
	     "FP32 pipes %.0f%% busy, the tensor cores %.1f%% and DRAM %.0f%% (compute on the CUDA "
	     "cores, not memory traffic), which is what matrix products in FP32 without tensor cores "
	     "show.",
	     100 * a->fp32_counted.ns / fp32, shown, a->fp32_counted.intervals, a->fp32_counted.fp32,
	     a->fp32_counted.tensor, a->fp32_counted.dram);
}

/* A model in float64: its matrix work on the FP64 tensor cores, and its
 * other kernels on doubles (PyTorch's elementwise, norm and softmax kernels
 * for double tensors), four and two times the bytes of bf16 and float32. */
static void doubles_evidence(const struct analysis *a, struct finding *f, double fp64)
{
	double busy = (double)a->busy_ns;

	ADDF(f->evidence,
	     " FP64 matrix kernels (the model's data in float64) took %.0f%% of the busy time, its other "
	     "kernels on doubles %.0f%% (elementwise %.0f%%): under bf16 autocast the matrix work runs on "
	     "the 16-bit tensor cores, elementwise kernels move a quarter of the bytes and norms and "
	     "reductions, kept in float32, half.",
	     100 * fp64 / busy, 100 * (a->ops.f64_ns[0] + a->ops.f64_ns[1]) / busy, 100 * a->ops.f64_ns[1] / busy);
}

static void fp32_matmul_eval(struct analysis *a, struct finding *f)
{
	double fp32 = a->ops.class_ns[KC_MATMUL_FP32], tf32 = a->ops.class_ns[KC_MATMUL_TF32];
	double tc = a->ops.class_ns[KC_MATMUL_TC], busy = (double)a->busy_ns, tensor = a->gpm_tensor;
	int dbl = c8_on_doubles(a);
	double fp64 = dbl ? a->ops.class_ns[KC_MATMUL_FP64] : 0;
	double f64o = dbl ? a->ops.f64_ns[0] : 0, f64e = dbl ? a->ops.f64_ns[1] : 0;
	unsigned ngpm = a->gpm_tensor_n;

	/* FP32 matrix kernels whose math does not limit them (GPM: tiny batched
	 * or matrix-vector products) gain nothing on tensor cores */
	double fp32_left = c8_fp32_not_math_bound(a) ? fp32 : 0;

	fp32 -= fp32_left;
	if (!a->busy_ns || fp32 + tf32 + fp64 < C8_FP32_SHARE * busy)
		return;
	/* bf16 tensor-core GEMMs against FP32 SIMT ones: dense peak ratios are 15x
	 * (H100/H200) and 16x (A100), 8x on Volta/Turing; real GEMMs reach less
	 * of the peak in bf16 (docs/RULES.md). Unknown GPU: the older ratio.
	 * Against TF32 ones (PyTorch's default for cuDNN's convolutions, JAX's
	 * for float32 matmuls): 2x, both on tensor cores. */
	double kf = c8_speedup(a, KC_MATMUL_FP32), kt = c8_speedup(a, KC_MATMUL_TF32);
	double kd = c8_speedup(a, KC_MATMUL_FP64);

	finding_set_gain(a, f, &(struct gain){ .busy_set = BUSY_MATMUL | (dbl ? BUSY_ELEMENTWISE | BUSY_OTHER : 0),
					    .busy_ns = fp32 * (1 - 1 / kf) + tf32 * (1 - 1 / kt) + fp64 * (1 - 1 / kd) +
						       f64o * (1 - C8_F64_OTHER_SCALE) +
						       f64e * (1 - C8_F64_ELEMENTWISE_SCALE),
					    .busy_of_ns = fp32 + tf32 + fp64 + f64o + f64e });
	if (fp64 >= fp32 && fp64 >= tf32)
		snprintf(f->title, sizeof(f->title),
			 "No mixed precision: the model runs in float64, %.0f%% of GPU time in FP64 matrix kernels",
			 100 * fp64 / busy);
	else if (fp32 >= tf32)
		snprintf(f->title, sizeof(f->title), "No mixed precision: %.0f%% of GPU time in FP32 matrix kernels",
			 100 * (fp32 + tf32) / busy);
	else
		snprintf(f->title, sizeof(f->title),
			 "No mixed precision: %.0f%% of GPU time in matrix kernels on FP32 data (TF32)",
			 100 * (fp32 + tf32) / busy);
	snprintf(f->evidence, sizeof(f->evidence),
		 "FP32 (non-tensor-core) matrix kernels took %.0f%% of the GPU's busy time, TF32 ones "
		 "(tensor cores on FP32 data, half the rate of bf16) %.0f%%, 16-bit or 8-bit tensor-core "
		 "ones %.0f%%.",
		 100 * fp32 / busy, 100 * tf32 / busy, 100 * tc / busy);
	if (dbl)
		doubles_evidence(a, f, fp64);
	if (tf32 > fp32 && tf32 > fp64)
		ADDF(f->evidence, " TF32 is what FP32 data gets without autocast where it is allowed "
		     "(PyTorch's cuDNN convolutions by default, JAX's float32 matmuls); bf16 runs the same "
		     "work at twice the rate and moves half the bytes.");
	if (ngpm)
		ADDF(f->evidence, " Hardware counters (GPM): tensor pipes active %.1f%% of the time%s.",
		     tensor / ngpm, dbl ? " (FP64 matrix work runs on them too)" : "");
	counted_evidence(a, f, fp32);
	if (fp32_left > 0)
		ADDF(f->evidence, " FP32 matrix kernels took %.0f%% more, left out: over the %u GPM intervals "
		     "they held, the FP32 pipes were active %.0f%% of their time at most, so their math does "
		     "not limit them (tiny batched or matrix-vector products) and tensor cores would not run "
		     "them faster.",
		     100 * fp32_left / busy, a->fp32_pipes.intervals, 100 * a->fp32_pipes.share);
	/* most of the FP32 data's matrix time runs as TF32 already: allowing
	 * TF32, the main advice's fallback, is no remedy */
	int from_tf32 = tf32 > fp32 && tf32 > fp64;

	SET_FIX(a, f, from_tf32 ? ADV_C8_FROM_TF32 : ADV_C8_PRECISION);
	if (a->fp32_counted.ns > 0)
		ADDF(f->fix, "%s", from_tf32 ? " In a hand-written kernel: Triton's tl.dot on 16-bit inputs; in CUDA "
					       "C, WMMA/MMA instructions or cuBLAS."
					     : " In a hand-written kernel: Triton's tl.dot with input_precision="
					       "\"tf32\" (its default) or 16-bit inputs; in CUDA C, WMMA/MMA "
					       "instructions or cuBLAS.");
	if (dbl)
		ADDF(f->fix, " The model is in float64: unless its numerics need doubles, keep it in float32 "
		     "with bf16 autocast (Lightning: precision=\"bf16-mixed\", not \"64-true\"; no "
		     "torch.set_default_dtype(torch.float64) or model.double()).");
	/* the tensor pipes say nothing where FP64 work runs on them */
	f->confidence = dbl || (ngpm && tensor / ngpm < 5) ? CONF_HIGH : CONF_MEDIUM;
}
