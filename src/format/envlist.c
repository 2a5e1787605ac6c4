/* The environment variables a recording may hold: performance-relevant ones
 * only. Every other variable may hold a secret and is never stored. Shared by
 * gpuwhy (its own environment) and the injection library (the target's, which
 * may differ: programs re-exec themselves with a changed environment). */
#include <string.h>

#include "format.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* Performance-relevant variables. Exact names, or prefixes ending in '_'. */
static const char *const env_allow[] = {
	"CUDA_LAUNCH_BLOCKING", "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_MAX_CONNECTIONS",
	"CUDA_MODULE_LOADING", "CUDA_DEVICE_ORDER", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
	"OPENBLAS_NUM_THREADS", "NUMEXPR_NUM_THREADS", "TORCH_NUM_THREADS",
	"PYTORCH_CUDA_ALLOC_CONF", "TORCH_CUDNN_V8_API_ENABLED", "TF_GPU_ALLOCATOR",
	"XLA_PYTHON_CLIENT_PREALLOCATE", "XLA_PYTHON_CLIENT_MEM_FRACTION", "NCCL_",
	"WORLD_SIZE", "LOCAL_RANK", "RANK", "LOCAL_WORLD_SIZE", "CUBLAS_WORKSPACE_CONFIG",
	"NVIDIA_TF32_OVERRIDE", "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE", "OMP_PROC_BIND",
	"OMP_PLACES", "KMP_AFFINITY", "GOMP_CPU_AFFINITY",
};

/* Never stored even under an allowed prefix. */
static int looks_secret(const char *name)
{
	static const char *const bad[] = { "TOKEN", "SECRET", "PASSWORD", "PASSWD", "KEY",
					   "CREDENTIAL", "AUTH" };

	for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
		if (strstr(name, bad[i]))
			return 1;
	return 0;
}

int gw_env_allowed(const char *name)
{
	if (looks_secret(name))
		return 0;
	for (size_t i = 0; i < ARRAY_SIZE(env_allow); i++) {
		size_t n = strlen(env_allow[i]);

		if (env_allow[i][n - 1] == '_' ? strncmp(name, env_allow[i], n) == 0
					       : strcmp(name, env_allow[i]) == 0)
			return 1;
	}
	return 0;
}

