/* The framework that issues the main process's GPU work, so that every fix
 * can be said in its terms (rules/advice.c). From the runtime libraries the
 * process maps (proc_libs records); for recordings without them, from kernel
 * names (ATen's kernels name PyTorch). */
#include <stdio.h>
#include <string.h>

#include "analyze.h"
#include "internal.h"

static const struct {
	const char *id, *name;
} fw[FW_NFRAMEWORKS] = {
	[FW_UNKNOWN] = { "unknown", "unknown" },
	[FW_TORCH] = { "pytorch", "PyTorch" },
	[FW_JAX] = { "jax", "JAX" },
	[FW_CUPY] = { "cupy", "CuPy" },
	[FW_TF] = { "tensorflow", "TensorFlow" },
	[FW_CUDA_C] = { "cuda_c", "CUDA C / native" },
};

const char *framework_name(enum framework f)
{
	return f < FW_NFRAMEWORKS ? fw[f].name : "?";
}

const char *framework_id(enum framework f)
{
	return f < FW_NFRAMEWORKS ? fw[f].id : "?";
}

/* Several frameworks can be mapped at once: JAX programs often load
 * TensorFlow (tf.data) or PyTorch (its DataLoader) for input, so PyTorch
 * wins only with ATen's kernels on the GPU or alone; then JAX, TensorFlow,
 * CuPy. No framework and no Python: a native (CUDA C/C++) program. Python
 * and nothing known (Numba, PyCUDA...): unknown, advice stays neutral. */
static enum framework from_libs(unsigned libs, int aten)
{
	if ((libs & GW_LIB_TORCH) && (aten || !(libs & (GW_LIB_JAX | GW_LIB_TF | GW_LIB_CUPY))))
		return FW_TORCH;
	if (libs & GW_LIB_JAX)
		return FW_JAX;
	if (libs & GW_LIB_TF)
		return FW_TF;
	if (libs & GW_LIB_CUPY)
		return FW_CUPY;
	if (libs & GW_LIB_TORCH)
		return FW_TORCH;
	if (!(libs & GW_LIB_PYTHON))
		return FW_CUDA_C;
	return FW_UNKNOWN;
}

void detect_framework(struct analysis *a)
{
	const struct trace *t = a->t;
	const struct proc_info *p = NULL;
	uint32_t pid = a->main_pid;

	for (size_t i = 0; i < t->procs.n && !pid; i++)
		if (t->procs.v[i].is_target)
			pid = t->procs.v[i].pid;
	for (size_t i = 0; i < t->procs.n; i++)
		if (t->procs.v[i].pid == pid)
			p = &t->procs.v[i];
	a->python[0] = 0;
	if (p && p->libs) {
		a->framework = from_libs(p->libs, target_is_pytorch(a));
		a->framework_source = "libraries";
		snprintf(a->python, sizeof(a->python), "%s", p->python);
	} else if (target_is_pytorch(a)) {
		a->framework = FW_TORCH;
		a->framework_source = "kernel names";
	} else {
		a->framework = FW_UNKNOWN;
		a->framework_source = "none";
	}
}

int target_is_pytorch(const struct analysis *a)
{
	for (size_t i = 1; i < a->t->names.n; i++)
		if (strstr(a->t->names.v[i], "at6native") || strstr(a->t->names.v[i], "at::native"))
			return 1;
	return 0;
}
