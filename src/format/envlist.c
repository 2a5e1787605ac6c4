/* The environment variables a recording may hold: performance-relevant ones
 * only. Every other variable may hold a secret and is never stored. Shared by
 * gpuwhy (its own environment) and the injection library (the target's, which
 * may differ: programs re-exec themselves with a changed environment). */
#include <string.h>
#include <strings.h>

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

/* A name taken by a prefix (NCCL_*) is dropped when it holds any of these
 * (substrings, so PASS covers PASSWORD and PASSPHRASE): the prefix admits
 * names nobody reviewed, a plugin's configuration or password among them. */
static int looks_secret(const char *name)
{
	static const char *const bad[] = { "TOKEN", "SECRET", "PASS", "PWD", "KEY", "CRED",
					   "AUTH", "CERT", "PRIVATE", "SESSION", "COOKIE",
					   "CONFIG", "URL", "URI" };

	for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
		if (strstr(name, bad[i]))
			return 1;
	return 0;
}

static int has_icase(const char *s, const char *word)
{
	size_t n = strlen(word);

	for (; *s; s++)
		if (strncasecmp(s, word, n) == 0)
			return 1;
	return 0;
}

int gw_env_value_secret(const char *value)
{
	static const char *const params[] = { "token=", "key=", "secret=", "password=", "passwd=",
					      "pwd=", "sig=", "signature=", "credential" };
	const char *p = strstr(value, "://");

	/* scheme://user:password@host or scheme://token@host */
	for (; p; p = strstr(p + 3, "://")) {
		size_t auth = strcspn(p + 3, "/?#");

		if (memchr(p + 3, '@', auth))
			return 1;
	}
	for (size_t i = 0; i < ARRAY_SIZE(params); i++)
		if (has_icase(value, params[i]))
			return 1;
	return 0;
}

int gw_env_allowed(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(env_allow); i++) {
		size_t n = strlen(env_allow[i]);

		if (env_allow[i][n - 1] != '_' ? strcmp(name, env_allow[i]) == 0
					       : strncmp(name, env_allow[i], n) == 0 && !looks_secret(name))
			return 1;
	}
	return 0;
}

int gw_env_keep(const char *name, const char *value)
{
	return gw_env_allowed(name) && !gw_env_value_secret(value);
}
