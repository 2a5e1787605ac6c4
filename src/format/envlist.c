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
	/* the launchers' rank numbers (which rank a process is: src/job/) */
	"SLURM_PROCID", "SLURM_LOCALID", "SLURM_NTASKS", "SLURM_NODEID", "OMPI_COMM_WORLD_RANK",
	"OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_SIZE", "PMI_RANK", "PMI_SIZE",
	"MPI_LOCALRANKID",
	"NVIDIA_TF32_OVERRIDE", "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE", "OMP_PROC_BIND",
	"OMP_PLACES", "KMP_AFFINITY", "GOMP_CPU_AFFINITY",
	/* compilation caches: whether a start-up could have started warm */
	"JAX_COMPILATION_CACHE_DIR", "JAX_ENABLE_COMPILATION_CACHE",
	"JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "CUPY_CACHE_DIR", "TORCHINDUCTOR_CACHE_DIR",
	"TORCHINDUCTOR_FX_GRAPH_CACHE", "TRITON_CACHE_DIR",
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

/* ---- command lines ------------------------------------------------------
 * A command line is kept (it names the job) with what looks like a secret
 * in it replaced by "[redacted]": the value of an option or assignment
 * whose name holds a secret-bearing word (--api-key=V, --token V,
 * password=V, HF_TOKEN=V, ?sig=V&, api_key='V' in code, "--token V" in
 * a shell line), and the user:pw part of a URL. */

#define REDACTED "[redacted]"

struct scrub_out {
	char *s;
	size_t cap, len; /* len: what the whole would take (snprintf-like) */
	int value_next;  /* the last argument was a secret option: --token V */
};

static void put(struct scrub_out *o, const char *s, size_t n)
{
	if (o->cap && o->len < o->cap - 1) {
		size_t room = o->cap - 1 - o->len;

		memcpy(o->s + o->len, s, n < room ? n : room);
	}
	o->len += n;
	if (o->cap)
		o->s[o->len < o->cap ? o->len : o->cap - 1] = 0;
}

static int name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
	       c == '-' || c == '.';
}

/* Whether an option or variable name (n bytes) names a secret. */
static int name_secret(const char *name, size_t n)
{
	static const char *const words[] = { "token", "secret", "passw", "pwd", "key", "auth",
					     "credential", "cookie", "signature" };

	while (n && *name == '-')
		name++, n--;
	if (n == 3 && strncasecmp(name, "sig", 3) == 0)
		return 1;
	for (size_t i = 0; i < ARRAY_SIZE(words); i++) {
		size_t w = strlen(words[i]);

		for (size_t k = 0; k + w <= n; k++)
			if (strncasecmp(name + k, words[i], w) == 0)
				return 1;
	}
	return 0;
}

/* One argument, scrubbed. */
static void put_arg(struct scrub_out *o, const char *a)
{
	size_t i = 0, done = 0, n = strlen(a);

	if (o->value_next) {
		o->value_next = 0;
		if (!(a[0] == '-' && a[1])) {
			put(o, REDACTED, strlen(REDACTED));
			return;
		}
	}
	if (a[0] == '-') {
		size_t k = 1;

		while (name_char(a[k]))
			k++;
		if (!a[k] && name_secret(a, k))
			o->value_next = 1;
	}
	for (; i < n; i++) {
		if (a[i] == ':' && a[i + 1] == '/' && a[i + 2] == '/') {
			size_t auth = strcspn(a + i + 3, "/?# \t"), at = auth;

			while (at && a[i + 3 + at - 1] != '@')
				at--;
			if (!at)
				continue;
			put(o, a + done, i + 3 - done);
			put(o, REDACTED, strlen(REDACTED));
			done = i + 3 + at - 1; /* from the '@' */
			i = done;
			continue;
		}
		if (a[i] == '-' && i && (a[i - 1] == ' ' || a[i - 1] == '\t')) {
			/* a word of a shell line: "--token V" inside sh -c '...' */
			size_t k = i + 1, j;

			while (name_char(a[k]))
				k++;
			j = k + strspn(a + k, " \t");
			if (j == k || !a[j] || a[j] == '-' || !name_secret(a + i, k - i))
				continue;
			size_t e = j + strcspn(a + j, " \t\n;&|'\")");

			put(o, a + done, j - done);
			put(o, REDACTED, strlen(REDACTED));
			done = e;
			i = e - 1;
			continue;
		}
		if (a[i] != '=' || i == 0)
			continue;
		size_t b = i;

		while (b && name_char(a[b - 1]))
			b--;
		if (!name_secret(a + b, i - b))
			continue;
		/* the value: the rest of NAME=VALUE, else up to a separator
		 * (a query string, code), inside quotes when quoted */
		size_t v = i + 1, e;
		char q = a[v] == '\'' || a[v] == '"' ? a[v] : 0;

		if (q)
			v++;
		if (q)
			e = v + strcspn(a + v, q == '"' ? "\"" : "'");
		else if (b == 0)
			e = n;
		else
			e = v + strcspn(a + v, "&;, \t\n'\")");
		put(o, a + done, v - done);
		if (e > v)
			put(o, REDACTED, strlen(REDACTED));
		done = e;
		i = e ? e - 1 : 0;
	}
	put(o, a + done, n - done);
}

size_t gw_argv_scrubbed(char *const *argv, char *out, size_t len)
{
	struct scrub_out o = { out, len, 0, 0 };

	if (len)
		out[0] = 0;
	for (int i = 0; argv[i]; i++) {
		if (i)
			put(&o, " ", 1);
		put_arg(&o, argv[i]);
	}
	return o.len;
}

size_t gw_cmdline_scrubbed(const char *args, size_t n, char *out, size_t len)
{
	struct scrub_out o = { out, len, 0, 0 };
	size_t i = 0;

	if (len)
		out[0] = 0;
	while (i < n) {
		size_t k = strnlen(args + i, n - i);

		if (i)
			put(&o, " ", 1);
		if (i + k < n) {
			put_arg(&o, args + i);
		} else { /* the last argument, cut short without its NUL */
			char tail[4096];

			snprintf(tail, sizeof(tail), "%.*s", (int)k, args + i);
			put_arg(&o, tail);
		}
		i += k + 1;
	}
	return o.len;
}
