/* Kernel families from names (docs/RULES.md, "Kernel families"): the
 * reading classifies each kernel name once (timeline.c), so this is part of
 * the trace model, below the analysis. */
#include <string.h>

#include "analyze.h"
#include "../util/demangle.h"

static int contains(const char *s, const char *needle)
{
	return strstr(s, needle) != NULL;
}

/* PyTorch's kernels that only move elements (roll, cat, the vectorized
 * gather, index_select): one memory pass each, which a fusing compiler
 * folds into the loads of the kernels around it; elementwise, and free
 * inside a fused chain that computes (opstats.c). */
int kernel_moves_only(const char *n)
{
	return contains(n, "roll_cuda_kernel") || contains(n, "CatArrayBatchedCopy") ||
	       contains(n, "vectorized_gather_kernel") || contains(n, "indexSelectSmallIndex") ||
	       contains(n, "indexSelectLargeIndex");
}

/* Optimizers' update kernels (PyTorch's multi_tensor_apply, fused Adam):
 * their grids follow the parameters, whatever the batch. */
int kernel_updates_params(const char *n)
{
	return contains(n, "multi_tensor_apply") || contains(n, "Optimizer") ||
	       ((contains(n, "adam") || contains(n, "Adam")) && !contains(n, "hadamard") &&
		!contains(n, "Hadamard"));
}

/* The kernel's demangled name without its parameter list (a float kernel
 * may take a double scalar): the template arguments say its data. 0: not a
 * mangled name. */
static size_t template_part(const char *n, char *buf, size_t size)
{
	size_t len = n[0] == '_' && n[1] == 'Z' ? gw_demangle(n, buf, size) : 0;
	char *cut;

	if (len && (cut = strstr(buf, ">(")) != NULL) {
		char *next;

		while ((next = strstr(cut + 1, ">(")) != NULL)
			cut = next; /* the last: the kernel's own parameter list */
		cut[1] = 0;
	}
	return len;
}

/* A kernel whose template arguments name double (PyTorch's kernels for a
 * float64 tensor: CUDAFunctor_add<double>, LayerNormForwardCUDAKernel<double,
 * double>): it works on FP64 data. */
int kernel_on_doubles(const char *n)
{
	char buf[4096];

	if (!template_part(n, buf, sizeof(buf)))
		return 0;
	return strstr(buf, "<double") || strstr(buf, " double,") || strstr(buf, " double>");
}

/* A kernel on FP32 data: its template arguments name float and no 16-bit
 * type (PyTorch's CUDAFunctor_add<float>; float as an accumulator beside
 * c10::BFloat16 is a 16-bit kernel), or CuPy's elementwise kernel named by
 * float32 operands. */
int kernel_on_floats(const char *n)
{
	char buf[4096];

	if (!strncmp(n, "cupy_", 5))
		return contains(n, "float32") && !contains(n, "float16") && !contains(n, "float64");
	if (!template_part(n, buf, sizeof(buf)))
		return 0;
	if (strstr(buf, "BFloat16") || strstr(buf, "Half") || strstr(buf, "half") || strstr(buf, "bfloat16") ||
	    strstr(buf, "double") || strstr(buf, "complex") || strstr(buf, "Float8"))
		return 0;
	return strstr(buf, "<float") || strstr(buf, " float,") || strstr(buf, " float>") || strstr(buf, "(float") != NULL;
}

/* A kernel whose name carries no data type: not a mangled C++ name with
 * template arguments, not CuPy's (XLA's fusions, Triton's and Inductor's
 * kernels, extern "C" ones). */
int kernel_untyped(const char *n)
{
	return !(n[0] == '_' && n[1] == 'Z') && strncmp(n, "cupy_", 5) != 0;
}

enum kclass classify_kernel(const char *n)
{
	if (contains(n, "nccl") || contains(n, "NCCL"))
		return KC_COMM;
	/* cuBLAS (gemm, gemv: a batch of one turns a GEMM into a GEMV; its
	 * split-K reduction is part of the GEMM), nvjet and CUTLASS on Hopper,
	 * XLA's gemm_fusion_dot, cuDNN convolutions */
	int mm = contains(n, "gemm") || contains(n, "Gemm") || contains(n, "nvjet") ||
		 contains(n, "xmma") || contains(n, "matmul") || contains(n, "wgmma") ||
		 contains(n, "cutlass") || contains(n, "gemv") || contains(n, "splitKreduce") ||
		 contains(n, "convolve_") || !strncmp(n, "triton_tem_", 11);
	if (mm) {
		/* PyTorch's memory-efficient attention (fmha_cutlassF_ / B_, xformers'
		 * kernels) on FP32 data: from sm80 on tensor cores as three TF32
		 * products a multiply (CUTLASS's OpMultiplyAddFastF32, by its
		 * design: its rate was not timed apart here; under bf16
		 * autocast the call runs flash attention: cuDNN's sdpa kernels in
		 * a bf16 ViT's recording); before sm80 on FFMA */
		if (contains(n, "fmha_cutlass") && contains(n, "_f32_"))
			return contains(n, "_sm80") ? KC_MATMUL_TF32 : KC_MATMUL_FP32;
		/* FP64 data: cuBLAS's f64f64 GEMMs, CUTLASS's DMMA (d884), dgemm */
		if (contains(n, "f64f64") || contains(n, "d884gemm") || contains(n, "dgemm") || contains(n, "Dgemm") ||
		    contains(n, "dmma"))
			return KC_MATMUL_FP64;
		int tc = contains(n, "tf32") || contains(n, "tfloat32") || contains(n, "bf16") || contains(n, "f16") ||
			 contains(n, "bfloat16") || contains(n, "__half") ||
			 contains(n, "hmma") || contains(n, "16816") || contains(n, "1688") ||
			 contains(n, "884") || contains(n, "tensorop") || contains(n, "nvjet") ||
			 contains(n, "wgmma") || contains(n, "e4m3") || contains(n, "i8i8");
		int fp32 = contains(n, "f32f32_f32f32") || contains(n, "_ffma") ||
			   contains(n, "sgemm") || contains(n, "simt");
		/* TF32 on FP32 data: "..._f32f32_tf32f32_f32_..." (cuDNN's and
		 * cuBLAS's kernels), no 16-bit or 8-bit type beside it */
		int tf32 = (contains(n, "tf32") || contains(n, "tfloat32")) && !contains(n, "bf16") && !contains(n, "f16") &&
			   !contains(n, "e4m3") && !contains(n, "i8i8");
		if (fp32 && !tc)
			return KC_MATMUL_FP32;
		/* cuBLAS's GEMV and small-N kernels say no precision in their
		 * own names: their template arguments do (float operands) */
		if (!tc && (contains(n, "gemv") || contains(n, "gemmSN")) && kernel_on_floats(n))
			return KC_MATMUL_FP32;
		return tf32 ? KC_MATMUL_TF32 : KC_MATMUL_TC;
	}
	/* PyTorch's foreach kernels (torch._foreach_*: a foreach optimizer's
	 * update, one pass over the parameters for each of its operations) are
	 * elementwise work a fused optimizer does in one pass; a fused
	 * optimizer's own kernels (multi_tensor_apply with its Adam functor) are
	 * not a fusion candidate */
	if (contains(n, "multi_tensor_apply") && contains(n, "Foreach"))
		return KC_ELEMENTWISE;
	if (kernel_updates_params(n))
		return KC_OTHER;
	if (contains(n, "elementwise") || contains(n, "cupy_") || contains(n, "reduce_kernel") ||
	    contains(n, "Functor"))
		return KC_ELEMENTWISE;
	if (kernel_moves_only(n))
		return KC_ELEMENTWISE;
	/* XLA: one eager op (wrapped_add, wrapped_exp) or a loop or reduction
	 * fusion (loop_add_fusion, input_reduce_fusion); Triton from Inductor:
	 * pointwise and reduction kernels (triton_poi_, triton_red_, triton_per_;
	 * triton_tem_ are matrix templates) */
	if (!strncmp(n, "wrapped_", 8) || (!strncmp(n, "loop_", 5) && contains(n, "fusion")) ||
	    (!strncmp(n, "input_", 6) && contains(n, "fusion")) || !strncmp(n, "triton_poi_", 11) ||
	    !strncmp(n, "triton_red_", 11) || !strncmp(n, "triton_per_", 11))
		return KC_ELEMENTWISE;
	return KC_OTHER;
}
